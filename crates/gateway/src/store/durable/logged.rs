//! What the log keeps of a commit, and how redb takes it.
//!
//! A [`StoreOp`] becomes the changes it makes: rows to put, resolve or delete, and its audit
//! entry as the time and members to seal (sealing needs the chain's head, which redb holds).
//! The checkpointer applies these as they come from the writer; a restart applies them as read
//! back from the log; both through [`apply`], so the two cannot disagree.

use redb::ReadableTable as _;
use serde::{Deserialize, Serialize};

use askgate_protocol::{RequestId, SessionId};

use super::trails::TrailTables;
use crate::audit::{Note, tail};
use crate::store::{StoreOp, StoredRequest, StoredResolution};

/// One change redb is to take.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) enum Logged {
    /// Keep a request, replacing any of the same id.
    Put(StoredRequest),
    /// Record how a request ended (nothing, if it is not kept).
    Resolve {
        session: SessionId,
        id: RequestId,
        resolution: StoredResolution,
    },
    /// Forget a request.
    Delete { session: SessionId, id: RequestId },
    /// Seal an entry onto `session`'s audit trail.
    Audit {
        session: SessionId,
        at_ms: u64,
        /// Its members after `seq` and `at_ms` ([`tail`]).
        tail: String,
    },
    /// Drop the audit trails whose newest entry is older than `before_ms`, whole.
    DropStaleTrails { before_ms: u64 },
}

/// Appends to `out` the changes `op` makes, committed at `now_ms`: its audit entry first, as
/// it was recorded before the change it records.
pub(super) fn log_op(op: StoreOp, now_ms: u64, out: &mut Vec<Logged>) {
    if let Some(note) = Note::of(&op, now_ms) {
        out.push(Logged::Audit {
            session: note.session.clone(),
            at_ms: note.at_ms,
            tail: tail(&note),
        });
    }
    match op {
        StoreOp::Put(request) => out.push(Logged::Put(request)),
        StoreOp::Resolve {
            session,
            id,
            resolution,
            ..
        } => out.push(Logged::Resolve {
            session,
            id,
            resolution,
        }),
        StoreOp::Delete { session, id, .. } => out.push(Logged::Delete { session, id }),
        StoreOp::DropStaleTrails { before_ms } => out.push(Logged::DropStaleTrails { before_ms }),
        StoreOp::Note(_) => {}
    }
}

/// Applies `change` in the write transaction whose tables these are.
pub(super) fn apply(
    table: &mut redb::Table<'_, (&str, &str), &[u8]>,
    trails: &mut TrailTables<'_>,
    change: &Logged,
) -> Result<(), String> {
    match change {
        Logged::Put(request) => {
            let bytes = serde_json::to_vec(request).map_err(|e| format!("encoding: {e}"))?;
            table
                .insert(
                    (request.session.as_str(), request.id.as_str()),
                    bytes.as_slice(),
                )
                .map_err(|e| format!("writing a request: {e}"))?;
        }
        Logged::Resolve {
            session,
            id,
            resolution,
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
        Logged::Delete { session, id } => {
            table
                .remove((session.as_str(), id.as_str()))
                .map_err(|e| format!("deleting a request: {e}"))?;
        }
        Logged::Audit {
            session,
            at_ms,
            tail,
        } => trails.record(session.as_str(), *at_ms, tail)?,
        Logged::DropStaleTrails { before_ms } => trails.drop_stale(*before_ms)?,
    }
    Ok(())
}
