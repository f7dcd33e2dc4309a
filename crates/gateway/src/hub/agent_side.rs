//! An agent socket's frames, turned into hub calls; replies go back through its queue.

use askgate_protocol::wire::{AskFrame, ToAgent};
use askgate_protocol::{RequestId, SessionId};
use serde_json::Value;

use super::forgetting::AckReply;
use super::frame::Frame;
use super::links::AgentHandle;
use super::outcomes::Withdrawal;
use super::session::generated_session_id;
use crate::metrics::count;

impl AgentHandle {
    fn reply(&self, message: &ToAgent) {
        self.link.send(Frame::encode(message), &self.hub.metrics);
    }

    fn error(&self, code: &str, message: impl Into<String>) {
        self.reply(&ToAgent::Error {
            code: code.to_owned(),
            message: message.into(),
            session: None,
            id: None,
        });
    }

    /// An `error` about the request `id` of `session`, named so the agent can match it.
    fn error_about(&self, code: &str, message: String, session: &str, id: &str) {
        self.reply(&ToAgent::Error {
            code: code.to_owned(),
            message,
            session: Some(session.to_owned()),
            id: Some(id.to_owned()),
        });
    }

    /// `error` `bad_frame` for a message that is not an agent frame, queued like every reply.
    pub fn bad_frame(&self, message: impl Into<String>) {
        self.error("bad_frame", message);
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

    /// `ask`: replies `accepted`, the stored `outcome` of a repeat, or `rejected`.
    pub async fn ask(&self, frame: &AskFrame) {
        match frame.check(self.hub.limits.max_timeout_s) {
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

    /// `cancel`: withdraws; the outcome (`withdrawn`, or the earlier one) comes as a frame.
    pub async fn cancel(&self, session: &str, id: &str) {
        let withdrawal = match (SessionId::parse(session), RequestId::parse(id)) {
            (Ok(session), Ok(id)) => self.hub.withdraw(&session, &id, Some(&self.link)).await,
            _ => Withdrawal::Unknown,
        };
        match withdrawal {
            // The outcome has come (or comes) as a frame of its own.
            Withdrawal::Ended(_) | Withdrawal::Forgotten => {}
            Withdrawal::Unknown => self.error_about(
                "not_found",
                format!("no request {id:?} in session {session:?}"),
                session,
                id,
            ),
            // Not `unavailable`: clients read that as a refused `open`.
            Withdrawal::Failed(error) => self.error_about(
                "store_failed",
                format!("the gateway could not store the withdrawal of {id:?} ({error}); it stays open; try again"),
                session,
                id,
            ),
        }
    }

    /// `ack`: the agent has the outcome; the hub forgets it.
    pub async fn ack(&self, session: &str, id: &str) {
        let (Ok(session), Ok(id)) = (SessionId::parse(session), RequestId::parse(id)) else {
            return;
        };
        if self.hub.acknowledge(&session, &id).await == AckReply::NotResolved {
            self.error("not_resolved", format!("request {id} has no outcome yet"));
        }
    }
}
