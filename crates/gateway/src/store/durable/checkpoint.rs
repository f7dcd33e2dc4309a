//! The checkpointer: a thread of its own that hands what the log has kept to redb, many group
//! commits in one transaction, and deletes each log file once redb holds all of it.
//!
//! A redb transaction has a cost of its own whatever it holds (it rewrites each B-tree's path,
//! the allocator's state and the header), and the changes to one row within it are written
//! once; so redb is written every [`CHECKPOINT_EVERY`], not once per group, and synced only
//! every [`DURABLE_CHECKPOINT_EVERY`]. A reader of the trails asks for a checkpoint
//! first ([`ToCheckpoint::Flush`]): it then sees every commit made before it asked, since the
//! syncer hands each durable batch here before it tells its callers.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use redb::Database;
use tokio::sync::oneshot;

use super::log::{self, LogFile};
use super::logged::{Logged, apply_all};
use super::trails::TrailTables;
use super::{FOLLOW_UPS, FOLLOWERS, KEPT, META, OUTBOX, REQUESTS, StoreError};
use crate::audit::chain::ChainKey;
use crate::metrics::StoreWrites;

/// How long the log may hold what redb does not, while commits keep coming, unless set (or
/// until [`MOST_CHANGES_HELD`] are). A checkpoint's cost is mostly per row and per session
/// trail it writes, and the longer the wait the more changes to one row (a request asked,
/// ended and acknowledged) and entries of one trail each write covers: under 1,000 sessions
/// x 3 tabs at 2,000 asks a second the server took 33 % of a core at 20 ms, 31-32 % at 250 ms
/// and 30 % at 1 s, for the same latencies (first tab p99 0.7-0.8 ms) and 10 MB more held
/// (`bench/history/*-checkpoint-every-second.txt`). Once, with a checkpoint on the worker's
/// core, the first tab's p99 had been 13 ms at 2 s and 3.5 ms at 20 ms; no longer.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// The most changes held for the next checkpoint: past these it runs at once, so what waits
/// in memory stays bounded whatever the rate (an ask that is answered and acknowledged is six
/// changes with its three audit entries: 16,384 is over a second's worth at 2,000 asks a
/// second).
pub const MOST_CHANGES_HELD: usize = 16_384;

/// How often a checkpoint also waits for the disk. The others leave redb's pages to the
/// kernel: a crash takes redb back to its last durable checkpoint, whose `log_applied` says
/// where the replay starts, and no log file is deleted before a durable checkpoint holds it.
/// A durable one writes and syncs every page changed since the last that is not yet on the
/// disk ([`WRITEBACK_EVERY`] keeps those few), which holds up the log's own `fdatasync` on the
/// same disk meanwhile.
pub(super) const DURABLE_CHECKPOINT_EVERY: Duration = Duration::from_secs(4);

/// How often, between durable checkpoints, redb's written pages are sent to the disk. redb
/// writes a non-durable checkpoint's pages to its file (beyond the few MiB its own buffer
/// keeps) and leaves them to the kernel, which holds them for up to 30 s, so a durable
/// checkpoint had seconds of them to write at once (some 30 MB under 1,000 x 3 tabs
/// at 2,000 asks a second) and the log's syncs waited behind them: the agent's p99 was
/// 19-27 ms. Sent a tenth of a second at a time it was 13-15 ms, for 15 % more bytes written
/// (a page changed twice between syncs is written twice); `bench/history/`.
pub(super) const WRITEBACK_EVERY: Duration = Duration::from_millis(100);

/// The `meta` key saying up to which log record redb holds.
pub(super) const APPLIED_KEY: &str = "log_applied";

/// What the checkpointer is told, in the order it happened.
pub(super) enum ToCheckpoint {
    /// Group commit `seq` is in the log, making these changes.
    Kept { seq: u64, changes: Vec<Logged> },
    /// Log file `number` (at `path`) takes no more records; its last is `last_seq`. The
    /// appender is on the next one: the one after is made ready.
    Closed {
        number: u64,
        path: PathBuf,
        last_seq: u64,
    },
    /// Write what is held to redb now, then say whether that worked.
    Flush(oneshot::Sender<Result<(), StoreError>>),
}

/// The checkpointer's niceness: it gives way to the threads that answer peers (the hub's and
/// the log's). Its work may wait some milliseconds; theirs is what a peer waits for, and a
/// checkpoint is milliseconds of B-tree work at a time under load.
const CHECKPOINT_NICENESS: i32 = 10;

/// Lowers the calling thread's priority to [`CHECKPOINT_NICENESS`] (Linux; elsewhere, and if
/// refused, it keeps its own).
pub(super) fn give_way() {
    #[cfg(target_os = "linux")]
    if let Err(error) =
        rustix::process::setpriority_process(Some(rustix::thread::gettid()), CHECKPOINT_NICENESS)
    {
        tracing::debug!(%error, "the checkpointer keeps its priority");
    }
}

