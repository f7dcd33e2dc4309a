//! Personal links, issued to agents (socket `link`, HTTP `POST /v1/sessions/{session}/links`):
//! the arguments checked, the key signed, and the issue recorded in the audit trail.

use askgate_protocol::people::check_user_name;
use askgate_protocol::{ErrorCode, FieldError, SessionId};
use serde_json::Value;

use super::{DEFAULT_LINK_TTL_S, MAX_LINK_TTL_S};
use crate::audit::{Event, Note};
use crate::clock::now_ms;
use crate::keys::ViewerKeys;
use crate::store::{Store, StoreOp};

/// A personal link, as issued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuedLink {
    /// The person it names.
    pub user: String,
    /// `{public_url}/s/{session}#k={personal key}`.
    pub url: String,
    /// When it stops working (Unix ms).
    pub expires_ms: u64,
}

/// `ttl_s`: absent or null for the default; else whole or fractional seconds, 1 to the most.
pub(super) fn ttl_ms(ttl_s: Option<&Value>) -> Result<u64, FieldError> {
    let seconds = match ttl_s {
        None | Some(Value::Null) => return Ok(DEFAULT_LINK_TTL_S * 1000),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(_) => {
            return Err(FieldError::new(
                "ttl_s",
                ErrorCode::WrongType,
                "must be a number of seconds",
            ));
        }
    };
    if !(1.0..=MAX_LINK_TTL_S as f64).contains(&seconds) {
        return Err(FieldError::new(
            "ttl_s",
            ErrorCode::InvalidValue,
            format!("must be 1 to {MAX_LINK_TTL_S} seconds, got {seconds}"),
        ));
    }
    Ok((seconds * 1000.0).round() as u64)
}

/// Issues `user` a personal link to `session`, signed with `keys`, working for `ttl_s`
/// seconds (a day when absent), once its issue is in `store`'s audit trail.
///
/// # Errors
/// The user or the ttl is not one a link can carry (with the path), or the store could not
/// record the issue.
pub async fn issue_link(
    store: &dyn Store,
    keys: &ViewerKeys,
    session: &SessionId,
    user: &str,
    ttl_s: Option<&Value>,
) -> Result<IssuedLink, Vec<FieldError>> {
    let user_error = check_user_name(user)
        .err()
        .map(|m| FieldError::new("user", ErrorCode::InvalidValue, m));
    let ttl = ttl_ms(ttl_s);
    let ttl = match (user_error, ttl) {
        (None, Ok(ttl)) => ttl,
        (user_error, ttl) => return Err(user_error.into_iter().chain(ttl.err()).collect()),
    };
    let at_ms = now_ms();
    let expires_ms = at_ms.saturating_add(ttl);
    let note = Note {
        session: session.clone(),
        id: None,
        at_ms,
        event: Event::LinkIssued {
            user: user.to_owned(),
            expires_ms,
        },
    };
    store
        .commit(vec![StoreOp::Note(note)])
        .await
        .map_err(|error| {
            vec![FieldError::new(
                "",
                ErrorCode::Unavailable,
                format!(
                    "the gateway could not record the link in its audit trail ({error}); try again"
                ),
            )]
        })?;
    Ok(IssuedLink {
        user: user.to_owned(),
        url: keys.personal_url(session, user, expires_ms),
        expires_ms,
    })
}
