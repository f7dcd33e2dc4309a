//! The judging pipeline: a reader thread cuts stdin into blocks of whole lines and each block
//! into runs; worker threads (one per core) judge runs as they come; the calling thread
//! writes the answers out in input order.
//!
//! Nothing waits for a whole block: a worker that finishes a run takes the next one, from
//! this block or the next, so every core stays busy while the reader reads. Memory is
//! bounded by [`MAX_BYTES_IN_FLIGHT`] of input read but not yet answered, and buffers go
//! round instead of being reallocated.

use std::collections::{BTreeMap, VecDeque};
use std::io::{Read, Write};
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use anyhow::Context as _;

use super::stream::{Block, BlockReader, split_lines};

/// Input read but not yet answered, at most (a single longer line is still taken whole, up to
/// the line limit).
pub(super) const MAX_BYTES_IN_FLIGHT: usize = 3 * BLOCK_BYTES;

/// Blocks read but not yet answered, at most: a stream that arrives in small blocks would
/// otherwise keep many more buffers than [`MAX_BYTES_IN_FLIGHT`] needs.
const MAX_BLOCKS_IN_FLIGHT: usize = 3;

/// The most one read hands over as a block.
pub(super) const BLOCK_BYTES: usize = 2 << 20;

/// Runs a block is cut into per worker: small enough that workers finish together.
const RUNS_PER_WORKER: usize = 4;

/// The least a run is cut to hold: below it, handing a run over costs more than sharing it.
const MIN_RUN_BYTES: usize = 16 << 10;

/// How the input is read.
#[derive(Clone, Copy)]
pub(super) struct Source {
    /// The most one block holds (more only to finish a line).
    pub(super) block_bytes: usize,
    /// The input is a regular file: read whole blocks, nothing will keep a read waiting.
    pub(super) whole_reads: bool,
    /// Whether more of the input has arrived and waits to be read (for other inputs).
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

/// Lines to judge: a range of a block, or the one line after it that was too long to read.
struct Run {
    seq: u64,
    block: Arc<Vec<u8>>,
    lines: Range<usize>,
    /// The too-long line's length (`lines` is then empty).
    too_long: Option<u64>,
}

/// A judged run, waiting for its turn to be written.
struct Answered {
    answers: Vec<u8>,
    block: Arc<Vec<u8>>,
    bytes: usize,
}

#[derive(Default)]
struct State {
    runs: VecDeque<Run>,
    answered: BTreeMap<u64, Answered>,
    /// Sequence number of the next run the reader makes.
    made: u64,
    /// Input bytes read and not yet written out.
    in_flight: usize,
    /// Blocks read and not yet written out.
    blocks_in_flight: usize,
    /// The input ended (or failed: `error`).
    ended: bool,
    error: Option<anyhow::Error>,
    /// The writer is gone (writing failed): everyone stops.
    closed: bool,
    spare_blocks: Vec<Vec<u8>>,
    spare_answers: Vec<Vec<u8>>,
}

struct Shared {
    state: Mutex<State>,
    /// Runs were queued, the input ended or the writer left.
    work: Condvar,
    /// A run was answered or the input ended.
    answered: Condvar,
    /// Answers were written: room for more input.
    room: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update is one step under the lock: a panic cannot leave it half-made.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn wait<'a>(&self, on: &Condvar, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        on.wait(state)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Judges every line of `input` with `judge` (which appends one answer line per input line)
/// on `workers` threads and writes the answers to `output` in input order. Answers are
/// flushed whenever every line read so far is answered, so a host that writes a line and
/// waits for its answer (a co-process) gets it at once.
///
/// # Errors
/// I/O errors on the streams.
pub(super) fn run(
    input: impl Read + Send + 'static,
    output: &mut impl Write,
    source: Source,
    workers: usize,
    judge: Judge,
) -> anyhow::Result<()> {
    let Source {
        block_bytes,
        whole_reads,
        more_waiting,
        max_line_bytes,
    } = source;
    let workers = workers.max(1);
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
        work: Condvar::new(),
        answered: Condvar::new(),
        room: Condvar::new(),
    });
    // Not joined: when writing fails it may be blocked reading, and it ends with the process.
    let reader = Arc::clone(&shared);
    let runs_per_block = workers * RUNS_PER_WORKER;
    std::thread::spawn(move || {
        let blocks = BlockReader::new(block_bytes, whole_reads, more_waiting, max_line_bytes);
        read_all(&reader, input, blocks, block_bytes, runs_per_block);
    });
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| work(&shared, judge, max_line_bytes));
        }
        let written = write_all(&shared, output, 2 * block_bytes + (64 << 10));
        shared.lock().closed = true;
        shared.work.notify_all();
        shared.room.notify_all();
        written
    })
}

