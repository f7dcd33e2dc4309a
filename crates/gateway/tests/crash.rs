//! The gateway killed with SIGKILL at random moments under load, again and again: nothing it
//! announced is lost, and nothing resolves twice.
//!
//! Each round starts `askgate serve` on the same data directory, checks every claim the peers
//! recorded in earlier rounds, then drives load (an agent asking, two tabs per session racing
//! to answer) and kills the process 50–400 ms in. The checks use only what the peers saw:
//! - every request the agent saw `accepted` is still known (a re-ask is `accepted` again or
//!   returns its outcome, never a fresh question);
//! - every resolution a tab saw `resolved` or the agent saw as `outcome` comes back the same
//!   (same outcome, same winning tab);
//! - no request is ever announced with two different resolutions.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

const SESSIONS: usize = 4;
const TIMEOUT: Duration = Duration::from_secs(20);

fn rounds() -> usize {
    std::env::var("ASKGATE_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

/// An ask with a long deadline (its `deadline_ms` identifies the stored request).
fn ask(session: &str, id: &str) -> Value {
    json!({"type": "ask", "session": session, "id": id, "questions": questions(), "timeout_s": 86_400})
}

fn questions() -> Value {
    json!([{"header": "Color", "question": "Which?", "options": [{"label": "Red"}, {"label": "Blue"}, {"label": "Green"}]}])
}

/// What the peers saw, across rounds.
#[derive(Default)]
struct Ledger {
    /// (session, id) the agent saw accepted → its deadline. A request re-created after a
    /// loss would get a new deadline, so the deadline proves it is the same request.
    accepted: HashMap<(String, String), Value>,
    /// (session, id) → (outcome, by) announced to a tab or the agent.
    resolved: HashMap<(String, String), (String, Value)>,
}

impl Ledger {
    fn announce(&mut self, key: (String, String), outcome: &Value, by: &Value) {
        let seen = (outcome.as_str().unwrap_or_default().to_owned(), by.clone());
        if let Some(previous) = self.resolved.get(&key) {
            assert_eq!(
                previous, &seen,
                "{key:?} was announced with two different resolutions"
            );
        } else {
            self.resolved.insert(key, seen);
        }
    }
}

struct Gateway {
    child: Child,
    addr: String,
}

impl Drop for Gateway {
    /// A test that fails midway must not leave its gateway serving: a dropped `Child` is
    /// not killed.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(data_dir: &std::path::Path) -> Gateway {
    let mut child = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "embedded",
            "--open-requests-per-session",
            "1000000",
            "--agent-frames-per-second",
            "1000000",
            "--tab-frames-per-second",
            "1000000",
            "--tab-queue",
            "100000",
        ])
        .arg("--data-dir")
        .arg(data_dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("askgate serve starts");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("askgate listening on http://") {
                let _ = tx.send(addr.to_owned());
            }
        }
    });
    let addr = rx
        .recv_timeout(TIMEOUT)
        .expect("the gateway says where it listens");
    Gateway { child, addr }
}

async fn connect(url: String) -> Socket {
    tokio::time::timeout(TIMEOUT, tokio_tungstenite::connect_async(url))
        .await
        .expect("connect in time")
        .expect("connect")
        .0
}

async fn send(socket: &mut Socket, frame: &Value) -> bool {
    socket.send(Message::text(frame.to_string())).await.is_ok()
}

