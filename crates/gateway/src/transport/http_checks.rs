//! What every HTTP API call checks before its own work, and the error body each refusal gets
//! (`{"errors":[{path, message, code}]}`): the agent key and the sessions it may act on, the
//! ids in the path, a JSON object for a body; and, for every request the gateway serves
//! (pages, sockets' upgrades, API calls), the `--user-header` at most once, and the person it
//! names (from a `--trusted-proxy`) carried with the call, so that the operator endpoints
//! admit a listed operator as they admit the operator key.

use askgate_protocol::{ErrorCode, FieldError, ReplyCode, RequestId, SessionId};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::hub::{Acting, acting, acting_as};
use crate::keys::AgentRefusal;
use crate::people::proxy::ProxyIdentity;
use crate::scope::SessionScope;
use crate::server::AppState;
use crate::transport::tab::PeerAddress;

/// Refuses (400, before any handler: a socket is not upgraded) a request that carries the
/// identity header more than once or as a list, wherever it comes from, so that no reading
/// of it can take a value the client put in front of the proxy's. A request whose one header
/// a trusted proxy set is handled as that person ([`crate::hub::acting`]): what
/// [`authorize_operator`] and [`authorize_caller`] read.
pub async fn single_identity_header(
    State(state): State<AppState>,
    PeerAddress(peer): PeerAddress,
    request: Request,
    next: Next,
) -> Response {
    match state.proxies.lone_value(request.headers(), peer) {
        Ok(None) => next.run(request).await,
        Ok(Some(_)) => match state.proxies.identify(request.headers(), peer) {
            ProxyIdentity::Person(person) => {
                let operator = state.hub.is_operator(&person);
                acting_as(Acting { person, operator }, next.run(request)).await
            }
            ProxyIdentity::None => next.run(request).await,
        },
        Err(repeated) => ApiError::one(
            ReplyCode::BadRequest,
            "",
            ErrorCode::InvalidValue,
            repeated.message(),
        )
        .into_response(),
    }
}

/// An error response: a status and `{"errors":[{path, message, code}]}`.
#[derive(Debug)]
pub struct ApiError(StatusCode, Vec<FieldError>);

impl ApiError {
    /// A refusal of kind `reply`, at its status, with `errors` (a check's own).
    pub(super) fn new(reply: ReplyCode, errors: Vec<FieldError>) -> Self {
        ApiError(status_of(reply), errors)
    }

    /// A refusal of kind `reply` with one error, whose code the kind names.
    pub(super) fn refuse(reply: ReplyCode, path: &str, message: impl Into<String>) -> Self {
        // A kind whose errors are a check's own takes its code from the check: `one`.
        let code = reply.http_code().unwrap_or(ErrorCode::InvalidValue);
        ApiError::one(reply, path, code, message)
    }

    /// A refusal of kind `reply` with one error of `code`.
    pub(super) fn one(
        reply: ReplyCode,
        path: &str,
        code: ErrorCode,
        message: impl Into<String>,
    ) -> Self {
        ApiError::new(reply, vec![FieldError::new(path, code, message)])
    }
}

/// The HTTP status of `reply`, from the protocol's table.
fn status_of(reply: ReplyCode) -> StatusCode {
    // Every status in the table is a valid one; a 500 would say the table is wrong.
    StatusCode::from_u16(reply.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "errors": self.1 }))).into_response()
    }
}

/// The sessions the call's key may act on, or why the call may not act as an agent.
pub(super) fn authorize(state: &AppState, headers: &HeaderMap) -> Result<SessionScope, ApiError> {
    state.agent_keys.admit(headers).map_err(|refusal| {
        let reply = match refusal {
            AgentRefusal::WrongKey => ReplyCode::WrongKey,
            AgentRefusal::FromWebPage | AgentRefusal::ForeignHost => ReplyCode::NotAnAgent,
        };
        ApiError::refuse(reply, "", refusal.message())
    })
}

/// Who calls an endpoint an operator may call too: an operator key (every session, to read and
/// withdraw), or an agent key (within its scope).
pub(super) enum Caller {
    Operator,
    Agent(SessionScope),
}

impl Caller {
    /// Refuses a session the caller may not act on.
    pub(super) fn within(&self, session: &str) -> Result<(), ApiError> {
        match self {
            Caller::Operator => Ok(()),
            Caller::Agent(scope) => within(scope, session),
        }
    }

