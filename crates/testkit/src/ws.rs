//! One WebSocket peer of a gateway, an agent or a tab, as the integration tests drive it: JSON
//! frames out and in, every receive bounded by [`TIMEOUT`] (or a window the test names), pings
//! and pongs skipped.
//!
//! Every JSON frame received, and every frame sent with [`WsClient::send`], is held to its
//! endpoint's schema in `docs/` ([`frame_schema`]): a frame off it fails the test. Frames sent
//! wrong on purpose go through [`WsClient::send_unchecked`] or [`WsClient::send_text`].

use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::handshake::client::Request;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::TIMEOUT;
use crate::frame_schema::{self, Direction, Endpoint};

/// How many skipped frames a timeout shows.
const SKIPPED_SHOWN: usize = 8;

/// One WebSocket connection to a gateway.
pub struct WsClient {
    stream: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// The endpoint its URL names, whose schema its frames are held to; `None` (another
    /// path) leaves them unchecked.
    endpoint: Option<Endpoint>,
}

impl WsClient {
    /// Connects to `url`, with `Authorization: Bearer key` if given.
    pub async fn connect(url: &str, key: Option<&str>) -> Self {
        let bearer = key.map(|key| format!("Bearer {key}"));
        let headers: Vec<(&'static str, &str)> = bearer
            .iter()
            .map(|b| ("authorization", b.as_str()))
            .collect();
        Self::connect_with_headers(url, &headers).await
    }

    /// Connects to `url` with these headers (a `host` among them replaces the URL's).
    pub async fn connect_with_headers(url: &str, headers: &[(&'static str, &str)]) -> Self {
        let connecting =
            tokio_tungstenite::connect_async_with_config(request(url, headers), None, true);
        let (stream, _) = tokio::time::timeout(TIMEOUT, connecting)
            .await
            .expect("connect in time")
            .expect("connect");
        WsClient {
            stream,
            endpoint: Endpoint::of_url(url),
        }
    }

    /// Upgrades `stream`, a connection the test made itself (from a chosen source address,
    /// say), to a WebSocket at `url`, with these headers.
    pub async fn connect_over(
        stream: TcpStream,
        url: &str,
        headers: &[(&'static str, &str)],
    ) -> Self {
        let upgrading =
            tokio_tungstenite::client_async(request(url, headers), MaybeTlsStream::Plain(stream));
        let (stream, _) = tokio::time::timeout(TIMEOUT, upgrading)
            .await
            .expect("upgraded in time")
            .expect("upgraded");
        WsClient {
            stream,
            endpoint: Endpoint::of_url(url),
        }
    }

    /// A tab on a session's live URL (`ws://…/v1/sessions/{session}/live`) that said hello
    /// with `key`, asking to be `tab` if given: it and its snapshot, which must be the first
    /// frame it is sent.
    pub async fn tab(live_url: &str, key: &str, tab: Option<&str>) -> (Self, Value) {
        let mut client = Self::connect(live_url, None).await;
        let mut hello = json!({"type": "hello", "key": key});
        if let Some(tab) = tab {
            hello["tab"] = json!(tab);
        }
        client.send(&hello).await;
        let snapshot = client.recv_type("snapshot").await;
        (client, snapshot)
    }

    /// Opens `session` as an agent: the `opened` frame (other frames before it skipped).
    pub async fn open(&mut self, session: &str) -> Value {
        self.send(&json!({"type": "open", "session": session}))
            .await;
        self.recv_until("opened").await
    }

    /// Sends a JSON frame, which must fit the endpoint's schema for what a peer sends.
    pub async fn send(&mut self, frame: &Value) {
        self.check(Direction::Sent, frame);
        self.send_unchecked(frame).await;
    }

    /// Sends a JSON frame without holding it to the schema: for frames wrong on purpose (a
    /// field of the wrong type, an id the gateway must refuse).
    pub async fn send_unchecked(&mut self, frame: &Value) {
        self.stream
            .send(Message::text(frame.to_string()))
            .await
            .expect("send");
    }

    /// Sends raw text.
    pub async fn send_text(&mut self, text: String) -> Result<(), String> {
        self.stream
            .send(Message::text(text))
            .await
            .map_err(|e| e.to_string())
    }

    /// The next JSON frame, within [`TIMEOUT`]; panics on a timeout, a close or any other
    /// message.
    pub async fn recv(&mut self) -> Value {
        self.recv_within(TIMEOUT)
            .await
            .unwrap_or_else(|| panic!("no frame within {TIMEOUT:?}"))
    }

    /// The next JSON frame within `wait`, if one comes; panics on a close or any other message
    /// (one deadline for the frame: pings do not restart it).
    pub async fn recv_within(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let message = tokio::time::timeout_at(deadline, self.stream.next())
                .await
                .ok()?;
            match message {
                Some(Ok(Message::Text(text))) => {
                    let frame = serde_json::from_str(&text).expect("a JSON frame");
                    self.check(Direction::Received, &frame);
                    return Some(frame);
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(other)) => panic!("expected a text frame, got {other:?}"),
                Some(Err(error)) => panic!("socket error: {error}"),
                None => panic!("the socket ended"),
            }
        }
    }

    /// The next frame, which must have `type` = `kind`.
    pub async fn recv_type(&mut self, kind: &str) -> Value {
        let frame = self.recv().await;
        assert_eq!(frame["type"], kind, "expected a {kind} frame, got {frame}");
        frame
    }

    /// Frames until one of type `kind` arrives (others, e.g. presence, skipped).
    pub async fn recv_until(&mut self, kind: &str) -> Value {
        self.recv_matching(|frame| frame["type"] == kind).await
    }

    /// Frames until one of type `kind` about request `id` arrives (others skipped).
    pub async fn recv_about(&mut self, kind: &str, id: &str) -> Value {
        self.recv_matching(|frame| {
            frame["type"] == kind && (frame["id"] == id || frame["request"]["id"] == id)
        })
        .await
    }

    /// Frames until one that `wanted` accepts arrives (others skipped, each within
    /// [`TIMEOUT`]); a timeout names the last frames skipped.
    pub async fn recv_matching(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        let mut skipped = std::collections::VecDeque::new();
        loop {
            let Some(frame) = self.recv_within(TIMEOUT).await else {
                panic!("no frame within {TIMEOUT:?}; the last ones skipped: {skipped:?}");
            };
            if wanted(&frame) {
                return frame;
            }
            if skipped.len() == SKIPPED_SHOWN {
                skipped.pop_front();
            }
            skipped.push_back(frame);
        }
    }

    /// Frames until each of `wanted` has matched one (in any order; others skipped); the
    /// matches come back in the order of `wanted`. Coalesced `presence` may arrive before or
    /// after the frame that caused it, so tests that need both wait for both this way.
    pub async fn recv_all(&mut self, wanted: &[fn(&Value) -> bool]) -> Vec<Value> {
        let mut found: Vec<Option<Value>> = vec![None; wanted.len()];
        while found.iter().any(Option::is_none) {
            let frame = self.recv().await;
            if let Some(slot) = wanted
                .iter()
                .zip(found.iter_mut())
                .find_map(|(matches, slot)| (slot.is_none() && matches(&frame)).then_some(slot))
            {
                *slot = Some(frame);
            }
        }
        found.into_iter().flatten().collect()
    }

    /// The next message within `timeout` (pings and pongs skipped); `None` on a timeout or the
    /// socket's end. A text message that is JSON is held to the schema as [`WsClient::recv`]
    /// holds it; other text is handed over as it is, for the test to judge.
    pub async fn next_message(&mut self, timeout: Duration) -> Option<Message> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match tokio::time::timeout_at(deadline, self.stream.next()).await {
                Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => {}
                Ok(Some(Ok(message))) => {
                    if let Message::Text(text) = &message
                        && let Ok(frame) = serde_json::from_str::<Value>(text)
                    {
                        self.check(Direction::Received, &frame);
                    }
                    return Some(message);
                }
                Ok(Some(Err(_)) | None) | Err(_) => return None,
            }
        }
    }

    /// Waits for the server to close the socket; returns the close code (1006 if the socket
    /// ended without a close frame). Frames before the close are skipped.
    pub async fn closed(&mut self) -> u16 {
        self.closed_with_reason().await.0
    }

    /// [`WsClient::closed`], with the close frame's reason.
    pub async fn closed_with_reason(&mut self) -> (u16, String) {
        loop {
            match self.next_message(TIMEOUT).await {
                Some(Message::Close(frame)) => {
                    return frame.map_or((1005, String::new()), |f| {
                        (u16::from(f.code), f.reason.to_string())
                    });
                }
                Some(_) => {}
                None => return (u16::from(CloseCode::Abnormal), String::new()),
            }
        }
    }

    /// Asserts nothing but pings arrives within `window`.
    pub async fn silent_for(&mut self, window: Duration) {
        if let Some(message) = self.next_message(window).await {
            panic!("expected silence, got {message:?}");
        }
    }

    /// Closes from this side.
    pub async fn close(mut self) {
        let _ = self.stream.close(None).await;
    }

    /// Holds `frame` to the endpoint's schema for `direction`, if the URL named an endpoint.
    fn check(&self, direction: Direction, frame: &Value) {
        if let Some(endpoint) = self.endpoint {
            frame_schema::check(endpoint, direction, frame);
        }
    }

    /// The underlying stream, for tests that misbehave on purpose: frames through it are not
    /// held to the schema.
    pub fn stream(&mut self) -> &mut WebSocketStream<MaybeTlsStream<TcpStream>> {
        &mut self.stream
    }
}

/// The upgrade request for `url` with these headers added.
fn request(url: &str, headers: &[(&'static str, &str)]) -> Request {
    let mut request = url.into_client_request().expect("request");
    for (name, value) in headers {
        request
            .headers_mut()
            .insert(*name, value.parse().expect("header"));
    }
    request
}
