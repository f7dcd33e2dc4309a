//! An agent socket's frames, turned into hub calls, and what the hub answers turned into the
//! frames the agent reads; replies go back through the connection's queue.
//!
//! Each frame that names a session is first held to the connection's scope (its key's): a
//! session outside it is refused `forbidden` before the hub is asked anything, so neither a
//! viewer link nor an outcome of another scope reaches the agent.

use askgate_protocol::wire::{AgentFrame, AskFrame, ToAgent};
use askgate_protocol::{ErrorCode, FieldError, ReplyCode, RequestId, SessionId};
use serde_json::Value;
use tracing::Instrument as _;

use super::http_links::link_refused;
use crate::hub::{AckReply, AgentHandle, Frame, Withdrawal, generated_session_id};
use crate::metrics::count;

/// Does what `frame` asks; its replies are queued to the agent.
pub(super) async fn handle(agent: &AgentHandle, frame: AgentFrame) {
    match frame {
        AgentFrame::Open { session } => open(agent, session.as_deref()),
        AgentFrame::Ask(mut ask) => {
            let span = tracing::debug_span!(
                "ask",
                session = ask.session.as_str().unwrap_or("-"),
                request = ask
                    .id
                    .as_ref()
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("-")
            );
            self::ask(agent, &mut ask).instrument(span).await;
        }
        AgentFrame::Cancel { session, id } => cancel(agent, &session, &id).await,
        AgentFrame::Link {
            session,
            user,
            ttl_s,
        } => link(agent, &session, &user, ttl_s.as_ref()).await,
        AgentFrame::Ack { session, id } => ack(agent, &session, &id).await,
    }
}

/// `error` `bad_frame` for a message that is not an agent frame, queued like every reply.
pub(super) fn bad_frame(agent: &AgentHandle, message: String) {
    error(agent, ReplyCode::BadFrame, message);
}

fn reply(agent: &AgentHandle, message: &ToAgent) {
    agent.reply(Frame::encode(message));
}

fn error(agent: &AgentHandle, code: ReplyCode, message: impl Into<String>) {
    reply(
        agent,
        &ToAgent::Error {
            code: code.as_str().to_owned(),
            message: message.into(),
            session: None,
            id: None,
        },
    );
}

/// An `error` about the request `id` of `session`, named so the agent can match it.
fn error_about(agent: &AgentHandle, code: ReplyCode, message: String, session: &str, id: &str) {
    reply(
        agent,
        &ToAgent::Error {
            code: code.as_str().to_owned(),
            message,
            session: Some(session.to_owned()),
            id: Some(id.to_owned()),
        },
    );
}

/// `open`: creates the session if new and replies `opened` with the viewer link. Without a
/// session, one is generated within the connection's scope.
fn open(agent: &AgentHandle, session: Option<&str>) {
    let parsed = match session {
        None => agent.scope().place(&generated_session_id()),
        Some(text) => {
            if let Err(message) = agent.scope().permit(text) {
                return error(agent, ReplyCode::Forbidden, message);
            }
            SessionId::parse(text)
        }
    };
    let id = match parsed {
        Ok(id) => id,
        Err(message) => return error(agent, ReplyCode::BadSession, message),
    };
    if agent.open(&id).is_err() {
        return error(
            agent,
            ReplyCode::Unavailable,
            "the gateway holds the most sessions allowed; try again later",
        );
    }
    reply(
        agent,
        &ToAgent::Opened {
            session: id.to_string(),
            viewer_url: agent.hub().keys().viewer_url(&id),
        },
    );
}

/// `ask`: replies `accepted`, the stored `outcome` of a repeat, or `rejected` (the hub sends
/// those of an ask it took, in its order). The questions are moved out of `frame`.
async fn ask(agent: &AgentHandle, frame: &mut AskFrame) {
    // Before the questions are even read: the session is not this key's to ask in. A session
    // that is not a string is left to the check below, which names its type.
    let out_of_scope = frame
        .session
        .as_str()
        .and_then(|session| agent.scope().permit(session).err());
    let checked = match out_of_scope {
        Some(message) => Err(vec![FieldError::new(
            "session",
            ErrorCode::Forbidden,
            message,
        )]),
        None => frame.check_taking(agent.hub().limits().max_timeout_s),
    };
    match checked {
        Ok(checked) => {
            agent.ask(checked).await;
        }
        Err(errors) => {
            count(&agent.hub().metrics().rejected_asks);
            // As sent, where they were strings.
            let as_sent = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
            reply(
                agent,
                &ToAgent::Rejected {
                    session: as_sent(Some(&frame.session)).unwrap_or_default(),
                    id: as_sent(frame.id.as_ref()),
                    errors,
                },
            );
        }
    }
}

/// `link`: a personal link for `user`, or an `error` naming what is wrong.
async fn link(agent: &AgentHandle, session: &str, user: &str, ttl_s: Option<&Value>) {
    if let Err(message) = agent.scope().permit(session) {
        return error(agent, ReplyCode::Forbidden, message);
    }
    let id = match SessionId::parse(session) {
        Ok(id) => id,
        Err(message) => return error(agent, ReplyCode::BadSession, message),
    };
    match agent.hub().issue_link(&id, user, ttl_s).await {
        Ok(link) => reply(
            agent,
            &ToAgent::Link {
                session: id.to_string(),
                user: link.user,
                url: link.url,
                expires_ms: link.expires_ms,
            },
        ),
        Err(errors) => {
            let message = errors
                .iter()
                .map(|e| format!("{}: {}", e.path, e.message))
                .collect::<Vec<_>>()
                .join("; ");
            reply(
                agent,
                &ToAgent::Error {
                    code: link_refused(&errors).as_str().to_owned(),
                    message,
                    session: Some(id.to_string()),
                    id: None,
                },
            );
        }
    }
}

/// `cancel`: withdraws; the outcome (`withdrawn`, or the earlier one) comes as a frame.
async fn cancel(agent: &AgentHandle, session: &str, id: &str) {
    if let Err(message) = agent.scope().permit(session) {
        return error_about(agent, ReplyCode::Forbidden, message, session, id);
    }
    let withdrawal = match (SessionId::parse(session), RequestId::parse(id)) {
        (Ok(session), Ok(id)) => agent.withdraw(&session, &id).await,
        _ => Withdrawal::Unknown,
    };
    match withdrawal {
        // The outcome has come (or comes) as a frame of its own.
        Withdrawal::Ended(_) | Withdrawal::Forgotten => {}
        Withdrawal::Unknown => error_about(
            agent,
            ReplyCode::NotFound,
            format!("no request {id:?} in session {session:?}"),
            session,
            id,
        ),
        // Not `unavailable`: clients read that as a refused `open`.
        Withdrawal::Failed(error) => error_about(
            agent,
            ReplyCode::StoreFailed,
            format!(
                "the gateway could not store the withdrawal of {id:?} ({error}); it stays open; try again"
            ),
            session,
            id,
        ),
    }
}

/// `ack`: the agent has the outcome; the hub forgets it.
async fn ack(agent: &AgentHandle, session: &str, id: &str) {
    if let Err(message) = agent.scope().permit(session) {
        return error_about(agent, ReplyCode::Forbidden, message, session, id);
    }
    let (Ok(session), Ok(id)) = (SessionId::parse(session), RequestId::parse(id)) else {
        return;
    };
    if agent.hub().acknowledge(&session, &id).await == AckReply::NotResolved {
        error(
            agent,
            ReplyCode::NotResolved,
            format!("request {id} has no outcome yet"),
        );
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
