//! `GET /v1/requests` (operator key): what is open, orphaned or ended across every session,
//! newest first, a page at a time.

use askgate_protocol::{ErrorCode, ReplyCode};
use axum::Json;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::http_checks::{ApiError, authorize_operator};
use crate::hub::{DEFAULT_LISTED, ListCursor, ListFilter, ListState, MAX_LISTED};
use crate::server::AppState;

/// The query, read as text so that a bad value is refused in JSON with its field.
#[derive(Deserialize)]
pub struct RequestsQuery {
    state: Option<String>,
    session_prefix: Option<String>,
    older_than_s: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

fn bad(field: &str, message: String) -> ApiError {
    ApiError::one(
        ReplyCode::BadRequest,
        field,
        ErrorCode::InvalidValue,
        message,
    )
}

impl RequestsQuery {
    fn filter(&self) -> Result<ListFilter, ApiError> {
        let state = match self.state.as_deref() {
            None | Some("") => ListState::Open,
            Some(text) => ListState::parse(text).map_err(|m| bad("state", m))?,
        };
        let older_than_ms = match self.older_than_s.as_deref() {
            None | Some("") => None,
            Some(text) => Some(
                text.parse::<u64>()
                    .map_err(|_| {
                        bad(
                            "older_than_s",
                            format!("must be a whole number of seconds, got {text:?}"),
                        )
                    })?
                    .saturating_mul(1000),
            ),
        };
        let limit = match self.limit.as_deref() {
            None | Some("") => DEFAULT_LISTED,
            Some(text) => match text.parse::<usize>() {
                Ok(limit) if (1..=MAX_LISTED).contains(&limit) => limit,
                _ => {
                    return Err(bad(
                        "limit",
                        format!("must be a whole number from 1 to {MAX_LISTED}, got {text:?}"),
                    ));
                }
            },
        };
        let after = match self.cursor.as_deref() {
            None | Some("") => None,
            Some(text) => Some(ListCursor::decode(text).map_err(|m| bad("cursor", m))?),
        };
        Ok(ListFilter {
            state,
            session_prefix: self.session_prefix.clone().filter(|p| !p.is_empty()),
            older_than_ms,
            limit,
            after,
        })
    }
}

/// `GET /v1/requests`.
pub async fn list_requests(
    State(state): State<AppState>,
    Query(query): Query<RequestsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize_operator(&state, &headers)?;
    let filter = query.filter()?;
    let (requests, next_cursor) = state.hub.list_requests(&filter).await.map_err(|error| {
        ApiError::refuse(
            ReplyCode::Unavailable,
            "",
            format!("the store could not be read ({error}); try again"),
        )
    })?;
    Ok(Json(json!({"requests": requests, "next_cursor": next_cursor})).into_response())
}
