//! Outcomes, on the agent's side, for sockets and HTTP alike: withdrawing a request, waiting
//! for (long-polling) or looking up its outcome, acknowledging it, and the sweep that forgets
//! outcomes kept past their retention. A forgotten outcome leaves the hub and its record is
//! deleted from the store.
//!
//! Each deletion is handed to the store under the hub's lock, so a request asked again with the
//! same id is stored after the deletion, not deleted by it. A deletion the store fails is not
//! dropped: the record would come back at the next restart as an outcome nobody is waiting
//! for, and a re-ask of its id would get that stale outcome instead of asking anew. It is kept
//! and tried again at each sweep, unless a request has taken its id meanwhile (whose record
//! has replaced the old one).

use std::sync::{Arc, MutexGuard, Weak};
use std::time::Duration;

use askgate_protocol::wire::Via;
use askgate_protocol::{RequestId, SessionId};
use futures_util::FutureExt as _;
use tokio::task::JoinHandle;

use super::Hub;
use super::asking::AskReply;
use super::ending::{Ending, Refusal};
use super::hub_core::{Forgotten, Sessions};
use super::peers::links::Link;
use super::request::{EntryState, OrphanStage};
use super::session::POLL_GRACE;
use crate::clock::now_ms;
use crate::store::{Durability, StoreError, StoreOp, StoredResolution};

/// What a lookup found.
#[derive(Clone, Debug)]
pub enum Lookup {
    /// No such request (never asked, or acked and forgotten).
    Unknown,
    /// Still open.
    Pending {
        /// When it times out, if ever.
        deadline_ms: Option<u64>,
    },
    /// Ended.
    Resolved(Box<StoredResolution>),
    /// The shared store could not be reached to find out.
    Unavailable(String),
}

/// What a withdrawal came to.
#[derive(Clone, Debug)]
pub enum Withdrawal {
    /// No such request (never asked, or acked and forgotten).
    Unknown,
    /// It ended: withdrawn now, or how it had already ended.
    Ended(Box<StoredResolution>),
    /// Another ending won while it was being withdrawn, and its outcome, sent to the asker,
    /// was acknowledged (so forgotten) before it could be looked up.
    Forgotten,
    /// The store could not keep the ending; the request stays open.
    Failed(String),
}

/// How long a gateway withdrawal of an orphaned request that the store could not keep waits
/// before it is tried again.
const ORPHAN_WITHDRAW_RETRY: Duration = Duration::from_secs(60);

impl Hub {
    /// Withdraws an open request, as `via` (its agent, an operator, the gateway): its
    /// outcome (`withdrawn`, or how it had already ended), which a socket's `asker` also
    /// receives as a frame.
    pub async fn withdraw(
        self: &Arc<Self>,
        session: &SessionId,
        id: &RequestId,
        asker: Option<&Link>,
        via: Via,
    ) -> Withdrawal {
        if let Err(error) = self.synced(session).await {
            return Withdrawal::Failed(error.to_string());
        }
        loop {
            let waiter = {
                let mut sessions = self.lock();
                let entry = sessions
                    .get_mut(session)
                    .and_then(|session| session.requests.get_mut(id));
                let Some(entry) = entry else {
                    return Withdrawal::Unknown;
                };
                if let Some(asker) = asker {
                    entry.asker = Some(asker.clone());
                }
                match (&entry.storing, &entry.state) {
                    // Withdrawn only once its ask has been answered `accepted` (or refused).
                    (Some(storing), _) => Arc::clone(storing).notified_owned(),
                    (None, EntryState::Resolved(resolution)) => {
                        let reply = AskReply::Resolved {
                            id: id.clone(),
                            resolution: resolution.clone(),
                        };
                        self.deliver(asker, session, &reply);
                        return Withdrawal::Ended(resolution.clone());
                    }
                    (None, _) => break,
                }
            };
            waiter.await;
        }
        // Withdraw; if another ending won meanwhile, that ending is the answer. A withdrawal
        // that won is answered as it was stored, not looked up again: its outcome has already
        // gone to the asker, which may have acknowledged it (and the hub forgotten it) first.
        match self.resolve(session, id, Ending::Withdrawn { via }).await {
            Ok(Some(resolution)) => return Withdrawal::Ended(Box::new(resolution)),
            Err(Refusal::Store(error)) => return Withdrawal::Failed(error),
            Ok(None) | Err(_) => {}
        }
        match self.wait_for(session, id, Duration::from_secs(30)).await {
            Lookup::Resolved(resolution) => Withdrawal::Ended(resolution),
            // Another ending won, its outcome went to the asker, and was acknowledged.
            Lookup::Unknown => Withdrawal::Forgotten,
            // The ending that won could not be stored either: the request is open again.
            Lookup::Pending { .. } => Withdrawal::Failed("the store did not keep it".into()),
            Lookup::Unavailable(error) => Withdrawal::Failed(error),
        }
    }

