//! The operator's figures (operator key, or a listed operator named by the trusted proxy):
//! `GET /v1/ops/summary`, every node's gauges and this node's notification counts at a
//! glance; `GET /v1/ops/history`, every node's last hour minute by minute.
//!
//! On a local store the one node is this process. On Redis each node writes its report every
//! few seconds (`hub/replica/reporting.rs`), and both endpoints show every node that reported
//! within ten minutes, alive while its report is younger than three intervals; the summary's
//! `sessions`, `tabs` and `agents` are the sums over the alive nodes (a session watched
//! through two nodes counts on each).

use std::sync::atomic::Ordering;

use askgate_protocol::ReplyCode;
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::http_checks::{ApiError, authorize_operator};
use crate::clock::now_ms;
use crate::hub::{ListCursor, ListFilter, ListState, MAX_LISTED};
use crate::metrics::history::{
    ANSWER_TIME_BOUNDS_S, MAX_NOTIFICATION_ERRORS, MINUTE_MS, answer_time_counts,
};
use crate::metrics::node_report::NodeReport;
use crate::metrics::notify::CHANNELS;
use crate::server::AppState;
use crate::store::shared::NODE_REPORT_EVERY;

/// Refuses whoever may not read the operator endpoints: as [`authorize_operator`], but an
/// agent's key is known and not enough, so 403 rather than 401.
fn authorize_reader(state: &AppState, headers: &HeaderMap, what: &str) -> Result<(), ApiError> {
    let Err(refused) = authorize_operator(state, headers) else {
        return Ok(());
    };
    let agent = headers.contains_key(AUTHORIZATION) && state.agent_keys.admit(headers).is_ok();
    Err(if agent {
        ApiError::refuse(
            ReplyCode::Forbidden,
            "",
            format!("an agent key cannot read {what}: it takes an operator key (--operator-key)"),
        )
    } else {
        refused
    })
}

/// Every node to show, this one first (its figures as of now), then the others that reported
/// within [`NODE_REPORT_KEPT`](crate::store::shared::NODE_REPORT_KEPT), by id; on a local store
/// this node alone.
async fn node_reports(state: &AppState, now: u64) -> Result<Vec<NodeReport>, ApiError> {
    match state.hub.node_reports().await {
        None => Ok(vec![NodeReport::of(
            state.hub.metrics(),
            now,
            u64::try_from(NODE_REPORT_EVERY.as_millis()).unwrap_or(u64::MAX),
        )]),
        Some(Ok(reports)) => Ok(reports),
        Some(Err(error)) => Err(ApiError::refuse(
            ReplyCode::Unavailable,
            "",
            format!("the store could not be read for the nodes' reports ({error}); try again"),
        )),
    }
}

/// `GET /v1/ops/summary`.
pub async fn ops_summary(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize_reader(&state, &headers, "the summary")?;
    let open = count(&state, ListState::Open).await?;
    let orphaned = count(&state, ListState::Orphaned).await?;
    let now = now_ms();
    let reports = node_reports(&state, now).await?;
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
    let (mut sessions, mut tabs, mut agents) = (0, 0, 0);
    let mut nodes = Vec::with_capacity(reports.len());
    for report in &reports {
        let alive = report.alive(now);
        if alive {
            sessions += report.sessions;
            tabs += report.tabs;
            agents += report.agents;
        }
        nodes.push(json!({
            "id": report.id,
            "alive": alive,
            "last_seen_ms": report.at_ms,
            "sessions": report.sessions,
            "tabs": report.tabs,
            "agents": report.agents,
            "open_requests": report.open_requests,
            "connections": report.connections,
        }));
    }
    Ok(Json(json!({
        "sessions": sessions,
        "tabs": tabs,
        "agents": agents,
        "requests": {"open": open, "orphaned": orphaned},
        "notifications": Value::Object(notifications),
        "nodes": nodes,
    }))
    .into_response())
}

/// `GET /v1/ops/history`: every node's last hour minute by minute, the ask-to-answer times
/// over it, and the latest notification errors.
pub async fn ops_history(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize_reader(&state, &headers, "the history")?;
    let now = now_ms();
    let reports = node_reports(&state, now).await?;
    let mut answer_counts = vec![0u64; ANSWER_TIME_BOUNDS_S.len() + 1];
    let mut errors = Vec::new();
    let mut nodes = Vec::with_capacity(reports.len());
    for report in &reports {
        // Summed over the minutes shown as of now, not as of each report: a node that
        // stopped reporting a while ago adds only what still falls in the hour.
        let minutes = report.minutes_as_of(now);
        for (total, count) in answer_counts.iter_mut().zip(answer_time_counts(&minutes)) {
            *total = total.saturating_add(count);
        }
        errors.extend(report.notification_errors.iter().map(|e| (&report.id, e)));
        nodes.push(json!({
            "id": report.id,
            "alive": report.alive(now),
            "minutes": minutes,
        }));
    }
    errors.sort_by_key(|(_, e)| std::cmp::Reverse(e.at_ms));
    errors.truncate(MAX_NOTIFICATION_ERRORS);
    let errors: Vec<Value> = errors
        .into_iter()
        .map(|(node, e)| {
            json!({
                "at_ms": e.at_ms,
                "node": node,
                "channel": e.channel,
                "target": e.target,
                "error": e.error,
            })
        })
        .collect();
    Ok(Json(json!({
        "minute_ms": MINUTE_MS,
        "now_ms": now,
        "nodes": nodes,
        "answer_time_s": {"bounds": ANSWER_TIME_BOUNDS_S, "counts": answer_counts},
        "notification_errors": errors,
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
