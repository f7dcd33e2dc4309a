//! The agent's side: open a session, ask (idempotently), withdraw, acknowledge.

use std::sync::Arc;

use askgate_protocol::wire::{AskFrame, CheckedAsk, OutcomeFrame, RequestView, ToAgent, ToTab};
use askgate_protocol::{ErrorCode, FieldError, RequestId, SessionId};
use tokio::sync::Notify;

use super::entry::{Entry, EntryState};
use super::links::{AgentHandle, Frame};
use super::session::{generated_request_id, generated_session_id};
use crate::clock::now_ms;
use crate::metrics::{count, gauge_add};
use crate::store::{StoreOp, StoredRequest, StoredResolution};

impl AgentHandle {
    fn reply(&self, message: &ToAgent) {
        self.link.send(Frame::encode(message), &self.hub.metrics);
    }

    fn error(&self, code: &str, message: impl Into<String>) {
        self.reply(&ToAgent::Error {
            code: code.to_owned(),
            message: message.into(),
        });
    }

    fn rejected(&self, session: &str, id: Option<&str>, errors: Vec<FieldError>) {
        count(&self.hub.metrics.rejected_asks);
        self.reply(&ToAgent::Rejected {
            session: session.to_owned(),
            id: id.map(str::to_owned),
            errors,
        });
    }

    /// `open`: creates the session if new and replies `opened` with the viewer link.
    pub fn open(&self, session: Option<&str>) {
        let id = match session {
            None => generated_session_id(),
            Some(text) => match SessionId::parse(text) {
                Ok(id) => id,
                Err(message) => return self.error("bad_session", message),
            },
        };
        let hub = &self.hub;
        let mut sessions = hub.lock();
        let Some(session) = hub.session_entry(&mut sessions, &id) else {
            return self.error(
                "unavailable",
                "the gateway holds the most sessions allowed; try again later",
            );
        };
        hub.attach_agent_to(session, &self.link);
        self.reply(&ToAgent::Opened {
            session: id.to_string(),
            viewer_url: hub.keys.viewer_url(&id),
        });
    }

    /// `ask`: validates, stores, and shows the request to every tab; replies `accepted` (or the
    /// stored `outcome` for a repeat of a resolved request) or `rejected`.
    pub async fn ask(&self, frame: &AskFrame) {
        match frame.check(self.hub.limits.max_timeout_s) {
            Ok(checked) => self.ask_checked(checked).await,
            Err(errors) => self.rejected(&frame.session, frame.id.as_deref(), errors),
        }
    }

    async fn ask_checked(&self, ask: CheckedAsk) {
        let hub = &self.hub;
        let id = ask.id.clone().unwrap_or_else(generated_request_id);
        let session_text = ask.session.to_string();
        let questions = Arc::new(ask.questions);
        let record = loop {
            let waiter = {
                let mut sessions = hub.lock();
                let Some(session) = hub.session_entry(&mut sessions, &ask.session) else {
                    return self.rejected(
                        &session_text,
                        Some(id.as_str()),
                        vec![FieldError::new(
                            "session",
                            ErrorCode::InvalidValue,
                            "the gateway holds the most sessions allowed; try again later",
                        )],
                    );
                };
                hub.attach_agent_to(session, &self.link);
                match session.requests.get_mut(&id) {
                    Some(entry) if *entry.questions != *questions => {
                        return self.rejected(&session_text, Some(id.as_str()), vec![FieldError::new(
                            "id",
                            ErrorCode::InvalidValue,
                            "this request id is already used in this session by different questions",
                        )]);
                    }
                    Some(entry) => match &entry.state {
                        EntryState::Committing(notify) => Arc::clone(notify).notified_owned(),
                        EntryState::Open | EntryState::Resolving => {
                            entry.asker = Some(self.link.clone());
                            return self.reply(&ToAgent::Accepted {
                                session: session_text,
                                id: id.to_string(),
                                deadline_ms: entry.view.deadline_ms,
                                viewer_url: hub.keys.viewer_url(&ask.session),
                            });
                        }
                        EntryState::Resolved(resolution) => {
                            entry.asker = Some(self.link.clone());
                            return self.reply(&outcome_message(&ask.session, &id, resolution));
                        }
                    },
                    None => {
                        if session.unresolved >= hub.limits.open_requests_per_session {
                            return self.rejected(&session_text, Some(id.as_str()), vec![FieldError::new(
                                "",
                                ErrorCode::TooManyItems,
                                format!(
                                    "this session already has {} open requests, the most allowed",
                                    hub.limits.open_requests_per_session
                                ),
                            )]);
                        }
                        let asked_at_ms = now_ms();
                        let view = RequestView {
                            id: id.to_string(),
                            dialect: questions.dialect(),
                            title: ask.title.clone(),
                            questions: questions.to_json(),
                            asked_at_ms,
                            deadline_ms: ask.timeout_ms.map(|t| asked_at_ms.saturating_add(t)),
                        };
                        let record = StoredRequest {
                            session: ask.session.clone(),
                            id: id.clone(),
                            dialect: view.dialect,
                            questions: view.questions.clone(),
                            title: view.title.clone(),
                            asked_at_ms,
                            deadline_ms: view.deadline_ms,
                            resolution: None,
                        };
                        let seq = session.next_seq;
                        session.next_seq += 1;
                        session.unresolved += 1;
                        session.requests.insert(
                            id.clone(),
                            Entry {
                                id: id.clone(),
                                seq,
                                questions: Arc::clone(&questions),
                                request_frame: Frame::encode(&ToTab::Request {
                                    request: view.clone(),
                                }),
                                view,
                                asker: Some(self.link.clone()),
                                state: EntryState::Committing(Arc::new(Notify::new())),
                                timer: None,
                            },
                        );
                        break record;
                    }
                }
            };
            // A twin ask is being stored: wait for it, then answer as for any repeat.
            waiter.await;
        };
        let deadline_ms = record.deadline_ms;
        let committed = hub.store.commit(vec![StoreOp::Put(record)]).await;
        let mut sessions = hub.lock();
        let Some(session) = sessions.get_mut(&ask.session) else {
            return;
        };
        let Some(entry) = session.requests.get_mut(&id) else {
            return;
        };
        let EntryState::Committing(notify) = &entry.state else {
            return;
        };
        let notify = Arc::clone(notify);
        if let Err(error) = committed {
            tracing::error!(session = %ask.session, request = %id, %error, "could not store a request");
            session.requests.remove(&id);
            session.unresolved -= 1;
            notify.notify_waiters();
            drop(sessions);
            return self.rejected(
                &session_text,
                Some(id.as_str()),
                vec![FieldError::new(
                    "",
                    ErrorCode::InvalidValue,
                    format!("the gateway could not store the request ({error}); try again"),
                )],
            );
        }
        entry.state = EntryState::Open;
        if let Some(deadline_ms) = deadline_ms {
            entry.timer = Some(hub.arm_timer(&ask.session, &id, deadline_ms));
        }
        gauge_add(&hub.metrics.open_requests, 1);
        tracing::debug!(session = %ask.session, request = %id, "accepted");
        // `accepted` is queued before any tab can see the request, so it precedes the outcome.
        self.reply(&ToAgent::Accepted {
            session: session_text,
            id: id.to_string(),
            deadline_ms,
            viewer_url: hub.keys.viewer_url(&ask.session),
        });
        let request_frame = entry.request_frame.clone();
        session.broadcast(&request_frame, &hub.metrics);
        notify.notify_waiters();
    }