    /// Request `id` of `session` has been without its agent for its time: orphaned after the
    /// grace (tabs told), withdrawn by the gateway once orphaned long enough.
    pub(super) async fn orphan_due(
        self: &Arc<Self>,
        session: &SessionId,
        id: &RequestId,
        stage: OrphanStage,
        generation: u64,
    ) {
        let current = {
            let sessions = self.lock();
            sessions
                .get(session)
                .is_some_and(|state| state.orphan_timer_current(id, generation))
        };
        if !current {
            return;
        }
        // On a shared store the agent may wait on another node: the store is asked now, not
        // taken as it was at this node's last upkeep; unanswered, nothing is decided yet.
        if !self.share_presence_of(session).await {
            let mut sessions = self.lock();
            if let Some(state) = sessions.get_mut(session) {
                tracing::warn!(%session, request = %id, "the store's presence could not be read to judge whether a request's agent is gone; judged again in a minute");
                state.retry_orphan_stage(id, stage, ORPHAN_WITHDRAW_RETRY);
            }
            return;
        }
        let still_orphaned = {
            let mut sessions = self.lock();
            let Some(state) = sessions.get_mut(session) else {
                return;
            };
            match stage {
                OrphanStage::Grace => {
                    if state.orphan(id, generation) {
                        tracing::info!(%session, request = %id, "orphaned: its agent is gone");
                    }
                    return;
                }
                OrphanStage::Withdraw => state.requests.get(id).is_some_and(|entry| {
                    matches!(entry.state, EntryState::Open)
                        && entry.orphaned_since_ms.is_some()
                        && entry.orphan_generation == generation
                }),
            }
        };
        if still_orphaned {
            // On a task of its own: the timer that called this is the request's, and the
            // withdrawal ending the request stops it. `begin_ending` takes it only if the
            // request is still orphaned then.
            let (hub, session, id) = (Arc::clone(self), session.clone(), id.clone());
            tokio::spawn(async move {
                match hub.withdraw(&session, &id, None, Via::Gateway).await {
                    Withdrawal::Ended(resolution) if resolution.via == Some(Via::Gateway) => {
                        tracing::info!(%session, request = %id, "withdrawn: orphaned for --orphan-withdraw-after-s");
                    }
                    Withdrawal::Failed(error) => {
                        // Tried again after a pause, while it stays orphaned.
                        tracing::warn!(%session, request = %id, %error, "an orphaned request could not be withdrawn; trying again in a minute");
                        let mut sessions = hub.lock();
                        if let Some(state) = sessions.get_mut(&session) {
                            state.retry_withdrawal(&id, ORPHAN_WITHDRAW_RETRY);
                        }
                    }
                    _ => {}
                }
            });
        }
    }

