//! An agent socket's frames, turned into hub calls; replies go back through its queue.
//!
//! Each frame that names a session is first held to the connection's scope (its key's): a
//! session outside it is refused `forbidden` before the hub is asked anything, so neither a
//! viewer link nor an outcome of another scope reaches the agent.

use askgate_protocol::wire::{AskFrame, ToAgent};
use askgate_protocol::{ErrorCode, FieldError, ReplyCode, RequestId, SessionId};
use serde_json::Value;

use super::outcomes::AckReply;
use super::outcomes::Withdrawal;
use super::peers::frame::Frame;
use super::peers::links::AgentHandle;
use super::session::generated_session_id;
use crate::metrics::count;
use crate::scope::SessionScope;

impl AgentHandle {
    fn reply(&self, message: &ToAgent) {
        self.link.send(Frame::encode(message), &self.hub.metrics);
    }

    fn error(&self, code: ReplyCode, message: impl Into<String>) {
        self.reply(&ToAgent::Error {
            code: code.as_str().to_owned(),
            message: message.into(),
            session: None,
            id: None,
        });
    }

    /// An `error` about the request `id` of `session`, named so the agent can match it.
    fn error_about(&self, code: ReplyCode, message: String, session: &str, id: &str) {
        self.reply(&ToAgent::Error {
            code: code.as_str().to_owned(),
            message,
            session: Some(session.to_owned()),
            id: Some(id.to_owned()),
        });
    }

    /// `error` `bad_frame` for a message that is not an agent frame, queued like every reply.
    pub fn bad_frame(&self, message: impl Into<String>) {
        self.error(ReplyCode::BadFrame, message);
    }

    /// The sessions this connection may act on.
    fn scope(&self) -> &SessionScope {
        &self.scope
    }

    /// `open`: creates the session if new and replies `opened` with the viewer link. Without
    /// a session, one is generated within the connection's scope.
    pub fn open(&self, session: Option<&str>) {
        let parsed = match session {
            None => self.scope().place(&generated_session_id()),
            Some(text) => {
                if let Err(message) = self.scope().permit(text) {
                    return self.error(ReplyCode::Forbidden, message);
                }
                SessionId::parse(text)
            }
        };
        let id = match parsed {
            Ok(id) => id,
            Err(message) => return self.error(ReplyCode::BadSession, message),
        };
        let hub = &self.hub;
        let mut sessions = hub.lock();
        let Some(session) = hub.session_entry(&mut sessions, &id) else {
            return self.error(
                ReplyCode::Unavailable,
                "the gateway holds the most sessions allowed; try again later",
            );
        };
        hub.attach_agent_to(session, &self.link);
        self.reply(&ToAgent::Opened {
            session: id.to_string(),
            viewer_url: hub.keys.viewer_url(&id),
        });
    }

    /// `ask`: replies `accepted`, the stored `outcome` of a repeat, or `rejected`. The
    /// questions are moved out of `frame`.
    pub async fn ask(&self, frame: &mut AskFrame) {
        // Before the questions are even read: the session is not this key's to ask in. A
        // session that is not a string is left to the check below, which names its type.
        let out_of_scope = frame
            .session
            .as_str()
            .and_then(|session| self.scope().permit(session).err());
        let checked = match out_of_scope {
            Some(message) => Err(vec![FieldError::new(
                "session",
                ErrorCode::Forbidden,
                message,
            )]),
            None => frame.check_taking(self.hub.limits.max_timeout_s),
        };
        match checked {
            Ok(checked) => {
                self.hub.ask(checked, Some(&self.link)).await;
            }
            Err(errors) => {
                count(&self.hub.metrics.rejected_asks);
                // As sent, where they were strings.
                let as_sent =
                    |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
                self.reply(&ToAgent::Rejected {
                    session: as_sent(Some(&frame.session)).unwrap_or_default(),
                    id: as_sent(frame.id.as_ref()),
                    errors,
                });
            }
        }
    }

    /// `link`: a personal link for `user`, or an `error` naming what is wrong.
    pub async fn link(&self, session: &str, user: &str, ttl_s: Option<&Value>) {
        if let Err(message) = self.scope().permit(session) {
            return self.error(ReplyCode::Forbidden, message);
        }
        let id = match SessionId::parse(session) {
            Ok(id) => id,
            Err(message) => return self.error(ReplyCode::BadSession, message),
        };
        match self.hub.issue_link(&id, user, ttl_s).await {
            Ok(link) => self.reply(&ToAgent::Link {
                session: id.to_string(),
                user: link.user,
                url: link.url,
                expires_ms: link.expires_ms,
            }),
            Err(errors) => {
                let message = errors
                    .iter()
                    .map(|e| format!("{}: {}", e.path, e.message))
                    .collect::<Vec<_>>()
                    .join("; ");
                let code = if errors.iter().any(|e| e.code == ErrorCode::Unavailable) {
                    ReplyCode::StoreFailed
                } else {
                    ReplyCode::BadLink
                };
                self.reply(&ToAgent::Error {
                    code: code.as_str().to_owned(),
                    message,
                    session: Some(id.to_string()),
                    id: None,
                });
            }
        }
    }

    /// `cancel`: withdraws; the outcome (`withdrawn`, or the earlier one) comes as a frame.
    pub async fn cancel(&self, session: &str, id: &str) {
        if let Err(message) = self.scope().permit(session) {
            return self.error_about(ReplyCode::Forbidden, message, session, id);
        }
        let withdrawal = match (SessionId::parse(session), RequestId::parse(id)) {
            (Ok(session), Ok(id)) => self.hub.withdraw(&session, &id, Some(&self.link)).await,
            _ => Withdrawal::Unknown,
        };
        match withdrawal {
            // The outcome has come (or comes) as a frame of its own.
            Withdrawal::Ended(_) | Withdrawal::Forgotten => {}
            Withdrawal::Unknown => self.error_about(
                ReplyCode::NotFound,
                format!("no request {id:?} in session {session:?}"),
                session,
                id,
            ),
            // Not `unavailable`: clients read that as a refused `open`.
            Withdrawal::Failed(error) => self.error_about(
                ReplyCode::StoreFailed,
                format!("the gateway could not store the withdrawal of {id:?} ({error}); it stays open; try again"),
                session,
                id,
            ),
        }
    }

    /// `ack`: the agent has the outcome; the hub forgets it.
    pub async fn ack(&self, session: &str, id: &str) {
        if let Err(message) = self.scope().permit(session) {
            return self.error_about(ReplyCode::Forbidden, message, session, id);
        }
        let (Ok(session), Ok(id)) = (SessionId::parse(session), RequestId::parse(id)) else {
            return;
        };
        if self.hub.acknowledge(&session, &id).await == AckReply::NotResolved {
            self.error(
                ReplyCode::NotResolved,
                format!("request {id} has no outcome yet"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::GENERATED_SESSION_ID_CHARS;

    /// Scoped keys' prefixes are limited so that one of these still fits after them.
    #[test]
    fn generated_session_ids_have_the_length_scopes_leave_room_for() {
        let id = generated_session_id();
        assert_eq!(id.as_str().len(), GENERATED_SESSION_ID_CHARS, "{id}");
    }
}
