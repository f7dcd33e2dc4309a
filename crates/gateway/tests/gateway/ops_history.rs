//! `GET /v1/ops/history` and operators named by a trusted proxy: asks and answers counted in
//! their minute with the gateway's own latencies, notification errors listed; a person
//! `--operators` or the notify file lists admitted to every operator endpoint and audited by
//! name, anyone else refused; and on Redis every node's figures, a killed node shown as no
//! longer alive.
#![cfg(target_os = "linux")]

use std::time::Duration;

use askgate_testkit::frames::{answer, ask};
use askgate_testkit::http::{http_text, http_url, http_with_headers};
use askgate_testkit::ws::WsClient;
use serde_json::{Value, json};

use crate::support;
use support::TIMEOUT;
use support::nodes::Node;
use support::redis::RedisServer;

const AGENT_KEY: &str = "agent-key-1";
const OPERATOR_KEY: &str = "operator-key-1";
const HEADER: &str = "X-Forwarded-Email";

/// `GET path` on `node` as the person the proxy names `person`.
async fn as_person(node: &Node, method: &str, path: &str, person: &str) -> (u16, Value) {
    let headers = format!("Host: {}\r\n{HEADER}: {person}\r\n", node.addr);
    http_with_headers(node.addr, method, path, None, &headers).await
}

