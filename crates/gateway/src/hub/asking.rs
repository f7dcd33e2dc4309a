//! Asking, for sockets and HTTP alike, idempotently: a new request is shown to every tab once
//! the store has taken it, and `accepted` once it is durable; a repeat is answered from what
//! the hub holds. A socket passes its [`Link`]: replies are then queued to it under the lock,
//! in the order the hub decides (an `accepted` always before that request's `outcome`, which
//! waits for it should the request end before it is durable).
//!
//! An ask goes through four steps: admitted (under the lock: a repeat answered, limits
//! checked, the request put in `Committing`), committed (the store, lock released), shown (once
//! the store has taken it: opened to every tab, or adopted as the request another node already
//! holds under its id) and accepted (once durable: `accepted` to its agent, or taken back from
//! the tabs when it could not be made so).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use askgate_protocol::wire::callback::Callback;
use askgate_protocol::wire::{CheckedAsk, RequestView, ToAgent};
use askgate_protocol::{ErrorCode, FieldError, ReplyCode, RequestId, SessionId};

use super::Hub;
use super::ending::Ending;
use super::peers::frame::Frame;
use super::peers::links::Link;
use super::request::{AskTerms, Deadline, EncodedRequest, EntryState};
use super::rules::ruled_calls;
use super::session::{Session, generated_request_id};
use super::shown::ending_frames::outcome_frame;
use crate::clock::now_ms;
use crate::keys::LOCAL_KEY_ID;
use crate::metrics::count;
use crate::store::{Durability, StoreError, StoreOp, StoredRequest, StoredResolution, Verdict};

/// What became of an ask.
#[derive(Clone, Debug)]
pub enum AskReply {
    /// Stored and shown to every tab; `created` is false for a repeat of an open request.
    Accepted {
        /// The request id (the agent's, or generated).
        id: RequestId,
        /// When it times out, if ever.
        deadline_ms: Option<u64>,
        /// Whether this ask created it.
        created: bool,
    },
    /// A repeat of a request that has already ended: its outcome.
    Resolved {
        /// The request id.
        id: RequestId,
        /// How it ended.
        resolution: Box<StoredResolution>,
    },
    /// Refused; nothing was stored.
    Rejected {
        /// The request id as the agent sent it (`None`: it sent none, and the id the gateway
        /// would have given it means nothing to it).
        id: Option<RequestId>,
        /// Why, with paths.
        errors: Vec<FieldError>,
        /// The kind of refusal (HTTP answers with its status): the id is taken by other
        /// questions ([`ReplyCode::IdTaken`]), a limit or the store
        /// ([`ReplyCode::Unavailable`]), or anything else ([`ReplyCode::Invalid`], also for
        /// an ask whose request vanished while it was stored, which has no errors to give).
        reply: ReplyCode,
    },
}

impl Hub {
    /// Queues the frame for `reply` to the asking socket, if there is one.
    pub(super) fn deliver(&self, asker: Option<&Link>, session: &SessionId, reply: &AskReply) {
        let Some(asker) = asker else { return };
        let frame = match reply {
            AskReply::Accepted {
                id, deadline_ms, ..
            } => Frame::encode(&ToAgent::Accepted {
                session: session.to_string(),
                id: id.to_string(),
                deadline_ms: *deadline_ms,
                viewer_url: self.keys.viewer_url(session),
            }),
            AskReply::Resolved { id, resolution } => outcome_frame(session, id, resolution),
            AskReply::Rejected { id, errors, .. } => Frame::encode(&ToAgent::Rejected {
                session: session.to_string(),
                id: id.as_ref().map(ToString::to_string),
                errors: errors.clone(),
            }),
        };
        asker.send(frame, &self.metrics);
    }

    pub(super) fn reject(
        &self,
        asker: Option<&Link>,
        session: &SessionId,
        id: Option<RequestId>,
        errors: Vec<FieldError>,
        kind: ReplyCode,
    ) -> AskReply {
        count(&self.metrics.rejected_asks);
        let reply = AskReply::Rejected {
            id,
            errors,
            reply: kind,
        };
        self.deliver(asker, session, &reply);
        reply
    }

