//! Web Push for the pages: `GET /v1/push/key` (the VAPID public key a browser subscribes
//! with) and `GET`, `POST`, `DELETE /v1/push/subscriptions` (a person's devices).
//!
//! The subscription calls carry the page's own key, `Authorization: Bearer KEY`: a personal
//! link's key with `?session=ID` (the session it was signed for), or an inbox key without;
//! behind the trusted proxy (`--user-header`), its header names the person instead.
//! The key's person is the one whose devices they are; the plain session link's key names
//! nobody, so it is refused (403). A device subscribed with a personal key is told only of
//! that session's requests, and only that session's personal keys see it: such a key may
//! have been issued by an agent limited to the session, which must not reach the person's
//! other sessions through it. The inbox's key sees, and is told of, every session. Every call answers 404 when the gateway has no `[push]`.

use askgate_protocol::{ErrorCode, ReplyCode, SessionId};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::http_checks::{ApiError, body_object};
use super::tab::PeerAddress;
use crate::clock::now_ms;
use crate::notify::Notifier;
use crate::notify::push::{SubscribeRefused, Subscription};
use crate::people::ProxyIdentity;
use crate::server::AppState;

/// Where the calls' key was signed for.
#[derive(Debug, Deserialize)]
pub struct KeyPlace {
    session: Option<String>,
}

fn not_configured() -> ApiError {
    ApiError::refuse(
        ReplyCode::NotFound,
        "",
        "this gateway sends no Web Push (its notify file has no [push])",
    )
}

fn notifier(state: &AppState) -> Result<&std::sync::Arc<Notifier>, ApiError> {
    state
        .hub
        .notifier()
        .filter(|notifier| notifier.push_key().is_some())
        .ok_or_else(not_configured)
}

/// `GET /v1/push/key`.
pub async fn get_push_key(State(state): State<AppState>) -> Result<Response, ApiError> {
    let key = notifier(&state)?.push_key().ok_or_else(not_configured)?;
    Ok(Json(json!({ "key": key })).into_response())
}

/// The person the call is from, and the session their key was signed for (`None`: an
/// inbox key, or a person the trusted proxy names, who is that person in every session). A
/// personal key sees and changes only the devices subscribed from its session.
fn person(
    state: &AppState,
    headers: &HeaderMap,
    place: &KeyPlace,
    peer: Option<std::net::IpAddr>,
) -> Result<(String, Option<String>), ApiError> {
    if let ProxyIdentity::Person(user) = state.proxies.identify(headers, peer) {
        return Ok((user, None));
    }
    let wrong = |why: &str| ApiError::refuse(ReplyCode::WrongKey, "authorization", why.to_owned());
    let key = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .ok_or_else(|| wrong("expected `Authorization: Bearer KEY`, the page's key"))?;
    let keys = state.hub.keys();
    let identified = match &place.session {
        Some(session) => {
            let session = SessionId::parse(session).map_err(|e| {
                ApiError::one(ReplyCode::BadRequest, "session", ErrorCode::InvalidValue, e)
            })?;
            keys.identify(&session, key, now_ms())
        }
        None => keys.identify_inbox(key, now_ms()),
    };
    let person = identified.map_err(|refusal| wrong(refusal.reason()))?;
    let user = person.user.map(|user| user.to_string()).ok_or_else(|| {
        ApiError::refuse(
            ReplyCode::Forbidden,
            "authorization",
            "the session link names nobody: open your personal link to be told on this device",
        )
    })?;
    Ok((user, place.session.clone()))
}

fn store_failed(error: &impl std::fmt::Display) -> ApiError {
    ApiError::refuse(
        ReplyCode::StoreFailed,
        "",
        format!("the store did not keep the change: {error}"),
    )
}

