//! Appending to the log, in the committing caller's thread: each commit is one record, written
//! to the kernel before `commit` returns, so a crash of the process no longer loses it and what
//! it holds may be shown at once. Waiting for the disk is the syncer's ([`super::syncer`]),
//! for every record written meanwhile at once, on a thread of its own: the caller's thread
//! goes on serving while the disk works.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use tokio::sync::oneshot;

use super::StoreError;
use super::log::{self, LogFile};
use super::logged::{Logged, log_op};
use super::syncer::{SyncQueue, ToSync};
use crate::audit::chain::AuditKey;
use crate::clock::now_ms;
use crate::metrics::StoreWrites;
use crate::store::{Durability, StoreOp};

/// How long the appender waits for the checkpointer to finish making ready the file it is
/// moving on to, should the two meet.
const SPARE_WAIT: Duration = Duration::from_secs(1);

/// Where a record's caller hears that it is durable, or that it could not be made so.
pub(super) type Durable = oneshot::Receiver<Result<(), StoreError>>;

/// The log as the appender holds it (behind the store's lock).
pub(super) struct Appender {
    pub(super) dir: PathBuf,
    pub(super) file: LogFile,
    /// The seq of the next record.
    pub(super) next_seq: u64,
    /// The current file may end in a torn record and no new one could be started: nothing
    /// is appended until one is.
    pub(super) broken: bool,
    /// A file takes no more records once it holds this many bytes.
    pub(super) rotate_at_bytes: u64,
    /// The next file, made ready by the checkpointer.
    pub(super) spares: Receiver<LogFile>,
    /// Written records, for the syncer.
    pub(super) to_sync: Arc<SyncQueue>,
    /// The number of the last log file whose sync failed (0: none): what the disk may have
    /// dropped there cannot be trusted, so the appender moves on to a new file.
    pub(super) failed_file: Arc<AtomicU64>,
    /// A record's payload, kept between appends.
    pub(super) payload: Vec<u8>,
    pub(super) counts: Arc<StoreWrites>,
    /// The audit key, on a store whose chains are keyed: each record carries its MAC under
    /// it, so that a record rewritten without it is not sealed into the chain at replay.
    pub(super) key: Option<Arc<AuditKey>>,
}

impl Appender {
    /// Writes `ops` as the next record; the receiver hears once it is durable.
    pub(super) fn append(
        &mut self,
        ops: Vec<StoreOp>,
        durability: Durability,
    ) -> Result<Durable, StoreError> {
        let mut changes = Vec::with_capacity(ops.len() + 1);
        let now = now_ms();
        for op in ops {
            log_op(op, now, &mut changes).map_err(StoreError::internal)?;
        }
        if self.failed_file.load(Ordering::Acquire) == self.file.number() {
            self.start_next_file();
        }
        let seq = self.write(&changes).map_err(StoreError::io)?;
        self.counts.transactions.fetch_add(1, Ordering::Relaxed);
        let (done, durable) = oneshot::channel();
        let written = ToSync::Written {
            seq,
            file: self.file.number(),
            synced_by: Arc::clone(self.file.synced_by()),
            changes,
            done,
            durability,
        };
        self.to_sync.send(written);
        self.rotate_if_full();
        Ok(durable)
    }

    /// Writes `changes` as the next record; its seq.
    fn write(&mut self, changes: &[Logged]) -> Result<u64, String> {
        if self.broken {
            self.start_next_file();
            if self.broken {
                return Err(
                    "the store's log cannot be written: no new log file could be started".into(),
                );
            }
        }
        self.payload.clear();
        serde_json::to_writer(&mut self.payload, changes).map_err(|e| format!("encoding: {e}"))?;
        let seq = self.next_seq;
        match self
            .file
            .write_record(seq, &self.payload, self.key.as_deref())
        {
            Ok(()) => {
                self.next_seq += 1;
                Ok(seq)
            }
            Err((error, unusable)) => {
                if unusable {
                    // A torn record may end this file: the next one starts afresh.
                    self.broken = true;
                    self.start_next_file();
                }
                Err(format!("writing the store's log: {error}"))
            }
        }
    }

    /// Starts a new log file once this one is big enough; the checkpointer deletes the old
    /// one once redb holds it.
    fn rotate_if_full(&mut self) {
        if self.file.len() >= self.rotate_at_bytes {
            self.start_next_file();
        }
    }

    /// Moves on to the next log file: the one the checkpointer made ready (created, written
    /// through with zeros and synced away from this thread, which serves peers), or, if it has
    /// none yet, a new one not prefilled. The syncer hears of the old one's closing after its
    /// last record.
    fn start_next_file(&mut self) {
        let number = self.file.number() + 1;
        let next = match self.spares.try_recv() {
            Ok(spare) if spare.number() == number => Ok(spare),
            other => {
                // One made for another number (this thread made its own meanwhile) holds
                // nothing: it goes, so that its number is free when its turn comes.
                if let Ok(stale) = other {
                    let _ = std::fs::remove_file(log::path_of(&self.dir, stale.number()));
                }
                match LogFile::create(&self.dir, number, 0) {
                    // The checkpointer is making this very file ready: it comes within moments
                    // (only when files fill faster than it makes them, as in tests).
                    Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => self
                        .spares
                        .recv_timeout(SPARE_WAIT)
                        .ok()
                        .filter(|spare| spare.number() == number)
                        .ok_or(error),
                    created => created,
                }
            }
        };
        match next {
            Ok(file) => {
                self.broken = false;
                let closed = std::mem::replace(&mut self.file, file);
                self.to_sync.send(ToSync::Closed {
                    number: closed.number(),
                    path: log::path_of(&self.dir, closed.number()),
                    last_seq: self.next_seq - 1,
                });
            }
            Err(error) => {
                tracing::warn!(%error, number, "could not start a new log file; appending to the current one");
            }
        }
    }
}