/// Where the checkpointer makes the appender's next log file ready: created, written through
/// with zeros and its directory synced here, so the appender, which runs in a task serving
/// peers, only switches files.
pub(super) struct Spares {
    pub(super) dir: PathBuf,
    pub(super) prefill_bytes: u64,
    pub(super) ready: SyncSender<LogFile>,
}

impl Spares {
    /// Makes log file `number` ready and hands it to the appender, which takes it when it
    /// moves on to that number.
    pub(super) fn make_ready(&self, number: u64) {
        match LogFile::create(&self.dir, number, self.prefill_bytes) {
            // One waits at a time; another is not made until the appender takes it.
            Ok(spare) => {
                if let Err(std::sync::mpsc::TrySendError::Full(_)) = self.ready.try_send(spare) {
                    let _ = std::fs::remove_file(log::path_of(&self.dir, number));
                }
            }
            // The appender made this one itself, not finding it ready.
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            // The appender makes its own when none is ready.
            Err(error) => tracing::warn!(%error, number, "could not make the next log file ready"),
        }
    }
}

/// Sends redb's written pages to the disk between its durable checkpoints, through a handle
/// of our own on its file. It changes nothing a crash can see: the kernel may write those
/// pages at any moment anyway, and redb's own sync still reports a failed write to redb.
pub(super) struct Writeback {
    file: std::fs::File,
    every: Duration,
    last: Instant,
}

impl Writeback {
    /// Opens redb's file at `path` for sending its pages every `every`.
    pub(super) fn open(path: &std::path::Path, every: Duration) -> std::io::Result<Self> {
        Ok(Writeback {
            file: std::fs::File::open(path)?,
            every,
            last: Instant::now(),
        })
    }

    /// After a checkpoint: a durable one has just sent every page; after another, the pages
    /// are sent if `every` has passed since they last were.
    fn after_checkpoint(&mut self, durable: bool, counts: &StoreWrites) {
        if durable {
            self.last = Instant::now();
            return;
        }
        if self.last.elapsed() < self.every {
            return;
        }
        match self.file.sync_data() {
            Ok(()) => {
                counts.writebacks.fetch_add(1, Ordering::Relaxed);
            }
            // redb's durable checkpoint syncs the same pages and hears of the failure too.
            Err(error) => tracing::warn!(%error, "sending redb's pages to the disk failed"),
        }
        self.last = Instant::now();
    }
}

/// Applies `groups` to redb in one transaction, recording the last one's seq as applied;
/// `durable`: waits for the disk (and makes every earlier non-durable one durable too).
pub(super) fn commit_groups(
    db: &Database,
    groups: &[(u64, Vec<Logged>)],
    durable: bool,
    chain: &ChainKey,
) -> Result<(), String> {
    let last_seq = groups.last().map(|(seq, _)| *seq);
    if last_seq.is_none() && !durable {
        return Ok(());
    }
    let mut txn = db
        .begin_write()
        .map_err(|e| format!("starting a transaction: {e}"))?;
    if !durable {
        txn.set_durability(redb::Durability::None)
            .map_err(|e| format!("setting the durability: {e}"))?;
    }
    {
        let mut table = txn
            .open_table(REQUESTS)
            .map_err(|e| format!("opening the requests table: {e}"))?;
        let mut outbox = txn
            .open_table(OUTBOX)
            .map_err(|e| format!("opening the notifications table: {e}"))?;
        let mut follow_ups = txn
            .open_table(FOLLOW_UPS)
            .map_err(|e| format!("opening the follow-ups table: {e}"))?;
        let mut followers = txn
            .open_table(FOLLOWERS)
            .map_err(|e| format!("opening the followers table: {e}"))?;
        let mut kept = txn
            .open_table(KEPT)
            .map_err(|e| format!("opening the kept table: {e}"))?;
        let mut trails = TrailTables::open(&txn, chain)?;
        apply_all(
            &mut table,
            &mut outbox,
            &mut follow_ups,
            &mut followers,
            &mut kept,
            &mut trails,
            groups.iter().flat_map(|(_, changes)| changes),
        )?;
        if let Some(last_seq) = last_seq {
            txn.open_table(META)
                .and_then(|mut meta| {
                    meta.insert(APPLIED_KEY, last_seq)
                        .map(drop)
                        .map_err(Into::into)
                })
                .map_err(|e| format!("recording the log's place: {e}"))?;
        }
    }
    txn.commit().map_err(|e| format!("committing: {e}"))
}

