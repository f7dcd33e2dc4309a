//! Cutting input into blocks of whole lines as it is read.

use std::io::Read;

use anyhow::Context as _;

/// Whole lines read, and the line after them when it was too long to keep.
pub(super) struct Block {
    /// Whole lines (the last one may lack its newline at the end of the stream).
    pub(super) lines: Vec<u8>,
    /// The length of the line that came next, when it ran past the limit: it was read and
    /// dropped, not kept, and is answered with an error.
    pub(super) too_long: Option<u64>,
}

/// Cuts a stream into blocks that end at a line's end (or the stream's).
pub(super) struct BlockReader {
    /// Where each read of a stream lands, and the rest of a dropped line from any source
    /// (zeroed once, reused; a file reads straight into its blocks).
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
    /// A reader of blocks of up to `block_bytes` (more only to finish a line); `whole_reads`
    /// when the source is a regular file, which is then read straight into each block.
    /// `more_waiting` tells whether more of any other source has already arrived. A line
    /// longer than `max_line_bytes` is not kept.
    pub(super) fn new(
        block_bytes: usize,
        whole_reads: bool,
        more_waiting: fn() -> bool,
        max_line_bytes: usize,
    ) -> Self {
        BlockReader {
            scratch: if whole_reads {
                Vec::new()
            } else {
                vec![0; block_bytes.max(1)]
            },
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
        mut block: Vec<u8>,
        block_bytes: usize,
    ) -> anyhow::Result<Block> {
        block.clear();
        block.append(&mut self.carry);
        // Where the block's last whole line ends, once the block holds a line end (what is
        // carried after a dropped line may hold several).
        let mut whole_lines = memchr::memrchr(b'\n', &block).map(|end| end + 1);
        loop {
            let line_start = whole_lines.unwrap_or(0);
            if block.len() - line_start > self.max_line_bytes {
                let kept = block.len() - line_start;
                block.truncate(line_start);
                let too_long = self.drop_rest_of_line(input, kept)?;
                return Ok(Block {
                    lines: block,
                    too_long: Some(too_long),
                });
            }
            if self.ended {
                break;
            }
            let start = block.len();
            let read = if self.whole_reads {
                // A file has nothing to wait for: `read_to_end` on a `take` fills the block
                // without a scratch copy and stops at the end.
                input
                    .by_ref()
                    .take(block_bytes.max(1) as u64)
                    .read_to_end(&mut block)
                    .context("reading stdin")?
            } else {
                // One read: whatever has arrived, never waiting for a whole block, and no more
                // than fits the block (so it is not reallocated) unless a line is unfinished.
                let room = block_bytes.saturating_sub(block.len());
                let want = if room > 0 { room } else { usize::MAX };
                let want = want.min(self.scratch.len());
                let read = read_retrying(input, &mut self.scratch[..want])?;
                block.extend_from_slice(&self.scratch[..read]);
                read
            };
            if read == 0 {
                // Ended: the last line, unfinished, is still held to the limit.
                self.ended = true;
                continue;
            }
            if let Some(end) = memchr::memrchr(b'\n', &block[start..]) {
                whole_lines = Some(start + end + 1);
            }
            let room = block.len() < block_bytes;
            if !self.whole_reads && room && (self.more_waiting)() {
                continue;
            }
            if let Some(end) = whole_lines {
                self.carry.extend_from_slice(&block[end..]);
                block.truncate(end);
                break;
            }
        }
        Ok(Block {
            lines: block,
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