/// `{"user", "devices"}` for `person`, as a key for `session` sees them.
async fn devices(
    notifier: &Notifier,
    (person, session): &(String, Option<String>),
) -> Result<Value, ApiError> {
    let subs = notifier
        .subscriptions_of(person)
        .await
        .map_err(|e| store_failed(&e))?;
    // A device subscribed from several pages is one device to its person (newest first).
    let mut listed = std::collections::HashSet::new();
    let devices: Vec<Value> = subs
        .iter()
        .filter(|sub| sub.seen_from(session.as_deref()) && listed.insert(sub.id()))
        .map(|sub| json!({"id": sub.id(), "label": sub.label, "created_ms": sub.created_ms}))
        .collect();
    Ok(json!({"user": person, "devices": devices}))
}

/// `GET /v1/push/subscriptions`.
pub async fn get_subscriptions(
    State(state): State<AppState>,
    Query(place): Query<KeyPlace>,
    PeerAddress(peer): PeerAddress,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let notifier = notifier(&state)?;
    let who = person(&state, &headers, &place, peer)?;
    Ok(Json(devices(notifier, &who).await?).into_response())
}

/// A string member of `body` at `path` (`keys.auth` reads `body.keys.auth`).
fn text<'b>(body: &'b Value, path: &str) -> Result<&'b str, ApiError> {
    let value = path.split('.').fold(body, |value, name| &value[name]);
    value.as_str().ok_or_else(|| {
        ApiError::one(
            ReplyCode::Invalid,
            path,
            ErrorCode::WrongType,
            "expected a string",
        )
    })
}

/// `POST /v1/push/subscriptions` with `subscription.toJSON()` and an optional `label`.
pub async fn post_subscription(
    State(state): State<AppState>,
    Query(place): Query<KeyPlace>,
    PeerAddress(peer): PeerAddress,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let notifier = notifier(&state)?;
    let who = person(&state, &headers, &place, peer)?;
    let body = Value::Object(body_object(
        body,
        "a push subscription: {\"endpoint\", \"keys\": {\"p256dh\", \"auth\"}, \"label\"}",
    )?);
    let label = match &body["label"] {
        Value::Null => String::new(),
        _ => text(&body, "label")?.to_owned(),
    };
    let subscription = Subscription {
        endpoint: text(&body, "endpoint")?.to_owned(),
        p256dh: text(&body, "keys.p256dh")?.to_owned(),
        auth: text(&body, "keys.auth")?.to_owned(),
        label,
        created_ms: now_ms(),
        session: who.1.clone(),
    };
    let status = match notifier.subscribe(&who.0, subscription).await {
        Ok(true) => StatusCode::CREATED,
        Ok(false) => StatusCode::OK,
        Err(SubscribeRefused::NotConfigured) => return Err(not_configured()),
        Err(SubscribeRefused::Invalid(path, what)) => {
            return Err(ApiError::one(
                ReplyCode::Invalid,
                &path,
                ErrorCode::InvalidValue,
                what,
            ));
        }
        Err(SubscribeRefused::Store(error)) => return Err(store_failed(&error)),
    };
    Ok((status, Json(devices(notifier, &who).await?)).into_response())
}

/// `DELETE /v1/push/subscriptions` with `{"id": ...}`.
pub async fn delete_subscription(
    State(state): State<AppState>,
    Query(place): Query<KeyPlace>,
    PeerAddress(peer): PeerAddress,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let notifier = notifier(&state)?;
    let (person, session) = person(&state, &headers, &place, peer)?;
    let body = Value::Object(body_object(body, "{\"id\": the device's id}")?);
    let id = text(&body, "id")?;
    let subs = notifier
        .subscriptions_of(&person)
        .await
        .map_err(|e| store_failed(&e))?;
    // Only what this key sees: another session's personal key cannot remove it. The inbox
    // sees every session's subscription of the device, and removes them all.
    let seen = subs
        .iter()
        .filter(|sub| sub.id() == id && sub.seen_from(session.as_deref()));
    for sub in seen {
        notifier
            .unsubscribe(&person, sub)
            .await
            .map_err(|e| store_failed(&e))?;
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
