//! The judging pipeline: worker threads (one per core) take turns reading the next block of
//! whole lines, judge it at once, while it is still in their core's cache, and write out the
//! answers whose turn has come, in input order.
//!
//! No thread reads or writes for the others: handing every block from a reader to a worker and
//! on to a writer cost two wake-ups per block, and had every byte copied in on one core and
//! judged on another. The input is locked only to wait for room and read, the output only for a
//! write; a block answered before its turn waits for the worker that writes the one before it.
//! Memory is bounded by [`MAX_BYTES_IN_FLIGHT`] of input and answers not yet written, and the
//! blocks being judged with their answers (an answer is a few times its line at most, but a
//! line of a few bytes gets an error of a couple of hundred: a block of empty lines is answered
//! in about 200 times its size); buffers go round instead of being reallocated.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use anyhow::Context as _;

use super::stream::{Block, BlockReader};

/// Input read but not yet written out, at most, before a worker reads another block (so the
/// bound is this and one block, which may run long to finish a line, up to the line limit).
const MAX_BYTES_IN_FLIGHT: usize = 4 * BLOCK_BYTES;

/// The most one read hands over as a block: small enough that a worker judges it while it is
/// still in its core's cache (2 MiB of L2 here), large enough that reads and hand-overs are
/// few. Blocks of 256 KiB judged files as fast and pipes 2-5 % slower; 128 KiB and less,
/// slower for both.
pub(super) const BLOCK_BYTES: usize = 512 << 10;

/// How the input is read.
#[derive(Clone, Copy)]
pub(super) struct Source {
    /// The most one block holds (more only to finish a line).
    pub(super) block_bytes: usize,
    /// The input is a regular file: read whole blocks, nothing will keep a read waiting.
    pub(super) whole_reads: bool,
    /// Whether more of the input has arrived and waits to be read (asked only when
    /// `whole_reads` is false).
    pub(super) more_waiting: fn() -> bool,
    /// The longest line read; a longer one is dropped unread and answered with an error.
    pub(super) max_line_bytes: usize,
}

/// How lines are answered.
#[derive(Clone, Copy)]
pub(super) struct Judge {
    /// Appends the answers to a run of lines, one line each; the limit on a line's length.
    pub(super) lines: fn(&[u8], usize, &mut Vec<u8>),
    /// Appends the answer to a line that was too long to read: its length and the limit.
    pub(super) too_long: fn(u64, usize, &mut Vec<u8>),
}

/// The input, read by one worker at a time.
struct Input<R> {
    stream: R,
    blocks: BlockReader,
    block_bytes: usize,
}

/// A judged block, waiting for its turn to be written.
struct Answered {
    answers: Vec<u8>,
    /// The bytes it holds in flight: the input it answers, and the answers.
    bytes: usize,
}

#[derive(Default)]
struct State {
    answered: BTreeMap<u64, Answered>,
    /// Blocks read so far; the next block read gets this number.
    made: u64,
    /// Blocks written so far; the next to write is the one with this number.
    written: u64,
    /// A worker is writing: others leave their answers to it.
    writing: bool,
    /// Answers were written since the last flush.
    unflushed: bool,
    /// Input bytes read and not yet written out.
    in_flight: usize,
    /// The input ended (or failed: `input_error`).
    ended: bool,
    input_error: Option<anyhow::Error>,
    /// Writing failed, or a worker died: everyone stops.
    failed: Option<anyhow::Error>,
    spare_blocks: Vec<Vec<u8>>,
    spare_answers: Vec<Vec<u8>>,
}

impl State {
    /// Every block read is written, and no more will be read. (Flushed too: the writer that
    /// wrote the last block flushed before it let go of `writing`.)
    fn finished(&self) -> bool {
        self.ended && self.written == self.made && !self.writing
    }
}

