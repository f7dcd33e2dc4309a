//! The durable store's one writer thread: group commit (see the module above). Every
//! transaction waits for its `fdatasync` before anyone is told, a deletion's too: the audit
//! trail records an ack, and a trail must hold after a crash whatever its node said it did.

use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;

use redb::{Database, ReadableTable as _};
use tokio::sync::oneshot;

use super::trails::{AUDIT, HEADS, TrailTables};
use super::{REQUESTS, StoreError, StoreOp, StoredRequest};
use crate::audit::Note;
use crate::clock::now_ms;
use crate::metrics::StoreWrites;

/// Most commits folded into one transaction.
const MAX_GROUP: usize = 4096;

/// One caller's operations and where to report the commit.
pub(super) struct Job {
    pub(super) ops: Vec<StoreOp>,
    pub(super) done: oneshot::Sender<Result<(), StoreError>>,
}

/// Takes a job, folds in every job already waiting, commits once, counting the transaction.
pub(super) fn write_loop(db: &Database, queue: &Receiver<Job>, counts: &StoreWrites) {
    while let Ok(first) = queue.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let result = commit_group(db, &group);
        if result.is_ok() {
            counts.transactions.fetch_add(1, Ordering::Relaxed);
        }
        for job in group {
            let _ = job.done.send(result.clone().map_err(StoreError));
        }
    }
}

fn commit_group(db: &Database, group: &[Job]) -> Result<(), String> {
    let txn = db
        .begin_write()
        .map_err(|e| format!("starting a transaction: {e}"))?;
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
