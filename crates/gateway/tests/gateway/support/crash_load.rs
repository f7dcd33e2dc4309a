//! The load and the ledger of the crash tests: an agent asking and two tabs per session racing
//! to answer, spread over the gateway nodes given, while something is killed; and the check,
//! after each round, of every claim the peers recorded:
//! - every request the agent saw `accepted` is still known (a re-ask is `accepted` again with
//!   the same deadline, or returns its outcome, never a fresh question);
//! - every resolution a tab saw `resolved` or the agent saw as `outcome` comes back the same
//!   (same outcome, same winning tab);
//! - no request is ever announced with two different resolutions.

use std::collections::HashMap;
use std::time::Duration;

use askgate_testkit::frames;
use askgate_testkit::ws::WsClient;
use rand::Rng;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use super::TIMEOUT;

/// The `serve` flags the load needs: limits it would otherwise run into.
pub const SERVER_FLAGS: [&str; 8] = [
    "--open-requests-per-session",
    "1000000",
    "--agent-frames-per-second",
    "1000000",
    "--tab-frames-per-second",
    "1000000",
    "--tab-queue",
    "100000",
];

/// Sessions the load asks in.
const SESSIONS: usize = 4;

/// How many new resolutions a round sees before its kill: picked at random from this range.
const KILL_AFTER_RESOLUTIONS: std::ops::RangeInclusive<usize> = 6..=20;

/// How long a round goes on after the kill, collecting what survivors still say.
const AFTER_KILL: Duration = Duration::from_millis(300);

/// An ask with a long deadline (its `deadline_ms` identifies the stored request).
fn ask(session: &str, id: &str) -> Value {
    frames::ask(session, id, &["Color"], Some(86_400.0))
}

/// What the peers saw, across rounds.
#[derive(Default)]
pub struct Ledger {
    /// (session, id) the agent saw accepted → its deadline. A request re-created after a
    /// loss would get a new deadline, so the deadline proves it is the same request.
    pub accepted: HashMap<(String, String), Value>,
    /// (session, id) → (outcome, by) announced to a tab or the agent.
    pub resolved: HashMap<(String, String), (String, Value)>,
}

impl Ledger {
    /// Records a resolution a peer saw; true when it is the first word of that request's end.
    fn announce(&mut self, key: (String, String), outcome: &Value, by: &Value) -> bool {
        let seen = (outcome.as_str().unwrap_or_default().to_owned(), by.clone());
        if let Some(previous) = self.resolved.get(&key) {
            assert_eq!(
                previous, &seen,
                "{key:?} was announced with two different resolutions"
            );
            false
        } else {
            self.resolved.insert(key, seen);
            true
        }
    }
}

async fn connect(url: String) -> WsClient {
    WsClient::connect(&url, None).await
}

async fn send(socket: &mut WsClient, frame: &Value) -> bool {
    socket.send_text(frame.to_string()).await.is_ok()
}

/// The next JSON frame, or `None` when the socket ends (its gateway was killed).
async fn recv(socket: &mut WsClient) -> Option<Value> {
    loop {
        match socket.next_message(TIMEOUT).await? {
            Message::Text(text) => return serde_json::from_str(&text).ok(),
            Message::Close(_) => return None,
            _ => {}
        }
    }
}

/// Re-asks every accepted request at `addr` and checks it against what was announced.
pub async fn verify(addr: &str, ledger: &mut Ledger) {
    let mut agent = connect(format!("ws://{addr}/v1/agent")).await;
    let keys: Vec<(String, String)> = ledger.accepted.keys().cloned().collect();
    for (session, id) in &keys {
        assert!(send(&mut agent, &ask(session, id)).await);
    }
    let mut answered = 0;
    while answered < keys.len() {
        let frame = recv(&mut agent)
            .await
            .expect("the gateway answers every re-ask");
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
            Some("outcome") => {
                ledger.announce(key, &frame["outcome"], &frame["by"]);
            }
            _ => panic!("an accepted request was lost or refused: {frame}"),
        }
        answered += 1;
    }
}