struct Shared<R, W> {
    input: Mutex<Input<R>>,
    /// Taken back by the caller once everything is written.
    output: Mutex<Option<W>>,
    state: Mutex<State>,
    /// Everything is written, or the pipeline failed.
    done: Condvar,
    /// Answers were written, or the pipeline failed: room for more input.
    room: Condvar,
    /// The largest buffer kept for reuse: one grown by a very long line is let go.
    keep_bytes: usize,
}

impl<R, W> Shared<R, W> {
    fn lock(&self) -> MutexGuard<'_, State> {
        held(&self.state)
    }

    fn wait<'a>(&self, on: &Condvar, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        on.wait(state)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Stops every thread with `error` (the first failure is the one reported).
    fn fail(&self, error: anyhow::Error) {
        self.lock().failed.get_or_insert(error);
        self.done.notify_all();
        self.room.notify_all();
    }
}

/// Judges every line of `input` with `judge` (which appends one answer line per input line)
/// on `workers` threads and writes the answers to `output` in input order; hands `output`
/// back once everything is written. Answers are flushed whenever every line read so far is
/// answered, so a host that writes a line and waits for its answer (a co-process) gets it at
/// once.
///
/// # Errors
/// I/O errors on the streams.
pub(super) fn run<W: Write + Send + 'static>(
    input: impl Read + Send + 'static,
    output: W,
    source: Source,
    workers: usize,
    judge: Judge,
) -> anyhow::Result<W> {
    let Source {
        block_bytes,
        whole_reads,
        more_waiting,
        max_line_bytes,
    } = source;
    let shared = Arc::new(Shared {
        input: Mutex::new(Input {
            stream: input,
            blocks: BlockReader::new(whole_reads, more_waiting, max_line_bytes),
            block_bytes,
        }),
        output: Mutex::new(Some(output)),
        state: Mutex::new(State::default()),
        done: Condvar::new(),
        room: Condvar::new(),
        keep_bytes: 2 * block_bytes + (64 << 10),
    });
    // Not joined: they end on their own once the input has, but after a failure one may
    // still be blocked reading stdin; it ends with the process.
    for _ in 0..workers.max(1) {
        let worker = Arc::clone(&shared);
        let started = std::thread::Builder::new()
            .name("validate".to_owned())
            .spawn(move || {
                let _watch = DiesLoudly(&*worker);
                work(&worker, judge, max_line_bytes);
            });
        if let Err(e) = started {
            // Those already started stop too, rather than run on for a caller that left.
            shared.fail(anyhow::anyhow!("starting a validate worker thread: {e}"));
            return Err(anyhow::Error::new(e).context("starting a validate worker thread"));
        }
    }
    let mut state = shared.lock();
    while state.failed.is_none() && !state.finished() {
        state = shared.wait(&shared.done, state);
    }
    if let Some(failed) = state.failed.take() {
        return Err(failed);
    }
    if let Some(input_error) = state.input_error.take() {
        return Err(input_error);
    }
    drop(state);
    // Finished: every block is written, and nothing more will be read or written.
    held(&shared.output)
        .take()
        .context("the output was taken twice (a bug)")
}

/// Fails the pipeline when a worker dies of a panic (a bug), so the caller is not left waiting
/// for answers that will never come.
struct DiesLoudly<'a, R, W>(&'a Shared<R, W>);

impl<R, W> Drop for DiesLoudly<'_, R, W> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.fail(anyhow::anyhow!(
                "a validate worker failed (a bug: please report it)"
            ));
        }
    }
}