fn read_all(
    shared: &Shared,
    mut input: impl Read,
    mut reader: BlockReader,
    block_bytes: usize,
    runs_per_block: usize,
) {
    loop {
        let spare = shared.lock().spare_blocks.pop();
        // Room for a block and a carried line end, so filling it rarely reallocates.
        let buffer = spare.unwrap_or_else(|| Vec::with_capacity(block_bytes + (64 << 10)));
        let block = reader.next_block(&mut input, buffer, block_bytes);
        let mut state = shared.lock();
        let arrived = block.as_ref().map_or(0, |block| block.lines.len());
        while state.in_flight > 0
            && (state.in_flight + arrived > MAX_BYTES_IN_FLIGHT.max(block_bytes)
                || state.blocks_in_flight >= MAX_BLOCKS_IN_FLIGHT)
            && !state.closed
        {
            state = shared.wait(&shared.room, state);
        }
        if state.closed {
            return;
        }
        match block {
            Ok(block) if block.lines.is_empty() && block.too_long.is_none() => state.ended = true,
            Ok(Block { lines, too_long }) => {
                let block = Arc::new(lines);
                let runs = runs_per_block.min(block.len() / MIN_RUN_BYTES).max(1);
                let line_runs = split_lines(&block, runs)
                    .into_iter()
                    .map(|lines| (lines, None));
                // A too-long line comes after the block's lines: its own run, last.
                let too_long_run = too_long.map(|length| (block.len()..block.len(), Some(length)));
                for (lines, too_long) in line_runs.chain(too_long_run) {
                    let seq = state.made;
                    state.made += 1;
                    let block = Arc::clone(&block);
                    state.runs.push_back(Run {
                        seq,
                        block,
                        lines,
                        too_long,
                    });
                }
                state.in_flight += arrived;
                state.blocks_in_flight += 1;
            }
            Err(e) => {
                state.ended = true;
                state.error = Some(e);
            }
        }
        let ended = state.ended;
        drop(state);
        shared.work.notify_all();
        if ended {
            shared.answered.notify_all();
            return;
        }
    }
}

fn work(shared: &Shared, judge: Judge, max_line_bytes: usize) {
    let mut state = shared.lock();
    loop {
        if state.closed {
            return;
        }
        let Some(run) = state.runs.pop_front() else {
            if state.ended {
                return;
            }
            state = shared.wait(&shared.work, state);
            continue;
        };
        let mut answers = state.spare_answers.pop().unwrap_or_default();
        drop(state);
        // Answers run to about 40 % of the input: room up front, so a buffer is seldom grown
        // (and copied) line by line.
        answers.reserve(run.lines.len() / 2 + (4 << 10));
        match run.too_long {
            Some(length) => (judge.too_long)(length, max_line_bytes, &mut answers),
            None => (judge.lines)(&run.block[run.lines.clone()], max_line_bytes, &mut answers),
        }
        state = shared.lock();
        let bytes = run.lines.len();
        state.answered.insert(
            run.seq,
            Answered {
                answers,
                block: run.block,
                bytes,
            },
        );
        shared.answered.notify_all();
    }
}

fn write_all(shared: &Shared, output: &mut impl Write, keep_bytes: usize) -> anyhow::Result<()> {
    let mut next = 0;
    let mut unflushed = false;
    let mut state = shared.lock();
    loop {
        if let Some(Answered {
            mut answers,
            block,
            bytes,
        }) = state.answered.remove(&next)
        {
            drop(state);
            output.write_all(&answers).context("writing stdout")?;
            unflushed = true;
            next += 1;
            answers.clear();
            // The last run of a block to be written holds its only reference: reuse it.
            let block = Arc::try_unwrap(block).ok();
            state = shared.lock();
            // Buffers a very long line grew are let go rather than kept for good.
            if answers.capacity() <= keep_bytes {
                state.spare_answers.push(answers);
            }
            if let Some(mut block) = block {
                state.blocks_in_flight -= 1;
                if block.capacity() <= keep_bytes {
                    block.clear();
                    state.spare_blocks.push(block);
                }
            }
            state.in_flight -= bytes;
            shared.room.notify_all();
            continue;
        }
        if next == state.made && state.ended {
            let ended = state.error.take();
            drop(state);
            output.flush().context("writing stdout")?;
            return ended.map_or(Ok(()), Err);
        }
        if unflushed && next == state.made {
            // Every line read so far is answered: let the answers out before waiting.
            drop(state);
            output.flush().context("writing stdout")?;
            unflushed = false;
            state = shared.lock();
            continue;
        }
        state = shared.wait(&shared.answered, state);
    }
}