/// One round of load over `addrs` (the agent on the first, tabs spread over all) until `kill`
/// has run and its aftermath is collected; records what the peers saw.
///
/// The kill comes once the round has seen a number of new resolutions `rng` picks
/// (`KILL_AFTER_RESOLUTIONS`), not after a time: a busy machine resolves less in a given
/// while, and a round killed before anything ended would prove nothing.
pub async fn load(
    addrs: &[String],
    round: usize,
    ledger: &mut Ledger,
    rng: &mut impl Rng,
    kill: impl FnOnce(),
) {
    let mut agent = connect(format!("ws://{}/v1/agent", addrs[0])).await;
    let mut tabs = Vec::new();
    for s in 0..SESSIONS {
        let session = format!("c{s}");
        let key = viewer_key(&addrs[0], &session).await;
        for t in 0..2 {
            let addr = &addrs[(s * 2 + t) % addrs.len()];
            let mut tab = connect(format!("ws://{addr}/v1/sessions/{session}/live")).await;
            let hello = json!({"type": "hello", "key": key, "tab": format!("{session}-t{t}")});
            assert!(send(&mut tab, &hello).await);
            tabs.push(tab);
        }
    }
    let (events_tx, mut events) = tokio::sync::mpsc::unbounded_channel::<(String, Value)>();
    let round_over = tokio_util::sync::CancellationToken::new();
    for (i, mut tab) in tabs.into_iter().enumerate() {
        let events = events_tx.clone();
        let round_over = round_over.clone();
        tokio::spawn(async move {
            let labels = ["Red", "Blue", "Green"];
            loop {
                let frame = tokio::select! {
                    frame = recv(&mut tab) => frame,
                    () = round_over.cancelled() => None,
                };
                let Some(frame) = frame else { return };
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
    let kill_at = rng.random_range(KILL_AFTER_RESOLUTIONS);
    let mut kill = Some(kill);
    let mut newly_resolved = 0usize;
    // Until the kill, the round's whole allowance; after it, the aftermath.
    let ending = tokio::time::sleep(TIMEOUT);
    tokio::pin!(ending);
    let mut next = 0usize;
    let mut replies = 0usize;
    loop {
        tokio::select! {
            () = &mut ending => {
                assert!(
                    kill.is_none(),
                    "the round saw {newly_resolved} of {kill_at} resolutions in {TIMEOUT:?}"
                );
                break;
            }
            frame = recv(&mut agent) => {
                let Some(frame) = frame else { break };
                let key = (frame["session"].as_str().unwrap_or_default().to_owned(), frame["id"].as_str().unwrap_or_default().to_owned());
                match frame["type"].as_str() {
                    Some("accepted") => {
                        replies += 1;
                        ledger.accepted.insert(key, frame["deadline_ms"].clone());
                    }
                    Some("outcome") => {
                        newly_resolved += usize::from(ledger.announce(key, &frame["outcome"], &frame["by"]));
                    }
                    _ => replies += 1,
                }
            }
            // A few asks in flight at a time, so the tabs' answers keep pace with them.
            () = tokio::task::yield_now(), if kill.is_some() && next < replies + 16 => {
                let session = format!("c{}", next % SESSIONS);
                let frame = ask(&session, &format!("r{round}-{next}"));
                next += 1;
                if !send(&mut agent, &frame).await { break; }
            }
        }
        while let Ok((session, frame)) = events.try_recv() {
            newly_resolved += usize::from(ledger.announce(
                (session, frame["id"].as_str().unwrap_or_default().to_owned()),
                &frame["outcome"],
                &frame["by"],
            ));
        }
        if newly_resolved >= kill_at
            && let Some(kill) = kill.take()
        {
            kill();
            ending
                .as_mut()
                .reset(tokio::time::Instant::now() + AFTER_KILL);
        }
    }
    drop(agent);
    drop(events_tx);
    // What the tabs saw last, until each has been quiet a while; then the round is over.
    while let Ok(Some((session, frame))) =
        tokio::time::timeout(Duration::from_secs(2), events.recv()).await
    {
        ledger.announce(
            (session, frame["id"].as_str().unwrap_or_default().to_owned()),
            &frame["outcome"],
            &frame["by"],
        );
    }
    round_over.cancel();
}

async fn viewer_key(addr: &str, session: &str) -> String {
    let mut agent = connect(format!("ws://{addr}/v1/agent")).await;
    assert!(send(&mut agent, &json!({"type": "open", "session": session})).await);
    let opened = recv(&mut agent).await.expect("opened");
    opened["viewer_url"]
        .as_str()
        .and_then(|u| u.split("#k=").nth(1))
        .expect("a viewer key")
        .to_owned()
}
