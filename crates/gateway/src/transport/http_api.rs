//! The HTTP API for paused runs: hosts that cannot hold a socket (pydantic-ai's deferred
//! tools, LangGraph interrupts) post a request, poll or long-poll for its outcome, withdraw it,
//! and acknowledge it. Same validation, idempotency, keys and error bodies as the socket.
//! A key bound to a scope is refused (403 `forbidden`, at `session`) on every call naming a
//! session outside it, before the session is looked up.
//!
//! | call | result |
//! |---|---|
//! | `POST /v1/sessions/{session}/requests` | 201 created, 200 repeat, 422 invalid, 400 not JSON, 413 too large, 409 id taken, 503 store failed or a limit reached |
//! | `GET /v1/sessions/{session}/requests/{id}?wait_s=N` | 200 pending or resolved (waits up to N s, at most 60), 400 bad `wait_s`, 404 |
//! | `DELETE /v1/sessions/{session}/requests/{id}` | 200 with the outcome (withdrawn, or the earlier one), 404, 503 if the store failed |
//! | `POST /v1/sessions/{session}/requests/{id}/ack` | 204, 409 if it has not ended |

use std::time::Duration;

use askgate_protocol::harness::{TopLevelExtras, validate_args};
use askgate_protocol::wire::AskFrame;
use askgate_protocol::{Dialect, ErrorCode, FieldError, ReplyCode, RequestId, SessionId};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::http_checks::{
    ApiError, authorize, authorize_caller, body_object, request_id, session_id, within,
};
use crate::hub::{AckReply, AskReply, Lookup, Withdrawal};
use crate::server::AppState;
use crate::store::StoredResolution;

/// Longest long-poll, in seconds.
pub const MAX_WAIT_S: f64 = 60.0;

/// The body of a POST: an ask, with `questions`, or with a tool call's `args` (an object or
/// JSON text, read as `AskUserRequest.from_tool_call` reads them: other keys ignored). Every
/// field is kept as any JSON, so a value of the wrong type is refused with its path, not as a
/// body that does not parse.
struct PostBody {
    id: Option<Value>,
    dialect: Option<Value>,
    questions: Option<Value>,
    args: Option<Value>,
    timeout_s: Option<Value>,
    title: Option<Value>,
    answerers: Option<Value>,
    /// Every other field: another dialect's request (`calls`, a form's fields...).
    rest: serde_json::Map<String, Value>,
}

impl PostBody {
    /// Reads a POST's body.
    fn read(body: Result<Bytes, BytesRejection>) -> Result<PostBody, ApiError> {
        let mut fields = body_object(body, "`questions` (or a tool call's `args`)")?;
        // As serde reads an `Option`: `null` is absent.
        let take = |fields: &mut serde_json::Map<String, Value>, key: &str| {
            fields.remove(key).filter(|v| !v.is_null())
        };
        Ok(PostBody {
            id: take(&mut fields, "id"),
            dialect: take(&mut fields, "dialect"),
            questions: take(&mut fields, "questions"),
            args: take(&mut fields, "args"),
            timeout_s: take(&mut fields, "timeout_s"),
            title: take(&mut fields, "title"),
            answerers: take(&mut fields, "answerers"),
            rest: fields,
        })
    }
}

