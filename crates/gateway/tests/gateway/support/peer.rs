//! WebSocket peers (agents and tabs) and plain HTTP, every receive bounded by [`TIMEOUT`].

use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::TIMEOUT;
use super::nodes::Node;

/// One WebSocket connection.
pub struct Peer {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl Peer {
    /// Connects to `url`.
    pub async fn connect(url: &str) -> Peer {
        let (socket, _) = tokio::time::timeout(TIMEOUT, tokio_tungstenite::connect_async(url))
            .await
            .expect("connected in time")
            .expect("connected");
        Peer { socket }
    }

    /// An agent connection to `node` (local mode: no key).
    pub async fn agent(node: &Node) -> Peer {
        Peer::connect(&node.ws("/v1/agent")).await
    }

    /// A tab on `session` at `node`, with the key from a viewer URL: it and its snapshot.
    pub async fn tab(node: &Node, session: &str, viewer_url: &str) -> (Peer, Value) {
        let key = viewer_url
            .split("#k=")
            .nth(1)
            .expect("a key in the viewer URL");
        let mut tab = Peer::connect(&node.ws(&format!("/v1/sessions/{session}/live"))).await;
        tab.send(&json!({"type": "hello", "key": key})).await;
        let snapshot = tab.recv_type("snapshot").await;
        (tab, snapshot)
    }

    /// Sends one JSON frame.
    pub async fn send(&mut self, frame: &Value) {
        self.socket
            .send(Message::text(frame.to_string()))
            .await
            .expect("sent");
    }

    /// The next JSON frame, within [`TIMEOUT`].
    pub async fn recv(&mut self) -> Value {
        self.recv_within(TIMEOUT)
            .await
            .unwrap_or_else(|| panic!("no frame within {TIMEOUT:?}"))
    }

    /// The next JSON frame within `wait`, if one comes (pings and pongs skipped).
    pub async fn recv_within(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let message = tokio::time::timeout_at(deadline, self.socket.next())
                .await
                .ok()?;
            match message {
                Some(Ok(Message::Text(text))) => {
                    return Some(serde_json::from_str(&text).expect("JSON"));
                }
                Some(Ok(Message::Close(close))) => panic!("closed: {close:?}"),
                Some(Ok(_)) => {}
                Some(Err(error)) => panic!("socket error: {error}"),
                None => panic!("socket ended"),
            }
        }
    }

    /// The next frame of type `kind`, skipping others.
    pub async fn recv_type(&mut self, kind: &str) -> Value {
        loop {
            let frame = self.recv().await;
            if frame["type"] == kind {
                return frame;
            }
        }
    }

    /// The next frame of type `kind` about request `id`, skipping others.
    pub async fn recv_about(&mut self, kind: &str, id: &str) -> Value {
        loop {
            let frame = self.recv().await;
            let about = frame["id"] == id || frame["request"]["id"] == id;
            if frame["type"] == kind && about {
                return frame;
            }
        }
    }
}

/// One question (Color: Red, Blue, Green) asked as `id` in `session`.
pub fn ask(session: &str, id: &str, timeout_s: Option<f64>) -> Value {
    let mut frame = json!({
        "type": "ask", "session": session, "id": id,
        "questions": [{"header": "Color", "question": "Which?", "options": [{"label": "Red"}, {"label": "Blue"}, {"label": "Green"}]}],
    });
    if let Some(timeout) = timeout_s {
        frame["timeout_s"] = json!(timeout);
    }
    frame
}

/// A tab's answer to `ask`: `label`.
pub fn answer(id: &str, label: &str) -> Value {
    json!({"type": "answer", "id": id, "response": {"answers": [{"header": "Color", "selected": [label]}]}})
}

/// A plain HTTP/1.1 request to `node`: status and body.
pub async fn http(node: &Node, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
    http_to(node.addr, method, path, body).await
}

/// A plain HTTP/1.1 request to `addr`: status and body.
pub async fn http_to(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, String) {
    let body = body.map(Value::to_string).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        addr,
        body.len()
    );
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.expect("read");
        response
    };
    let response = tokio::time::timeout(TIMEOUT * 3, exchange)
        .await
        .expect("an HTTP answer in time");
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}