    /// An agent's long-poll: the request's state, waiting up to `wait` for it to end. While
    /// it waits on an open request, tabs of the session see an agent waiting.
    pub async fn long_poll(
        self: &Arc<Self>,
        session: &SessionId,
        id: &RequestId,
        wait: Duration,
    ) -> Lookup {
        if let Err(error) = self.synced(session).await {
            return Lookup::Unavailable(error.to_string());
        }
        if wait.is_zero() {
            // A look without waiting is its agent too: its time without one starts again.
            let mut sessions = self.lock();
            if let Some(state) = sessions.get_mut(session) {
                state.attended(id);
                state.unattended(id);
            }
        }
        let _poll = (!wait.is_zero())
            .then(|| Poll::begin(self, session, id))
            .flatten();
        self.wait_for(session, id, wait).await
    }

    /// The request's state, waiting up to `wait` for it to end.
    pub async fn wait_for(&self, session: &SessionId, id: &RequestId, wait: Duration) -> Lookup {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let waiter = {
                let sessions = self.lock();
                let Some(entry) = sessions.get(session).and_then(|s| s.requests.get(id)) else {
                    return Lookup::Unknown;
                };
                match &entry.state {
                    EntryState::Resolved(resolution) => {
                        return Lookup::Resolved(resolution.clone());
                    }
                    _ if tokio::time::Instant::now() >= deadline => {
                        return Lookup::Pending {
                            deadline_ms: entry.deadline_ms,
                        };
                    }
                    _ => Arc::clone(&entry.resolved).notified_owned(),
                }
            };
            if tokio::time::timeout_at(deadline, waiter).await.is_err() {
                // One last look: it may have ended just as the wait ran out.
                continue;
            }
        }
    }
}

/// An HTTP long-poll waiting on a session, counted as an agent waiting there until dropped.
struct Poll {
    hub: Arc<Hub>,
    session: SessionId,
    id: RequestId,
}

impl Poll {
    /// Counts a poll on `session`, if request `id` is held there and has not ended.
    fn begin(hub: &Arc<Hub>, session: &SessionId, id: &RequestId) -> Option<Poll> {
        let mut sessions = hub.lock();
        let state = sessions.get_mut(session)?;
        let entry = state.requests.get_mut(id)?;
        if matches!(entry.state, EntryState::Resolved(_)) {
            return None;
        }
        entry.polls += 1;
        state.attended(id);
        state.begin_poll();
        Some(Poll {
            hub: Arc::clone(hub),
            session: session.clone(),
            id: id.clone(),
        })
    }
}

impl Drop for Poll {
    fn drop(&mut self) {
        let mut sessions = self.hub.lock();
        let Some(state) = sessions.get_mut(&self.session) else {
            return;
        };
        if let Some(entry) = state.requests.get_mut(&self.id) {
            entry.polls = entry.polls.saturating_sub(1);
            if entry.polls == 0 {
                state.unattended(&self.id);
            }
        }
        // Tabs hear the agent left only if no poll follows within the grace: one timer per
        // session, however many polls end.
        if !state.end_poll() {
            return;
        }
        drop(sessions);
        let hub = Arc::downgrade(&self.hub);
        let session = self.session.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(settle_presence_after_polls(hub, session));
        }
    }
}

/// Waits out the grace of the session's last long-poll (again, if another poll ended
/// meanwhile), then tells its tabs whether an agent is still waiting. Holds the hub only while
/// it looks: a gateway shutting down is not kept open by it.
async fn settle_presence_after_polls(hub: Weak<Hub>, session: SessionId) {
    let mut until = tokio::time::Instant::now() + POLL_GRACE;
    loop {
        tokio::time::sleep_until(until).await;
        let Some(hub) = hub.upgrade() else {
            return;
        };
        let mut sessions = hub.lock();
        let Some(state) = sessions.get_mut(&session) else {
            return;
        };
        match state.poll_grace_left() {
            Some(left) => until = tokio::time::Instant::now() + left,
            None => {
                state.refresh_presence();
                hub.drop_if_idle(&mut sessions, &session);
                return;
            }
        }
    }
}

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
                None if self.replica.is_none() => return AckReply::Forgotten,
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

    pub(super) fn undeleted(&self) -> MutexGuard<'_, Vec<Forgotten>> {
        self.undeleted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