/// `GET path` on `node` with `key`, if any.
async fn get(node: &Node, path: &str, key: Option<&str>) -> (u16, Value) {
    let (status, text) = http_text(node.addr, "GET", path, None, key).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// An agent on `node` that asked `r1` in `session`, and a tab there that was shown it.
async fn asked_with_a_tab(node: &Node, session: &str) -> (WsClient, WsClient) {
    let mut agent = WsClient::connect(&node.ws("/v1/agent"), Some(AGENT_KEY)).await;
    let viewer = agent.open(session).await["viewer_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let (mut tab, _) = node.tab(session, &viewer).await;
    agent.send(&ask(session, "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    tab.recv_about("request", "r1").await;
    (agent, tab)
}

/// The flags that make this machine a trusted proxy naming people in [`HEADER`] and list
/// `alice@example.com` as an operator (an `--operators` file written in `dir`).
fn proxy_and_operators(dir: &std::path::Path) -> Vec<String> {
    let path = dir.join("operators.json");
    std::fs::write(&path, r#"["alice@example.com"]"#).unwrap();
    let flags = [
        "--user-header",
        HEADER,
        "--trusted-proxy",
        "127.0.0.1",
        "--operators",
    ];
    flags
        .into_iter()
        .map(str::to_owned)
        .chain([path.display().to_string()])
        .collect()
}

/// A node with an operator key, a trusted proxy (this machine) naming people in [`HEADER`],
/// `alice@example.com` listed by `--operators` and `carol` by the notify file.
fn node_with_operators(store: &str, extra: &[&str], env: &[(&str, &str)]) -> Node {
    let dir = support::tempdir("operators");
    let proxied = proxy_and_operators(&dir);
    let notify = dir.join("notify.toml");
    std::fs::write(&notify, "operators = [\"carol\"]\n").unwrap();
    let notify = notify.display().to_string();
    let mut args = vec!["--agent-key", AGENT_KEY, "--operator-key", OPERATOR_KEY];
    args.extend(proxied.iter().map(String::as_str));
    args.extend(["--notify", &notify, "--notify-allow-private"]);
    args.extend_from_slice(extra);
    Node::start_with_env(store, &args, env)
}

/// The sum of `field` over every minute of every node.
fn total(history: &Value, field: &str) -> u64 {
    history["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|node| node["minutes"].as_array().into_iter().flatten())
        .map(|minute| minute[field].as_u64().expect("a count"))
        .sum()
}

/// The minutes of every node in which `field` has percentiles.
fn timed<'a>(history: &'a Value, field: &str) -> Vec<&'a Value> {
    history["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|node| node["minutes"].as_array().into_iter().flatten())
        .filter(|minute| !minute[field].is_null())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_counts_asks_and_answers_with_their_latencies_in_their_minute() {
    let node = node_with_operators("embedded", &[], &[]);
    let (status, history) = get(&node, "/v1/ops/history", Some(OPERATOR_KEY)).await;
    assert_eq!(status, 200, "{history}");
    assert_eq!(total(&history, "asks"), 0, "{history}");

    // An ask shown to a tab that is there, answered by it, the outcome back to the agent.
    let (mut agent, mut tab) = asked_with_a_tab(&node, "hist").await;
    tab.send(&answer("r1", &["Color"], "Red")).await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["outcome"], "answered", "{outcome}");

    let (status, history) = get(&node, "/v1/ops/history", Some(OPERATOR_KEY)).await;
    assert_eq!(status, 200, "{history}");
    assert_eq!(history["minute_ms"], 60_000, "{history}");
    let now = history["now_ms"].as_u64().expect("now_ms");
    let nodes = history["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 1, "{history}");
    assert_eq!(nodes[0]["alive"], true, "{history}");
    let minutes = nodes[0]["minutes"].as_array().expect("minutes");
    assert_eq!(minutes.len(), 61, "the last 60 whole minutes and this one");
    let starts: Vec<u64> = minutes
        .iter()
        .map(|m| m["start_ms"].as_u64().unwrap())
        .collect();
    assert!(
        starts.windows(2).all(|w| w[1] == w[0] + 60_000),
        "{starts:?}"
    );
    assert_eq!(starts[60], now - now % 60_000, "{starts:?} at {now}");
    assert_eq!(total(&history, "asks"), 1, "{history}");
    assert_eq!(total(&history, "answers"), 1, "{history}");
    for field in ["ask_to_tab_ms", "answer_to_agent_ms"] {
        let minutes = timed(&history, field);
        assert_eq!(minutes.len(), 1, "{field}: {history}");
        let (p50, p99) = (&minutes[0][field]["p50"], &minutes[0][field]["p99"]);
        assert!(
            p50.as_f64().is_some_and(|ms| (0.0..5_000.0).contains(&ms)),
            "{field}: {p50}"
        );
        assert!(p99.as_f64() >= p50.as_f64(), "{field}: {p50} {p99}");
    }
    // A minute with nothing in it: zeros and nulls, every channel.
    let empty = &minutes[0];
    assert_eq!(
        (&empty["asks"], &empty["answers"], &empty["ask_to_tab_ms"]),
        (&json!(0), &json!(0), &Value::Null),
        "{empty}"
    );
    assert_eq!(
        empty["notifications"]["webhook"],
        json!({"sent": 0, "retried": 0, "given_up": 0})
    );
    let answer_time = &history["answer_time_s"];
    let bounds = answer_time["bounds"].as_array().expect("bounds");
    let counts = answer_time["counts"].as_array().expect("counts");
    assert_eq!(counts.len(), bounds.len() + 1, "{answer_time}");
    assert_eq!(
        counts[0], 1,
        "answered within the first bound: {answer_time}"
    );
    assert_eq!(history["notification_errors"], json!([]), "{history}");

    // The latencies are on /metrics too.
    let (_, metrics) = http_text(node.addr, "GET", "/metrics", None, None).await;
    for name in [
        "askgate_ask_to_tab_seconds_count 1",
        "askgate_answer_to_agent_seconds_count 1",
    ] {
        assert!(metrics.contains(name), "{name} in {metrics}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_that_fails_is_listed_with_its_host_and_error() {
    let node = node_with_operators("embedded", &[], &[]);
    let mut agent = WsClient::connect(&node.ws("/v1/agent"), Some(AGENT_KEY)).await;
    agent.open("errs").await;
    // A port nothing listens on: the POST is refused at once.
    let port = support::free_port();
    let mut called = ask("errs", "r1", &["Color"], None);
    called["callback"] = json!({
        "url": format!("http://127.0.0.1:{port}/hook"),
        "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    });
    agent.send(&called).await;
    agent.recv_until("accepted").await;
    let (status, body) = as_person(&node, "DELETE", "/v1/sessions/errs/requests/r1", "carol").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        node.wrote_line("a notification failed").await,
        "{:?}",
        node.said()
    );
    let (status, history) = get(&node, "/v1/ops/history", Some(OPERATOR_KEY)).await;
    assert_eq!(status, 200, "{history}");
    let errors = history["notification_errors"].as_array().expect("errors");
    assert!(!errors.is_empty(), "{history}");
    let error = &errors[0];
    assert_eq!(error["channel"], "callback", "{error}");
    assert_eq!(
        error["target"], "127.0.0.1",
        "the host, not the URL: {error}"
    );
    assert_eq!(error["node"], history["nodes"][0]["id"], "{error}");
    assert!(
        error["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{error}"
    );
    assert!(error["at_ms"].as_u64().is_some(), "{error}");
    assert!(
        total(&history, "asks") == 1 && total(&history, "answers") == 0,
        "{history}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_operator_named_by_the_proxy_is_admitted_and_audited_by_name() {
    let node = node_with_operators("embedded", &[], &[]);
    let mut agent = WsClient::connect(&node.ws("/v1/agent"), Some(AGENT_KEY)).await;
    agent.open("ops-a").await;
    agent.send(&ask("ops-a", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;

    // Refused: nobody (401), an agent's key (403), a person no list holds (403).
    for path in ["/v1/ops/summary", "/v1/ops/history"] {
        assert_eq!(get(&node, path, None).await.0, 401, "{path}");
        assert_eq!(get(&node, path, Some(AGENT_KEY)).await.0, 403, "{path}");
        let (status, body) = as_person(&node, "GET", path, "mallory@example.com").await;
        assert_eq!(status, 403, "{path}: {body}");
        let message = body["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("mallory@example.com is not an operator"),
            "{body}"
        );
    }
    let (status, _) = as_person(&node, "GET", "/v1/requests", "mallory@example.com").await;
    assert_eq!(status, 403);
    let (status, _) = as_person(
        &node,
        "DELETE",
        "/v1/sessions/ops-a/requests/r1",
        "mallory@example.com",
    )
    .await;
    assert_eq!(status, 403);

    // Admitted: alice (--operators) and carol (the notify file), on every operator endpoint.
    for person in ["alice@example.com", "carol"] {
        for path in [
            "/v1/ops/summary",
            "/v1/ops/history",
            "/v1/requests",
            "/v1/rules",
        ] {
            let (status, body) = as_person(&node, "GET", path, person).await;
            assert_eq!(status, 200, "{person} {path}: {body}");
        }
    }
    let (_, listed) = as_person(&node, "GET", "/v1/requests", "alice@example.com").await;
    assert_eq!(listed["requests"][0]["id"], "r1", "{listed}");

    // Alice withdraws: the agent is told an operator did, the trail names her.
    let (status, body) = as_person(
        &node,
        "DELETE",
        "/v1/sessions/ops-a/requests/r1",
        "alice@example.com",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(
        (&outcome["outcome"], &outcome["via"]),
        (&json!("withdrawn"), &json!("operator")),
        "{outcome}"
    );
    // Bob, on no list, withdraws with the operator key: the trail names him too.
    agent.send(&ask("ops-a", "r2", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    let headers = format!(
        "Host: {}\r\n{HEADER}: bob@example.com\r\nAuthorization: Bearer {OPERATOR_KEY}\r\n",
        node.addr
    );
    let (status, body) = http_with_headers(
        node.addr,
        "DELETE",
        "/v1/sessions/ops-a/requests/r2",
        None,
        &headers,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Carol (the notify file's) reads the trail.
    let url = format!("http://{}/v1/audit?session=ops-a", node.addr);
    let (status, text) = http_url("GET", &url, &[(HEADER, "carol")]).await;
    assert_eq!(status, 200, "{text}");
    let withdrawn: Vec<(Value, Value)> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["event"] == "withdrawn")
        .map(|entry| (entry["via"].clone(), entry["user"].clone()))
        .collect();
    assert_eq!(
        withdrawn,
        [
            (json!("operator"), json!("alice@example.com")),
            (json!("operator"), json!("bob@example.com"))
        ],
        "{text}"
    );
}

/// Without agent keys (local mode) any `Authorization` would let a local program in as an
/// agent; a person the proxy names is not one, so a key-shaped header does not turn someone
/// no operator list holds into one who may withdraw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_local_mode_a_person_the_proxy_names_is_no_agent_whatever_they_send() {
    let dir = support::tempdir("operators-local");
    let proxied = proxy_and_operators(&dir);
    let flags: Vec<&str> = proxied.iter().map(String::as_str).collect();
    let node = Node::start("embedded", &flags);
    let mut agent = node.agent().await;
    agent.open("ops-l").await;
    agent.send(&ask("ops-l", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    let path = "/v1/sessions/ops-l/requests/r1";
    let headers = format!(
        "Host: {}\r\n{HEADER}: mallory@example.com\r\nAuthorization: Bearer anything\r\n",
        node.addr
    );
    let (status, body) = http_with_headers(node.addr, "DELETE", path, None, &headers).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = as_person(&node, "DELETE", path, "alice@example.com").await;
    assert_eq!(status, 200, "{body}");
    support::remove_scratch(&dir);
}

/// Polls `GET /v1/ops/summary` on `node` until `done` holds of it (within the test's timeout).
async fn summary_until(node: &Node, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let (status, body) = get(node, "/v1/ops/summary", Some(OPERATOR_KEY)).await;
        if status == 200 && done(&body) {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the summary never showed {what}: {status} {body}"
        );
        // The nodes report every 200 ms: a poll each 50 ms sees each report.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The node of `summary` (or history) with `id`.
fn node_of<'a>(body: &'a Value, id: &str) -> Option<&'a Value> {
    body["nodes"].as_array()?.iter().find(|n| n["id"] == id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_every_node_is_shown_and_a_killed_one_stops_being_alive() {
    let redis = RedisServer::start(&[]);
    let env = [("ASKGATE_TEST_NODE_REPORT_MS", "200")];
    let first = node_with_operators(&redis.url(), &[], &env);
    let mut second = node_with_operators(&redis.url(), &[], &env);

    // Both nodes appear, alive, in either node's summary.
    let summary = summary_until(&first, "two alive nodes", |body| {
        body["nodes"]
            .as_array()
            .is_some_and(|nodes| nodes.len() == 2 && nodes.iter().all(|n| n["alive"] == true))
    })
    .await;
    let first_id = summary["nodes"][0]["id"].as_str().unwrap().to_owned();
    let second_id = summary["nodes"][1]["id"].as_str().unwrap().to_owned();
    assert_ne!(first_id, second_id);
    for node in summary["nodes"].as_array().unwrap() {
        assert!(node["last_seen_ms"].as_u64().is_some(), "{node}");
    }

    // An ask and a tab on the second node: the first node's summary and history show them.
    let (agent, tab) = asked_with_a_tab(&second, "multi").await;
    let summary = summary_until(&first, "the second node's tab and agent", |body| {
        node_of(body, &second_id).is_some_and(|n| n["tabs"] == 1 && n["agents"] == 1)
    })
    .await;
    assert_eq!(
        (&summary["tabs"], &summary["agents"]),
        (&json!(1), &json!(1)),
        "{summary}"
    );
    let (status, history) = as_person(&first, "GET", "/v1/ops/history", "alice@example.com").await;
    assert_eq!(status, 200, "{history}");
    let asks = |history: &Value, id: &str| -> u64 {
        node_of(history, id).map_or(0, |n| {
            n["minutes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["asks"].as_u64().unwrap())
                .sum()
        })
    };
    assert_eq!(asks(&history, &second_id), 1, "{history}");
    assert_eq!(asks(&history, &first_id), 0, "{history}");

    // Killed, the second node stops being alive within three reports, and no longer counts.
    drop(tab);
    drop(agent);
    second.kill();
    let summary = summary_until(&first, "the second node not alive", |body| {
        node_of(body, &second_id).is_some_and(|n| n["alive"] == false)
    })
    .await;
    assert_eq!(
        (&summary["tabs"], &summary["agents"]),
        (&json!(0), &json!(0)),
        "{summary}"
    );
    assert_eq!(
        node_of(&summary, &first_id).unwrap()["alive"],
        true,
        "{summary}"
    );
    let (_, history) = get(&first, "/v1/ops/history", Some(OPERATOR_KEY)).await;
    assert_eq!(
        node_of(&history, &second_id).unwrap()["alive"],
        false,
        "{history}"
    );
    assert_eq!(
        asks(&history, &second_id),
        1,
        "its last report still counts: {history}"
    );
}