    /// `cancel`: withdraws an open request; for one already resolved, re-sends its outcome.
    pub async fn cancel(&self, session: &str, id: &str) {
        let (Ok(session), Ok(id)) = (SessionId::parse(session), RequestId::parse(id)) else {
            return self.error("not_found", "no such request");
        };
        loop {
            let waiter = {
                let mut sessions = self.hub.lock();
                let entry = sessions
                    .get_mut(&session)
                    .and_then(|s| s.requests.get_mut(&id));
                match entry {
                    None => {
                        return self
                            .error("not_found", format!("no request {id} in session {session}"));
                    }
                    Some(entry) => {
                        entry.asker = Some(self.link.clone());
                        match &entry.state {
                            EntryState::Committing(notify) => Arc::clone(notify).notified_owned(),
                            EntryState::Resolved(resolution) => {
                                return self.reply(&outcome_message(&session, &id, resolution));
                            }
                            // A resolution in flight reaches this agent as the asker.
                            EntryState::Resolving => return,
                            EntryState::Open => break,
                        }
                    }
                }
            };
            waiter.await;
        }
        let _ = self
            .hub
            .resolve(&session, &id, super::resolving::Ending::Withdrawn)
            .await;
    }

    /// `ack`: the agent has the outcome; forget it.
    pub async fn ack(&self, session: &str, id: &str) {
        let (Ok(session), Ok(id)) = (SessionId::parse(session), RequestId::parse(id)) else {
            return;
        };
        {
            let mut sessions = self.hub.lock();
            let Some(state) = sessions.get_mut(&session) else {
                return;
            };
            match state.requests.get(&id).map(|e| &e.state) {
                Some(EntryState::Resolved(_)) => {
                    state.requests.remove(&id);
                    gauge_add(&self.hub.metrics.kept_outcomes, -1);
                }
                Some(_) => {
                    drop(sessions);
                    return self.error("not_resolved", format!("request {id} has no outcome yet"));
                }
                // Already forgotten: acks are idempotent.
                None => return,
            }
            self.hub.drop_if_idle(&mut sessions, &session);
        }
        if let Err(error) = self
            .hub
            .store
            .commit(vec![StoreOp::Delete { session, id }])
            .await
        {
            tracing::warn!(%error, "could not delete an acked outcome; it stays in the store");
        }
    }
}

/// The `outcome` frame of a resolved request.
pub(super) fn outcome_message(
    session: &SessionId,
    id: &RequestId,
    resolution: &StoredResolution,
) -> ToAgent {
    ToAgent::Outcome(OutcomeFrame {
        session: session.to_string(),
        id: id.to_string(),
        settlement: resolution.settlement.clone(),
        by: resolution.by.clone(),
        at_ms: resolution.at_ms,
    })
}
