//! Moving lines from stdin to the judges: a reader thread cuts the input into whole lines and
//! hands them over through a bounded [`Handoff`]; the judges take everything that has arrived
//! as one block and split it among the cores.

use std::io::Read;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use anyhow::Context as _;

/// Bytes that may wait for the judges: enough to share among threads, few enough to bound
/// memory (a single longer line is still taken whole).
pub(super) const BLOCK_BYTES: usize = 4 << 20;

/// Runs of lines a block is cut into per thread: small enough that a thread that finishes
/// early takes more work instead of waiting for the others.
pub(super) const RUNS_PER_THREAD: usize = 16;

/// Whole lines waiting for the judges, shared by the reader thread and the judging one.
pub(super) struct Handoff {
    state: Mutex<Waiting>,
    changed: Condvar,
    block_bytes: usize,
}

#[derive(Default)]
struct Waiting {
    lines: Vec<u8>,
    /// The input ended (or failed: `error`).
    ended: bool,
    error: Option<anyhow::Error>,
    /// The judging side is gone (writing failed); the reader stops.
    closed: bool,
    /// Judged blocks' buffers, for the reader to fill again: their memory is already mapped,
    /// which spares a page fault per 4 KiB read.
    spares: Vec<Vec<u8>>,
}

/// What [`Handoff::take`] found.
pub(super) enum Taken {
    /// Lines to judge.
    Lines(Vec<u8>),
    /// Nothing yet: the caller may flush its answers, then [`Handoff::wait_take`].
    Nothing,
    /// The input has ended.
    End(anyhow::Result<()>),
}

impl Handoff {
    /// Starts a reader thread on `input`. It is not joined: when the judging side stops early
    /// it may be blocked reading, and it ends with the process.
    pub(super) fn start(input: impl Read + Send + 'static, block_bytes: usize) -> Arc<Self> {
        let handoff = Arc::new(Handoff {
            state: Mutex::new(Waiting::default()),
            changed: Condvar::new(),
            block_bytes,
        });
        let shared = Arc::clone(&handoff);
        std::thread::spawn(move || shared.read_all(input));
        handoff
    }

    fn lock(&self) -> MutexGuard<'_, Waiting> {
        // A panic elsewhere cannot leave `Waiting` half-written: every update is one step.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn read_all(&self, mut input: impl Read) {
        let block_bytes = self.block_bytes;
        let mut reader = BlockReader::new(block_bytes);
        loop {
            let spare = self.lock().spares.pop();
            // Room for a block and the carried end of a line, so filling it never reallocates.
            let buffer = spare.unwrap_or_else(|| Vec::with_capacity(block_bytes + (64 << 10)));
            let block = reader.next_block(&mut input, buffer);
            let mut waiting = self.lock();
            // Backpressure: wait while the lines waiting and these would outgrow a block
            // (small reads from a pipe still join the lines waiting).
            let arrived = block.as_ref().map_or(0, Vec::len);
            while !waiting.lines.is_empty()
                && waiting.lines.len() + arrived > block_bytes
                && !waiting.closed
            {
                waiting = self
                    .changed
                    .wait(waiting)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            if waiting.closed {
                return;
            }
            match block {
                Ok(block) if block.is_empty() => waiting.ended = true,
                Ok(block) if waiting.lines.is_empty() => waiting.lines = block,
                Ok(block) => waiting.lines.extend_from_slice(&block),
                Err(e) => {
                    waiting.ended = true;
                    waiting.error = Some(e);
                }
            }
            let ended = waiting.ended;
            drop(waiting);
            self.changed.notify_all();
            if ended {
                return;
            }
        }
    }

    /// Every line waiting, without waiting for more.
    pub(super) fn take(&self) -> Taken {
        let mut waiting = self.lock();
        let taken = Self::take_from(&mut waiting);
        drop(waiting);
        self.changed.notify_all();
        taken
    }

    /// Every line waiting, waiting for some if there are none.
    pub(super) fn wait_take(&self) -> Taken {
        let mut waiting = self.lock();
        while waiting.lines.is_empty() && !waiting.ended {
            waiting = self
                .changed
                .wait(waiting)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        let taken = Self::take_from(&mut waiting);
        drop(waiting);
        self.changed.notify_all();
        taken
    }

    fn take_from(waiting: &mut Waiting) -> Taken {
        if !waiting.lines.is_empty() {
            Taken::Lines(std::mem::take(&mut waiting.lines))
        } else if waiting.ended {
            Taken::End(waiting.error.take().map_or(Ok(()), Err))
        } else {
            Taken::Nothing
        }
    }

    /// Gives a judged block's buffer back for reuse (unless one very long line grew it).
    pub(super) fn recycle(&self, mut buffer: Vec<u8>) {
        // One block is judged, one waits, one is being read: three buffers go round.
        const SPARES: usize = 3;
        if buffer.capacity() <= 2 * self.block_bytes {
            buffer.clear();
            let mut waiting = self.lock();
            if waiting.spares.len() < SPARES {
                waiting.spares.push(buffer);
            }
        }
    }

    /// The judging side stops: the reader need not go on.
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }
}

/// Cuts a stream into blocks that end at a line's end (or the stream's).
pub(super) struct BlockReader {
    /// Where each read lands (zeroed once, reused).
    scratch: Vec<u8>,
    /// Bytes read past the last complete line, carried into the next block.
    carry: Vec<u8>,
    /// The last read filled the scratch buffer: the source has more than it holds.
    filled_last: bool,
    ended: bool,
}

impl BlockReader {
    pub(super) fn new(block_bytes: usize) -> Self {
        BlockReader {
            scratch: vec![0; block_bytes.max(1)],
            carry: Vec::new(),
            filled_last: false,
            ended: false,
        }
    }

    /// The next block of whole lines: the whole lines one read brought (so lines that trickle
    /// in through a pipe are answered without waiting for more), reading on only to finish a
    /// line; empty once the stream has ended.
    pub(super) fn next_block(
        &mut self,
        input: &mut impl Read,
        mut block: Vec<u8>,
    ) -> anyhow::Result<Vec<u8>> {
        block.clear();
        block.append(&mut self.carry);
        while !self.ended {
            let start = block.len();
            let read = if self.filled_last {
                // A source that fills whole reads (a file) is read straight into the block:
                // `read_to_end` on a `take` skips the scratch copy and stops at the end.
                input
                    .by_ref()
                    .take(self.scratch.len() as u64)
                    .read_to_end(&mut block)
                    .context("reading stdin")?
            } else {
                let read = read_retrying(input, &mut self.scratch)?;
                block.extend_from_slice(&self.scratch[..read]);
                read
            };
            self.filled_last = read == self.scratch.len();
            if read == 0 {
                self.ended = true;
                break;
            }
            if let Some(end) = memchr::memrchr(b'\n', &block[start..]) {
                self.carry.extend_from_slice(&block[start + end + 1..]);
                block.truncate(start + end + 1);
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
pub(super) fn split_lines(block: &[u8], parts: usize) -> Vec<&[u8]> {
    let mut runs = Vec::with_capacity(parts);
    let mut rest = block;
    for left in (1..=parts).rev() {
        if rest.is_empty() {
            break;
        }
        let cut = if left == 1 {
            rest.len()
        } else {
            let aim = rest.len() / left;
            memchr::memchr(b'\n', &rest[aim..]).map_or(rest.len(), |i| aim + i + 1)
        };
        let (run, after) = rest.split_at(cut);
        runs.push(run);
        rest = after;
    }
    runs
}