    /// Why `session` can take no new request, if it cannot: it holds the most open requests
    /// (by count, or by bytes), or the most outcomes its agent has not acknowledged, allowed. Not the request's fault,
    /// so `unavailable` (HTTP 503): it may be asked again once requests end or are acked.
    fn session_full(&self, session: &Session) -> Option<FieldError> {
        if session.open.unresolved() >= self.limits.open_requests_per_session {
            return Some(FieldError::new(
                "",
                ErrorCode::Unavailable,
                format!(
                    "this session already has {} open requests, the most allowed",
                    self.limits.open_requests_per_session
                ),
            ));
        }
        if session.open.bytes() >= self.limits.open_bytes_per_session {
            return Some(FieldError::new(
                "",
                ErrorCode::Unavailable,
                format!(
                    "this session's open requests already hold {} bytes, the most allowed is {}; \
                     wait for some to end",
                    session.open.bytes(),
                    self.limits.open_bytes_per_session
                ),
            ));
        }
        let kept = session
            .requests
            .len()
            .saturating_sub(session.open.unresolved());
        (kept >= self.limits.kept_outcomes_per_session).then(|| {
            FieldError::new(
                "",
                ErrorCode::Unavailable,
                format!(
                    "this session keeps {kept} outcomes its agent has not acknowledged, the most allowed; ack them first"
                ),
            )
        })
    }

    /// Why the gateway can take no new request of `bytes` (as tabs receive it): the open
    /// requests of all sessions would hold more than `--max-open-bytes`. Checked under the
    /// lock that counts the request in, so concurrent asks cannot pass it together.
    fn gateway_full(&self, bytes: usize) -> Option<FieldError> {
        let total = self.ledger.open_bytes_total.load(Ordering::Relaxed);
        let max = self.limits.max_open_bytes;
        (total.saturating_add(bytes) > max).then(|| {
            FieldError::new(
                "",
                ErrorCode::Unavailable,
                format!(
                    "the gateway's open requests, over all sessions, hold {total} bytes, and \
                     this one's {bytes} would take them past the most allowed, {max} \
                     (--max-open-bytes); wait for some to end"
                ),
            )
        })
    }

    /// Why the ask's `callback` may not be called, at `callback.url`; `None` if it may (or
    /// there is none).
    fn refused_callback(&self, callback: Option<&Callback>) -> Option<FieldError> {
        let callback = callback?;
        let why = match &self.notifier {
            Some(notifier) => notifier.callback_hosts().refuses(&callback.url)?,
            None => "this gateway sends no callbacks".to_owned(),
        };
        Some(FieldError::new(
            "callback.url",
            ErrorCode::InvalidValue,
            why,
        ))
    }

    /// [`ask_as`](Self::ask_as) an agent without a key (local mode).
    pub async fn ask(self: &Arc<Self>, ask: CheckedAsk, asker: Option<&Link>) -> AskReply {
        self.ask_as(ask, asker, LOCAL_KEY_ID).await
    }

