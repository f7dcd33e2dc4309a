//! A real gateway on port 0 for one test, and its peers ([`askgate_testkit::ws::WsClient`]).
//!
//! A test never waits on a sleep for the server: the listener is bound before the server task
//! starts, so connecting right away works.

use std::net::SocketAddr;
use std::sync::Arc;

use askgate::config::Config;
use askgate::server::{self, AppState};
use askgate::store::Store;
use askgate_protocol::SessionId;
use askgate_testkit::TIMEOUT;
use askgate_testkit::frames::{answer, ask};
use askgate_testkit::http::http;
use askgate_testkit::ws::WsClient;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

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

    /// One HTTP exchange with the server, presenting no key: `(status, JSON body or null)`.
    pub async fn http(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        http(self.addr, method, path, body, None).await
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
        let live = self.ws_url(&format!("/v1/sessions/{session}/live"));
        WsClient::tab(&live, &self.viewer_key(session), tab).await
    }

    /// A tab on `session` and an agent whose request `id` (one question, Color, no deadline)
    /// was accepted and shown to the tab.
    pub async fn asked_request(&self, session: &str, id: &str) -> (WsClient, WsClient) {
        let (mut tab, _) = self.tab(session).await;
        let mut agent = self.agent().await;
        agent.send(&ask(session, id, &["Color"], None)).await;
        agent.recv_type("accepted").await;
        tab.recv_until("request").await;
        (tab, agent)
    }

    /// A tab on `session` and an agent whose request `id` (one question, Color) the tab has
    /// answered Red: the agent has its outcome, not yet acknowledged.
    pub async fn answered_request(&self, session: &str, id: &str) -> (WsClient, WsClient) {
        let (mut tab, mut agent) = self.asked_request(session, id).await;
        tab.send(&answer(id, &["Color"], "Red")).await;
        agent.recv_type("outcome").await;
        (tab, agent)
    }

    /// A tab socket on `session` that has not said hello.
    pub async fn raw_tab(&self, session: &str) -> WsClient {
        WsClient::connect(&self.ws_url(&format!("/v1/sessions/{session}/live")), None).await
    }

    /// Asks the server to shut down and waits for it (at most [`TIMEOUT`]).
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => tokio::time::timeout(TIMEOUT, task).await??,
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

/// Raises this process's open-file limit to its hard limit (tests with thousands of sockets).
pub fn raise_open_file_limit() -> u64 {
    rlimit::increase_nofile_limit(u64::MAX).unwrap_or_default()
}

/// A path for a test's own data directory under the system's temporary directory, named after
/// `name`, the process and a random number, and not there yet (whatever was left there is
/// removed).
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "askgate-{name}-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}
