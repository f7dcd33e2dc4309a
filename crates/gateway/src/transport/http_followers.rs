//! `POST` and `DELETE /v1/sessions/{session}/followers` with `{"user": "alice@example.com"}`
//! (agent key, within its session scope): the person follows the session, or no longer.
//! `POST` answers 201 when they follow it now and 200 when they already did; `DELETE` 204
//! either way. 422 with the path of a bad `user`, or when the session has the most followers;
//! 403 outside the key's scope; 503 if the store could not keep the change.

use askgate_protocol::ReplyCode;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::http_checks::{ApiError, authorize, body_object, session_id, within};
use super::http_links::user_field;
use crate::hub::{FollowRefused, Followed};
use crate::server::AppState;

/// `POST /v1/sessions/{session}/followers`.
pub async fn post_follower(
    State(state): State<AppState>,
    Path(session): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let (session, user) = change(&state, &session, &headers, body, true).await?;
    let status = match user.1 {
        Followed::Changed => StatusCode::CREATED,
        Followed::Already => StatusCode::OK,
    };
    Ok((
        status,
        Json(json!({"session": session, "user": user.0, "following": true})),
    )
        .into_response())
}

/// `DELETE /v1/sessions/{session}/followers`.
pub async fn delete_follower(
    State(state): State<AppState>,
    Path(session): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    change(&state, &session, &headers, body, false).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Checks the call and makes the change: the session, and who with what became of it.
async fn change(
    state: &AppState,
    session: &str,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    on: bool,
) -> Result<(String, (String, Followed)), ApiError> {
    within(&authorize(state, headers)?, session)?;
    let session = session_id(session)?;
    let fields = body_object(body, "`user`")?;
    let user = user_field(&fields, ReplyCode::Invalid, "the person who follows")?;
    match state.hub.set_following(&session, user, on).await {
        Ok(followed) => Ok((session.to_string(), (user.to_owned(), followed))),
        Err(refused @ FollowRefused::Store(_)) => {
            Err(ApiError::new(ReplyCode::StoreFailed, refused.errors()))
        }
        Err(refused) => Err(ApiError::new(ReplyCode::Invalid, refused.errors())),
    }
}