    /// Asks: stores the request, then shows it to every tab. A repeat of a known request
    /// (same questions) is answered from what the hub holds; `asker` becomes the socket its
    /// outcome goes to. `key_id` names the agent key that asked ([`AgentKey::id`]): whose
    /// remembered approvals may answer it, and whose an approval of it may be remembered for.
    /// An approval whose every call rules approve is accepted and then at once answered by
    /// them, nobody notified.
    ///
    /// [`AgentKey::id`]: crate::keys::AgentKey::id
    pub async fn ask_as(
        self: &Arc<Self>,
        ask: CheckedAsk,
        asker: Option<&Link>,
        key_id: &str,
    ) -> AskReply {
        let CheckedAsk {
            session: session_id,
            id,
            questions,
            timeout_ms,
            title,
            answerers,
            follow_ups: asked_follow_ups,
            default,
            quorum,
            rules,
            callback,
        } = ask;
        // On a shared store, this node's copy of the session first (a repeat is then answered
        // from it); should the store be unreachable, the ask itself says so.
        let _ = self.synced(&session_id).await;
        let id_sent = id.is_some();
        let id = id.unwrap_or_else(generated_request_id);
        let as_sent = |id: &RequestId| id_sent.then(|| id.clone());
        // Where an approval of it may be remembered, and which of its calls rules approve.
        let calls = questions.approval_calls();
        let remember = if rules && quorum.is_none() && !calls.is_empty() {
            self.limits.approval_rules.clone()
        } else {
            Vec::new()
        };
        let covering = if remember.is_empty() {
            Vec::new()
        } else {
            self.rules_covering(&session_id, key_id, calls, answerers.as_deref())
                .await
        };
        let all_ruled = !covering.is_empty() && covering.iter().all(Option::is_some);
        let ruled = covering
            .iter()
            .any(Option::is_some)
            .then(|| ruled_calls(&covering));
        let questions = Arc::new(questions);
        let unknown_group = |list: Option<&[String]>, path: &str| {
            list.and_then(|list| self.people.unknown_group(list))
                .map(|(index, group)| (format!("{path}[{index}]"), group.to_owned()))
        };
        let escalate_to = asked_follow_ups
            .escalate
            .as_ref()
            .map(|(_, to)| to.as_slice());
        let refused = unknown_group(answerers.as_deref(), "answerers")
            .or_else(|| unknown_group(escalate_to, "escalate.to"))
            .map(|(path, group)| {
                FieldError::new(
                    path,
                    ErrorCode::InvalidValue,
                    format!(
                        "no group {group:?} is defined (the operator names groups in --groups FILE)"
                    ),
                )
            })
            .or_else(|| self.refused_callback(callback.as_ref()));
        if let Some(error) = refused {
            return self.reject(
                asker,
                &session_id,
                as_sent(&id),
                vec![error],
                ReplyCode::Invalid,
            );
        }
        let record = loop {
            let waiter = {
                let mut sessions = self.lock();
                let Some(session) = self.session_entry(&mut sessions, &session_id) else {
                    let error = FieldError::new(
                        "session",
                        ErrorCode::Unavailable,
                        "the gateway holds the most sessions allowed; try again later",
                    );
                    return self.reject(
                        asker,
                        &session_id,
                        as_sent(&id),
                        vec![error],
                        ReplyCode::Unavailable,
                    );
                };
                if let Some(asker) = asker {
                    self.attach_agent_to(session, asker);
                }
                match session.requests.get_mut(&id) {
                    Some(entry) if *entry.questions != *questions => {
                        let error = FieldError::new(
                            "id",
                            ErrorCode::InvalidValue,
                            "this request id is already used in this session by different questions",
                        );
                        return self.reject(
                            asker,
                            &session_id,
                            as_sent(&id),
                            vec![error],
                            ReplyCode::IdTaken,
                        );
                    }
                    Some(entry) => {
                        if let Some(asker) = asker {
                            entry.asker = Some(asker.clone());
                        }
                        let reply = match (&entry.storing, &entry.state) {
                            // Not durable yet: nothing can be promised of it.
                            (Some(storing), _) => Err(Arc::clone(storing).notified_owned()),
                            (
                                None,
                                EntryState::Committing | EntryState::Open | EntryState::Resolving,
                            ) => Ok(AskReply::Accepted {
                                id: id.clone(),
                                deadline_ms: entry.deadline_ms,
                                created: false,
                            }),
                            (None, EntryState::Resolved(resolution)) => Ok(AskReply::Resolved {
                                id: id.clone(),
                                resolution: resolution.clone(),
                            }),
                        };
                        if asker.is_some() {
                            // Asked again on a socket: its agent is back.
                            session.attended(&id);
                        }
                        match reply {
                            Ok(reply) => {
                                self.deliver(asker, &session_id, &reply);
                                return reply;
                            }
                            // A twin ask is being stored: wait for it, then answer as a repeat.
                            Err(waiter) => waiter,
                        }
                    }
                    None => {
                        let full = |error| {
                            let id = as_sent(&id);
                            self.reject(asker, &session_id, id, vec![error], ReplyCode::Unavailable)
                        };
                        if let Some(error) = self.session_full(session) {
                            return full(error);
                        }
                        let shown = Shown {
                            questions: &questions,
                            title: title.clone(),
                            timeout_ms,
                            answerers: answerers.clone(),
                            default: default.clone(),
                            quorum,
                            ruled: ruled.clone(),
                            remember: remember.clone(),
                        };
                        let (view, encoded) = shown_view(&id, &shown);
                        if let Some(error) = self.gateway_full(encoded.view.len()) {
                            return full(error);
                        }
                        let follow_ups =
                            self.follow_ups_of(&session_id, &asked_follow_ups, view.asked_at_ms);
                        let terms = AskTerms {
                            follow_ups,
                            asked_by: Some(key_id.to_owned()),
                            callback: callback.clone().map(Box::new),
                        };
                        break session.begin_ask(&id, &questions, view, encoded, asker, terms);
                    }
                }
            };
            waiter.await;
        };
        let deadline_ms = record.deadline_ms;
        let asker = asker.cloned();
        let ruled_session = all_ruled.then(|| session_id.clone());
        let stored = Stored {
            session: session_id,
            id: id.clone(),
            id_sent,
            deadline_ms,
        };
        // Nobody is told of a request rules answer at once.
        let notify = self
            .notifier
            .as_ref()
            .filter(|notifier| !all_ruled && notifier.tells_people())
            .and_then(|notifier| notifier.opened(&self.facts_of_record(&record)));
        let addressed = record.answerers.clone();
        let mut ops = vec![StoreOp::Put(record)];
        ops.extend(notify.clone());
        let (taken, durable) = self.store_commit_in_steps(ops, Durability::Prompt);
        let hub = Arc::clone(self);
        let finished = self
            .run_to_end(async move {
                let notified = |kept: bool| {
                    if let (Some(notifier), Some(op)) = (&hub.notifier, notify) {
                        if kept {
                            notifier.committed(op);
                        } else {
                            notifier.not_committed(op);
                        }
                    }
                };
                match hub.show_ask(&stored, asker.as_ref(), taken.await) {
                    Showing::Settled(reply) => {
                        notified(false);
                        reply
                    }
                    Showing::Open(accepted) => {
                        if let Some(names) = addressed {
                            hub.announce_addressed(&stored.session, names);
                        }
                        let durable = durable.await;
                        notified(durable.is_ok());
                        hub.accept_ask(&stored, asker.as_ref(), accepted, durable)
                    }
                }
            })
            .await;
        let reply = finished.unwrap_or_else(|error| {
            tracing::error!(request = %id, %error, "storing a request failed");
            AskReply::Rejected {
                id: as_sent(&id),
                errors: Vec::new(),
                reply: ReplyCode::Invalid,
            }
        });
        if let (Some(session), AskReply::Accepted { created: true, .. }) = (ruled_session, &reply)
            && let Err(refusal) = self.resolve(&session, &id, Ending::ByRule).await
        {
            // Still open, for a person to answer: a tab may have been first.
            tracing::debug!(%session, request = %id, ?refusal, "rules did not answer a request they cover");
        }
        reply
    }
}

