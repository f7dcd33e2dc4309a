//! A new request once the store has replied: opened and shown to every tab, `accepted` to its
//! agent once durable, taken back from the tabs when it could not be made so, or adopted as
//! the request another node already holds under its id.

use std::sync::Arc;

use askgate_protocol::{ErrorCode, FieldError};

use super::Hub;
use super::asking::{AskReply, Showing, Stored};
use super::ending_frames::outcome_frame;
use super::links::Link;
use super::request::{Deadline, EntryState};
use super::session::Session;
use crate::store::{StoreError, StoredRequest, Verdict};

impl Hub {
    /// After the store took (or refused) a new request: opens it and shows it to every tab;
    /// its `accepted` waits for [`Hub::accept_ask`]. A shared store may instead say the id was
    /// asked already (on another node): the request is then answered as a repeat, as the store
    /// holds it.
    pub(super) fn show_ask(
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
                conflict: false,
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
                self.release_held_back(session, id, true);
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
                true,
            )),
            Ok(other) => Some((
                FieldError::new(
                    "",
                    ErrorCode::Unavailable,
                    format!("the store answered an ask with {other:?}; try again"),
                ),
                false,
            )),
            Err(error) => {
                tracing::error!(session = %session_id, request = %id, %error, "could not store a request");
                Some((
                    FieldError::new(
                        "",
                        ErrorCode::Unavailable,
                        format!("the gateway could not store the request ({error}); try again"),
                    ),
                    false,
                ))
            }
        };
        if let Some((error, conflict)) = failure {
            session.drop_unstored(id);
            self.release_held_back(session, id, false);
            storing.notify_waiters();
            return Showing::Settled(self.reject(
                asker,
                session_id,
                as_sent,
                vec![error],
                conflict,
            ));
        }
        if !session.requests.contains_key(id) {
            return vanished();
        }
        session.open(id, Deadline::Here);
        self.release_held_back(session, id, true);
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
    pub(super) fn accept_ask(
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
                return self.reject(asker, session_id, as_sent, vec![error], false);
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
        if !session.requests.contains_key(&id) {
            return AskReply::Rejected {
                id: Some(id),
                errors: Vec::new(),
                conflict: false,
            };
        }
        let reply = match resolution {
            Some(resolution) => {
                let resolution = Box::new(resolution);
                session.found_ended(&id, resolution.clone());
                AskReply::Resolved { id, resolution }
            }
            None => {
                // Timed out by the shared store's sweep, as the node that asked it first does.
                session.open(&id, Deadline::Elsewhere);
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
