//! Forgetting ended requests: an outcome its agent acknowledged, or one kept past its
//! retention, leaves the hub, and its record is deleted from the store.
//!
//! Each deletion is handed to the store under the hub's lock, so a request asked again with the
//! same id is stored after the deletion, not deleted by it. A deletion the store fails is not
//! dropped: the record would come back at the next restart as an outcome nobody is waiting
//! for, and a re-ask of its id would get that stale outcome instead of asking anew. It is kept
//! and tried again at each sweep, unless a request has taken its id meanwhile (whose record
//! has replaced the old one).

use std::sync::{Arc, MutexGuard};

use futures_util::FutureExt as _;
use tokio::task::JoinHandle;

use askgate_protocol::{RequestId, SessionId};

use super::Hub;
use super::hub_core::{Forgotten, Sessions};
use super::request::EntryState;
use crate::clock::now_ms;
use crate::store::{Durability, StoreError, StoreOp, Verdict};

/// What an `ack` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckReply {
    /// The outcome was forgotten (or had been already).
    Forgotten,
    /// The request has not ended yet.
    NotResolved,
}

impl Hub {
    /// The agent has the outcome: forget it.
    pub async fn acknowledge(self: &Arc<Self>, session: &SessionId, id: &RequestId) -> AckReply {
        // Held as the shared store has it; if it cannot be reached, the deletion below fails
        // and is tried again at the next sweep.
        let _ = self.synced(session).await;
        let deleted = 'held: {
            let mut sessions = self.lock();
            let Some(state) = sessions.get_mut(session) else {
                break 'held None;
            };
            match state.requests.get(id).map(|e| &e.state) {
                Some(EntryState::Resolved(_)) => {
                    state.forget(id);
                }
                Some(_) => return AckReply::NotResolved,
                // Already forgotten: acks are idempotent.
                None if self.shared.is_none() => return AckReply::Forgotten,
                // This node's copy may be behind: the shared store decides.
                None => break 'held None,
            }
            self.drop_if_idle(&mut sessions, session);
            Some(self.delete_forgotten(&sessions, vec![(session.clone(), id.clone(), true)]))
        };
        let Some(deleted) = deleted else {
            return self.forget_unseen(session, id).await;
        };
        if let Some(deleting) = deleted {
            let _ = deleting.await;
        }
        AckReply::Forgotten
    }

    /// An ack of a request this node does not hold: on a shared store, deleted there (only if
    /// it has ended); on a local one, already forgotten.
    async fn forget_unseen(self: &Arc<Self>, session: &SessionId, id: &RequestId) -> AckReply {
        if self.shared.is_none() {
            return AckReply::Forgotten;
        }
        let op = StoreOp::Delete {
            session: session.clone(),
            id: id.clone(),
            acked: true,
        };
        match self.store_commit(vec![op]).await {
            Ok(verdicts) if verdicts.first() == Some(&Verdict::StillOpen) => AckReply::NotResolved,
            Ok(_) => AckReply::Forgotten,
            Err(error) => {
                // Kept for the next sweep, as a failed deletion of a held request is.
                tracing::warn!(%session, request = %id, %error, "could not delete an acknowledged outcome; tried again at the next sweep");
                self.undeleted().push((session.clone(), id.clone(), true));
                AckReply::Forgotten
            }
        }
    }

    /// Forgets outcomes whose retention ran out; returns how many. Deletions an earlier
    /// commit failed to make are tried again.
    pub async fn sweep(self: &Arc<Self>) -> usize {
        let now = now_ms();
        let retention_ms = u64::try_from(self.limits.retention.as_millis()).unwrap_or(u64::MAX);
        let mut forgotten = Vec::new();
        let deleted = {
            let mut sessions = self.lock();
            let ids: Vec<SessionId> = sessions.keys().cloned().collect();
            for session_id in ids {
                if let Some(session) = sessions.get_mut(&session_id) {
                    session.finished.prune(now);
                    for id in session.expired(now, retention_ms) {
                        session.forget(&id);
                        forgotten.push((session_id.clone(), id, false));
                    }
                }
                self.drop_if_idle(&mut sessions, &session_id);
            }
            let swept = forgotten.len();
            (swept, self.delete_forgotten(&sessions, forgotten))
        };
        let (swept, deleted) = deleted;
        if let Some(deleting) = deleted {
            let _ = deleting.await;
        }
        swept
    }

    /// Drops the audit trails whose newest entry is older than the audit retention.
    pub async fn drop_stale_trails(&self) {
        let now = now_ms();
        let retention = u64::try_from(self.limits.audit_retention.as_millis()).unwrap_or(u64::MAX);
        let Some(before_ms) = now.checked_sub(retention) else {
            return;
        };
        let op = StoreOp::DropStaleTrails { before_ms };
        if let Err(error) = self.store.commit(vec![op]).await {
            tracing::warn!(%error, "could not drop audit trails past their retention; tried again at the next sweep");
        }
    }

    /// Hands the store the deletion of `forgotten` and of every earlier one it failed to make
    /// whose id no request has taken since, under the lock held as `sessions`; what it could
    /// not delete is kept for the next sweep. The task, if any, is what to wait for until the
    /// store has taken it.
    fn delete_forgotten(
        self: &Arc<Self>,
        sessions: &MutexGuard<'_, Sessions>,
        mut forgotten: Vec<Forgotten>,
    ) -> Option<JoinHandle<()>> {
        // An earlier deletion is due again unless its id has been asked anew: once that ask is
        // stored, its record replaced the old one (nothing left to delete); while it is still
        // being stored, the deletion waits, since the store may yet refuse the new record.
        let mut waiting = Vec::new();
        for pair in self.undeleted().drain(..) {
            let (session, id, _) = &pair;
            match sessions.get(session).and_then(|s| s.requests.get(id)) {
                None => forgotten.push(pair),
                Some(entry) if entry.storing.is_some() => {
                    waiting.push(pair);
                }
                Some(_) => {}
            }
        }
        self.undeleted().extend(waiting);
        let ops: Vec<StoreOp> = forgotten
            .iter()
            .map(|(session, id, acked)| StoreOp::Delete {
                session: session.clone(),
                id: id.clone(),
                acked: *acked,
            })
            .collect();
        if ops.is_empty() {
            return None;
        }
        // Nothing is promised on a deletion: it waits for the store to take it, not for the
        // disk (a deletion lost to a crash of the machine only sends its agent the outcome
        // again, which it has and acks again).
        let (mut taken, mut durable) = self.store_commit_in_steps(ops, Durability::Lazy);
        // Weak: a deletion waiting for the disk must not keep a stopped gateway (and its
        // store) alive meanwhile.
        let hub = Arc::downgrade(self);
        let failed = move |error: StoreError| {
            let count = forgotten.len();
            tracing::warn!(%error, count, "could not delete forgotten outcomes from the store; tried again at the next sweep");
            if let Some(hub) = hub.upgrade() {
                hub.undeleted().extend(forgotten);
            }
        };
        // A local store takes it at once; the rest is finished in a task of its own, so that a
        // failed deletion is kept for the next sweep even when the caller stops waiting (an
        // HTTP ack whose client hung up): these pairs left `undeleted` above.
        match (&mut taken).now_or_never() {
            Some(Err(error)) => failed(error),
            Some(Ok(_)) => match (&mut durable).now_or_never() {
                Some(Ok(())) => {}
                Some(Err(error)) => failed(error),
                None => {
                    tokio::spawn(async move {
                        if let Err(error) = durable.await {
                            failed(error);
                        }
                    });
                }
            },
            None => {
                return Some(tokio::spawn(async move {
                    if let Err(error) = async {
                        taken.await?;
                        durable.await
                    }
                    .await
                    {
                        failed(error);
                    }
                }));
            }
        }
        None
    }

    fn undeleted(&self) -> MutexGuard<'_, Vec<Forgotten>> {
        self.undeleted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
