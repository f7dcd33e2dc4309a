//! Links issued to agents for people, with `{"user": "alice@example.com", "ttl_s": 86400}`
//! (agent key); 422 with the paths of bad fields.
//!
//! - `POST /v1/sessions/{session}/links`: a personal link to one session. 201 with
//!   `{"session", "user", "url", "expires_ms"}`; 403 outside the key's scope; 503 if the audit
//!   trail could not record the issue.
//! - `POST /v1/inbox/links`: a link to one person's inbox, which spans every session: only a
//!   key that acts on every session may ask for one (403 for a scoped key). 201 with
//!   `{"user", "url", "expires_ms"}`; nothing is stored or recorded.

use askgate_protocol::{ErrorCode, FieldError, ReplyCode};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::http_checks::{ApiError, authorize, body_object, session_id, within};
use crate::people::issue_inbox_link;
use crate::server::AppState;

/// `POST /v1/sessions/{session}/links`.
pub async fn post_link(
    State(state): State<AppState>,
    Path(session): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    within(&authorize(&state, &headers)?, &session)?;
    let session = session_id(&session)?;
    let fields = body_object(body, "`user` (and optionally `ttl_s`)")?;
    let user = user_field(&fields, ReplyCode::BadLink, "the person the link is for")?;
    match state
        .hub
        .issue_link(&session, user, fields.get("ttl_s"))
        .await
    {
        Ok(link) => Ok((
            StatusCode::CREATED,
            Json(json!({
                "session": session.as_str(),
                "user": link.user,
                "url": link.url,
                "expires_ms": link.expires_ms,
            })),
        )
            .into_response()),
        Err(errors) => Err(ApiError::new(link_refused(&errors), errors)),
    }
}

/// `POST /v1/inbox/links`.
pub async fn post_inbox_link(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    if authorize(&state, &headers)?.prefix_chars().is_some() {
        return Err(ApiError::refuse(
            ReplyCode::Forbidden,
            "",
            "an inbox shows requests of every session, so only a key that acts on every \
             session may issue a link to one; this key is limited to a session prefix",
        ));
    }
    let fields = body_object(body, "`user` (and optionally `ttl_s`)")?;
    let user = user_field(&fields, ReplyCode::BadLink, "the person the inbox is for")?;
    match issue_inbox_link(state.hub.keys(), user, fields.get("ttl_s")) {
        Ok(link) => Ok((
            StatusCode::CREATED,
            Json(json!({
                "user": user,
                "url": link.url,
                "expires_ms": link.expires_ms,
            })),
        )
            .into_response()),
        Err(errors) => Err(ApiError::new(ReplyCode::BadLink, errors)),
    }
}

/// The body's `user`, a string (checked as a name by whoever takes it); refused as `reply`
/// when missing (it is `what`) or not a string.
pub(super) fn user_field<'f>(
    fields: &'f serde_json::Map<String, Value>,
    reply: ReplyCode,
    what: &str,
) -> Result<&'f str, ApiError> {
    match fields.get("user") {
        Some(Value::String(user)) => Ok(user.as_str()),
        Some(Value::Null) | None => Err(ApiError::one(
            reply,
            "user",
            ErrorCode::MissingField,
            format!("required: {what}"),
        )),
        Some(_) => Err(ApiError::one(
            reply,
            "user",
            ErrorCode::WrongType,
            "must be a string",
        )),
    }
}

/// The kind of refusal a link that could not be issued gets, on the socket and over HTTP
/// alike: the audit trail could not record it, or the request was wrong.
pub(super) fn link_refused(errors: &[FieldError]) -> ReplyCode {
    if errors.iter().any(|e| e.code == ErrorCode::Unavailable) {
        ReplyCode::StoreFailed
    } else {
        ReplyCode::BadLink
    }
}