/// What showing a new request came to.
enum Showing {
    /// Open to tabs; its agent is to hear this once the store has made it durable.
    Open(AskReply),
    /// The ask is answered as it is (refused, or a repeat of a request asked elsewhere).
    Settled(AskReply),
}

/// A new request whose store record is being committed.
struct Stored {
    session: SessionId,
    id: RequestId,
    /// Whether the agent sent `id` (else the gateway made it up).
    id_sent: bool,
    deadline_ms: Option<u64>,
}

/// What a new request shows to tabs.
struct Shown<'a> {
    questions: &'a Arc<askgate_protocol::QuestionSet>,
    title: Option<String>,
    timeout_ms: Option<u64>,
    answerers: Option<Vec<String>>,
    default: Option<serde_json::Value>,
    quorum: Option<askgate_protocol::approval::Quorum>,
    ruled: Option<Vec<Option<askgate_protocol::approval::rules::RuledCall>>>,
    remember: Vec<askgate_protocol::approval::rules::RuleScope>,
}

/// What tabs are to be shown of a new request, asked now, and its encoding.
fn shown_view(id: &RequestId, shown: &Shown<'_>) -> (RequestView, EncodedRequest) {
    let questions = shown.questions;
    let asked_at_ms = now_ms();
    let view = RequestView {
        orphaned: false,
        id: id.to_string(),
        dialect: questions.dialect(),
        title: shown.title.clone(),
        questions: questions.to_json(),
        asked_at_ms,
        deadline_ms: shown.timeout_ms.map(|t| asked_at_ms.saturating_add(t)),
        answerers: shown.answerers.clone(),
        escalated_to: None,
        default: shown.default.clone(),
        // Every call without a vote yet.
        quorum: shown.quorum.map(|quorum| {
            let calls = questions.approval_calls().len();
            (quorum, vec![Default::default(); calls])
        }),
        ruled: shown.ruled.clone(),
        remember: shown.remember.clone(),
    };
    let encoded = EncodedRequest::new(&view);
    (view, encoded)
}