/// The checkpointer's loop, until the syncer lets go of `queue`; what it holds then is
/// written before it returns.
pub(super) fn checkpoint_loop(
    db: &Database,
    queue: &Receiver<ToCheckpoint>,
    every: Duration,
    spares: &Spares,
    writeback: &mut Writeback,
    counts: &StoreWrites,
    chain: &ChainKey,
) {
    let mut held: Vec<(u64, Vec<Logged>)> = Vec::new();
    let mut changes_held = 0usize;
    // After a failed checkpoint the next waits its turn, however much is held.
    let mut failed = false;
    let mut closed: Vec<(PathBuf, u64)> = Vec::new();
    let mut flushes = Vec::new();
    // The last record redb holds, and the last a durable checkpoint holds.
    let mut applied = 0u64;
    let mut durably_applied = 0u64;
    let mut last = Instant::now();
    let mut last_durable = Instant::now();
    let mut open = true;
    // redb's pages and the batches come and go on this thread: what it frees is given back
    // when it has nothing left to do (crate::memory).
    let mut idle_collect = crate::memory::IdleCollect::default();
    while open {
        let next = if !held.is_empty() {
            queue.recv_timeout(every.saturating_sub(last.elapsed()))
        } else if applied > durably_applied {
            queue.recv_timeout(DURABLE_CHECKPOINT_EVERY.saturating_sub(last_durable.elapsed()))
        } else {
            idle_collect.going_idle();
            queue.recv().map_err(|_| RecvTimeoutError::Disconnected)
        };
        idle_collect.worked();
        match next {
            Ok(ToCheckpoint::Kept { seq, changes }) => {
                changes_held += changes.len();
                held.push((seq, changes));
            }
            Ok(ToCheckpoint::Closed {
                number,
                path,
                last_seq,
            }) => {
                closed.push((path, last_seq));
                spares.make_ready(number + 2);
            }
            Ok(ToCheckpoint::Flush(reply)) => flushes.push(reply),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => open = false,
        }
        let due = !flushes.is_empty()
            || !open
            || last.elapsed() >= every
            || (changes_held >= MOST_CHANGES_HELD && !failed);
        if !due {
            continue;
        }
        last = Instant::now();
        // The last record redb will hold once this checkpoint is in.
        let reached = held.last().map_or(applied, |(seq, _)| *seq);
        let durable = reached > durably_applied
            && (!open
                || last_durable.elapsed() >= DURABLE_CHECKPOINT_EVERY
                || closed.first().is_some_and(|(_, seq)| *seq <= reached));
        let result = commit_groups(db, &held, durable, chain);
        match &result {
            Ok(()) => {
                if !held.is_empty() {
                    counts.checkpoints.fetch_add(1, Ordering::Relaxed);
                }
                applied = reached;
                held.clear();
                changes_held = 0;
                failed = false;
                if durable {
                    durably_applied = applied;
                    last_durable = last;
                }
                delete_applied(&mut closed, durably_applied);
            }
            // What redb could not take stays held (and in the log): it is tried again at the
            // next checkpoint, and a restart replays it from the log.
            Err(error) => {
                failed = true;
                tracing::error!(%error, "the store's checkpoint failed; the log keeps its changes");
            }
        }
        for reply in flushes.drain(..) {
            let _ = reply.send(result.clone().map_err(StoreError::io));
        }
        // After the replies: a reader waiting for this checkpoint need not wait for the disk.
        if result.is_ok() {
            writeback.after_checkpoint(durable, counts);
        }
    }
}

/// Deletes the closed log files redb now holds all of, durably.
fn delete_applied(closed: &mut Vec<(PathBuf, u64)>, applied: u64) {
    closed.retain(|(path, last_seq)| {
        if *last_seq > applied {
            return true;
        }
        if let Err(error) = std::fs::remove_file(path) {
            tracing::warn!(path = %path.display(), %error, "a log file redb holds could not be deleted");
        }
        false
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::durable::log::tests::temp_dir;

    #[test]
    fn pages_are_sent_when_due_and_not_after_a_durable_checkpoint() {
        let dir = temp_dir("writeback");
        let path = dir.join("pages");
        std::fs::write(&path, [7u8; 4096]).unwrap();
        let counts = StoreWrites::default();
        let sent = || counts.writebacks.load(Ordering::Relaxed);
        let mut every_time = Writeback::open(&path, Duration::ZERO).unwrap();
        every_time.after_checkpoint(true, &counts);
        assert_eq!(sent(), 0, "a durable checkpoint has sent its pages itself");
        every_time.after_checkpoint(false, &counts);
        every_time.after_checkpoint(false, &counts);
        assert_eq!(sent(), 2);
        let mut hourly = Writeback::open(&path, Duration::from_secs(3600)).unwrap();
        hourly.after_checkpoint(false, &counts);
        assert_eq!(sent(), 2, "not due yet");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
