//! Callers that go away mid-change: an HTTP client that hangs up has its handler dropped by
//! axum, possibly while the store is writing. The change must still be finished (the request
//! shown, the resolution announced), never left half-way between the store and the hub.
//! And frames of one agent connection take effect in the order they were sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use askgate::store::{MemoryStore, Store, StoreFuture, StoreOp, StoredRequest};
use askgate_protocol::wire::AskFrame;
use askgate_protocol::{RequestId, SessionId};
use askgate_tests::server::{RECV_TIMEOUT, TestServer, ask, http, questions, test_config};
use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore};

/// A memory store that, while `holding`, keeps every commit waiting at a gate until a
/// permit is added (the operations are applied then); `arrived` is notified when one starts
/// waiting.
struct GatedStore {
    inner: Arc<MemoryStore>,
    holding: AtomicBool,
    arrived: Arc<Notify>,
    gate: Arc<Semaphore>,
}

impl Store for GatedStore {
    fn commit(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, ()> {
        if !self.holding.load(Ordering::SeqCst) {
            return self.inner.commit(ops);
        }
        let (inner, arrived, gate) = (
            Arc::clone(&self.inner),
            Arc::clone(&self.arrived),
            Arc::clone(&self.gate),
        );
        Box::pin(async move {
            arrived.notify_one();
            if let Ok(permit) = gate.acquire().await {
                permit.forget();
            }
            inner.commit(ops).await
        })
    }

    fn load(&self) -> StoreFuture<'_, Vec<StoredRequest>> {
        self.inner.load()
    }
}

impl GatedStore {
    fn new() -> Self {
        GatedStore {
            inner: Arc::new(MemoryStore::new()),
            holding: AtomicBool::new(false),
            arrived: Arc::new(Notify::new()),
            gate: Arc::new(Semaphore::new(0)),
        }
    }

    async fn wait_for_a_held_commit(&self) {
        tokio::time::timeout(RECV_TIMEOUT, self.arrived.notified())
            .await
            .expect("a commit reached the store in time");
    }

    fn release_one(&self) {
        self.gate.add_permits(1);
    }
}

async fn gated_server() -> (TestServer, Arc<GatedStore>) {
    let store = Arc::new(GatedStore::new());
    let server = TestServer::start_with_store(test_config(), store.clone()).await;
    (server, store)
}

fn ids(session: &str, id: &str) -> (SessionId, RequestId) {
    (
        SessionId::parse(session).expect("session id"),
        RequestId::parse(id).expect("request id"),
    )
}

async fn request_state(server: &TestServer, id: &str) -> Value {
    let (status, body) = http(
        server.addr,
        "GET",
        &format!("/v1/sessions/s/requests/{id}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// An ask dropped while its request is being stored (an HTTP client that hangs up) still
/// opens the request: tabs see it, and asking again is answered at once.
#[tokio::test(flavor = "multi_thread")]
async fn an_ask_dropped_while_stored_still_opens_the_request() {
    let (server, store) = gated_server().await;
    let (mut tab, _) = server.tab("s").await;
    let frame: AskFrame = serde_json::from_value(json!({
        "session": "s", "id": "r1", "questions": questions(&["Color"]),
    }))
    .expect("an ask frame");
    let checked = frame.check(3600.0).expect("a valid ask");
    store.holding.store(true, Ordering::SeqCst);
    let hub = Arc::clone(&server.state.hub);
    let asking = tokio::spawn(async move { hub.ask(checked, None).await });
    store.wait_for_a_held_commit().await;
    asking.abort();
    assert!(asking.await.expect_err("dropped mid-commit").is_cancelled());
    store.holding.store(false, Ordering::SeqCst);
    store.release_one();
    assert_eq!(tab.recv_until("request").await["request"]["id"], "r1");
    assert_eq!(request_state(&server, "r1").await["state"], "pending");
    let body = json!({"id": "r1", "questions": questions(&["Color"])});
    let (status, again) = tokio::time::timeout(
        RECV_TIMEOUT,
        http(
            server.addr,
            "POST",
            "/v1/sessions/s/requests",
            Some(&body),
            None,
        ),
    )
    .await
    .expect("asking again is answered at once");
    assert_eq!(status, 200, "{again}");
}

/// A withdrawal dropped while its resolution is being stored (`DELETE` from a client that
/// hangs up) still ends the request: tabs see it resolved, and it can be acknowledged.
#[tokio::test(flavor = "multi_thread")]
async fn a_withdrawal_dropped_while_stored_still_ends_the_request() {
    let (server, store) = gated_server().await;
    let (mut tab, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    agent.send(&ask("s", "r1", &["Color"], None)).await;
    agent.recv_type("accepted").await;
    tab.recv_until("request").await;
    store.holding.store(true, Ordering::SeqCst);
    let hub = Arc::clone(&server.state.hub);
    let (session, id) = ids("s", "r1");
    let withdrawing = tokio::spawn(async move {
        hub.withdraw(&session, &id, None).await;
    });
    store.wait_for_a_held_commit().await;
    withdrawing.abort();
    assert!(
        withdrawing
            .await
            .expect_err("dropped mid-commit")
            .is_cancelled()
    );
    store.holding.store(false, Ordering::SeqCst);
    store.release_one();
    let resolved = tab.recv_until("resolved").await;
    assert_eq!(
        (resolved["id"].as_str(), resolved["outcome"].as_str()),
        (Some("r1"), Some("withdrawn"))
    );
    assert_eq!(agent.recv_type("outcome").await["outcome"], "withdrawn");
    assert_eq!(request_state(&server, "r1").await["state"], "resolved");
    let (status, _) = http(
        server.addr,
        "POST",
        "/v1/sessions/s/requests/r1/ack",
        None,
        None,
    )
    .await;
    assert_eq!(status, 204);
}

/// A `cancel` sent right behind its `ask`, without waiting for `accepted`, withdraws the
/// request: frames of one connection take effect in the order they were sent. The questions
/// are large, so that checking the ask takes longer than looking the cancel up.
#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_right_behind_its_ask_withdraws_it() {
    let server = TestServer::start().await;
    let mut agent = server.agent().await;
    let headers: Vec<String> = (0..10).map(|i| format!("Question {i}")).collect();
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    for round in 0..40 {
        let id = format!("r{round}");
        agent.send(&ask("s", &id, &headers, None)).await;
        agent
            .send(&json!({"type": "cancel", "session": "s", "id": id}))
            .await;
        let accepted = agent.recv().await;
        assert_eq!(
            (accepted["type"].as_str(), accepted["id"].as_str()),
            (Some("accepted"), Some(id.as_str())),
            "{accepted}"
        );
        let outcome = agent.recv().await;
        assert_eq!(
            (outcome["type"].as_str(), outcome["outcome"].as_str()),
            (Some("outcome"), Some("withdrawn")),
            "{outcome}"
        );
    }
}
