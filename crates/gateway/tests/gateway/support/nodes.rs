//! `askgate serve` processes: a node on a store given by URL, killed (SIGKILL) when dropped or
//! when the test says; every line of its standard error kept.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

use askgate_testkit::http::http_text;
use askgate_testkit::ws::WsClient;
use serde_json::Value;

use super::{TIMEOUT, tempdir};

/// One gateway process.
pub struct Node {
    child: Option<Child>,
    /// Where it listens.
    pub addr: SocketAddr,
    stderr: Arc<Mutex<Vec<String>>>,
    /// Told each time a line is kept in `stderr`.
    wrote: Arc<tokio::sync::Notify>,
    lines: mpsc::Receiver<String>,
    /// Its data directory.
    pub data: PathBuf,
    /// Whether the data directory is its own (made for it, removed with it) rather than one
    /// the test keeps across restarts.
    owns_data: bool,
}

/// A node's data directory: made for it, or the test's own (kept across restarts).
enum Data {
    Own(PathBuf),
    Kept(PathBuf),
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
        if self.owns_data {
            super::remove_scratch(&self.data);
        }
    }
}

impl Node {
    /// A node on `store` (`redis://...`) with `args`, once it says where it listens.
    pub fn start(store: &str, args: &[&str]) -> Node {
        Self::try_start(store, args)
            .unwrap_or_else(|said| panic!("the node did not start: {said:?}"))
    }

    /// A node, or every line it wrote if it stopped before listening.
    pub fn try_start(store: &str, args: &[&str]) -> Result<Node, Vec<String>> {
        Self::try_start_in(Data::Own(tempdir("node")), store, args, &[])
    }

    /// A node with environment variables `env` set.
    pub fn start_with_env(store: &str, args: &[&str], env: &[(&str, &str)]) -> Node {
        Self::try_start_in(Data::Own(tempdir("node")), store, args, env)
            .unwrap_or_else(|said| panic!("the node did not start: {said:?}"))
    }

    /// A node whose data directory is `data` (kept across restarts).
    pub fn start_in(data: PathBuf, store: &str, args: &[&str]) -> Node {
        Self::try_start_in(Data::Kept(data), store, args, &[])
            .unwrap_or_else(|said| panic!("the node did not start: {said:?}"))
    }

    fn try_start_in(
        data: Data,
        store: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Node, Vec<String>> {
        let (data, owns_data) = match data {
            Data::Own(dir) => (dir, true),
            Data::Kept(dir) => (dir, false),
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_askgate"))
            .arg("serve")
            // Port 0 unless the test names one (a public URL that must match it).
            .args(
                (!args.contains(&"--listen"))
                    .then_some(["--listen", "127.0.0.1:0"])
                    .into_iter()
                    .flatten(),
            )
            .arg("--data-dir")
            .arg(&data)
            .args(["--store", store])
            .args(args)
            .args(
                (store.starts_with("redis") && !args.contains(&"--audit-key-file"))
                    .then(|| {
                        [
                            "--audit-key-file".into(),
                            super::test_audit_key_file().into(),
                        ]
                    })
                    .into_iter()
                    .flatten()
                    .collect::<Vec<std::ffi::OsString>>(),
            )
            .env("RUST_LOG", "info,askgate=debug")
            // Text, the format these tests read (a pipe would get JSON).
            .env("ASKGATE_LOG_FORMAT", "text")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("askgate serve starts");
        let stderr = child.stderr.take().expect("stderr");
        let kept = Arc::new(Mutex::new(Vec::new()));
        let (tx, lines) = mpsc::channel();
        let keeping = Arc::clone(&kept);
        let wrote = Arc::new(tokio::sync::Notify::new());
        let writing = Arc::clone(&wrote);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                keeping.lock().unwrap().push(line.clone());
                writing.notify_waiters();
                let _ = tx.send(line);
            }
        });
        let mut node = Node {
            child: Some(child),
            addr: "127.0.0.1:0".parse().unwrap(),
            stderr: kept,
            wrote,
            lines,
            data,
            owns_data,
        };
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match node.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(addr) = line.strip_prefix("askgate listening on http://") {
                        node.addr = addr.trim().parse().expect("an address");
                        return Ok(node);
                    }
                }
                Err(_) => return Err(node.said()),
            }
        }
    }

    /// Every line it wrote so far.
    pub fn said(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits (up to [`TIMEOUT`]) until it has written a line holding `text`; whether it did.
    pub async fn wrote_line(&self, text: &str) -> bool {
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            // Listening before looking: a line kept in between still wakes this.
            let wrote = self.wrote.notified();
            tokio::pin!(wrote);
            wrote.as_mut().enable();
            if self.said().iter().any(|line| line.contains(text)) {
                return true;
            }
            if tokio::time::timeout_at(deadline, wrote).await.is_err() {
                return false;
            }
        }
    }

    /// SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `ws://ADDR/PATH`.
    pub fn ws(&self, path: &str) -> String {
        format!("ws://{}{path}", self.addr)
    }

    /// An agent connection (local mode: no key).
    pub async fn agent(&self) -> WsClient {
        WsClient::connect(&self.ws("/v1/agent"), None).await
    }

    /// An agent on this node that opened `session`: it and the session's viewer URL.
    pub async fn agent_opening(&self, session: &str) -> (WsClient, String) {
        let mut agent = self.agent().await;
        let opened = agent.open(session).await;
        let viewer = opened["viewer_url"].as_str().expect("a viewer URL");
        (agent, viewer.to_owned())
    }

    /// A tab on `session` with the key from a viewer URL: it and its snapshot.
    pub async fn tab(&self, session: &str, viewer_url: &str) -> (WsClient, Value) {
        let key = viewer_url
            .split("#k=")
            .nth(1)
            .expect("a key in the viewer URL");
        let live = self.ws(&format!("/v1/sessions/{session}/live"));
        WsClient::tab(&live, key, None).await
    }

    /// One HTTP exchange with this node (no key): status and body.
    pub async fn http(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
        http_text(self.addr, method, path, body, None).await
    }

    /// A node telling people as `notify_file` says, private targets allowed (the tests' own
    /// receivers are on loopback), its links under `https://askgate.example`; in `data` when
    /// given (kept across restarts), else a directory of its own.
    pub fn start_notifying(store: &str, data: Option<&std::path::Path>, notify_file: &str) -> Node {
        let args = [
            "--notify",
            notify_file,
            "--notify-allow-private",
            "--public-url",
            "https://askgate.example",
        ];
        match data {
            Some(dir) => Node::start_in(dir.to_owned(), store, &args),
            None => Node::start(store, &args),
        }
    }

    /// The key of a link for `user` that POSTing `{"user"}` to `path` makes (a personal link:
    /// `/v1/sessions/{session}/links`; an inbox link: `/v1/inbox/links`), as the part of its
    /// URL after `#k=`.
    pub async fn link_key(&self, path: &str, user: &str) -> String {
        let body = serde_json::json!({ "user": user });
        let (status, text) = self.http("POST", path, Some(&body)).await;
        assert_eq!(status, 201, "{path}: {text}");
        let made: Value = serde_json::from_str(&text).expect("a JSON body");
        made["url"]
            .as_str()
            .and_then(|url| url.split_once("#k="))
            .map(|(_, key)| key.to_owned())
            .unwrap_or_else(|| panic!("{path}: no key in {made}"))
    }
}