impl Hub {
    /// After the store took (or refused) a new request: opens it and shows it to every tab;
    /// its `accepted` waits for [`Hub::accept_ask`]. A shared store may instead say the id was
    /// asked already (on another node): the request is then answered as a repeat, as the store
    /// holds it.
    fn show_ask(
        self: &Arc<Self>,
        stored: &Stored,
        asker: Option<&Link>,
        committed: Result<Vec<Verdict>, StoreError>,
    ) -> Showing {
        let Stored {
            session: session_id,
            id,
            id_sent,
            deadline_ms,
        } = stored;
        let as_sent = id_sent.then(|| id.clone());
        let vanished = || {
            Showing::Settled(AskReply::Rejected {
                id: as_sent.clone(),
                errors: Vec::new(),
                reply: ReplyCode::Invalid,
            })
        };
        let verdict =
            committed.map(|verdicts| verdicts.into_iter().next().unwrap_or(Verdict::Done));
        let mut sessions = self.lock();
        let Some(session) = sessions.get_mut(session_id) else {
            return vanished();
        };
        let Some(entry) = session.requests.get_mut(id) else {
            return vanished();
        };
        let (EntryState::Committing, Some(storing)) = (&entry.state, &entry.storing) else {
            return vanished();
        };
        let storing = Arc::clone(storing);
        let mut deadline_ms = *deadline_ms;
        let failure = match verdict {
            Ok(Verdict::Done) => None,
            Ok(Verdict::Created {
                asked_at_ms,
                deadline_ms: kept,
            }) => {
                deadline_ms = kept;
                session.retime(id, asked_at_ms, kept);
                None
            }
            Ok(Verdict::Exists(record)) => {
                let reply = self.adopt(session, &record, asker);
                self.ask_finished(session, id, true);
                if let Some(entry) = session.requests.get_mut(id) {
                    entry.storing = None;
                }
                storing.notify_waiters();
                return Showing::Settled(reply);
            }
            Ok(Verdict::Conflict) => Some((
                FieldError::new(
                    "id",
                    ErrorCode::InvalidValue,
                    "this request id is already used in this session by different questions",
                ),
                ReplyCode::IdTaken,
            )),
            Ok(other) => Some((
                FieldError::new(
                    "",
                    ErrorCode::Unavailable,
                    format!("the store answered an ask with {other:?}; try again"),
                ),
                ReplyCode::Unavailable,
            )),
            Err(error) => {
                tracing::error!(session = %session_id, request = %id, %error, "could not store a request");
                Some((
                    FieldError::new(
                        "",
                        ErrorCode::Unavailable,
                        format!("the gateway could not store the request ({error}); try again"),
                    ),
                    ReplyCode::Unavailable,
                ))
            }
        };
        if let Some((error, kind)) = failure {
            session.drop_unstored(id);
            self.ask_finished(session, id, false);
            storing.notify_waiters();
            return Showing::Settled(self.reject(asker, session_id, as_sent, vec![error], kind));
        }
        if !session.requests.contains_key(id) {
            return vanished();
        }
        session.open(id, Deadline::Here);
        self.ask_finished(session, id, true);
        Showing::Open(AskReply::Accepted {
            id: id.clone(),
            deadline_ms,
            created: true,
        })
    }

