//! Remembered approvals over HTTP and sockets: a person's approval remembered for the agent
//! key or the session, the next identical ask answered by it at once, listed and revoked with
//! the keys that may; and on Redis, a rule made on one node answering on another, and its
//! revocation holding everywhere at once.

use crate::support;

use askgate_testkit::http::http_text;
use askgate_testkit::ws::WsClient;
use serde_json::{Value, json};
use support::nodes::Node;
use support::redis::RedisServer;

const AGENT_KEY: &str = "agent-key-1";
/// A key for the sessions under `team-b-` only.
const OTHER_KEY: &str = "agent-key-2";
const OPERATOR_KEY: &str = "operator-key-1";
const ALICE: &str = "alice@example.com";

async fn call(node: &Node, method: &str, path: &str, key: Option<&str>) -> (u16, Value) {
    call_with(node, method, path, None, key).await
}

async fn call_with(
    node: &Node,
    method: &str,
    path: &str,
    body: Option<&Value>,
    key: Option<&str>,
) -> (u16, Value) {
    let (status, text) = http_text(node.addr, method, path, body, key).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Asks `rm /tmp/x` as request `id` of `session` over HTTP, with `key`.
async fn ask_rm(node: &Node, session: &str, id: &str, key: Option<&str>) -> Value {
    let body = json!({
        "id": id,
        "dialect": "approval",
        "calls": [{"name": "rm", "args": {"path": "/tmp/x"}}],
    });
    let (status, asked) = call_with(
        node,
        "POST",
        &format!("/v1/sessions/{session}/requests"),
        Some(&body),
        key,
    )
    .await;
    assert_eq!(status, 201, "{asked}");
    asked
}

/// Request `id` of `session` as it stands, waiting up to `wait_s` for it to end.
async fn poll(node: &Node, session: &str, id: &str, wait_s: u32, key: Option<&str>) -> Value {
    let path = format!("/v1/sessions/{session}/requests/{id}?wait_s={wait_s}");
    let (status, body) = call(node, "GET", &path, key).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// alice's tab on `session` (a personal link made with `key`).
async fn alice_on(node: &Node, session: &str, key: Option<&str>) -> WsClient {
    let (status, made) = call_with(
        node,
        "POST",
        &format!("/v1/sessions/{session}/links"),
        Some(&json!({"user": ALICE})),
        key,
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let link = made["url"].as_str().unwrap().split_once("#k=").unwrap().1;
    let live = node.ws(&format!("/v1/sessions/{session}/live"));
    WsClient::tab(&live, link, None).await.0
}

/// alice approves request `id`, remembering it for `remember`.
async fn approve_remembering(tab: &mut WsClient, id: &str, remember: &str) {
    tab.send(&json!({
        "type": "answer",
        "id": id,
        "response": {"decisions": [{"type": "approve", "remember": remember}]},
    }))
    .await;
}

fn rule_ids(listing: &Value) -> Vec<String> {
    listing["rules"]
        .as_array()
        .unwrap_or_else(|| panic!("a list of rules: {listing}"))
        .iter()
        .map(|rule| rule["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remembered_approval_answers_at_once_and_only_the_keys_that_may_see_or_revoke_it() {
    let scoped = format!("{OTHER_KEY}:team-b-");
    let node = Node::start(
        "embedded",
        &[
            "--agent-key",
            AGENT_KEY,
            "--agent-key",
            &scoped,
            "--operator-key",
            OPERATOR_KEY,
        ],
    );
    let key = Some(AGENT_KEY);
    let mut alice = alice_on(&node, "team-a-1", key).await;
    ask_rm(&node, "team-a-1", "r1", key).await;
    approve_remembering(&mut alice, "r1", "key").await;
    let answered = poll(&node, "team-a-1", "r1", 30, key).await;
    assert_eq!(
        answered["response"],
        json!({"decisions": [{"type": "approve"}]})
    );

    // The key's rule: listed for it and the operator, not for another key.
    let (status, mine) = call(&node, "GET", "/v1/rules", key).await;
    assert_eq!(status, 200, "{mine}");
    let rule = rule_ids(&mine).pop().expect("one rule");
    assert_eq!(mine["rules"][0]["tool"], "rm");
    assert_eq!(mine["rules"][0]["user"], ALICE);
    assert_eq!(mine["rules"][0]["scope"], "key");
    assert_eq!(mine["rules"][0]["args"], json!({"path": "/tmp/x"}));
    let (_, theirs) = call(&node, "GET", "/v1/rules", Some(OTHER_KEY)).await;
    assert_eq!(rule_ids(&theirs), Vec::<String>::new());
    let (_, everyone) = call(&node, "GET", "/v1/rules", Some(OPERATOR_KEY)).await;
    assert_eq!(rule_ids(&everyone), std::slice::from_ref(&rule));
    let (status, _) = call(&node, "GET", "/v1/rules", Some("nonsense")).await;
    assert_eq!(status, 401);

    // The same call, in another session of the key: answered at once by the rule.
    ask_rm(&node, "team-a-2", "r2", key).await;
    let by_rule = poll(&node, "team-a-2", "r2", 30, key).await;
    assert_eq!(by_rule["state"], "resolved", "{by_rule}");
    assert_eq!(by_rule["outcome"], "answered");
    assert_eq!(by_rule["via"], "rule");
    assert_eq!(by_rule["by"], format!("rule:{rule}"));
    assert_eq!(by_rule["user"], ALICE);
    let (_, trail) = http_text(node.addr, "GET", "/v1/audit?session=team-a-2", None, key).await;
    let approved: Value = trail
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|entry| entry["event"] == "auto_approved")
        .expect("an auto_approved entry");
    assert_eq!(
        (&approved["rule"], &approved["id"]),
        (&json!(rule), &json!("r2"))
    );

    // Another key cannot revoke it; its own key can, and then it answers nothing.
    let path = format!("/v1/rules/{rule}");
    let (status, _) = call(&node, "DELETE", &path, Some(OTHER_KEY)).await;
    assert_eq!(status, 404);
    let (status, revoked) = call(&node, "DELETE", &path, key).await;
    assert_eq!((status, &revoked["revoked"]["id"]), (200, &json!(rule)));
    let (status, _) = call(&node, "DELETE", &path, key).await;
    assert_eq!(status, 404, "revoked already");
    ask_rm(&node, "team-a-2", "r3", key).await;
    assert_eq!(
        poll(&node, "team-a-2", "r3", 0, key).await["state"],
        "pending"
    );

    // A session rule: listed for the session's keys and the operator, refused to a key whose
    // scope does not cover it, revoked by the operator.
    let mut alice = alice_on(&node, "team-a-2", key).await;
    approve_remembering(&mut alice, "r3", "session").await;
    poll(&node, "team-a-2", "r3", 30, key).await;
    let (status, listed) = call(&node, "GET", "/v1/sessions/team-a-2/rules", key).await;
    assert_eq!(status, 200, "{listed}");
    let session_rule = rule_ids(&listed).pop().expect("one session rule");
    assert_eq!(listed["rules"][0]["scope"], "session");
    let (status, _) = call(&node, "GET", "/v1/sessions/team-a-2/rules", Some(OTHER_KEY)).await;
    assert_eq!(status, 403);
    let (_, elsewhere) = call(&node, "GET", "/v1/sessions/team-a-1/rules", key).await;
    assert_eq!(
        rule_ids(&elsewhere),
        Vec::<String>::new(),
        "a session's own"
    );
    let path = format!("/v1/sessions/team-a-2/rules/{session_rule}");
    let (status, _) = call(&node, "DELETE", &path, Some(OTHER_KEY)).await;
    assert_eq!(status, 403);
    let (status, _) = call(&node, "DELETE", &path, Some(OPERATOR_KEY)).await;
    assert_eq!(status, 200);
    let (_, trail) = http_text(node.addr, "GET", "/v1/audit?session=team-a-2", None, key).await;
    let revoked: Value = trail
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|entry| entry["event"] == "rule_revoked")
        .expect("a rule_revoked entry");
    assert_eq!(
        (&revoked["rule"], &revoked["via"]),
        (&json!(session_rule), &json!("operator"))
    );

    // `rules: false` always asks, and a bad one is refused at its path.
    let body = json!({
        "id": "r4",
        "dialect": "approval",
        "rules": "no",
        "calls": [{"name": "rm", "args": {"path": "/tmp/x"}}],
    });
    let (status, refused) = call_with(
        &node,
        "POST",
        "/v1/sessions/team-a-2/requests",
        Some(&body),
        key,
    )
    .await;
    assert_eq!(
        (status, refused["errors"][0]["path"].as_str()),
        (422, Some("rules")),
        "{refused}"
    );
}

/// On Redis, a rule made through one node answers an ask on another, and revoked on that
/// other node it answers nothing on the first, at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_rule_holds_and_is_revoked_on_every_node() {
    let redis = RedisServer::start(&[]);
    let making = Node::start(&redis.url(), &[]);
    let other = Node::start(&redis.url(), &[]);
    let mut alice = alice_on(&making, "shared-1", None).await;
    ask_rm(&making, "shared-1", "r1", None).await;
    // The tab on the making node shows the request before it may answer it.
    alice.recv_until("request").await;
    approve_remembering(&mut alice, "r1", "session").await;
    poll(&making, "shared-1", "r1", 30, None).await;
    let told = alice.recv_until("rules").await;
    assert_eq!(told["rules"].as_array().map(Vec::len), Some(1), "{told}");

    ask_rm(&other, "shared-1", "r2", None).await;
    let by_rule = poll(&other, "shared-1", "r2", 30, None).await;
    assert_eq!(
        (&by_rule["state"], &by_rule["via"]),
        (&json!("resolved"), &json!("rule")),
        "{by_rule}"
    );
    let (_, listed) = call(&other, "GET", "/v1/sessions/shared-1/rules", None).await;
    let rule = rule_ids(&listed).pop().expect("listed on the other node");
    let (status, _) = call(
        &other,
        "DELETE",
        &format!("/v1/sessions/shared-1/rules/{rule}"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    ask_rm(&making, "shared-1", "r3", None).await;
    assert_eq!(
        poll(&making, "shared-1", "r3", 0, None).await["state"],
        "pending"
    );
}
