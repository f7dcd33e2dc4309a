//! Cutting input into whole lines: blocks as they are read, and runs of a block to share
//! among the workers.

use std::io::Read;
use std::ops::Range;

use anyhow::Context as _;

/// Cuts a stream into blocks that end at a line's end (or the stream's).
pub(super) struct BlockReader {
    /// Where each read lands (zeroed once, reused).
    scratch: Vec<u8>,
    /// Bytes read past the last complete line, carried into the next block.
    carry: Vec<u8>,
    /// The source is a regular file: a read never waits for data to arrive.
    whole_reads: bool,
    /// Whether more input is waiting, so a read now would not wait for it.
    more_waiting: fn() -> bool,
    ended: bool,
}

impl BlockReader {
    /// A reader of blocks of up to `block_bytes` (more only to finish a line); `whole_reads`
    /// when the source is a regular file, which is then read straight into each block.
    /// `more_waiting` tells whether more of any other source has already arrived.
    pub(super) fn new(block_bytes: usize, whole_reads: bool, more_waiting: fn() -> bool) -> Self {
        BlockReader {
            scratch: if whole_reads {
                Vec::new()
            } else {
                vec![0; block_bytes.max(1)]
            },
            carry: Vec::new(),
            whole_reads,
            more_waiting,
            ended: false,
        }
    }

    /// The next block of whole lines: the whole lines the reads brought while input kept
    /// arriving (so lines that trickle in through a pipe or a socket are answered without
    /// waiting for more, and a stream that pours in is cut in large blocks), reading on only to
    /// finish a line; empty once the stream has ended.
    pub(super) fn next_block(
        &mut self,
        input: &mut impl Read,
        mut block: Vec<u8>,
        block_bytes: usize,
    ) -> anyhow::Result<Vec<u8>> {
        block.clear();
        block.append(&mut self.carry);
        // Where the block's last whole line ends, once a read has brought a line end.
        let mut whole_lines = None;
        while !self.ended {
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
                self.ended = true;
                break;
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
                return Ok(block);
            }
        }
        Ok(block)
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

/// Splits a block of lines into at most `parts` runs of whole lines of about equal size.
pub(super) fn split_lines(block: &[u8], parts: usize) -> Vec<Range<usize>> {
    let mut runs = Vec::with_capacity(parts);
    let mut start = 0;
    for left in (1..=parts).rev() {
        let rest = &block[start..];
        if rest.is_empty() {
            break;
        }
        let cut = if left == 1 {
            rest.len()
        } else {
            let aim = rest.len() / left;
            memchr::memchr(b'\n', &rest[aim..]).map_or(rest.len(), |i| aim + i + 1)
        };
        runs.push(start..start + cut);
        start += cut;
    }
    runs
}
