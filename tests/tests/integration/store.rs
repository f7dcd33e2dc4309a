//! Nothing lost across a restart, and clear errors when storage fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

use askgate::config::{Config, StoreKind};
use askgate::store::{MemoryStore, Store, StoreError, StoreFuture, StoreOp, StoredRequest, Trails};
use askgate_protocol::{RequestId, SessionId};
use askgate_testkit::TIMEOUT;
use askgate_testkit::frames::{answer, ask};
use askgate_testkit::http::http;
use askgate_testkit::ws::WsClient;
use askgate_tests::gated_store::GatedStore;
use askgate_tests::server::{TestServer, temp_dir, test_config};
use serde_json::{Value, json};

fn durable_config(dir: &std::path::Path) -> Config {
    let mut config = test_config();
    config.store = StoreKind::Embedded;
    config.data_dir = dir.to_path_buf();
    config
}

/// After a restart open requests come back with their deadlines (tabs get the same
/// snapshot) and agents re-asking get the outcomes given before it.
#[tokio::test(flavor = "multi_thread")]
async fn a_restart_keeps_open_requests_and_outcomes() {
    let dir = temp_dir("restart");
    let server = TestServer::start_with(durable_config(&dir)).await;
    let (mut tab, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    for id in ["open-1", "open-2", "answered"] {
        agent.send(&ask("s", id, &["Color"], Some(600.0))).await;
        agent.recv_type("accepted").await;
        tab.recv_until("request").await;
    }
    tab.send(&answer("answered", &["Color"], "Green")).await;
    let outcome = agent.recv_type("outcome").await;
    let (_, before) = server.tab("s").await;
    server.shutdown().await.unwrap();

    let server = TestServer::start_with(durable_config(&dir)).await;
    let (_, after) = server.tab("s").await;
    assert_eq!(
        after["requests"], before["requests"],
        "the same open requests, deadlines included"
    );
    let mut agent = server.agent().await;
    agent
        .send(&ask("s", "answered", &["Color"], Some(600.0)))
        .await;
    assert_eq!(agent.recv_type("outcome").await, outcome);
    agent
        .send(&ask("s", "open-1", &["Color"], Some(600.0)))
        .await;
    let accepted = agent.recv_type("accepted").await;
    assert_eq!(
        accepted["deadline_ms"],
        before["requests"][0]["deadline_ms"]
    );
    server.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Asks `asked` (with a short deadline) on the embedded store in `dir`, stops the gateway
/// before the deadline fires (aborting its timer), starts it again once the deadline has
/// passed, and asks again: the outcome the gateway gives at start.
async fn outcome_of_a_deadline_passed_while_down(dir: &std::path::Path, asked: &Value) -> Value {
    let server = TestServer::start_with(durable_config(dir)).await;
    let mut agent = server.agent().await;
    agent.send(asked).await;
    let accepted = agent.recv_type("accepted").await;
    agent.close().await;
    server.shutdown().await.unwrap();
    let deadline = accepted["deadline_ms"].as_u64().unwrap();
    while askgate::clock::now_ms() <= deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let server = TestServer::start_with(durable_config(dir)).await;
    let mut agent = server.agent().await;
    agent.send(asked).await;
    let outcome = agent.recv_type("outcome").await;
    server.shutdown().await.unwrap();
    outcome
}

/// A request whose deadline passed while the gateway was down times out at start.
#[tokio::test(flavor = "multi_thread")]
async fn deadlines_that_passed_while_down_time_out_at_start() {
    let dir = temp_dir("overdue");
    let outcome =
        outcome_of_a_deadline_passed_while_down(&dir, &ask("s", "r", &["Color"], Some(0.2))).await;
    assert_eq!(outcome["outcome"], "timed_out");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A request with a default whose deadline passed while the gateway was down ends as its
/// default at start, not as a timeout.
#[tokio::test(flavor = "multi_thread")]
async fn a_default_whose_deadline_passed_while_down_is_given_at_start() {
    let dir = temp_dir("overdue-default");
    let mut asked = ask("s", "r", &["Color"], Some(0.2));
    asked["default"] = answer("r", &["Color"], "Blue")["response"].clone();
    let outcome = outcome_of_a_deadline_passed_while_down(&dir, &asked).await;
    assert_eq!(outcome["outcome"], "answered");
    assert_eq!(
        (&outcome["by"], &outcome["via"]),
        (&json!("default"), &json!("default"))
    );
    assert_eq!(
        outcome["response"]["answers"][0]["selected"],
        json!(["Blue"])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tab of `user`, on a personal link to session `s`.
async fn person(server: &TestServer, user: &str) -> WsClient {
    let (_, body) = server
        .http("POST", "/v1/sessions/s/links", Some(&json!({"user": user})))
        .await;
    let url = body["url"].as_str().expect("a link");
    let key = url.split_once("#k=").expect("a key").1;
    WsClient::tab(&server.ws_url("/v1/sessions/s/live"), key, None)
        .await
        .0
}

/// A vote on a request that needs two people is kept across a restart: after it, the second
/// person's vote ends the request, with both as voters.
#[tokio::test(flavor = "multi_thread")]
async fn a_quorums_votes_are_kept_across_a_restart() {
    let dir = temp_dir("quorum");
    let asked = json!({"type": "ask", "session": "s", "id": "q", "dialect": "approval",
        "calls": [{"name": "deploy", "args": {}}], "quorum": 2});
    let approve =
        json!({"type": "answer", "id": "q", "response": {"decisions": [{"type": "approve"}]}});
    let server = TestServer::start_with(durable_config(&dir)).await;
    let mut agent = server.agent().await;
    agent.send(&asked).await;
    agent.recv_type("accepted").await;
    let mut alice = person(&server, "alice@example.com").await;
    alice.send(&approve).await;
    let tally = alice.recv_until("tally").await;
    assert_eq!(
        tally["calls"][0]["approved_by"],
        json!(["alice@example.com"])
    );
    agent.close().await;
    server.shutdown().await.unwrap();

    let server = TestServer::start_with(durable_config(&dir)).await;
    let mut bob = person(&server, "bob@example.com").await;
    let mut agent = server.agent().await;
    agent.send(&asked).await;
    agent.recv_type("accepted").await;
    bob.send(&approve).await;
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["user"], "bob@example.com");
    assert_eq!(
        outcome["voters"],
        json!([
            {"user": "alice@example.com", "decisions": ["approve"]},
            {"user": "bob@example.com", "decisions": ["approve"]}
        ])
    );
    server.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A data directory written in another format version is a clear error at start.
#[tokio::test(flavor = "multi_thread")]
async fn another_format_version_is_refused_clearly() {
    let dir = temp_dir("format");
    std::fs::create_dir_all(&dir).unwrap();
    {
        let db = redb::Database::create(dir.join(askgate::store::FILE_NAME)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn
                .open_table(redb::TableDefinition::<&str, u64>::new("meta"))
                .unwrap();
            meta.insert("format", 99).unwrap();
        }
        txn.commit().unwrap();
    }
    let error = TestServer::try_start(durable_config(&dir), None)
        .await
        .err()
        .expect("refused");
    let message = format!("{error:#}");
    assert!(
        message.contains("format 99")
            && message.contains(&format!("reads format {}", askgate::store::FORMAT_VERSION)),
        "{message}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stored record that cannot be decoded (damaged, or written by a build with other ids) is
/// left in the store and logged; every other request still comes back.
#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_record_does_not_keep_the_others_from_coming_back() {
    let dir = temp_dir("damaged");
    let server = TestServer::start_with(durable_config(&dir)).await;
    let mut agent = server.agent().await;
    agent.send(&ask("s", "kept", &["Color"], None)).await;
    agent.recv_type("accepted").await;
    server.shutdown().await.unwrap();
    {
        let db = redb::Database::create(dir.join(askgate::store::FILE_NAME)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let requests = redb::TableDefinition::<(&str, &str), &[u8]>::new("requests");
            let mut table = txn.open_table(requests).unwrap();
            table
                .insert(("s", "damaged"), b"{not json".as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }

    let server = TestServer::start_with(durable_config(&dir)).await;
    let (_, snapshot) = server.tab("s").await;
    let ids: Vec<&str> = snapshot["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert_eq!(ids, ["kept"]);
    server.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A data directory that cannot be created is a clear error at start.
#[tokio::test(flavor = "multi_thread")]
async fn an_unwritable_data_dir_is_a_clear_error() {
    let file = temp_dir("not-a-dir");
    std::fs::write(&file, b"a file where the directory should be").unwrap();
    let error = TestServer::try_start(durable_config(&file.join("data")), None)
        .await
        .err()
        .expect("refused");
    let message = format!("{error:#}");
    assert!(message.contains("creating the data directory"), "{message}");
    let _ = std::fs::remove_file(&file);
}

/// A store that fails at commit time: asks are refused with a clear error, answers are
/// refused and their request stays open, never an answer silently dropped.
#[derive(Default)]
struct FlakyStore {
    inner: MemoryStore,
    failing: AtomicBool,
    /// Commits refused because `failing` was set.
    refused: AtomicUsize,
    /// Woken at each refused commit.
    refusing: tokio::sync::Notify,
    /// Commits panic instead, a store with a bug: [`PANICS_AS_IT_TAKES`] or
    /// [`PANICS_WHILE_IT_COMMITS`].
    panicking: AtomicU8,
}

impl Store for FlakyStore {
    fn commit(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, ()> {
        if self.failing.load(Ordering::SeqCst) {
            self.refused.fetch_add(1, Ordering::SeqCst);
            self.refusing.notify_waiters();
            return Box::pin(async {
                Err(StoreError::io("No space left on device (os error 28)"))
            });
        }
        match self.panicking.load(Ordering::SeqCst) {
            PANICS_AS_IT_TAKES => panic!("a bug in the store"),
            PANICS_WHILE_IT_COMMITS => return Box::pin(async { panic!("a bug in the store") }),
            _ => {}
        }
        self.inner.commit(ops)
    }

    fn load(&self) -> StoreFuture<'_, Vec<StoredRequest>> {
        self.inner.load()
    }

    fn deliveries(&self) -> StoreFuture<'_, Vec<askgate::store::StoredDelivery>> {
        self.inner.deliveries()
    }

    fn kept(&self) -> StoreFuture<'_, Vec<askgate::store::KeptField>> {
        self.inner.kept()
    }

    fn followers(&self) -> StoreFuture<'_, Vec<(SessionId, String)>> {
        self.inner.followers()
    }

    fn trails(&self) -> &dyn Trails {
        &self.inner
    }
}

/// [`FlakyStore::panicking`]: `commit` panics before it returns its future.
const PANICS_AS_IT_TAKES: u8 = 1;
/// [`FlakyStore::panicking`]: the future `commit` returns panics.
const PANICS_WHILE_IT_COMMITS: u8 = 2;

/// A gateway on a [`FlakyStore`] (working, for now) with a tab on session `s` and an agent
/// whose request `r` the tab has been shown.
async fn one_open_request() -> (Arc<FlakyStore>, TestServer, WsClient, WsClient) {
    let store = Arc::new(FlakyStore::default());
    let server = TestServer::start_with_store(test_config(), store.clone()).await;
    let (tab, agent) = server.asked_request("s", "r").await;
    (store, server, tab, agent)
}

/// When the store fails, the peer that asked or answered is told, and nothing is lost.
#[tokio::test(flavor = "multi_thread")]
async fn a_failing_store_is_a_clear_error_to_the_peer() {
    let (store, _server, mut tab, mut agent) = one_open_request().await;
    store.failing.store(true, Ordering::SeqCst);
    tab.send(&answer("r", &["Color"], "Red")).await;
    let rejected = tab.recv_until("answer_rejected").await;
    assert!(
        rejected["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("No space left"),
        "{rejected}"
    );
    agent.send(&ask("s", "r2", &["Color"], None)).await;
    let refused = agent.recv_type("rejected").await;
    assert_eq!(refused["errors"][0]["code"], "unavailable");
    store.failing.store(false, Ordering::SeqCst);
    // The request stayed open: the same answer now wins.
    tab.send(&answer("r", &["Color"], "Red")).await;
    assert_eq!(tab.recv_until("resolved").await["outcome"], "answered");
    assert_eq!(
        agent.recv_type("outcome").await["result"],
        json!({"Color": ["Red"]})
    );
}

/// A timing out the store cannot keep leaves the request open and is tried again after a
/// pause, not in a loop that hammers the failing store; once the store recovers, the request
/// times out for the tabs and the agent.
#[tokio::test(flavor = "multi_thread")]
async fn a_timing_out_the_store_cannot_keep_is_retried_after_a_pause() {
    let store = Arc::new(FlakyStore::default());
    let server = TestServer::start_with_store(test_config(), store.clone()).await;
    let (mut tab, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    let refused = store.refusing.notified();
    agent.send(&ask("s", "r", &["Color"], Some(0.3))).await;
    agent.recv_type("accepted").await;
    // The presence the ask causes may come before or after its request: both are taken here,
    // so the silence below is the store's doing.
    tab.recv_all(&[
        |f| f["type"] == "request",
        |f| f["type"] == "presence" && f["agent_online"] == true,
    ])
    .await;
    store.failing.store(true, Ordering::SeqCst);
    tokio::time::timeout(TIMEOUT, refused)
        .await
        .expect("the deadline's commit was tried");
    // While the store fails, the request stays open and nothing reaches the tab.
    tab.silent_for(Duration::from_millis(1500)).await;
    let tries = store.refused.load(Ordering::SeqCst);
    assert!((1..=3).contains(&tries), "{tries} commits in 1.5 s");
    store.failing.store(false, Ordering::SeqCst);
    assert_eq!(tab.recv_until("resolved").await["outcome"], "timed_out");
    assert_eq!(agent.recv_type("outcome").await["outcome"], "timed_out");
}

/// An acknowledgement whose deletion the store fails still forgets the outcome in the hub,
/// and the deletion is made at the next sweep once the store works, so the record does not come
/// back at a restart; unless the id was asked again meanwhile, whose new record is kept.
#[tokio::test(flavor = "multi_thread")]
async fn a_deletion_the_store_fails_is_made_at_the_next_sweep() {
    let (store, server, mut tab, mut agent) = one_open_request().await;
    agent.send(&ask("s", "r2", &["Color"], None)).await;
    agent.recv_type("accepted").await;
    for id in ["r", "r2"] {
        tab.send(&answer(id, &["Color"], "Red")).await;
        assert_eq!(agent.recv_type("outcome").await["id"], id);
    }
    store.failing.store(true, Ordering::SeqCst);
    for id in ["r", "r2"] {
        let path = format!("/v1/sessions/s/requests/{id}/ack");
        let (status, body) = server.http("POST", &path, None).await;
        assert_eq!(status, 204, "{body}");
    }
    store.failing.store(false, Ordering::SeqCst);
    let stored = || async {
        let records = store.inner.load().await.unwrap();
        let mut ids: Vec<(String, bool)> = records
            .iter()
            .map(|r| (r.id.to_string(), r.resolution.is_some()))
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(
        stored().await,
        [("r".into(), true), ("r2".into(), true)],
        "both still stored"
    );
    // `r2` is asked anew before the sweep: its new, open record must survive it.
    agent.send(&ask("s", "r2", &["Color"], None)).await;
    agent.recv_type("accepted").await;
    server.state.hub.sweep().await;
    assert_eq!(stored().await, [("r2".into(), false)]);
}

/// A deletion the store failed waits while its id is asked anew and that ask is still being
/// stored: should the store refuse the new record too, the old one is still deleted later.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_deletion_waits_while_its_id_is_asked_again() {
    let store = Arc::new(GatedStore::default());
    let server = TestServer::start_with_store(test_config(), store.clone()).await;
    let (_tab, mut agent) = server.answered_request("s", "r").await;

    // The ack's deletion fails.
    store.hold(true);
    store.fail_held(true);
    let ack = "/v1/sessions/s/requests/r/ack";
    let acking = tokio::spawn(http(server.addr, "POST", ack, None, None));
    store.wait_for_a_held_commit().await;
    store.release_one();
    assert_eq!(acking.await.unwrap().0, 204);
    // `r` is asked anew; its record waits at the gate while a sweep runs, then is refused.
    agent.send(&ask("s", "r", &["Color"], None)).await;
    store.wait_for_a_held_commit().await;
    server.state.hub.sweep().await;
    store.release_one();
    let rejected = agent.recv_type("rejected").await;
    assert_eq!(rejected["errors"][0]["code"], "unavailable", "{rejected}");

    store.hold(false);
    store.fail_held(false);
    server.state.hub.sweep().await;
    let left = store.load().await.unwrap();
    assert!(left.is_empty(), "{left:?}");
}

/// A failed deletion is kept for the next sweep even when the acknowledgement that made it
/// is no longer waited for (an HTTP client that hung up): else the acked outcome would come
/// back at the next restart.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_deletion_is_kept_when_its_ack_is_dropped() {
    let store = Arc::new(GatedStore::default());
    let server = TestServer::start_with_store(test_config(), store.clone()).await;
    let (_tab, _agent) = server.answered_request("s", "r").await;

    store.hold(true);
    store.fail_held(true);
    let hub = Arc::clone(&server.state.hub);
    let (session, id) = (
        SessionId::parse("s").unwrap(),
        RequestId::parse("r").unwrap(),
    );
    let acking = tokio::spawn(async move { hub.acknowledge(&session, &id).await });
    store.wait_for_a_held_commit().await;
    acking.abort();
    assert!(acking.await.unwrap_err().is_cancelled());
    store.release_one();

    store.hold(false);
    store.fail_held(false);
    tokio::time::timeout(TIMEOUT, async {
        while !store.load().await.unwrap().is_empty() {
            server.state.hub.sweep().await;
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the failed deletion was made at a later sweep");
}

/// A store whose commit panics (a bug), as it takes the commit or while it carries it out, is
/// a failed commit like any other: the ask is refused as unavailable and can be made again,
/// the answer is refused and its request stays open, and a second answer is not left waiting
/// behind the first.
#[tokio::test(flavor = "multi_thread")]
async fn a_store_that_panics_fails_the_commit_and_nothing_is_stuck() {
    for mode in [PANICS_AS_IT_TAKES, PANICS_WHILE_IT_COMMITS] {
        a_store_that_panics(mode).await;
    }
}

async fn a_store_that_panics(mode: u8) {
    let (store, _server, mut tab, mut agent) = one_open_request().await;
    store.panicking.store(mode, Ordering::SeqCst);
    agent.send(&ask("s", "r2", &["Color"], None)).await;
    let refused = agent.recv_type("rejected").await;
    assert_eq!(refused["errors"][0]["code"], "unavailable", "{refused}");
    for _ in 0..2 {
        tab.send(&answer("r", &["Color"], "Red")).await;
        let rejected = tab.recv_until("answer_rejected").await;
        let message = rejected["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains("panicked"), "{rejected}");
    }
    store.panicking.store(0, Ordering::SeqCst);
    // Nothing was left half-done: the refused ask can be made again, and the open request
    // is answered.
    agent.send(&ask("s", "r2", &["Color"], None)).await;
    agent.recv_type("accepted").await;
    tab.send(&answer("r", &["Color"], "Red")).await;
    assert_eq!(tab.recv_until("resolved").await["outcome"], "answered");
    assert_eq!(agent.recv_type("outcome").await["id"], "r");
}

/// A withdrawal the store cannot keep is refused at once, over HTTP (503) and the socket
/// (`store_failed`), and the request stays open; once the store recovers it is withdrawn.
#[tokio::test(flavor = "multi_thread")]
async fn a_withdrawal_the_store_cannot_keep_is_refused_and_the_request_stays_open() {
    let store = Arc::new(FlakyStore::default());
    let server = TestServer::start_with_store(test_config(), store.clone()).await;
    let mut agent = server.agent().await;
    agent.send(&ask("s", "r", &["Color"], None)).await;
    agent.recv_type("accepted").await;
    store.failing.store(true, Ordering::SeqCst);
    let delete = server.http("DELETE", "/v1/sessions/s/requests/r", None);
    let (status, body) = tokio::time::timeout(TIMEOUT, delete)
        .await
        .expect("refused at once");
    assert_eq!(status, 503, "{body}");
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("No space left"),
        "{body}"
    );
    agent
        .send(&json!({"type": "cancel", "session": "s", "id": "r"}))
        .await;
    let refused = agent.recv_type("error").await;
    assert_eq!(refused["code"], "store_failed", "{refused}");
    let (_, state) = server.http("GET", "/v1/sessions/s/requests/r", None).await;
    assert_eq!(state["state"], "pending");
    store.failing.store(false, Ordering::SeqCst);
    let (status, body) = server
        .http("DELETE", "/v1/sessions/s/requests/r", None)
        .await;
    assert_eq!(
        (status, body["outcome"].as_str()),
        (200, Some("withdrawn")),
        "{body}"
    );
}

/// The retention of [`outcomes_past_their_retention_are_swept`].
const RETENTION: Duration = Duration::from_secs(3);

/// Unacknowledged outcomes are kept for the retention period, then swept from the hub and
/// the store.
#[tokio::test(flavor = "multi_thread")]
async fn outcomes_past_their_retention_are_swept() {
    let dir = temp_dir("retention");
    let mut config = durable_config(&dir);
    // Long enough that the sweep just after the outcome falls inside it on a busy machine.
    config.limits.retention = RETENTION;
    let server = TestServer::start_with(config.clone()).await;
    let (mut tab, mut agent) = server.asked_request("s", "r").await;
    tab.send(&answer("r", &["Color"], "Red")).await;
    agent.recv_type("outcome").await;
    assert_eq!(
        server.state.hub.sweep().await,
        0,
        "kept within the retention period"
    );
    // Swept once the retention has run out: swept again until it is (nothing else to wait on).
    let deadline = tokio::time::Instant::now() + RETENTION + TIMEOUT;
    loop {
        match server.state.hub.sweep().await {
            0 => assert!(
                tokio::time::Instant::now() < deadline,
                "not swept {RETENTION:?} after the outcome"
            ),
            swept => {
                assert_eq!(swept, 1);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(server.state.hub.census().2, 0);
    drop((tab, agent));
    server.shutdown().await.unwrap();
    let server = TestServer::start_with(config).await;
    assert_eq!(server.state.hub.census().2, 0, "gone from the store too");
    server.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
