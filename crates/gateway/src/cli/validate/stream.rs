//! Cutting input into blocks of whole lines as it is read.

use std::io::Read;

use anyhow::Context as _;

/// Whole lines read, and the line after them when it was too long to keep.
pub(super) struct Block {
    /// The buffer the lines were read into: they are its first `end` bytes; what follows is
    /// left from earlier reads, kept so the buffer can be read into again without zeroing it.
    buffer: Vec<u8>,
    end: usize,
    /// The length of the line that came next, when it ran past the limit: it was read and
    /// dropped, not kept, and is answered with an error.
    pub(super) too_long: Option<u64>,
}

impl Block {
    /// Whole lines (the last one may lack its newline at the end of the stream).
    pub(super) fn lines(&self) -> &[u8] {
        &self.buffer[..self.end]
    }

    /// The buffer, to read the next block into.
    pub(super) fn into_buffer(self) -> Vec<u8> {
        self.buffer
    }
}

/// Cuts a stream into blocks that end at a line's end (or the stream's).
pub(super) struct BlockReader {
    /// Where the rest of a dropped line is read (made when first needed).
    scratch: Vec<u8>,
    /// Bytes read past the last complete line, carried into the next block.
    carry: Vec<u8>,
    /// The source is a regular file: a read never waits for data to arrive.
    whole_reads: bool,
    /// Whether more input is waiting, so a read now would not wait for it.
    more_waiting: fn() -> bool,
    /// The longest line kept; a longer one is dropped as it is read, so memory stays bounded.
    max_line_bytes: usize,
    ended: bool,
    /// A read failed: the whole lines before it were handed out; this is reported next.
    failed: Option<anyhow::Error>,
}

impl BlockReader {
    /// A reader of blocks; `whole_reads` when the source is a regular file, whose blocks are
    /// read whole. `more_waiting` tells whether more of any other source has already arrived.
    /// A line longer than `max_line_bytes` is not kept.
    pub(super) fn new(
        whole_reads: bool,
        more_waiting: fn() -> bool,
        max_line_bytes: usize,
    ) -> Self {
        BlockReader {
            scratch: Vec::new(),
            carry: Vec::new(),
            whole_reads,
            more_waiting,
            max_line_bytes,
            ended: false,
            failed: None,
        }
    }

    /// The next block of whole lines: the whole lines the reads brought while input kept
    /// arriving (so lines that trickle in through a pipe or a socket are answered without
    /// waiting for more, and a stream that pours in is cut in large blocks), reading on only to
    /// finish a line; empty once the stream has ended. A line that runs past the limit ends
    /// the block: it is read to its end and dropped, and only its length is kept. When a read
    /// fails, the whole lines before it still come out as a block, and the error on the next
    /// call; nothing is read after it.
    pub(super) fn next_block(
        &mut self,
        input: &mut impl Read,
        mut buffer: Vec<u8>,
        block_bytes: usize,
    ) -> anyhow::Result<Block> {
        if let Some(failed) = self.failed.take() {
            return Err(failed);
        }
        let block_bytes = block_bytes.max(1);
        let mut filled = self.carry.len();
        fill_to(&mut buffer, filled);
        buffer[..filled].copy_from_slice(&self.carry);
        self.carry.clear();
        // What was read past a dropped line may hold whole lines: they go out now, without
        // a read that could wait for input a co-process will only send once they are answered.
        if let Some(end) = memchr::memrchr(b'\n', &buffer[..filled]).map(|end| end + 1) {
            self.carry.extend_from_slice(&buffer[end..filled]);
            return Ok(Block {
                buffer,
                end,
                too_long: None,
            });
        }
        let mut whole_lines = None;
        loop {
            let line_start = whole_lines.unwrap_or(0);
            if filled - line_start > self.max_line_bytes {
                let too_long = self.drop_rest_of_line(input, filled - line_start);
                if too_long.is_none() && line_start == 0 {
                    // Nothing before the broken line to hand out: the error now.
                    if let Some(failed) = self.failed.take() {
                        return Err(failed);
                    }
                }
                return Ok(Block {
                    buffer,
                    end: line_start,
                    too_long,
                });
            }
            if self.ended {
                break;
            }
            // Straight into the block (no copy through a scratch buffer), no more than fits
            // it, unless a line is unfinished. A file is read until the block is full; another
            // stream only while more of it has arrived, or to finish a line.
            let room = block_bytes.saturating_sub(filled);
            let want = if room > 0 { room } else { block_bytes };
            fill_to(&mut buffer, filled + want);
            let read = match read_retrying(input, &mut buffer[filled..filled + want]) {
                Ok(read) => read,
                Err(failed) if line_start == 0 => {
                    self.ended = true;
                    return Err(failed);
                }
                Err(failed) => {
                    // The whole lines read so far are answered; the broken one is not.
                    self.fail(failed);
                    filled = line_start;
                    break;
                }
            };
            if read == 0 {
                // Ended: the last line, unfinished, is still held to the limit.
                self.ended = true;
                continue;
            }
            if let Some(end) = memchr::memrchr(b'\n', &buffer[filled..filled + read]) {
                whole_lines = Some(filled + end + 1);
            }
            filled += read;
            if filled < block_bytes && (self.whole_reads || (self.more_waiting)()) {
                continue;
            }
            if let Some(end) = whole_lines {
                self.carry.extend_from_slice(&buffer[end..filled]);
                filled = end;
                break;
            }
        }
        Ok(Block {
            buffer,
            end: filled,
            too_long: None,
        })
    }

    /// Notes a failed read: the stream is over, and the error is reported next.
    fn fail(&mut self, failed: anyhow::Error) {
        self.ended = true;
        self.failed = Some(failed);
    }

    /// Reads on to the end of a line too long to keep, of which `read` bytes are read, keeping
    /// what follows it; the line's whole length (`None` when a read failed before its end).
    fn drop_rest_of_line(&mut self, input: &mut impl Read, read: usize) -> Option<u64> {
        let mut length = read as u64;
        let mut buffer = std::mem::take(&mut self.scratch);
        if buffer.is_empty() {
            buffer = vec![0; 64 << 10];
        }
        while !self.ended {
            let read = match read_retrying(input, &mut buffer) {
                Ok(read) => read,
                Err(failed) => {
                    self.fail(failed);
                    self.scratch = buffer;
                    return None;
                }
            };
            if read == 0 {
                self.ended = true;
                break;
            }
            if let Some(end) = memchr::memchr(b'\n', &buffer[..read]) {
                length += end as u64;
                self.carry.extend_from_slice(&buffer[end + 1..read]);
                break;
            }
            length += read as u64;
        }
        self.scratch = buffer;
        Some(length)
    }
}

/// Makes `buffer` at least `len` bytes long. Only bytes never written before are zeroed: a
/// buffer that goes round keeps its length, so reading into it again costs nothing extra.
fn fill_to(buffer: &mut Vec<u8>, len: usize) {
    if buffer.len() < len {
        buffer.resize(len, 0);
    }
}

/// One read, retried when a signal interrupts it.
fn read_retrying(input: &mut impl Read, buffer: &mut [u8]) -> anyhow::Result<usize> {
    loop {
        match input.read(buffer) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("reading stdin"),
        }
    }
}