/// The body's questions: `questions`, or a harness tool call's `args`; for a dialect whose
/// request is elsewhere (`calls`, a form's fields), `questions` as sent, if at all, so that the
/// ask's own check names it.
fn questions_of(body: &PostBody) -> Result<Value, ApiError> {
    let dialect = match body.dialect.as_ref().and_then(Value::as_str) {
        Some(name) => Dialect::parse(name).ok(),
        None => Some(Dialect::HARNESS),
    };
    if let Some(dialect) = dialect.filter(|d| !d.face().fields().contains(&"questions")) {
        if body.args.is_some() {
            return Err(ApiError::one(
                ReplyCode::Invalid,
                "args",
                ErrorCode::UnknownField,
                format!(
                    "`args` is a harness tool call's; the {dialect} dialect's request goes in {}",
                    dialect.face().fields().join(", ")
                ),
            ));
        }
        return Ok(body.questions.clone().unwrap_or(Value::Null));
    }
    let unprocessable = |path: &str, message: String| {
        ApiError::one(ReplyCode::Invalid, path, ErrorCode::InvalidValue, message)
    };
    match (&body.questions, &body.args) {
        (Some(questions), None) => Ok(questions.clone()),
        (None, Some(args)) => {
            let args = match args {
                Value::String(text) => serde_json::from_str::<Value>(text)
                    .map_err(|e| unprocessable("args", format!("not JSON: {e}")))?,
                other => other.clone(),
            };
            // Only the harness's tool calls carry `args` this way; check the shape here so the
            // error names `args`, then let the ask's own validation judge the questions.
            if body.dialect.as_ref().is_none_or(|d| d == "harness")
                && let Err(errors) = validate_args(&args, TopLevelExtras::Ignore)
            {
                let errors = errors
                    .into_vec()
                    .into_iter()
                    .map(|e| {
                        let path = if e.path.is_empty() {
                            "args".to_owned()
                        } else {
                            format!("args.{}", e.path)
                        };
                        FieldError::new(path, e.code, e.message)
                    })
                    .collect();
                return Err(ApiError::new(ReplyCode::Invalid, errors));
            }
            Ok(args.get("questions").cloned().unwrap_or(Value::Null))
        }
        (Some(_), Some(_)) => Err(unprocessable(
            "args",
            "give `questions` or `args`, not both".into(),
        )),
        (None, None) => Err(unprocessable(
            "questions",
            "required field is missing".into(),
        )),
    }
}

fn resolved_body(id: &RequestId, resolution: &StoredResolution) -> Value {
    let mut body = json!({
        "state": "resolved",
        "id": id.as_str(),
        "outcome": resolution.settlement.outcome,
        "response": resolution.settlement.response,
        "result": resolution.settlement.result,
        "model_text": resolution.settlement.model_text,
        "by": resolution.by,
        "user": resolution.user,
        "via": resolution.via,
        "at_ms": resolution.at_ms,
    });
    if let Some(voters) = &resolution.voters {
        body["voters"] = voters.clone();
    }
    body
}

/// `POST /v1/sessions/{session}/requests`.
pub async fn post_request(
    State(state): State<AppState>,
    Path(session): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    within(&authorize(&state, &headers)?, &session)?;
    let body = PostBody::read(body)?;
    // The session in the path is checked with the rest of the ask: a bad one is an invalid
    // request (422 at `session`), not a missing one.
    let frame = AskFrame {
        session: Value::String(session),
        id: body.id.clone(),
        dialect: body.dialect.clone(),
        questions: questions_of(&body)?,
        rest: body.rest.clone(),
        timeout_s: body.timeout_s.clone(),
        title: body.title.clone(),
        answerers: body.answerers.clone(),
    };
    let checked = frame
        .check(state.hub.limits().max_timeout_s)
        .map_err(|errors| ApiError::new(ReplyCode::Invalid, errors))?;
    let viewer_url = state.hub.keys().viewer_url(&checked.session);
    let key_id = state.agent_keys.key_id(&headers);
    match state.hub.ask_as(checked, None, &key_id).await {
        AskReply::Accepted {
            id,
            deadline_ms,
            created,
        } => {
            let status = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            let body = json!({"state": "pending", "id": id.as_str(), "deadline_ms": deadline_ms, "viewer_url": viewer_url});
            Ok((status, Json(body)).into_response())
        }
        AskReply::Resolved { id, resolution } => {
            let mut body = resolved_body(&id, &resolution);
            body["viewer_url"] = json!(viewer_url);
            Ok((StatusCode::OK, Json(body)).into_response())
        }
        AskReply::Rejected { errors, reply, .. } => Err(ApiError::new(reply, errors)),
    }
}

/// `?wait_s=N`, read as text so that one that is not a number is refused in JSON like every
/// other error.
#[derive(Deserialize)]
pub struct WaitQuery {
    wait_s: Option<String>,
}

