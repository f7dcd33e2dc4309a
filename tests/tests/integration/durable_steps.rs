//! A request is shown to tabs once the store has taken it (a crash of the gateway's process
//! can no longer lose it), and promised to its agent, `accepted`, only once it is durable (a
//! crash of the machine cannot either). The gated store holds the durable step, as a slow
//! `fdatasync` does, and the tests act in that window.

use std::sync::Arc;
use std::time::Duration;

use askgate_testkit::frames::{answer, ask};
use askgate_testkit::ws::WsClient;
use askgate_tests::gated_store::GatedStore;
use askgate_tests::server::{TestServer, test_config};
use serde_json::{Value, json};

/// How long a socket must stay quiet to show that something waits.
const QUIET: Duration = Duration::from_millis(300);

/// A server on a store whose durable step waits at the gate, a tab, and an agent that has
/// asked `r1`, which the tab has been shown.
async fn shown_not_durable() -> (TestServer, Arc<GatedStore>, WsClient, WsClient) {
    let store = Arc::new(GatedStore::default());
    let server = TestServer::start_with_store(test_config(), store.clone()).await;
    let (mut tab, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    store.hold_durable(true);
    agent.send(&ask("s", "r1", &["Color"], None)).await;
    store.wait_for_a_held_commit().await;
    let request = tab.recv_until("request").await;
    assert_eq!(request["request"]["id"], "r1");
    agent.silent_for(QUIET).await;
    (server, store, tab, agent)
}

#[tokio::test(flavor = "multi_thread")]
async fn tabs_see_a_request_before_it_is_durable_and_its_agent_hears_accepted_after() {
    let (server, store, _tab, mut agent) = shown_not_durable().await;
    store.release_one();
    let accepted = agent.recv_type("accepted").await;
    assert_eq!(accepted["id"], "r1");
    // A tab joining now finds it among the open requests.
    let (_late, snapshot) = server.tab("s").await;
    assert_eq!(snapshot["requests"][0]["id"], "r1");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_before_the_request_is_durable_reaches_the_agent_after_accepted() {
    let (_server, store, mut tab, mut agent) = shown_not_durable().await;
    // The answer's commit is not held: the tabs learn it ended.
    tab.send(&answer("r1", &["Color"], "Red")).await;
    let resolved = tab.recv_until("resolved").await;
    assert_eq!(resolved["outcome"], "answered");
    // The agent, not yet told `accepted`, has heard nothing of it.
    agent.silent_for(QUIET).await;
    store.release_one();
    assert_eq!(agent.recv_type("accepted").await["id"], "r1");
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["id"], "r1");
    assert_eq!(outcome["outcome"], "answered");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repeat_and_a_withdrawal_wait_until_the_request_is_durable() {
    let (_server, store, mut tab, mut agent) = shown_not_durable().await;
    agent.send(&ask("s", "r1", &["Color"], None)).await;
    agent
        .send(&json!({"type": "cancel", "session": "s", "id": "r1"}))
        .await;
    agent.silent_for(QUIET).await;
    store.release_one();
    // The ask's own `accepted` comes first. The repeat and the withdrawal waited on the same
    // wake-up and go on in either order: the repeat is `accepted` when it goes first, or gets
    // the withdrawn outcome when the withdrawal did; either way the withdrawal's outcome
    // follows, and nothing was said before the request was durable.
    assert_eq!(agent.recv_type("accepted").await["id"], "r1");
    let (first, second) = (agent.recv().await, agent.recv().await);
    let withdrawn = |frame: &Value| frame["type"] == "outcome" && frame["outcome"] == "withdrawn";
    if first["type"] == "accepted" {
        assert_eq!(first["id"], "r1");
    } else {
        assert!(
            withdrawn(&first),
            "the repeat after the withdrawal: {first}"
        );
    }
    assert!(withdrawn(&second), "the withdrawal's outcome: {second}");
    assert_eq!(second["id"], "r1");
    assert_eq!(tab.recv_until("resolved").await["outcome"], "withdrawn");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_the_store_fails_to_make_durable_is_taken_back_from_the_tabs() {
    let (server, store, mut tab, mut agent) = shown_not_durable().await;
    store.fail_held(true);
    store.release_one();
    let resolved = tab.recv_until("resolved").await;
    assert_eq!(resolved["id"], "r1");
    assert_eq!(resolved["outcome"], "withdrawn");
    assert_eq!(resolved["by"], Value::Null);
    let rejected = agent.recv_type("rejected").await;
    assert_eq!(rejected["id"], "r1");
    assert_eq!(rejected["errors"][0]["code"], "unavailable", "{rejected}");
    let (_late, snapshot) = server.tab("s").await;
    assert_eq!(snapshot["requests"], json!([]));
    // Asked again once the store works, it is a new request.
    store.fail_held(false);
    store.hold_durable(false);
    agent.send(&ask("s", "r1", &["Color"], None)).await;
    assert_eq!(agent.recv_type("accepted").await["id"], "r1");
    assert_eq!(tab.recv_until("request").await["request"]["id"], "r1");
}
