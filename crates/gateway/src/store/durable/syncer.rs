//! The syncer: a thread of its own that waits for the disk (`fdatasync`) once for every record
//! the appender wrote meanwhile (group commit), then tells their callers and hands their
//! changes to the checkpointer, in the order they were written.
//!
//! A record nobody is promised anything on ([`Durability::Lazy`], an ack's deletion) does not
//! make the syncer wait for the disk by itself: it is made durable with the next record that
//! does, or after [`SYNC_LAZILY_WITHIN`] at the latest. Once a file's sync has failed, every
//! record of that file not yet durable fails too: the kernel may have dropped its pages, and
//! a later sync that succeeds would not say they are on the disk.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::StoreError;
use super::checkpoint::ToCheckpoint;
use super::logged::Logged;
use crate::metrics::StoreWrites;
use crate::store::Durability;

/// The longest a record nobody waits on stays written but not synced, by default
/// ([`LogSettings::sync_lazily_within`](super::LogSettings::sync_lazily_within)).
pub(super) const SYNC_LAZILY_WITHIN: Duration = Duration::from_millis(200);

/// Under load, the shortest time from one wait for the disk to the next. Each costs the
/// kernel (and, on a virtual disk, the hypervisor) about a tenth of a millisecond of CPU
/// however little it syncs; records written meanwhile share the next one instead. What waits
/// is an agent's `accepted` and `outcome`, never a tab's `request`.
pub(super) const SYNC_AT_MOST_EVERY: Duration = Duration::from_millis(2);

/// Records the last wait for the disk took for the syncer to be under load: fewer, and the
/// next wait comes at once (one caller committing at a time is not made to wait for others).
const PACED_FROM_RECORDS: usize = 4;

/// What the syncer is told, in the order it happened.
pub(super) enum ToSync {
    /// Record `seq` is written to log file number `file`.
    Written {
        seq: u64,
        file: u64,
        /// That file, to sync.
        synced_by: Arc<File>,
        changes: Vec<Logged>,
        done: oneshot::Sender<Result<(), StoreError>>,
        durability: Durability,
    },
    /// Log file `number` (at `path`) takes no more records; its last is `last_seq`.
    Closed {
        number: u64,
        path: PathBuf,
        last_seq: u64,
    },
    /// Make every record written so far durable, then have the checkpointer write it to redb
    /// and say whether that worked.
    Flush(oneshot::Sender<Result<(), StoreError>>),
}

impl ToSync {
    /// Whether someone waits on this now.
    fn is_prompt(&self) -> bool {
        match self {
            ToSync::Written { durability, .. } => *durability == Durability::Prompt,
            ToSync::Closed { .. } => false,
            ToSync::Flush(_) => true,
        }
    }
}

/// Records written and not yet synced, handed from the appender to the syncer. The syncer is
/// woken only when it waits for what was just handed over (not per record: while it syncs or
/// paces itself, records gather without a wake-up each).
#[derive(Default)]
pub(super) struct SyncQueue {
    queued: Mutex<Queued>,
    wake: Condvar,
}

#[derive(Default)]
struct Queued {
    messages: Vec<ToSync>,
    wake_for: WakeFor,
    /// The store is closing: nothing more comes.
    closed: bool,
}

/// What the syncer waits for, if it waits.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum WakeFor {
    /// It does not wait on the queue (it syncs, or paces itself).
    #[default]
    Nothing,
    /// Anything: it has nothing to sync.
    Anything,
    /// A prompt message: it has only lazy ones.
    Prompt,
}

impl SyncQueue {
    /// Hands `message` to the syncer.
    pub(super) fn send(&self, message: ToSync) {
        let mut queued = self.lock();
        let wake = match queued.wake_for {
            WakeFor::Nothing => false,
            WakeFor::Anything => true,
            WakeFor::Prompt => message.is_prompt(),
        };
        queued.messages.push(message);
        if wake {
            queued.wake_for = WakeFor::Nothing;
            drop(queued);
            self.wake.notify_one();
        }
    }

