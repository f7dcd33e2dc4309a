//! The durable store's one writer thread: group commit into the log (see the module above).
//! Every group waits for its `fdatasync` before anyone is told, a deletion's too: the audit
//! trail records an ack, and a trail must hold after a crash whatever its node said it did.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, SyncSender};

use tokio::sync::oneshot;

use super::StoreError;
use super::checkpoint::ToCheckpoint;
use super::log::{self, LogFile};
use super::logged::{Logged, log_op};
use crate::clock::now_ms;
use crate::metrics::StoreWrites;
use crate::store::StoreOp;

/// Most commits folded into one group.
const MAX_GROUP: usize = 4096;

/// One caller's operations and where to report the commit.
pub(super) struct Job {
    pub(super) ops: Vec<StoreOp>,
    pub(super) done: oneshot::Sender<Result<(), StoreError>>,
}

/// The log as the writer holds it.
pub(super) struct Writer {
    pub(super) dir: PathBuf,
    pub(super) file: LogFile,
    /// The seq of the next group.
    pub(super) next_seq: u64,
    pub(super) checkpointer: SyncSender<ToCheckpoint>,
    /// The current file may end in a torn record and no new one could be started: nothing
    /// is appended until one is.
    pub(super) broken: bool,
    /// A file takes no more records once it holds this many bytes.
    pub(super) rotate_at_bytes: u64,
    /// The next file, made ready by the checkpointer.
    pub(super) spares: Receiver<(LogFile, PathBuf)>,
}

impl Writer {
    /// Takes a job, folds in every job already waiting, keeps them in the log as one record,
    /// hands the changes to the checkpointer, then tells the callers.
    pub(super) fn run(mut self, queue: &Receiver<Job>, counts: &StoreWrites) {
        let mut payload = Vec::new();
        while let Ok(first) = queue.recv() {
            let mut group = vec![first];
            while group.len() < MAX_GROUP {
                match queue.try_recv() {
                    Ok(job) => group.push(job),
                    Err(_) => break,
                }
            }
            let now = now_ms();
            let mut changes = Vec::new();
            for job in &mut group {
                for op in std::mem::take(&mut job.ops) {
                    log_op(op, now, &mut changes);
                }
            }
            let kept = self.keep(&changes, &mut payload);
            if let Ok(seq) = kept {
                counts.transactions.fetch_add(1, Ordering::Relaxed);
                // Before the callers hear: a reader who asks for a checkpoint after one of
                // them did sees this group.
                if self
                    .checkpointer
                    .send(ToCheckpoint::Kept { seq, changes })
                    .is_err()
                {
                    tracing::error!(
                        "the store's checkpointer has stopped; the log keeps the changes"
                    );
                }
                self.rotate_if_full();
            }
            let result = kept.map(drop);
            for job in group {
                let _ = job.done.send(result.clone().map_err(StoreError));
            }
        }
    }

    /// Appends `changes` as the next record and waits for the disk; the record's seq.
    fn keep(&mut self, changes: &[Logged], payload: &mut Vec<u8>) -> Result<u64, String> {
        if self.broken {
            self.start_next_file();
            if self.broken {
                return Err(
                    "the store's log cannot be written: no new log file could be started".into(),
                );
            }
        }
        payload.clear();
        serde_json::to_writer(&mut *payload, changes).map_err(|e| format!("encoding: {e}"))?;
        match self.file.append(self.next_seq, payload) {
            Ok(()) => {
                self.next_seq += 1;
                Ok(self.next_seq - 1)
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

    /// Moves on to the next log file: the one the checkpointer made ready (written through
    /// with zeros away from this thread), or, if it has none yet, a new one not prefilled.
    fn start_next_file(&mut self) {
        let number = self.file.number() + 1;
        let next = match self.spares.try_recv() {
            Ok((spare, path)) => spare.adopt(&path, &self.dir, number),
            Err(_) => LogFile::create(&self.dir, number, 0),
        };
        match next {
            Ok(file) => {
                self.broken = false;
                let closed = std::mem::replace(&mut self.file, file);
                let _ = self.checkpointer.send(ToCheckpoint::Closed {
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