    /// Who a withdrawal by this caller is by.
    pub(super) fn via(&self) -> askgate_protocol::wire::Via {
        match self {
            Caller::Operator => askgate_protocol::wire::Via::Operator,
            Caller::Agent(_) => askgate_protocol::wire::Via::Agent,
        }
    }
}

/// The caller of an endpoint open to operators and agent keys alike: an operator key or a
/// listed operator named by the trusted proxy, else an agent key. A person the proxy named
/// who is not an operator, with no key at all, is refused with 403 (see
/// [`not_an_operator`]).
pub(super) fn authorize_caller(state: &AppState, headers: &HeaderMap) -> Result<Caller, ApiError> {
    if state.agent_keys.is_operator(headers) {
        return Ok(Caller::Operator);
    }
    match acting() {
        Some(Acting { operator: true, .. }) => return Ok(Caller::Operator),
        // Only a key that lets an agent in makes a person the proxy named an agent: in local
        // mode any `Authorization` would pass, and a call through the proxy is not a program
        // on this machine.
        Some(Acting { person, .. })
            if !headers.contains_key(AUTHORIZATION) || state.agent_keys.local_mode() =>
        {
            return Err(not_an_operator(&person));
        }
        _ => {}
    }
    authorize(state, headers).map(Caller::Agent)
}

/// Refuses every caller but an operator: the operator key, or a person `--operators` or the
/// notify file lists, named by the trusted proxy's identity header. Without either, 401 (an
/// agent key, or none, is not one); a person named who is not listed, 403.
pub(super) fn authorize_operator(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    if state.agent_keys.is_operator(headers) {
        return Ok(());
    }
    match acting() {
        Some(Acting { operator: true, .. }) => Ok(()),
        Some(Acting { person, .. }) => Err(not_an_operator(&person)),
        None => Err(ApiError::refuse(
            ReplyCode::WrongKey,
            "",
            "this endpoint takes an operator key (--operator-key), as `Authorization: Bearer KEY`, \
             or a person --operators lists, named by the trusted proxy",
        )),
    }
}

/// 403 for `person`, whom the trusted proxy named and no operator list holds: known, and not
/// allowed (a key would not change who they are).
fn not_an_operator(person: &str) -> ApiError {
    ApiError::refuse(
        ReplyCode::Forbidden,
        "",
        format!(
            "{person} is not an operator: list them in --operators or the notify file's \
             `operators`, or call with an operator key"
        ),
    )
}

/// Refuses a session in the path that `scope` does not hold, before anything about it (or
/// the body) is looked at.
pub(super) fn within(scope: &SessionScope, session: &str) -> Result<(), ApiError> {
    scope
        .permit(session)
        .map_err(|m| ApiError::refuse(ReplyCode::Forbidden, "session", m))
}

pub(super) fn session_id(text: &str) -> Result<SessionId, ApiError> {
    SessionId::parse(text).map_err(|m| ApiError::refuse(ReplyCode::BadSession, "session", m))
}

pub(super) fn request_id(text: &str) -> Result<RequestId, ApiError> {
    // An id that cannot name a request names none there is.
    RequestId::parse(text).map_err(|m| ApiError::refuse(ReplyCode::NotFound, "id", m))
}

/// A POST's body as a JSON object: the status of a body that could not be read, 400 when it
/// is not JSON, 422 when it is not an object (`expected` says what it should hold).
pub(super) fn body_object(
    body: Result<Bytes, BytesRejection>,
    expected: &str,
) -> Result<serde_json::Map<String, Value>, ApiError> {
    // Not a row of the table: the HTTP server's own refusal (413 too large, 400 cut off...),
    // which no socket sees.
    let body = body.map_err(|rejection| {
        let error = FieldError::new(
            "",
            ErrorCode::InvalidValue,
            format!("the body could not be read: {}", rejection.body_text()),
        );
        ApiError(rejection.status(), vec![error])
    })?;
    let value: Value = serde_json::from_slice(&body).map_err(|e| {
        ApiError::refuse(
            ReplyCode::BadFrame,
            "",
            format!("the body is not JSON: {e}"),
        )
    })?;
    match value {
        Value::Object(fields) => Ok(fields),
        _ => Err(ApiError::one(
            ReplyCode::Invalid,
            "",
            ErrorCode::WrongType,
            format!("the body must be a JSON object with {expected}"),
        )),
    }
}
