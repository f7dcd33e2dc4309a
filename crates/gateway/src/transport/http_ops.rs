//! `GET /v1/ops/summary` (operator key): this node's figures at a glance, from the hub's
//! gauges and the notification counts.

use std::sync::OnceLock;
use std::sync::atomic::Ordering;

use askgate_protocol::ReplyCode;
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::http_checks::{ApiError, authorize_operator};
use crate::hub::{ListCursor, ListFilter, ListState, MAX_LISTED};
use crate::metrics::notify::CHANNELS;
use crate::server::AppState;

/// This process's id in the summary: random, made once.
fn node_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| format!("{:016x}", rand::random::<u64>()))
}

/// `GET /v1/ops/summary`.
pub async fn ops_summary(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if let Err(refused) = authorize_operator(&state, &headers) {
        // A key that lets an agent in is known, and not enough: 403 rather than 401.
        let agent = headers.contains_key(AUTHORIZATION) && state.agent_keys.admit(&headers).is_ok();
        return Err(if agent {
            ApiError::refuse(
                ReplyCode::Forbidden,
                "",
                "an agent key cannot read the summary: it takes an operator key (--operator-key)",
            )
        } else {
            refused
        });
    }
    let open = count(&state, ListState::Open).await?;
    let orphaned = count(&state, ListState::Orphaned).await?;
    let metrics = state.hub.metrics();
    let gauge = |g: &std::sync::atomic::AtomicI64| g.load(Ordering::Relaxed);
    let mut notifications = Map::new();
    for (channel, counts) in CHANNELS.iter().zip(&metrics.notify.channels) {
        notifications.insert(
            (*channel).to_owned(),
            json!({
                "due": gauge(&counts.queued),
                "sent": counts.sent.load(Ordering::Relaxed),
                "retried": counts.retried.load(Ordering::Relaxed),
                "given_up": counts.given_up.load(Ordering::Relaxed),
            }),
        );
    }
    let this_node = json!({
        "id": node_id(),
        "alive": true,
        "sessions": gauge(&metrics.sessions),
        "tabs": gauge(&metrics.tabs),
        "agents": gauge(&metrics.agents),
        "open_requests": gauge(&metrics.open_requests),
        "connections": gauge(&metrics.connections),
    });
    Ok(Json(json!({
        "sessions": gauge(&metrics.sessions),
        "tabs": gauge(&metrics.tabs),
        "agents": gauge(&metrics.agents),
        "requests": {"open": open, "orphaned": orphaned},
        "notifications": Value::Object(notifications),
        "nodes": [this_node],
    }))
    .into_response())
}

/// How many requests `GET /v1/requests?state=...` would list, page after page.
async fn count(state: &AppState, wanted: ListState) -> Result<usize, ApiError> {
    let mut total = 0;
    let mut after = None;
    loop {
        let filter = ListFilter {
            state: wanted,
            session_prefix: None,
            older_than_ms: None,
            limit: MAX_LISTED,
            after,
        };
        let (page, next) = state.hub.list_requests(&filter).await.map_err(|error| {
            ApiError::refuse(
                ReplyCode::Unavailable,
                "",
                format!("the store could not be read ({error}); try again"),
            )
        })?;
        total += page.len();
        match next {
            Some(cursor) => {
                after =
                    Some(ListCursor::decode(&cursor).map_err(|message| {
                        ApiError::refuse(ReplyCode::Unavailable, "", message)
                    })?);
            }
            None => return Ok(total),
        }
    }
}
