//! Remembered approvals over HTTP: `GET` and `DELETE /v1/sessions/{session}/rules[/{id}]`
//! for a session's rules (an agent key whose scope covers the session, or the operator key),
//! `GET` and `DELETE /v1/rules[/{id}]` for agent keys' rules (the calling key's own; every
//! key's for the operator key). Each listing is `{"rules": [...]}`; a revocation answers
//! `{"revoked": rule}`, or 404 for a rule there is not.

use askgate_protocol::ReplyCode;
use askgate_protocol::approval::rules::Rule;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::http_checks::{ApiError, Caller, authorize_caller, session_id};
use crate::hub::Revoker;
use crate::server::AppState;
use crate::store::StoreError;

fn unreadable(error: &StoreError) -> ApiError {
    ApiError::refuse(
        ReplyCode::Unavailable,
        "",
        format!("the store could not be read ({error}); try again"),
    )
}

fn revoker(caller: &Caller) -> Revoker<'static> {
    match caller {
        Caller::Operator => Revoker::Operator,
        Caller::Agent(_) => Revoker::Agent,
    }
}

/// The agent keys whose rules the caller may see and revoke: its own, or every one.
fn keys_of(state: &AppState, caller: &Caller, headers: &HeaderMap) -> Vec<String> {
    match caller {
        Caller::Operator => state.agent_keys.key_ids(),
        Caller::Agent(_) => vec![state.agent_keys.key_id(headers)],
    }
}

async fn revoke(
    state: &AppState,
    among: Vec<Rule>,
    rule_id: &str,
    by: Revoker<'_>,
) -> Result<Response, ApiError> {
    match state.hub.revoke_rule(among, rule_id, by).await {
        Ok(Some(rule)) => Ok(Json(json!({"revoked": rule})).into_response()),
        Ok(None) => Err(ApiError::refuse(
            ReplyCode::NotFound,
            "id",
            format!("no rule {rule_id:?} here (never made, expired, or revoked)"),
        )),
        Err(error) => Err(ApiError::refuse(
            ReplyCode::StoreFailed,
            "",
            format!(
                "the gateway could not store the revocation ({error}); the rule stands; try again"
            ),
        )),
    }
}

/// `GET /v1/sessions/{session}/rules`.
pub async fn get_session_rules(
    State(state): State<AppState>,
    Path(session): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let caller = authorize_caller(&state, &headers)?;
    caller.within(&session)?;
    let session = session_id(&session)?;
    let rules = state
        .hub
        .session_rules(&session)
        .await
        .map_err(|e| unreadable(&e))?;
    Ok(Json(json!({"rules": rules})).into_response())
}

/// `DELETE /v1/sessions/{session}/rules/{id}`.
pub async fn delete_session_rule(
    State(state): State<AppState>,
    Path((session, rule_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let caller = authorize_caller(&state, &headers)?;
    caller.within(&session)?;
    let session = session_id(&session)?;
    let among = state
        .hub
        .session_rules(&session)
        .await
        .map_err(|e| unreadable(&e))?;
    revoke(&state, among, &rule_id, revoker(&caller)).await
}

/// `GET /v1/rules`.
pub async fn get_key_rules(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let caller = authorize_caller(&state, &headers)?;
    let rules = state
        .hub
        .key_rules(&keys_of(&state, &caller, &headers))
        .await
        .map_err(|e| unreadable(&e))?;
    Ok(Json(json!({"rules": rules})).into_response())
}

/// `DELETE /v1/rules/{id}`.
pub async fn delete_key_rule(
    State(state): State<AppState>,
    Path(rule_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let caller = authorize_caller(&state, &headers)?;
    let among = state
        .hub
        .key_rules(&keys_of(&state, &caller, &headers))
        .await
        .map_err(|e| unreadable(&e))?;
    revoke(&state, among, &rule_id, revoker(&caller)).await
}
