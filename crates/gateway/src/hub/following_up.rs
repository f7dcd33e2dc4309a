//! A request's follow-ups: reminded (its people told again) and escalated (more people added
//! and told), each once, when it is still open at its time. The request's follow-up timer
//! (`request::Ledger::follow_up_timer`) calls [`Hub::follow_up`]; the follow-up is committed
//! with its notifications before anyone sees it, like any change.

use std::sync::Arc;

use askgate_protocol::wire::AskedFollowUps;
use askgate_protocol::{RequestId, SessionId};

use super::hub_core::Hub;
use super::request::EntryState;
use crate::clock::now_ms;
use crate::store::{FollowUp, FollowUps, StoreOp, Verdict};

impl Hub {
    /// Makes `follow_up` of request `id` of `session`, if the request is open and it has not
    /// happened yet. One being ended waits to learn whether the ending is kept.
    pub(super) async fn follow_up(
        self: &Arc<Self>,
        session: &SessionId,
        id: &RequestId,
        follow_up: FollowUp,
    ) {
        let (to, facts) = loop {
            let waiting = {
                let mut sessions = self.lock();
                let Some(entry) = sessions
                    .get_mut(session)
                    .and_then(|state| state.requests.get_mut(id))
                else {
                    return;
                };
                let done = match follow_up {
                    FollowUp::Remind => entry.follow_ups.reminded,
                    FollowUp::Escalate => entry.follow_ups.escalated,
                };
                match &entry.state {
                    _ if done => return,
                    EntryState::Open => {
                        // Marked before the commit, so a second timer (a reopened request's)
                        // cannot make it twice; unmarked should the store fail.
                        entry.follow_ups.mark(follow_up);
                        let to = match follow_up {
                            FollowUp::Remind => Vec::new(),
                            FollowUp::Escalate => entry.follow_ups.escalate_to.clone(),
                        };
                        let facts = self
                            .notifier
                            .as_ref()
                            .and_then(|_| self.facts_of_entry(session, entry));
                        break (to, facts);
                    }
                    EntryState::Resolving => Arc::clone(&entry.resolved).notified_owned(),
                    EntryState::Committing | EntryState::Resolved(_) => return,
                }
            };
            waiting.await;
        };
        let at_ms = now_ms();
        let notify = self
            .notifier
            .as_ref()
            .zip(facts)
            .and_then(|(notifier, mut facts)| {
                if follow_up == FollowUp::Escalate
                    && let Some(answerers) = &mut facts.answerers
                {
                    answerers.extend(
                        to.iter()
                            .filter(|name| !answerers.contains(name))
                            .cloned()
                            .collect::<Vec<_>>(),
                    );
                }
                notifier.followed_up(&facts, follow_up, &to, at_ms)
            });
        let escalated_to = to.clone();
        let mut ops = vec![StoreOp::FollowedUp {
            session: session.clone(),
            id: id.clone(),
            follow_up,
            to,
            at_ms,
        }];
        ops.extend(notify.clone());
        let (session_id, request) = (session.clone(), id.clone());
        let kept = self
            .commit_then(ops, move |hub, committed| {
                let mut sessions = hub.lock();
                let Some(state) = sessions.get_mut(&session_id) else {
                    return false;
                };
                match committed.map(|verdicts| verdicts.first().cloned()) {
                    Ok(Some(Verdict::Done)) => {
                        match follow_up {
                            FollowUp::Remind => state.remind(&request),
                            FollowUp::Escalate => state.escalate(&request),
                        };
                        if follow_up == FollowUp::Escalate {
                            hub.announce_addressed(&session_id, escalated_to);
                        }
                        true
                    }
                    // A shared store found it ended, or made by another node (whose notice
                    // brings it here): nothing of this one's.
                    Ok(_) => false,
                    Err(error) => {
                        tracing::error!(session = %session_id, request = %request, ?follow_up, %error, "a follow-up could not be stored; it does not happen");
                        if let Some(entry) = state.requests.get_mut(&request) {
                            match follow_up {
                                FollowUp::Remind => entry.follow_ups.reminded = false,
                                FollowUp::Escalate => entry.follow_ups.escalated = false,
                            }
                        }
                        false
                    }
                }
            })
            .await
            .unwrap_or(false);
        if let (Some(notifier), Some(op)) = (&self.notifier, notify) {
            if kept {
                notifier.committed(op);
            } else {
                notifier.not_committed(op);
            }
        }
    }
}

impl Hub {
    /// When a request asked at `asked_at_ms` is reminded and escalated: as the ask says, or
    /// else as the notify file's first policy for `session` says.
    pub(super) fn follow_ups_of(
        &self,
        session: &SessionId,
        asked: &AskedFollowUps,
        asked_at_ms: u64,
    ) -> FollowUps {
        let policy = self
            .notifier
            .as_ref()
            .and_then(|notifier| notifier.policy(session.as_str()));
        let remind_after_ms = asked
            .remind_after_ms
            .or_else(|| policy.and_then(|p| p.remind_after_ms));
        let escalate = asked
            .escalate
            .clone()
            .or_else(|| policy.and_then(|p| p.escalate.clone()));
        FollowUps {
            remind_at_ms: remind_after_ms.map(|after| asked_at_ms.saturating_add(after)),
            reminded: false,
            escalate_at_ms: escalate
                .as_ref()
                .map(|(after, _)| asked_at_ms.saturating_add(*after)),
            escalate_to: escalate.map(|(_, to)| to).unwrap_or_default(),
            escalated: false,
        }
    }
}
