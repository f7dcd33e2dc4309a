//! `POST /v1/sessions/{session}/links`: a personal link for one person, with
//! `{"user": "alice@example.com", "ttl_s": 86400}` (agent key). 201 with
//! `{"session", "user", "url", "expires_ms"}`; 422 with the paths of bad fields; 403 outside
//! the key's scope; 503 if the audit trail could not record the issue.

use askgate_protocol::{ErrorCode, FieldError, ReplyCode};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::http_checks::{ApiError, authorize, body_object, session_id, within};
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
    let user = match fields.get("user") {
        Some(Value::String(user)) => user.as_str(),
        Some(Value::Null) | None => {
            return Err(ApiError::one(
                ReplyCode::BadLink,
                "user",
                ErrorCode::MissingField,
                "required: the person the link is for",
            ));
        }
        Some(_) => {
            return Err(ApiError::one(
                ReplyCode::BadLink,
                "user",
                ErrorCode::WrongType,
                "must be a string",
            ));
        }
    };
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

/// The kind of refusal a link that could not be issued gets, on the socket and over HTTP
/// alike: the audit trail could not record it, or the request was wrong.
pub(super) fn link_refused(errors: &[FieldError]) -> ReplyCode {
    if errors.iter().any(|e| e.code == ErrorCode::Unavailable) {
        ReplyCode::StoreFailed
    } else {
        ReplyCode::BadLink
    }
}
