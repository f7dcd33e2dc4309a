//! What every HTTP API call checks before its own work, and the error body each refusal gets
//! (`{"errors":[{path, message, code}]}`): the agent key and the sessions it may act on, the
//! ids in the path, a JSON object for a body; and, for every request the gateway serves
//! (pages, sockets' upgrades, API calls), the `--user-header` at most once.

use askgate_protocol::{ErrorCode, FieldError, RequestId, SessionId};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::keys::AgentRefusal;
use crate::scope::SessionScope;
use crate::server::AppState;
use crate::transport::tab::PeerAddress;

/// Refuses (400, before any handler: a socket is not upgraded) a request that carries the
/// identity header more than once or as a list, wherever it comes from, so that no reading
/// of it can take a value the client put in front of the proxy's.
pub async fn single_identity_header(
    State(state): State<AppState>,
    PeerAddress(peer): PeerAddress,
    request: Request,
    next: Next,
) -> Response {
    match state.proxies.lone_value(request.headers(), peer) {
        Ok(_) => next.run(request).await,
        Err(repeated) => ApiError::one(
            StatusCode::BAD_REQUEST,
            "",
            ErrorCode::InvalidValue,
            repeated.message(),
        )
        .into_response(),
    }
}

/// An error response: a status and `{"errors":[{path, message, code}]}`.
#[derive(Debug)]
pub struct ApiError(pub(super) StatusCode, pub(super) Vec<FieldError>);

impl ApiError {
    pub(super) fn one(
        status: StatusCode,
        path: &str,
        code: ErrorCode,
        message: impl Into<String>,
    ) -> Self {
        ApiError(status, vec![FieldError::new(path, code, message)])
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "errors": self.1 }))).into_response()
    }
}

/// The sessions the call's key may act on, or why the call may not act as an agent.
pub(super) fn authorize(state: &AppState, headers: &HeaderMap) -> Result<SessionScope, ApiError> {
    state.agent_keys.admit(headers).map_err(|refusal| {
        let status = match refusal {
            AgentRefusal::WrongKey => StatusCode::UNAUTHORIZED,
            AgentRefusal::FromWebPage | AgentRefusal::ForeignHost => StatusCode::FORBIDDEN,
        };
        ApiError::one(status, "", ErrorCode::InvalidValue, refusal.message())
    })
}

/// Refuses a session in the path that `scope` does not hold, before anything about it (or
/// the body) is looked at.
pub(super) fn within(scope: &SessionScope, session: &str) -> Result<(), ApiError> {
    scope
        .permit(session)
        .map_err(|m| ApiError::one(StatusCode::FORBIDDEN, "session", ErrorCode::Forbidden, m))
}

pub(super) fn session_id(text: &str) -> Result<SessionId, ApiError> {
    SessionId::parse(text)
        .map_err(|m| ApiError::one(StatusCode::NOT_FOUND, "session", ErrorCode::InvalidValue, m))
}

pub(super) fn request_id(text: &str) -> Result<RequestId, ApiError> {
    RequestId::parse(text)
        .map_err(|m| ApiError::one(StatusCode::NOT_FOUND, "id", ErrorCode::InvalidValue, m))
}

/// A POST's body as a JSON object: the status of a body that could not be read, 400 when it
/// is not JSON, 422 when it is not an object (`expected` says what it should hold).
pub(super) fn body_object(
    body: Result<Bytes, BytesRejection>,
    expected: &str,
) -> Result<serde_json::Map<String, Value>, ApiError> {
    let body = body.map_err(|rejection| {
        ApiError::one(
            rejection.status(),
            "",
            ErrorCode::InvalidValue,
            format!("the body could not be read: {}", rejection.body_text()),
        )
    })?;
    let value: Value = serde_json::from_slice(&body).map_err(|e| {
        ApiError::one(
            StatusCode::BAD_REQUEST,
            "",
            ErrorCode::InvalidJson,
            format!("the body is not JSON: {e}"),
        )
    })?;
    match value {
        Value::Object(fields) => Ok(fields),
        _ => Err(ApiError::one(
            StatusCode::UNPROCESSABLE_ENTITY,
            "",
            ErrorCode::WrongType,
            format!("the body must be a JSON object with {expected}"),
        )),
    }
}