impl WaitQuery {
    /// How long to wait: `wait_s` seconds, 0 when absent. The design lets a poll last 60 s at
    /// most; a longer `wait_s` waits that long rather than being refused, so a host that asks
    /// for more still gets the written behaviour.
    fn wait(&self) -> Result<Duration, ApiError> {
        let Some(text) = &self.wait_s else {
            return Ok(Duration::ZERO);
        };
        match text.trim().parse::<f64>() {
            Ok(seconds) if seconds >= 0.0 => Ok(Duration::from_secs_f64(seconds.min(MAX_WAIT_S))),
            _ => Err(ApiError::one(
                ReplyCode::BadRequest,
                "wait_s",
                ErrorCode::InvalidValue,
                format!("must be a number of seconds, 0 or more, got {text:?}"),
            )),
        }
    }
}

/// `GET /v1/sessions/{session}/requests/{id}?wait_s=N`.
pub async fn get_request(
    State(state): State<AppState>,
    Path((session, id)): Path<(String, String)>,
    Query(query): Query<WaitQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    within(&authorize(&state, &headers)?, &session)?;
    let (session, id) = (session_id(&session)?, request_id(&id)?);
    let wait = query.wait()?;
    let lookup = tokio::select! {
        lookup = state.hub.long_poll(&session, &id, wait) => lookup,
        // A shutdown ends the poll early with the current state; the host polls again.
        () = state.shutdown.cancelled() => state.hub.wait_for(&session, &id, Duration::ZERO).await,
    };
    match lookup {
        Lookup::Unknown => Err(not_found(&session, &id)),
        Lookup::Pending { deadline_ms } => Ok(Json(json!({
            "state": "pending",
            "id": id.as_str(),
            "deadline_ms": deadline_ms,
            "viewer_url": state.hub.keys().viewer_url(&session),
        }))
        .into_response()),
        Lookup::Resolved(resolution) => Ok(Json(resolved_body(&id, &resolution)).into_response()),
        Lookup::Unavailable(error) => Err(ApiError::refuse(
            ReplyCode::Unavailable,
            "",
            format!("the gateway could not reach its store ({error}); try again"),
        )),
    }
}

/// `DELETE /v1/sessions/{session}/requests/{id}`.
pub async fn delete_request(
    State(state): State<AppState>,
    Path((session, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let caller = authorize_caller(&state, &headers)?;
    caller.within(&session)?;
    let (session, id) = (session_id(&session)?, request_id(&id)?);
    match state.hub.withdraw(&session, &id, None, caller.via()).await {
        Withdrawal::Ended(resolution) => Ok(Json(resolved_body(&id, &resolution)).into_response()),
        // Ended and forgotten meanwhile: gone, as a later call would find it.
        Withdrawal::Unknown | Withdrawal::Forgotten => Err(not_found(&session, &id)),
        Withdrawal::Failed(error) => Err(ApiError::refuse(
            ReplyCode::StoreFailed,
            "",
            format!(
                "the gateway could not store the withdrawal ({error}); the request stays open; try again"
            ),
        )),
    }
}

/// `POST /v1/sessions/{session}/requests/{id}/ack`.
pub async fn ack_request(
    State(state): State<AppState>,
    Path((session, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    within(&authorize(&state, &headers)?, &session)?;
    let (session, id) = (session_id(&session)?, request_id(&id)?);
    match state.hub.acknowledge(&session, &id).await {
        AckReply::Forgotten => Ok(StatusCode::NO_CONTENT.into_response()),
        AckReply::NotResolved => Err(ApiError::refuse(
            ReplyCode::NotResolved,
            "id",
            "the request has not ended yet; withdraw it with DELETE instead",
        )),
    }
}

fn not_found(session: &SessionId, id: &RequestId) -> ApiError {
    ApiError::refuse(
        ReplyCode::NotFound,
        "id",
        format!(
            "no request {id} in session {session} (never asked, or acknowledged and forgotten)"
        ),
    )
}