    /// Once the store has made a shown request durable: tells its agent `accepted` (and then
    /// its outcome, should it have ended meanwhile), and lets the agent's repeats and
    /// withdrawals, which waited, go on. Should the store have failed to, the request is
    /// taken back from the tabs (`resolved` as `withdrawn`) and the ask rejected.
    fn accept_ask(
        &self,
        stored: &Stored,
        asker: Option<&Link>,
        accepted: AskReply,
        durable: Result<(), StoreError>,
    ) -> AskReply {
        let Stored {
            session: session_id,
            id,
            id_sent,
            ..
        } = stored;
        let mut sessions = self.lock();
        let Some(session) = sessions.get_mut(session_id) else {
            return accepted;
        };
        let Some(entry) = session.requests.get_mut(id) else {
            return accepted;
        };
        let Some(storing) = entry.storing.take() else {
            return accepted;
        };
        storing.notify_waiters();
        let ended = match &entry.state {
            EntryState::Resolved(resolution) => Some(resolution.clone()),
            _ => None,
        };
        match durable {
            Ok(()) => {}
            // Its ending is durable, which only a later record of the log can be: told as kept.
            Err(error) if ended.is_some() => {
                tracing::warn!(session = %session_id, request = %id, %error, "a request's record failed to sync after its ending was kept");
            }
            Err(error) => {
                tracing::error!(session = %session_id, request = %id, %error, "could not store a request");
                session.take_back(id);
                let error = FieldError::new(
                    "",
                    ErrorCode::Unavailable,
                    format!("the gateway could not store the request ({error}); try again"),
                );
                let as_sent = id_sent.then(|| id.clone());
                return self.reject(
                    asker,
                    session_id,
                    as_sent,
                    vec![error],
                    ReplyCode::Unavailable,
                );
            }
        }
        tracing::debug!(session = %session_id, request = %id, "accepted");
        self.deliver(asker, session_id, &accepted);
        if let Some(resolution) = ended
            && let Some(waiting) = session.requests.get(id).and_then(|e| e.asker.as_ref())
        {
            waiting.send(outcome_frame(session_id, id, &resolution), &self.metrics);
        }
        accepted
    }

    /// The id was asked already (another node holds it as `record`): this node's committing
    /// entry becomes that request, and the ask is answered as a repeat of it.
    fn adopt(
        &self,
        session: &mut Session,
        record: &StoredRequest,
        asker: Option<&Link>,
    ) -> AskReply {
        let id = record.id.clone();
        let deadline_ms = record.deadline_ms;
        let resolution = record.resolution.clone();
        session.retime(&id, record.asked_at_ms, record.deadline_ms);
        let votes = record.votes.clone();
        if !session.requests.contains_key(&id) {
            return AskReply::Rejected {
                id: Some(id),
                errors: Vec::new(),
                reply: ReplyCode::Invalid,
            };
        }
        let reply = match resolution {
            Some(resolution) => {
                let resolution = Box::new(resolution);
                session.found_ended(&id, &resolution);
                AskReply::Resolved { id, resolution }
            }
            None => {
                // Timed out by the shared store's sweep, as the node that asked it first does.
                session.open(&id, Deadline::Elsewhere);
                if !votes.is_empty() {
                    session.votes_changed(&id, "", votes);
                }
                AskReply::Accepted {
                    id,
                    deadline_ms,
                    created: false,
                }
            }
        };
        self.deliver(asker, &session.id.clone(), &reply);
        reply
    }
}
