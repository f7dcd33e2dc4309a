//! `GET /v1/ops/summary`: this node's sessions, tabs, agents, open and orphaned requests and
//! notification counts, for an operator key only.
#![cfg(target_os = "linux")]

use std::time::Duration;

use askgate_testkit::frames::ask;
use askgate_testkit::http::http_text;
use askgate_testkit::webhooks::WebhookReceiver as Receiver;
use askgate_testkit::ws::WsClient;
use serde_json::{Value, json};

use crate::support;
use support::nodes::Node;

const AGENT_KEY: &str = "agent-key-1";
const OPERATOR_KEY: &str = "operator-key-1";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

async fn summary(node: &Node, key: Option<&str>) -> (u16, Value) {
    let (status, text) = http_text(node.addr, "GET", "/v1/ops/summary", None, key).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_counts_what_the_node_holds_for_an_operator_only() {
    let mut receiver = Receiver::start(&[SECRET], None, 0).await;
    let node = Node::start(
        "embedded",
        &[
            "--agent-key",
            AGENT_KEY,
            "--operator-key",
            OPERATOR_KEY,
            "--agent-grace-s",
            "1",
            "--notify-allow-private",
        ],
    );

    // No key: 401; an agent's key: 403.
    assert_eq!(summary(&node, None).await.0, 401);
    assert_eq!(summary(&node, Some("not-a-key")).await.0, 401);
    let (status, body) = summary(&node, Some(AGENT_KEY)).await;
    assert_eq!(status, 403, "{body}");

    // An agent that stays, with a request open and one with a callback withdrawn.
    let mut staying = WsClient::connect(&node.ws("/v1/agent"), Some(AGENT_KEY)).await;
    staying.open("kept").await;
    let mut called = ask("kept", "r0", &["Color"], None);
    called["callback"] = json!({"url": receiver.url(), "secret": SECRET});
    staying.send(&called).await;
    staying.recv_until("accepted").await;
    staying.send(&ask("kept", "r1", &["Color"], None)).await;
    staying.recv_until("accepted").await;
    let (status, body) = http_text(
        node.addr,
        "DELETE",
        "/v1/sessions/kept/requests/r0",
        None,
        Some(AGENT_KEY),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let got = receiver.next(Duration::from_secs(20)).await;
    assert_eq!(got["body"]["data"]["id"], "r0", "{got}");
    assert!(
        node.wrote_line("a notification was sent").await,
        "{:?}",
        node.said()
    );

    // An agent that leaves its request behind, orphaned after the 1 s grace; a tab watching.
    let mut leaving = WsClient::connect(&node.ws("/v1/agent"), Some(AGENT_KEY)).await;
    let viewer = leaving.open("gone").await["viewer_url"]
        .as_str()
        .unwrap()
        .to_owned();
    leaving.send(&ask("gone", "r2", &["Color"], None)).await;
    leaving.recv_until("accepted").await;
    let (mut tab, snapshot) = node.tab("gone", &viewer).await;
    assert_eq!(snapshot["requests"][0]["id"], "r2", "{snapshot}");
    leaving.close().await;
    tab.recv_until("orphaned").await;

    let (status, body) = summary(&node, Some(OPERATOR_KEY)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["sessions"], 2, "{body}");
    assert_eq!(body["tabs"], 1, "{body}");
    assert_eq!(body["agents"], 1, "{body}");
    assert_eq!(
        body["requests"],
        json!({"open": 2, "orphaned": 1}),
        "{body}"
    );
    let callback = &body["notifications"]["callback"];
    assert_eq!(callback["sent"], 1, "{body}");
    assert_eq!(callback["retried"], 0, "{body}");
    assert_eq!(callback["given_up"], 0, "{body}");
    assert!(callback["due"].is_i64(), "{body}");
    for channel in ["webhook", "email", "slack", "push"] {
        assert_eq!(
            body["notifications"][channel],
            json!({"due": 0, "sent": 0, "retried": 0, "given_up": 0}),
            "{channel}: {body}"
        );
    }
    let nodes = body["nodes"].as_array().expect("a list of nodes");
    assert_eq!(nodes.len(), 1, "{body}");
    assert_eq!(nodes[0]["alive"], true, "{body}");
    assert!(
        nodes[0]["id"].as_str().is_some_and(|id| !id.is_empty()),
        "{body}"
    );
    assert_eq!(nodes[0]["agents"], 1, "{body}");
    // The one node of a local store reports as it is read: seen now.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let seen = nodes[0]["last_seen_ms"].as_u64().expect("last_seen_ms");
    assert!(
        now_ms.abs_diff(seen) < 60_000,
        "{seen} against {now_ms}: {body}"
    );
}
