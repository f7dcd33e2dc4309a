//! The gateway while its store is slow or failing: an HTTP client that hangs up has its
//! handler dropped by axum, possibly while the store is writing, and the change must still
//! be finished (the request shown, the resolution announced), never left half-way between
//! the store and the hub; a rival answer waits for the winner's write rather than being
//! refused for a request the store may leave open. And frames of one agent connection take
//! effect in the order they were sent.

use std::sync::Arc;
use std::time::Duration;

use askgate_protocol::wire::AskFrame;
use askgate_protocol::{RequestId, SessionId};
use askgate_testkit::TIMEOUT;
use askgate_testkit::frames::{answer, ask, questions};
use askgate_tests::gated_store::GatedStore;
use askgate_tests::server::{TestServer, test_config};
use serde_json::{Value, json};

async fn gated_server() -> (TestServer, Arc<GatedStore>) {
    let store = Arc::new(GatedStore::default());
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
    let (status, body) = server
        .http("GET", &format!("/v1/sessions/s/requests/{id}"), None)
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
    store.hold(true);
    let hub = Arc::clone(&server.state.hub);
    let asking = tokio::spawn(async move { hub.ask(checked, None).await });
    store.wait_for_a_held_commit().await;
    asking.abort();
    assert!(asking.await.expect_err("dropped mid-commit").is_cancelled());
    store.hold(false);
    store.release_one();
    assert_eq!(tab.recv_until("request").await["request"]["id"], "r1");
    assert_eq!(request_state(&server, "r1").await["state"], "pending");
    let body = json!({"id": "r1", "questions": questions(&["Color"])});
    let (status, again) = tokio::time::timeout(
        TIMEOUT,
        server.http("POST", "/v1/sessions/s/requests", Some(&body)),
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
    let (mut tab, mut agent) = server.asked_request("s", "r1").await;
    store.hold(true);
    let hub = Arc::clone(&server.state.hub);
    let (session, id) = ids("s", "r1");
    let withdrawing = tokio::spawn(async move {
        hub.withdraw(&session, &id, None, askgate_protocol::wire::Via::Agent)
            .await;
    });
    store.wait_for_a_held_commit().await;
    withdrawing.abort();
    assert!(
        withdrawing
            .await
            .expect_err("dropped mid-commit")
            .is_cancelled()
    );
    store.hold(false);
    store.release_one();
    let resolved = tab.recv_until("resolved").await;
    assert_eq!(
        (resolved["id"].as_str(), resolved["outcome"].as_str()),
        (Some("r1"), Some("withdrawn"))
    );
    assert_eq!(agent.recv_type("outcome").await["outcome"], "withdrawn");
    assert_eq!(request_state(&server, "r1").await["state"], "resolved");
    let (status, _) = server
        .http("POST", "/v1/sessions/s/requests/r1/ack", None)
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

/// A rival answer that arrives while the winner's resolution is being stored waits for it:
/// when the store fails the winner, the request is open again and the rival takes it, instead
/// of being told "already resolved" about a request that stayed open.
#[tokio::test(flavor = "multi_thread")]
async fn a_rival_takes_the_request_when_the_store_fails_the_winner() {
    let (server, store) = gated_server().await;
    let (mut first, _) = server.tab("s").await;
    let (mut second, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    agent.send(&ask("s", "r1", &["Color"], None)).await;
    agent.recv_type("accepted").await;
    first.recv_until("request").await;
    second.recv_until("request").await;
    store.hold(true);
    store.fail_held(true);
    first.send(&answer("r1", &["Color"], "Red")).await;
    store.wait_for_a_held_commit().await;
    second.send(&answer("r1", &["Color"], "Blue")).await;
    // The rival is not refused while the winner is pending (presence may still arrive).
    while let Some(message) = second.next_message(Duration::from_millis(200)).await {
        let frame: Value = serde_json::from_str(message.to_text().unwrap()).unwrap();
        assert_eq!(frame["type"], "presence", "{frame}");
    }
    store.hold(false);
    store.release_one();
    let refused = first.recv_until("answer_rejected").await;
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("could not save"),
        "{refused}"
    );
    let resolved = second.recv_until("resolved").await;
    assert_eq!(
        resolved["response"]["answers"][0]["selected"],
        json!(["Blue"]),
        "{resolved}"
    );
    assert_eq!(
        agent.recv_type("outcome").await["result"],
        json!({"Color": ["Blue"]})
    );
}
