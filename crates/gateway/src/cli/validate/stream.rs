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
}

impl BlockReader {
    /// A reader of blocks; `whole_reads` when the source is a regular file, whose blocks are
    /// read whole. `more_waiting` tells
    /// whether more of any other source has already arrived. A line longer than
    /// `max_line_bytes` is not kept.
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
        }
    }

    /// The next block of whole lines: the whole lines the reads brought while input kept
    /// arriving (so lines that trickle in through a pipe or a socket are answered without
    /// waiting for more, and a stream that pours in is cut in large blocks), reading on only to
    /// finish a line; empty once the stream has ended. A line that runs past the limit ends
    /// the block: it is read to its end and dropped, and only its length is kept.
    pub(super) fn next_block(
        &mut self,
        input: &mut impl Read,
        mut buffer: Vec<u8>,
        block_bytes: usize,
    ) -> anyhow::Result<Block> {
        let block_bytes = block_bytes.max(1);
        let mut filled = self.carry.len();
        fill_to(&mut buffer, filled);
        buffer[..filled].copy_from_slice(&self.carry);
        self.carry.clear();
        // Where the block's last whole line ends, once the block holds a line end (what is
        // carried after a dropped line may hold several).
        let mut whole_lines = memchr::memrchr(b'\n', &buffer[..filled]).map(|end| end + 1);
        loop {
            let line_start = whole_lines.unwrap_or(0);
            if filled - line_start > self.max_line_bytes {
                let too_long = self.drop_rest_of_line(input, filled - line_start)?;
                return Ok(Block {
                    buffer,
                    end: line_start,
                    too_long: Some(too_long),
                });
            }
            if self.ended {
                break;
            }
            // Straight into the block (no copy through a scratch buffer), no more than fits
            // it, unless a line is unfinished. A file is read until the block is full; any
            // other stream once, taking whatever has arrived and never waiting for a block.
            let room = block_bytes.saturating_sub(filled);
            let want = if room > 0 { room } else { block_bytes };
            fill_to(&mut buffer, filled + want);
            let read = read_retrying(input, &mut buffer[filled..filled + want])?;
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

    /// Reads on to the end of a line too long to keep, of which `read` bytes are read, keeping
    /// what follows it; the line's whole length.
    fn drop_rest_of_line(&mut self, input: &mut impl Read, read: usize) -> anyhow::Result<u64> {
        let mut length = read as u64;
        let mut buffer = std::mem::take(&mut self.scratch);
        if buffer.is_empty() {
            buffer = vec![0; 64 << 10];
        }
        while !self.ended {
            let read = read_retrying(input, &mut buffer)?;
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
        Ok(length)
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
