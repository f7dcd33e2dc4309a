//! What can go wrong for a caller of the client, in one enum.
//!
//! Transient trouble (a dropped socket, a gateway restarting) is not an error here: the
//! connection task reconnects and re-sends on its own. A caller sees an error only when the
//! gateway refused the request itself, or when the client gave up for good.

use askgate_protocol::FieldError;

/// Why a call on [`Client`](crate::Client) failed.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The gateway refused the ask (or the session id of an `open`); nothing was stored.
    /// Every problem comes with its path, e.g. `questions[0].options[2].label`. A session
    /// outside the agent key's scope is [`Forbidden`](ClientError::Forbidden) instead.
    #[error("the gateway rejected the request: {}", describe(.0))]
    Rejected(Vec<FieldError>),
    /// The gateway closed the connection with a code that says "do not come back" (4400 bad
    /// frames, 4401 wrong key, 4404, 4413 frame too large), or refused the WebSocket upgrade
    /// with an HTTP status (then `code` is that status). The client has stopped: every
    /// pending and later call fails with this error.
    #[error("the gateway closed the connection for good with code {code}: {reason}")]
    Fatal {
        /// The WebSocket close code, or the HTTP status of a refused upgrade.
        code: u16,
        /// The reason the gateway gave, if any.
        reason: String,
    },
    /// The first connection could not be made (refused, timed out, not a WebSocket endpoint).
    /// Later connections are retried with backoff instead.
    #[error("could not connect to {url}: {message}")]
    Connect {
        /// The WebSocket URL dialled.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The endpoint URL is not one the client can use.
    #[error("unusable gateway URL {url:?}: {message}")]
    Url {
        /// The URL as given.
        url: String,
        /// Why it cannot be used.
        message: String,
    },
    /// This client is already waiting on this `(session, id)`, or still withdrawing it after
    /// its ask was dropped: a second ask would share the first one's request, and
    /// withdrawing either would withdraw both.
    #[error("request {id} of session {session} is already pending on this client")]
    Duplicate {
        /// The session.
        session: String,
        /// The request id.
        id: String,
    },
    /// The `ask` frame is larger than the gateway takes; sending it would get the whole
    /// connection closed with 4413.
    #[error("the ask frame is {size} bytes; the limit is {limit}")]
    TooLarge {
        /// The frame's size in bytes.
        size: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The gateway answered a frame with an `error` frame (e.g. `unavailable` when it holds
    /// the most sessions it allows).
    #[error("the gateway could not take the frame ({code}): {message}")]
    Gateway {
        /// The gateway's stable code: `unavailable`, `bad_session`...
        code: String,
        /// What was wrong, in words.
        message: String,
    },
    /// The agent key may not act on this session: the gateway binds the key to the sessions
    /// within another prefix (`--agent-key KEY:PREFIX`). An `open`, `ask` or
    /// [`withdraw`](crate::Client::withdraw) of it fails with this at once, and is not sent
    /// again: the same key is refused every time, and nothing of the session was read or
    /// changed.
    #[error("the agent key may not act on session {session:?} (forbidden): {message}")]
    Forbidden {
        /// The session refused.
        session: String,
        /// The gateway's reason, naming the prefix the key is bound to.
        message: String,
    },
    /// Something the client could not encode or make sense of.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The connection task is gone (its runtime shut down) without a fatal close.
    #[error("the client's connection task has stopped")]
    Closed,
}

impl ClientError {
    /// The close code (or HTTP status) of a [`Fatal`](ClientError::Fatal) error.
    pub fn fatal_code(&self) -> Option<u16> {
        match self {
            ClientError::Fatal { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The field errors of a [`Rejected`](ClientError::Rejected) error.
    pub fn field_errors(&self) -> Option<&[FieldError]> {
        match self {
            ClientError::Rejected(errors) => Some(errors),
            _ => None,
        }
    }
}

/// `path: message; path: message` — the same shape the gateway's logs use.
fn describe(errors: &[FieldError]) -> String {
    if errors.is_empty() {
        return "no reason given".to_owned();
    }
    let parts: Vec<String> = errors
        .iter()
        .map(|e| {
            if e.path.is_empty() {
                e.message.clone()
            } else {
                format!("{}: {}", e.path, e.message)
            }
        })
        .collect();
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use askgate_protocol::ErrorCode;

    #[test]
    fn rejected_names_every_path() {
        let error = ClientError::Rejected(vec![
            FieldError::new("questions[0].header", ErrorCode::Blank, "must not be blank"),
            FieldError::new("", ErrorCode::TooManyItems, "too many open requests"),
        ]);
        assert_eq!(
            error.to_string(),
            "the gateway rejected the request: questions[0].header: must not be blank; too many open requests"
        );
        assert_eq!(error.field_errors().map(<[FieldError]>::len), Some(2));
        assert_eq!(error.fatal_code(), None);
    }
}
