//! The WebSocket handshake, done here rather than by axum so that the socket is tungstenite's
//! own: frames can be written in fragments (a large snapshot is not copied whole into every
//! tab's write buffer) and a failed read can still be answered with its close code.

use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::header::{CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

/// An upgraded connection, spoken as WebSocket.
pub(super) type WebSocket = WebSocketStream<TokioIo<Upgraded>>;

/// A request asking to become a WebSocket: a GET with the upgrade headers of RFC 6455
/// section 4.2.1 and a key of 16 bytes (what else a client sends, such as subprotocols or
/// extensions, is not taken up).
pub struct Upgrade {
    on_upgrade: OnUpgrade,
    accept: HeaderValue,
}

/// Why a request cannot be upgraded.
pub struct NotAnUpgrade(StatusCode, &'static str);

impl IntoResponse for NotAnUpgrade {
    fn into_response(self) -> Response {
        let mut response = (self.0, self.1).into_response();
        if self.0 == StatusCode::UPGRADE_REQUIRED {
            response
                .headers_mut()
                .insert("sec-websocket-version", HeaderValue::from_static("13"));
        }
        response
    }
}

/// Whether the comma-separated header `name` lists `token` (case-insensitive).
fn lists(headers: &HeaderMap, name: impl axum::http::header::AsHeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|item| item.trim().eq_ignore_ascii_case(token))
}

impl<S: Send + Sync> FromRequestParts<S> for Upgrade {
    type Rejection = NotAnUpgrade;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let refuse = |why| Err(NotAnUpgrade(StatusCode::BAD_REQUEST, why));
        if parts.method != Method::GET {
            return Err(NotAnUpgrade(
                StatusCode::METHOD_NOT_ALLOWED,
                "a WebSocket is opened with GET\n",
            ));
        }
        if !lists(&parts.headers, CONNECTION, "upgrade")
            || !lists(&parts.headers, UPGRADE, "websocket")
        {
            return Err(NotAnUpgrade(
                StatusCode::UPGRADE_REQUIRED,
                "this endpoint speaks WebSocket only (Connection: upgrade, Upgrade: websocket)\n",
            ));
        }
        if parts
            .headers
            .get("sec-websocket-version")
            .is_none_or(|version| version != "13")
        {
            return Err(NotAnUpgrade(
                StatusCode::UPGRADE_REQUIRED,
                "only WebSocket version 13 is spoken\n",
            ));
        }
        let Some(key) = parts.headers.get(SEC_WEBSOCKET_KEY) else {
            return refuse("Sec-WebSocket-Key is missing\n");
        };
        let nonce = base64::engine::general_purpose::STANDARD.decode(key.as_bytes());
        if nonce.map_or(true, |nonce| nonce.len() != 16) {
            return refuse("Sec-WebSocket-Key must be 16 bytes in base64\n");
        }
        let Ok(accept) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) else {
            return refuse("Sec-WebSocket-Key is not a key\n");
        };
        let Some(on_upgrade) = parts.extensions.remove::<OnUpgrade>() else {
            return refuse("this connection cannot be upgraded\n");
        };
        Ok(Upgrade { on_upgrade, accept })
    }
}

impl Upgrade {
    /// Answers 101 and, once the connection is handed over (within `timeout`, or it is
    /// dropped), runs `serve` on the socket in a task of its own.
    ///
    /// Two tasks: one waits for the handover, then spawns `serve`'s. A task is as large as
    /// the largest state of its future, for as long as it runs; the connection's holds only
    /// what serving needs, not room for the handover's timer and the closure's captures too.
    pub(super) fn on_upgrade<F, Fut>(
        self,
        config: WebSocketConfig,
        timeout: Duration,
        serve: F,
    ) -> Response
    where
        F: FnOnce(WebSocket) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let on_upgrade = self.on_upgrade;
        let handover = async move {
            match tokio::time::timeout(timeout, on_upgrade).await {
                Ok(Ok(upgraded)) => {
                    let socket = WebSocketStream::from_raw_socket(
                        TokioIo::new(upgraded),
                        Role::Server,
                        Some(config),
                    )
                    .await;
                    tokio::spawn(serve(socket));
                }
                Ok(Err(error)) => tracing::debug!(%error, "the WebSocket upgrade failed"),
                Err(_) => tracing::debug!("the WebSocket upgrade did not complete in time"),
            }
        };
        tokio::spawn(handover);
        let mut response = StatusCode::SWITCHING_PROTOCOLS.into_response();
        let headers = response.headers_mut();
        headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
        headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
        headers.insert(SEC_WEBSOCKET_ACCEPT, self.accept);
        response
    }
}
