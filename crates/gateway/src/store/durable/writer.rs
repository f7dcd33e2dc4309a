//! The durable store's one writer thread: group commit, and which commits wait for a sync.
//!
//! Jobs that arrive while a commit is under way are folded into the next transaction, so
//! concurrent asks and answers share one `fdatasync`. A group made only of deletions (an
//! acknowledged outcome, one whose retention ran out, trails past theirs) is committed without
//! a sync: lost to a crash, an acknowledged outcome comes back and is offered to its agent
//! again, which de-duplicates it by id (the protocol's at-least-once delivery), and an
//! expired one is swept again. redb keeps such commits in order and makes them durable with
//! the next synced commit; if none comes within [`SYNC_WITHIN`] an empty synced commit does
//! it, and closing the database does too. What a restart must bring back (an accepted request, its
//! outcome, a refusal or link in the audit trail) is never in a group that skips the sync.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use redb::{Database, Durability, ReadableTable as _};
use tokio::sync::oneshot;

use super::trails::{AUDIT, HEADS, TrailTables};
use super::{REQUESTS, StoreError, StoreOp, StoredRequest};
use crate::audit::Note;
use crate::clock::now_ms;
use crate::metrics::StoreWrites;

/// Most commits folded into one transaction.
const MAX_GROUP: usize = 4096;

/// Longest a deletion committed without a sync waits for one.
pub(super) const SYNC_WITHIN: Duration = Duration::from_secs(1);

/// One caller's operations and where to report the commit.
pub(super) struct Job {
    pub(super) ops: Vec<StoreOp>,
    pub(super) done: oneshot::Sender<Result<(), StoreError>>,
}

/// Whether `op` may be lost to a crash without losing anything a restart must bring back.
fn may_skip_the_sync(op: &StoreOp) -> bool {
    matches!(op, StoreOp::Delete { .. } | StoreOp::DropStaleTrails { .. })
}

/// Takes a job, folds in every job already waiting, commits once; syncs what was committed
/// without one within [`SYNC_WITHIN`].
pub(super) fn write_loop(db: &Database, queue: &Receiver<Job>, counts: &StoreWrites) {
    let mut unsynced = false;
    loop {
        let first = if unsynced {
            match queue.recv_timeout(SYNC_WITHIN) {
                Ok(job) => job,
                Err(RecvTimeoutError::Timeout) => {
                    unsynced = !sync(db, counts);
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        } else {
            match queue.recv() {
                Ok(job) => job,
                Err(_) => break,
            }
        };
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let lazy = group
            .iter()
            .all(|job| job.ops.iter().all(may_skip_the_sync));
        let durability = if lazy {
            Durability::None
        } else {
            Durability::Immediate
        };
        let result = commit_group(db, &group, durability);
        if result.is_ok() {
            counts.transactions.fetch_add(1, Ordering::Relaxed);
            if lazy {
                unsynced = true;
            } else {
                counts.synced.fetch_add(1, Ordering::Relaxed);
                unsynced = false;
            }
        }
        for job in group {
            let _ = job.done.send(result.clone().map_err(StoreError));
        }
    }
    // Unsynced deletions left now are made durable by redb as the database closes.
}

/// An empty commit that waits for the sync, which makes every commit before it durable.
fn sync(db: &Database, counts: &StoreWrites) -> bool {
    let synced = db
        .begin_write()
        .map_err(|e| e.to_string())
        .and_then(|txn| txn.commit().map_err(|e| e.to_string()));
    match synced {
        Ok(()) => {
            counts.transactions.fetch_add(1, Ordering::Relaxed);
            counts.synced.fetch_add(1, Ordering::Relaxed);
            true
        }
        Err(error) => {
            tracing::warn!(%error, "syncing the store failed; tried again");
            false
        }
    }
}

fn commit_group(db: &Database, group: &[Job], durability: Durability) -> Result<(), String> {
    let mut txn = db
        .begin_write()
        .map_err(|e| format!("starting a transaction: {e}"))?;
    txn.set_durability(durability)
        .map_err(|e| format!("choosing the commit's durability: {e}"))?;
    {
        let mut table = txn
            .open_table(REQUESTS)
            .map_err(|e| format!("opening the requests table: {e}"))?;
        let mut trails = TrailTables {
            entries: txn
                .open_table(AUDIT)
                .map_err(|e| format!("opening the audit table: {e}"))?,
            heads: txn
                .open_table(HEADS)
                .map_err(|e| format!("opening the audit heads: {e}"))?,
        };
        let now = now_ms();
        for op in group.iter().flat_map(|job| &job.ops) {
            if let Some(note) = Note::of(op, now) {
                trails.record(&note)?;
            }
            if let StoreOp::DropStaleTrails { before_ms } = op {
                trails.drop_stale(*before_ms)?;
            }
            apply(&mut table, op)?;
        }
    }
    txn.commit().map_err(|e| format!("committing: {e}"))
}

fn apply(table: &mut redb::Table<'_, (&str, &str), &[u8]>, op: &StoreOp) -> Result<(), String> {
    match op {
        StoreOp::Put(request) => {
            let bytes = serde_json::to_vec(request).map_err(|e| format!("encoding: {e}"))?;
            table
                .insert(
                    (request.session.as_str(), request.id.as_str()),
                    bytes.as_slice(),
                )
                .map_err(|e| format!("writing a request: {e}"))?;
        }
        StoreOp::Resolve {
            session,
            id,
            resolution,
            ..
        } => {
            let key = (session.as_str(), id.as_str());
            let current = table
                .get(key)
                .map_err(|e| format!("reading a request: {e}"))?
                .map(|v| v.value().to_vec());
            if let Some(bytes) = current {
                let mut request: StoredRequest = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("decoding a request: {e}"))?;
                request.resolution = Some(resolution.clone());
                let bytes = serde_json::to_vec(&request).map_err(|e| format!("encoding: {e}"))?;
                table
                    .insert(key, bytes.as_slice())
                    .map_err(|e| format!("writing a resolution: {e}"))?;
            }
        }
        StoreOp::Delete { session, id, .. } => {
            table
                .remove((session.as_str(), id.as_str()))
                .map_err(|e| format!("deleting a request: {e}"))?;
        }
        // Trail changes only, made by the caller.
        StoreOp::Note(_) | StoreOp::DropStaleTrails { .. } => {}
    }
    Ok(())
}