/// The next JSON frame, or `None` when the socket ends (the gateway was killed).
async fn recv(socket: &mut Socket) -> Option<Value> {
    loop {
        match tokio::time::timeout(TIMEOUT, socket.next()).await.ok()?? {
            Ok(Message::Text(text)) => return serde_json::from_str(&text).ok(),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

/// Re-asks every accepted request and checks it against what was announced.
async fn verify(gateway: &Gateway, ledger: &mut Ledger) {
    let mut agent = connect(format!("ws://{}/v1/agent", gateway.addr)).await;
    let keys: Vec<(String, String)> = ledger.accepted.keys().cloned().collect();
    for (session, id) in &keys {
        assert!(send(&mut agent, &ask(session, id)).await);
    }
    let mut answered = 0;
    while answered < keys.len() {
        let frame = recv(&mut agent)
            .await
            .expect("the restarted gateway answers every re-ask");
        let key = (
            frame["session"].as_str().unwrap_or_default().to_owned(),
            frame["id"].as_str().unwrap_or_default().to_owned(),
        );
        match frame["type"].as_str() {
            Some("accepted") => {
                assert!(
                    !ledger.resolved.contains_key(&key),
                    "{key:?} was announced resolved but came back open: the resolution was lost"
                );
                assert_eq!(
                    ledger.accepted.get(&key),
                    Some(&frame["deadline_ms"]),
                    "{key:?} came back as a new request: the accepted one was lost"
                );
            }
            Some("outcome") => ledger.announce(key, &frame["outcome"], &frame["by"]),
            _ => panic!("an accepted request was lost or refused: {frame}"),
        }
        answered += 1;
    }
}

/// One round of load until the gateway dies; records what the peers saw.
async fn load(gateway: &Gateway, round: usize, ledger: &mut Ledger) {
    let mut agent = connect(format!("ws://{}/v1/agent", gateway.addr)).await;
    let mut tabs = Vec::new();
    for s in 0..SESSIONS {
        let session = format!("c{s}");
        for t in 0..2 {
            let mut tab =
                connect(format!("ws://{}/v1/sessions/{session}/live", gateway.addr)).await;
            let key = viewer_key(gateway, &session).await;
            assert!(
                send(
                    &mut tab,
                    &json!({"type": "hello", "key": key, "tab": format!("{session}-t{t}")})
                )
                .await
            );
            tabs.push(tab);
        }
    }
    let (events_tx, mut events) = tokio::sync::mpsc::unbounded_channel::<(String, Value)>();
    for (i, mut tab) in tabs.into_iter().enumerate() {
        let events = events_tx.clone();
        tokio::spawn(async move {
            let labels = ["Red", "Blue", "Green"];
            while let Some(frame) = recv(&mut tab).await {
                let open: Vec<Value> = match frame["type"].as_str() {
                    Some("request") => vec![frame["request"].clone()],
                    Some("snapshot") => frame["requests"].as_array().cloned().unwrap_or_default(),
                    Some("resolved") => {
                        let _ = events.send((format!("c{}", i / 2), frame));
                        continue;
                    }
                    _ => continue,
                };
                for request in open {
                    let answer = json!({"type": "answer", "id": request["id"], "response": {"answers": [{"header": "Color", "selected": [labels[i % 3]]}]}});
                    if !send(&mut tab, &answer).await {
                        return;
                    }
                }
            }
        });
    }
    let kill_after = Duration::from_millis(50 + rand::random::<u64>() % 350);
    let killer = tokio::time::sleep(kill_after);
    tokio::pin!(killer);
    let mut next = 0usize;
    let mut replies = 0usize;
    let mut killed = false;
    loop {
        tokio::select! {
            () = &mut killer, if !killed => {
                killed = true;
                // SIGKILL: no shutdown, no flush beyond what each commit already made durable.
                let _ = gateway_kill(gateway);
            }
            frame = recv(&mut agent) => {
                let Some(frame) = frame else { break };
                let key = (frame["session"].as_str().unwrap_or_default().to_owned(), frame["id"].as_str().unwrap_or_default().to_owned());
                match frame["type"].as_str() {
                    Some("accepted") => {
                        replies += 1;
                        ledger.accepted.insert(key, frame["deadline_ms"].clone());
                    }
                    Some("outcome") => ledger.announce(key, &frame["outcome"], &frame["by"]),
                    _ => replies += 1,
                }
            }
            // A few asks in flight at a time, so the tabs' answers keep pace with them.
            () = tokio::task::yield_now(), if !killed && next < replies + 16 => {
                let session = format!("c{}", next % SESSIONS);
                let frame = ask(&session, &format!("r{round}-{next}"));
                next += 1;
                if !send(&mut agent, &frame).await { break; }
            }
        }
        while let Ok((session, frame)) = events.try_recv() {
            ledger.announce(
                (session, frame["id"].as_str().unwrap_or_default().to_owned()),
                &frame["outcome"],
                &frame["by"],
            );
        }
    }
    drop(events_tx);
    // Tab tasks end when their sockets die; collect what they saw last.
    while let Ok(Some((session, frame))) =
        tokio::time::timeout(Duration::from_secs(2), events.recv()).await
    {
        ledger.announce(
            (session, frame["id"].as_str().unwrap_or_default().to_owned()),
            &frame["outcome"],
            &frame["by"],
        );
    }
}

fn gateway_kill(gateway: &Gateway) -> std::io::Result<()> {
    // `Child::kill` needs `&mut`; signal the pid directly instead (SIGKILL).
    Command::new("kill")
        .args(["-9", &gateway.child.id().to_string()])
        .status()
        .map(|_| ())
}

async fn viewer_key(gateway: &Gateway, session: &str) -> String {
    let mut agent = connect(format!("ws://{}/v1/agent", gateway.addr)).await;
    assert!(send(&mut agent, &json!({"type": "open", "session": session})).await);
    let opened = recv(&mut agent).await.expect("opened");
    opened["viewer_url"]
        .as_str()
        .and_then(|u| u.split("#k=").nth(1))
        .expect("a viewer key")
        .to_owned()
}

/// At least 20 SIGKILLs under load; every claim checked after each restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_announced_is_lost_across_sigkill() {
    let data_dir = std::env::temp_dir().join(format!("askgate-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    let mut ledger = Ledger::default();
    for round in 0..rounds() {
        let mut gateway = start(&data_dir);
        verify(&gateway, &mut ledger).await;
        load(&gateway, round, &mut ledger).await;
        let _ = gateway.child.wait();
    }
    let gateway = start(&data_dir);
    verify(&gateway, &mut ledger).await;
    eprintln!(
        "{} rounds: {} requests accepted, {} resolutions announced, all intact",
        rounds(),
        ledger.accepted.len(),
        ledger.resolved.len()
    );
    assert!(
        ledger.resolved.len() > 10,
        "the load resolved too little to prove anything"
    );
    drop(gateway);
    let _ = std::fs::remove_dir_all(&data_dir);
}