/// One worker: reads a block, judges it, writes what is ready to be written, until the input
/// ends or the pipeline fails.
fn work<R: Read, W: Write>(shared: &Shared<R, W>, judge: Judge, max_line_bytes: usize) {
    loop {
        let (buffer, mut answers) = {
            let mut state = shared.lock();
            (
                state.spare_blocks.pop().unwrap_or_default(),
                state.spare_answers.pop().unwrap_or_default(),
            )
        };
        let Some((seq, block)) = read_block(shared, buffer) else {
            return;
        };
        // Answers run to about 40 % of the input: room up front, so a buffer is seldom grown
        // (and copied) line by line.
        let bytes = block.lines().len();
        answers.reserve(bytes / 2 + (4 << 10));
        (judge.lines)(block.lines(), max_line_bytes, &mut answers);
        if let Some(length) = block.too_long {
            (judge.too_long)(length, max_line_bytes, &mut answers);
        }
        let buffer = block.into_buffer();
        let mut state = shared.lock();
        if buffer.capacity() <= shared.keep_bytes {
            state.spare_blocks.push(buffer);
        }
        // The answers wait to be written too: counted, so that lines whose answers run far
        // longer than they do (empty lines, stray bytes) hold up reading as their size says.
        state.in_flight += answers.len();
        let bytes = bytes + answers.len();
        state.answered.insert(seq, Answered { answers, bytes });
        if !state.writing && seq == state.written {
            state.writing = true;
            write_ready(shared, state);
        }
    }
}

/// Reads the next block and numbers it, or marks the input ended (or failed): `None`.
fn read_block<R: Read, W>(shared: &Shared<R, W>, buffer: Vec<u8>) -> Option<(u64, Block)> {
    let mut input = held(&shared.input);
    // Waited for with the input held, so that only one worker at a time can be about to read:
    // input in flight stays within the bound and one block.
    let mut state = shared.lock();
    while state.in_flight > MAX_BYTES_IN_FLIGHT && state.failed.is_none() {
        state = shared.wait(&shared.room, state);
    }
    if state.failed.is_some() || state.ended {
        return None;
    }
    drop(state);
    let Input {
        stream,
        blocks,
        block_bytes,
    } = &mut *input;
    let block = blocks.next_block(stream, buffer, *block_bytes);
    // Numbered while the input is still held, so numbers follow the input's order.
    let mut state = shared.lock();
    let block = match block {
        Ok(block) if block.lines().is_empty() && block.too_long.is_none() => None,
        Ok(block) => Some(block),
        Err(e) => {
            state.input_error.get_or_insert(e);
            None
        }
    };
    let Some(block) = block else {
        state.ended = true;
        let finished = state.finished();
        drop(state);
        if finished {
            shared.done.notify_all();
        }
        return None;
    };
    let seq = state.made;
    state.made += 1;
    state.in_flight += block.lines().len();
    Some((seq, block))
}

/// Writes answers in turn for as long as the next one is ready, then flushes if every block
/// read is written. The caller has set `writing`: no one else writes meanwhile.
fn write_ready<'a, R, W: Write>(shared: &'a Shared<R, W>, mut state: MutexGuard<'a, State>) {
    loop {
        let written = state.written;
        if let Some(Answered { mut answers, bytes }) = state.answered.remove(&written) {
            drop(state);
            let wrote = held(&shared.output)
                .as_mut()
                .map_or(Ok(()), |output| output.write_all(&answers));
            if let Err(e) = wrote {
                return shared.fail(anyhow::Error::new(e).context("writing stdout"));
            }
            answers.clear();
            state = shared.lock();
            state.written += 1;
            state.unflushed = true;
            state.in_flight -= bytes;
            if answers.capacity() <= shared.keep_bytes {
                state.spare_answers.push(answers);
            }
            shared.room.notify_all();
            continue;
        }
        if state.unflushed && state.written == state.made {
            // Every line read so far is answered: let the answers out.
            state.unflushed = false;
            drop(state);
            let flushed = held(&shared.output).as_mut().map_or(Ok(()), Write::flush);
            if let Err(e) = flushed {
                return shared.fail(anyhow::Error::new(e).context("writing stdout"));
            }
            // Answers that became ready meanwhile were left to this writer.
            state = shared.lock();
            continue;
        }
        state.writing = false;
        let finished = state.finished();
        drop(state);
        if finished {
            shared.done.notify_all();
        }
        return;
    }
}

/// Locks `mutex`, poisoned or not: a worker that panicked is reported through `failed`, and
/// every update of what these locks guard is one step (a read, a write, a change of state),
/// so a panic cannot leave it half-made.
fn held<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
