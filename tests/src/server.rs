//! A real gateway on port 0 for one test, and a headless WebSocket client to talk to it.
//!
//! Every receive has a timeout ([`RECV_TIMEOUT`]); a test never waits on a sleep for the
//! server: the listener is bound before the server task starts, so connecting right away
//! works.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use askgate::config::Config;
use askgate::server::{self, AppState};
use askgate::store::Store;
use askgate_protocol::SessionId;
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long any receive waits before the test fails.
pub const RECV_TIMEOUT: Duration = Duration::from_secs(10);

/// A gateway serving on an ephemeral loopback port.
pub struct TestServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its state (hub, metrics...), for white-box checks.
    pub state: AppState,
    /// The configuration it runs with.
    pub config: Config,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<anyhow::Result<()>>>,
}

impl TestServer {
    /// A server with the default limits, in local mode.
    pub async fn start() -> Self {
        Self::start_with(test_config()).await
    }

    /// A server with `config`.
    pub async fn start_with(config: Config) -> Self {
        Self::try_start(config, None).await.expect("server state")
    }

    /// A server with `config` over `store`.
    pub async fn start_with_store(config: Config, store: Arc<dyn Store>) -> Self {
        Self::try_start(config, Some(store))
            .await
            .expect("server state")
    }

    /// A server with `config`, or why it could not start (a store that cannot open...).
    pub async fn try_start(config: Config, store: Option<Arc<dyn Store>>) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind port 0");
        let addr = listener.local_addr().expect("local addr");
        let public_url = format!("http://{addr}");
        let state = match store {
            Some(store) => server::build_with_store(&config, &public_url, store).await?,
            None => server::build(&config, &public_url).await?,
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let task = {
            let state = state.clone();
            let config = config.clone();
            tokio::spawn(async move {
                server::serve(listener, state, &config, async {
                    let _ = stopped.await;
                })
                .await
            })
        };
        Ok(TestServer {
            addr,
            state,
            config,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// `ws://addr{path}`.
    pub fn ws_url(&self, path: &str) -> String {
        format!("ws://{}{path}", self.addr)
    }

    /// `http://addr{path}`.
    pub fn http_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The audit trail's entries of `session`, as JSON, read from the store.
    ///
    /// # Panics
    /// When the session id is not valid or the store cannot be read.
    pub async fn trail(&self, session: &str) -> Vec<Value> {
        let session = SessionId::parse(session).expect("a session id");
        let lines = self
            .state
            .hub
            .store_handle()
            .trails()
            .audit(&session, 0, 1_000_000)
            .await
            .expect("the trail");
        lines
            .iter()
            .map(|line| serde_json::from_str(line).expect("an entry"))
            .collect()
    }

    /// The viewer key of `session`.
    pub fn viewer_key(&self, session: &str) -> String {
        let session = SessionId::parse(session).expect("valid session id");
        self.state.hub.keys().key(&session)
    }

    /// An agent connection (no key: local mode).
    pub async fn agent(&self) -> WsClient {
        WsClient::connect(&self.ws_url("/v1/agent"), None).await
    }

    /// An agent connection presenting `key`.
    pub async fn agent_with_key(&self, key: &str) -> WsClient {
        WsClient::connect(&self.ws_url("/v1/agent"), Some(key)).await
    }

    /// A tab on `session` that said hello with the right key; returns it and its snapshot.
    pub async fn tab(&self, session: &str) -> (WsClient, Value) {
        self.tab_as(session, None).await
    }

    /// A tab asking to be `tab`.
    pub async fn tab_as(&self, session: &str, tab: Option<&str>) -> (WsClient, Value) {
        let mut client = self.raw_tab(session).await;
        let mut hello = json!({"type": "hello", "key": self.viewer_key(session)});
        if let Some(tab) = tab {
            hello["tab"] = json!(tab);
        }
        client.send(&hello).await;
        let snapshot = client.recv_type("snapshot").await;
        (client, snapshot)
    }

    /// A tab on `session` and an agent whose request `id` (one question, Color) the tab has
    /// answered Red: the agent has its outcome, not yet acknowledged.
    pub async fn answered_request(&self, session: &str, id: &str) -> (WsClient, WsClient) {
        let (mut tab, _) = self.tab(session).await;
        let mut agent = self.agent().await;
        agent.send(&ask(session, id, &["Color"], None)).await;
        agent.recv_type("accepted").await;
        tab.recv_until("request").await;
        tab.send(&answer(id, &["Color"], "Red")).await;
        agent.recv_type("outcome").await;
        (tab, agent)
    }

    /// A tab socket on `session` that has not said hello.
    pub async fn raw_tab(&self, session: &str) -> WsClient {
        WsClient::connect(&self.ws_url(&format!("/v1/sessions/{session}/live")), None).await
    }

    /// Asks the server to shut down and waits for it (at most [`RECV_TIMEOUT`]).
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => tokio::time::timeout(RECV_TIMEOUT, task).await??,
            None => Ok(()),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A local-mode configuration with a fixed secret.
pub fn test_config() -> Config {
    Config::local(b"test-secret".to_vec())
}

/// A question set in the harness dialect: `headers[i]` with options Red/Blue/Green.
pub fn questions(headers: &[&str]) -> Value {
    let questions: Vec<Value> = headers
        .iter()
        .map(|h| json!({"header": h, "question": format!("Which {h}?"), "options": [{"label": "Red"}, {"label": "Blue"}, {"label": "Green", "description": "A calm colour"}]}))
        .collect();
    Value::Array(questions)
}

/// An `ask` frame.
pub fn ask(session: &str, id: &str, headers: &[&str], timeout_s: Option<f64>) -> Value {
    let mut frame =
        json!({"type": "ask", "session": session, "id": id, "questions": questions(headers)});
    if let Some(t) = timeout_s {
        frame["timeout_s"] = json!(t);
    }
    frame
}

/// An `answer` frame picking `label` for every header.
pub fn answer(id: &str, headers: &[&str], label: &str) -> Value {
    let answers: Vec<Value> = headers
        .iter()
        .map(|h| json!({"header": h, "selected": [label]}))
        .collect();
    json!({"type": "answer", "id": id, "response": {"answers": answers}})
}

/// A headless WebSocket peer.
pub struct WsClient {
    stream: WebSocketStream<MaybeTlsStream<TcpStream>>,
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
        let mut request = url.into_client_request().expect("request");
        for (name, value) in headers {
            request
                .headers_mut()
                .insert(*name, value.parse().expect("header"));
        }
        let (stream, _) = tokio::time::timeout(
            RECV_TIMEOUT,
            tokio_tungstenite::connect_async_with_config(request, None, true),
        )
        .await
        .expect("connect in time")
        .expect("connect");
        WsClient { stream }
    }

    /// Sends a JSON frame.
    pub async fn send(&mut self, frame: &Value) {
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

    /// The next JSON frame (pings and pongs skipped); panics on timeout or close.
    pub async fn recv(&mut self) -> Value {
        match self.next_message(RECV_TIMEOUT).await {
            Some(Message::Text(text)) => serde_json::from_str(&text).expect("JSON frame"),
            other => panic!("expected a text frame, got {other:?}"),
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
        loop {
            let frame = self.recv().await;
            if frame["type"] == kind {
                return frame;
            }
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

    /// The next message within `timeout` (pings/pongs skipped); `None` on timeout or end.
    pub async fn next_message(&mut self, timeout: Duration) -> Option<Message> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match tokio::time::timeout_at(deadline, self.stream.next()).await {
                Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => {}
                Ok(Some(Ok(message))) => return Some(message),
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
            match self.next_message(RECV_TIMEOUT).await {
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

    /// The underlying stream, for tests that misbehave on purpose.
    pub fn stream(&mut self) -> &mut WebSocketStream<MaybeTlsStream<TcpStream>> {
        &mut self.stream
    }
}

/// Raises this process's open-file limit to its hard limit (tests with thousands of sockets).
pub fn raise_open_file_limit() -> u64 {
    rlimit::increase_nofile_limit(u64::MAX).unwrap_or_default()
}

/// One HTTP exchange with the server: `(status, JSON body or null)`, through reqwest.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
    key: Option<&str>,
) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes())
        .unwrap_or_else(|e| panic!("{method:?} is not an HTTP method: {e}"));
    // A client per exchange: a client's pooled connections belong to the runtime that made
    // them, and each test has its own.
    let mut request = reqwest::Client::new()
        .request(method, format!("http://{addr}{path}"))
        // Long-polls may take a while; the server bounds them at 60 s.
        .timeout(Duration::from_secs(70))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.map(Value::to_string).unwrap_or_default());
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("{path}: no response: {e}"));
    let status = response.status().as_u16();
    let bytes = response
        .bytes()
        .await
        .unwrap_or_else(|e| panic!("{path}: reading the response: {e}"));
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// One HTTP exchange written by hand, for tests about the request's very bytes: `headers`
/// (each line ending in `\r\n`, `Host` among them) go out exactly as given (a spoofed `Host`,
/// an authorization scheme in odd case with a tab), which an HTTP client would normalise.
pub async fn http_with_headers(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
    headers: &str,
) -> (u16, Value) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let body = body.map(Value::to_string).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\n{headers}Connection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    // Long-polls may take a while; the server bounds them at 60 s.
    tokio::time::timeout(Duration::from_secs(70), stream.read_to_end(&mut raw))
        .await
        .expect("a response in time")
        .expect("read");
    let text = String::from_utf8_lossy(&raw);
    let status: u16 = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || tail.len() < size {
            break;
        }
        out.push_str(&tail[..size]);
        rest = tail[size..].trim_start_matches("\r\n");
    }
    out
}
