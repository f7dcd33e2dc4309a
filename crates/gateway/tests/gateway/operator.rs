//! An operator's view: `GET /v1/requests`, withdrawing any request, and `askgate requests`,
//! with an operator key; every other key refused. On the embedded store, and across two nodes
//! on Redis.

use crate::support;

use std::process::Command;

use askgate_testkit::frames::{answer, ask};
use askgate_testkit::http::http_text;
use askgate_testkit::ws::WsClient;
use serde_json::{Value, json};
use support::nodes::Node;
use support::redis::RedisServer;

const AGENT_KEY: &str = "agent-key-1";
const OPERATOR_KEY: &str = "operator-key-1";

async fn call(node: &Node, method: &str, path: &str, key: Option<&str>) -> (u16, Value) {
    let (status, text) = http_text(node.addr, method, path, None, key).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn ids(listing: &Value) -> Vec<String> {
    listing["requests"]
        .as_array()
        .expect("a list of requests")
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r["session"].as_str().unwrap(),
                r["id"].as_str().unwrap()
            )
        })
        .collect()
}

/// `askgate requests ARGS --url URL --key KEY`, to its end: whether it succeeded, and stdout
/// (stderr on failure).
fn cli(node: &Node, key: &str, args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .arg("requests")
        .args(args)
        .args(["--url", &format!("http://{}", node.addr), "--key", key])
        .output()
        .expect("askgate requests runs");
    let said = if output.status.success() {
        output.stdout
    } else {
        output.stderr
    };
    (
        output.status.success(),
        String::from_utf8_lossy(&said).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_lists_every_session_and_withdraws_any_request() {
    let node = Node::start(
        "embedded",
        &["--agent-key", AGENT_KEY, "--operator-key", OPERATOR_KEY],
    );
    let mut agent = WsClient::connect(&node.ws("/v1/agent"), Some(AGENT_KEY)).await;
    let viewer = agent.open("team-a-1").await["viewer_url"]
        .as_str()
        .unwrap()
        .to_owned();
    for (session, id) in [("team-a-1", "r1"), ("team-a-1", "r2"), ("team-b-1", "r3")] {
        let mut asked = ask(session, id, &["Color"], None);
        asked["title"] = json!(format!("Deploy {id}"));
        agent.send(&asked).await;
        agent.recv_until("accepted").await;
    }
    let (mut tab, _) = node.tab("team-a-1", &viewer).await;
    tab.send(&answer("r1", &["Color"], "Blue")).await;
    agent.recv_until("outcome").await;

    // Open ones, newest first, with what an operator needs; an ended one apart.
    let (status, open) = call(&node, "GET", "/v1/requests", Some(OPERATOR_KEY)).await;
    assert_eq!(status, 200, "{open}");
    assert_eq!(ids(&open), ["team-b-1/r3", "team-a-1/r2"]);
    assert_eq!(open["next_cursor"], Value::Null);
    let first = &open["requests"][1];
    assert_eq!(first["title"], "Deploy r2");
    assert_eq!(first["dialect"], "harness");
    assert_eq!(first["agent_online"], true);
    assert_eq!(first["orphaned"], false);
    assert_eq!(first["tabs_watching"], 1);
    assert_eq!(first["deadline_ms"], Value::Null);
    let (_, ended) = call(&node, "GET", "/v1/requests?state=ended", Some(OPERATOR_KEY)).await;
    assert_eq!(ids(&ended), ["team-a-1/r1"]);
    assert_eq!(ended["requests"][0]["outcome"], "answered");
    assert!(ended["requests"][0]["at_ms"].as_u64().is_some());
    let (_, prefixed) = call(
        &node,
        "GET",
        "/v1/requests?session_prefix=team-b",
        Some(OPERATOR_KEY),
    )
    .await;
    assert_eq!(ids(&prefixed), ["team-b-1/r3"]);
    let (_, none_old) = call(
        &node,
        "GET",
        "/v1/requests?older_than_s=3600",
        Some(OPERATOR_KEY),
    )
    .await;
    assert_eq!(ids(&none_old), Vec::<String>::new());

    // A page at a time, the cursor leading on to the rest.
    let (_, page) = call(&node, "GET", "/v1/requests?limit=1", Some(OPERATOR_KEY)).await;
    assert_eq!(ids(&page), ["team-b-1/r3"]);
    let cursor = page["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let (_, rest) = call(
        &node,
        "GET",
        &format!("/v1/requests?limit=1&cursor={cursor}"),
        Some(OPERATOR_KEY),
    )
    .await;
    assert_eq!(ids(&rest), ["team-a-1/r2"]);
    assert_eq!(rest["next_cursor"], Value::Null);

    // Bad values are refused with their field; other keys are refused.
    for (query, field) in [
        ("state=closed", "state"),
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("older_than_s=soon", "older_than_s"),
        ("cursor=x", "cursor"),
    ] {
        let (status, body) = call(
            &node,
            "GET",
            &format!("/v1/requests?{query}"),
            Some(OPERATOR_KEY),
        )
        .await;
        assert_eq!(
            (status, body["errors"][0]["path"].as_str()),
            (400, Some(field)),
            "{query}: {body}"
        );
    }
    for key in [Some(AGENT_KEY), Some("nonsense"), None] {
        let (status, _) = call(&node, "GET", "/v1/requests", key).await;
        assert_eq!(status, 401, "{key:?}");
    }
    // The operator key cannot ask, over HTTP or a socket.
    let (status, _) = http_text(
        node.addr,
        "POST",
        "/v1/sessions/team-a-1/requests",
        Some(&json!({"id": "op", "questions": askgate_testkit::frames::questions(&["Color"])})),
        Some(OPERATOR_KEY),
    )
    .await;
    assert_eq!(status, 401);

    // The command line lists the same, and withdraws: the agent gets `withdrawn`, the trail
    // says the operator did it.
    let (ok, listed) = cli(&node, OPERATOR_KEY, &["list"]);
    assert!(ok, "{listed}");
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert!(lines[0].starts_with("team-b-1\tr3\t"), "{listed}");
    assert!(lines[0].ends_with("\topen\tDeploy r3"), "{listed}");
    let (ok, json_lines) = cli(
        &node,
        OPERATOR_KEY,
        &["list", "--json", "--session-prefix", "team-a"],
    );
    assert!(ok, "{json_lines}");
    let parsed: Value = serde_json::from_str(json_lines.trim()).expect("one JSON line");
    assert_eq!(parsed["id"], "r2");
    let (ok, said) = cli(&node, AGENT_KEY, &["list"]);
    assert!(!ok && said.contains("401"), "{said}");
    let (ok, said) = cli(&node, OPERATOR_KEY, &["withdraw", "team-a-1", "r2"]);
    assert!(ok, "{said}");
    assert_eq!(said.trim(), "team-a-1 r2: withdrawn (by the operator)");
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(
        (&outcome["id"], &outcome["outcome"], &outcome["via"]),
        (&json!("r2"), &json!("withdrawn"), &json!("operator"))
    );
    let (status, trail) = http_text(
        node.addr,
        "GET",
        "/v1/audit?session=team-a-1",
        None,
        Some(OPERATOR_KEY),
    )
    .await;
    assert_eq!(status, 200, "{trail}");
    let withdrawn: Value = trail
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|entry| entry["event"] == "withdrawn")
        .expect("a withdrawn entry");
    assert_eq!(
        (&withdrawn["id"], &withdrawn["via"]),
        (&json!("r2"), &json!("operator"))
    );

    // An agent withdrawing says so too.
    let (status, body) = call(
        &node,
        "DELETE",
        "/v1/sessions/team-b-1/requests/r3",
        Some(AGENT_KEY),
    )
    .await;
    assert_eq!((status, &body["via"]), (200, &json!("agent")), "{body}");
}

/// On Redis, one node lists the requests asked on another, and withdraws them there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_node_lists_and_withdraws_what_another_node_was_asked() {
    let redis = RedisServer::start(&[]);
    let args = ["--operator-key", OPERATOR_KEY];
    let asking = Node::start(&redis.url(), &args);
    let listing = Node::start(&redis.url(), &args);
    let (mut agent, _) = asking.agent_opening("far").await;
    agent.send(&ask("far", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    let (status, open) = call(&listing, "GET", "/v1/requests", Some(OPERATOR_KEY)).await;
    assert_eq!(status, 200, "{open}");
    assert_eq!(ids(&open), ["far/r1"]);
    // The asking node writes its presence at its next upkeep (each second): listed again
    // until it has.
    let patience = tokio::time::Instant::now() + support::TIMEOUT;
    loop {
        let (_, open) = call(&listing, "GET", "/v1/requests", Some(OPERATOR_KEY)).await;
        if open["requests"][0]["agent_online"] == true {
            break;
        }
        assert!(
            tokio::time::Instant::now() < patience,
            "never online: {open}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (status, body) = call(
        &listing,
        "DELETE",
        "/v1/sessions/far/requests/r1",
        Some(OPERATOR_KEY),
    )
    .await;
    assert_eq!((status, &body["via"]), (200, &json!("operator")), "{body}");
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["outcome"], "withdrawn");
}
