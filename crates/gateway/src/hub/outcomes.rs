//! A request's later life on the agent's side, for sockets and HTTP alike: withdrawing it, and
//! waiting for (or looking up) its outcome. Acknowledging it is [`forgetting`](super::forgetting).

use std::sync::{Arc, Weak};
use std::time::Duration;

use askgate_protocol::{RequestId, SessionId};

use super::Hub;
use super::asking::AskReply;
use super::links::Link;
use super::request::EntryState;
use super::resolving::{Ending, Refusal};
use super::session::POLL_GRACE;
use crate::store::StoredResolution;

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

impl Hub {
    /// Withdraws an open request: its outcome (`withdrawn`, or how it had already ended),
    /// which a socket's `asker` also receives as a frame.
    pub async fn withdraw(
        self: &Arc<Self>,
        session: &SessionId,
        id: &RequestId,
        asker: Option<&Link>,
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
        match self.resolve(session, id, Ending::Withdrawn).await {
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
}

impl Poll {
    /// Counts a poll on `session`, if request `id` is held there and has not ended.
    fn begin(hub: &Arc<Hub>, session: &SessionId, id: &RequestId) -> Option<Poll> {
        let mut sessions = hub.lock();
        let state = sessions.get_mut(session)?;
        let entry = state.requests.get(id)?;
        if matches!(entry.state, EntryState::Resolved(_)) {
            return None;
        }
        state.begin_poll();
        Some(Poll {
            hub: Arc::clone(hub),
            session: session.clone(),
        })
    }
}

impl Drop for Poll {
    fn drop(&mut self) {
        let mut sessions = self.hub.lock();
        let Some(state) = sessions.get_mut(&self.session) else {
            return;
        };
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