    /// Nothing more will be sent: the syncer makes what it holds durable and stops.
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_one();
    }

    fn lock(&self) -> MutexGuard<'_, Queued> {
        self.queued.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves what is queued into `batch` once there is something, or the queue is closed;
    /// `false` once it is closed and empty.
    fn take_some(&self, batch: &mut Vec<ToSync>) -> bool {
        let mut queued = self.lock();
        while queued.messages.is_empty() && !queued.closed {
            queued.wake_for = WakeFor::Anything;
            queued = self
                .wake
                .wait(queued)
                .unwrap_or_else(PoisonError::into_inner);
        }
        queued.wake_for = WakeFor::Nothing;
        batch.append(&mut queued.messages);
        !batch.is_empty()
    }

    /// Waits until `until`, or the closing: what is sent meanwhile wakes nobody.
    fn pause_until(&self, until: Instant) {
        let mut queued = self.lock();
        loop {
            let now = Instant::now();
            if queued.closed || now >= until {
                return;
            }
            queued = self
                .wake
                .wait_timeout(queued, until - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Moves what is queued into `batch`; unless `batch` then holds something prompt, waits for
    /// something prompt until `until` (or the closing) and takes that too.
    fn take_rest(&self, batch: &mut Vec<ToSync>, until: Instant) {
        let mut queued = self.lock();
        loop {
            batch.append(&mut queued.messages);
            let now = Instant::now();
            if queued.closed || now >= until || batch.iter().any(ToSync::is_prompt) {
                queued.wake_for = WakeFor::Nothing;
                return;
            }
            queued.wake_for = WakeFor::Prompt;
            queued = self
                .wake
                .wait_timeout(queued, until - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// The syncer thread's state.
pub(super) struct Syncer {
    /// Under load, the shortest time from one wait for the disk to the next.
    pub(super) at_most_every: Duration,
    /// The longest a record nobody waits on stays written but not synced.
    pub(super) lazily_within: Duration,
    pub(super) checkpointer: SyncSender<ToCheckpoint>,
    /// Shared with the appender: the number of the last file whose sync failed.
    pub(super) failed_file: Arc<AtomicU64>,
    pub(super) counts: Arc<StoreWrites>,
}

impl Syncer {
    /// Runs until the store closes `queue`; what was written is made durable before it
    /// returns.
    pub(super) fn run(self, queue: &SyncQueue) {
        let mut batch = Vec::new();
        // When the last wait for the disk began, if it took enough records to pace the next.
        let mut paced_from: Option<Instant> = None;
        while queue.take_some(&mut batch) {
            let first_came = Instant::now();
            // Paced: what is written meanwhile shares this wait for the disk.
            if let Some(last) = paced_from {
                queue.pause_until(last + self.at_most_every);
            }
            queue.take_rest(&mut batch, first_came + self.lazily_within);
            let records = batch.len();
            paced_from = (records >= PACED_FROM_RECORDS).then(Instant::now);
            self.settle(&mut batch);
        }
    }

    /// Waits for the disk once per file the batch wrote to, then tells everyone in order.
    fn settle(&self, batch: &mut Vec<ToSync>) {
        let mut synced: Vec<(u64, Result<(), String>)> = Vec::new();
        for message in batch.iter() {
            if let ToSync::Written {
                file, synced_by, ..
            } = message
                && !synced.iter().any(|(number, _)| number == file)
            {
                synced.push((*file, self.sync(*file, synced_by)));
            }
        }
        let verdict = |file: u64| {
            synced
                .iter()
                .find(|(number, _)| *number == file)
                .map_or(Ok(()), |(_, result)| result.clone())
        };
        let mut kept = Kept::default();
        for message in batch.drain(..) {
            match message {
                ToSync::Written {
                    seq,
                    file,
                    changes,
                    done,
                    ..
                } => match verdict(file) {
                    Ok(()) => kept.add(seq, changes, done),
                    Err(error) => {
                        let _ = done.send(Err(StoreError::io(error)));
                    }
                },
                ToSync::Closed {
                    number,
                    path,
                    last_seq,
                } => {
                    kept.hand_over(&self.checkpointer);
                    let _ = self.checkpointer.send(ToCheckpoint::Closed {
                        number,
                        path,
                        last_seq,
                    });
                }
                ToSync::Flush(reply) => {
                    kept.hand_over(&self.checkpointer);
                    if let Err(std::sync::mpsc::SendError(ToCheckpoint::Flush(reply))) =
                        self.checkpointer.send(ToCheckpoint::Flush(reply))
                    {
                        let stopped = "the store's checkpointer has stopped".to_owned();
                        let _ = reply.send(Err(StoreError::unavailable(stopped)));
                    }
                }
            }
        }
        kept.hand_over(&self.checkpointer);
    }

    /// Waits for the disk on log file `number`, unless an earlier wait on it failed.
    fn sync(&self, number: u64, file: &File) -> Result<(), String> {
        if self.failed_file.load(Ordering::Acquire) == number {
            return Err("an earlier wait for the disk failed on this log file".into());
        }
        match file.sync_data() {
            Ok(()) => {
                self.counts.syncs.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(error) => {
                tracing::error!(%error, number, "waiting for the disk failed on the store's log; moving to a new file");
                self.failed_file.store(number, Ordering::Release);
                Err(format!("waiting for the disk on the store's log: {error}"))
            }
        }
    }
}

/// Durable records not yet handed to the checkpointer, and their callers.
#[derive(Default)]
struct Kept {
    last_seq: Option<u64>,
    changes: Vec<Logged>,
    callers: Vec<oneshot::Sender<Result<(), StoreError>>>,
}

impl Kept {
    fn add(
        &mut self,
        seq: u64,
        mut changes: Vec<Logged>,
        done: oneshot::Sender<Result<(), StoreError>>,
    ) {
        self.last_seq = Some(seq);
        if self.changes.is_empty() {
            self.changes = changes;
        } else {
            self.changes.append(&mut changes);
        }
        self.callers.push(done);
    }

    /// Hands the changes to the checkpointer, then tells their callers: a reader who asks
    /// for a checkpoint after one of them heard sees them.
    fn hand_over(&mut self, checkpointer: &SyncSender<ToCheckpoint>) {
        let Some(seq) = self.last_seq.take() else {
            return;
        };
        let changes = std::mem::take(&mut self.changes);
        if checkpointer
            .send(ToCheckpoint::Kept { seq, changes })
            .is_err()
        {
            tracing::error!("the store's checkpointer has stopped; the log keeps the changes");
        }
        for done in self.callers.drain(..) {
            let _ = done.send(Ok(()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::durable::log::tests::temp_dir;

    /// Records written while the syncer was busy (here: before it started) share one wait
    /// for the disk, and every caller hears.
    #[test]
    fn records_written_meanwhile_share_one_wait_for_the_disk() {
        let dir = temp_dir("syncer-shared");
        let file = Arc::new(File::create(dir.join("log")).unwrap());
        let queue = SyncQueue::default();
        let mut heard = Vec::new();
        for seq in 1..=50 {
            let (done, hears) = oneshot::channel();
            queue.send(ToSync::Written {
                seq,
                file: 1,
                synced_by: Arc::clone(&file),
                changes: Vec::new(),
                done,
                durability: Durability::Prompt,
            });
            heard.push(hears);
        }
        queue.close();
        let (checkpointer, checkpoints) = std::sync::mpsc::sync_channel(64);
        let counts = Arc::new(StoreWrites::default());
        let syncer = Syncer {
            at_most_every: SYNC_AT_MOST_EVERY,
            lazily_within: SYNC_LAZILY_WITHIN,
            checkpointer,
            failed_file: Arc::default(),
            counts: Arc::clone(&counts),
        };
        syncer.run(&queue);
        assert_eq!(counts.syncs.load(Ordering::Relaxed), 1);
        for mut hears in heard {
            assert!(matches!(hears.try_recv(), Ok(Ok(()))));
        }
        let handed: Vec<u64> = checkpoints
            .try_iter()
            .filter_map(|message| match message {
                ToCheckpoint::Kept { seq, .. } => Some(seq),
                _ => None,
            })
            .collect();
        assert_eq!(handed, [50], "one hand-over, up to the last record");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
