//! One suite, every store: asking, an idempotent re-ask, first answer wins, deadlines,
//! withdrawal, acknowledgement, a restart, a limit — against `askgate serve` on the memory
//! store, the embedded one and Redis (a server of the test's own), with the same expectations
//! (a restart only where the store keeps anything).
#![cfg(target_os = "linux")]

use crate::support;

use askgate_testkit::frames::{answer, ask};
use serde_json::json;
use support::nodes::Node;
use support::redis::RedisServer;

/// A store to run the suite on, and how to start a node on it.
enum Backend {
    Memory,
    Embedded(std::path::PathBuf),
    Redis(RedisServer),
}

impl Backend {
    fn node(&self, args: &[&str]) -> Node {
        match self {
            Backend::Memory => Node::start("memory", args),
            Backend::Embedded(dir) => Node::start_in(dir.clone(), "embedded", args),
            Backend::Redis(redis) => Node::start(&redis.url(), args),
        }
    }

    fn keeps_across_restarts(&self) -> bool {
        !matches!(self, Backend::Memory)
    }
}

async fn suite(backend: Backend) {
    let mut node = backend.node(&["--open-requests-per-session", "3"]);
    let (mut agent, link) = node.agent_opening("s").await;
    let (mut tab_1, _) = node.tab("s", &link).await;
    let (mut tab_2, _) = node.tab("s", &link).await;

    // Asking, and an idempotent re-ask: one request, the same deadline.
    agent.send(&ask("s", "a", &["Color"], Some(600.0))).await;
    let accepted = agent.recv_until("accepted").await;
    agent.send(&ask("s", "a", &["Color"], Some(600.0))).await;
    let again = agent.recv_until("accepted").await;
    assert_eq!(again["deadline_ms"], accepted["deadline_ms"]);
    let mut other = ask("s", "a", &["Color"], None);
    other["questions"][0]["question"] = "Another?".into();
    agent.send(&other).await;
    let conflict = agent.recv_until("rejected").await;
    assert_eq!(conflict["errors"][0]["path"], "id", "{conflict}");
    tab_1.recv_about("request", "a").await;
    tab_2.recv_about("request", "a").await;

    // First answer wins; the second tab is told it lost.
    tab_1.send(&answer("a", &["Color"], "Red")).await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["outcome"], "answered");
    tab_2.send(&answer("a", &["Color"], "Blue")).await;
    let lost = tab_2.recv_about("answer_rejected", "a").await;
    assert!(
        lost["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("already resolved"),
        "{lost}"
    );

    // A deadline.
    agent.send(&ask("s", "d", &["Color"], Some(0.5))).await;
    agent.recv_until("accepted").await;
    let timed_out = agent.recv_until("outcome").await;
    assert_eq!(
        (timed_out["id"].as_str(), timed_out["outcome"].as_str()),
        (Some("d"), Some("timed_out"))
    );

    // Withdrawal over HTTP; acknowledgement makes the id new again.
    agent.send(&ask("s", "w", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    let (status, body) = node.http("DELETE", "/v1/sessions/s/requests/w", None).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("withdrawn"), "{body}");
    agent.recv_until("outcome").await;
    for id in ["d", "w"] {
        agent
            .send(&json!({"type": "ack", "session": "s", "id": id}))
            .await;
    }
    // Over HTTP the ack is answered once it is kept, so the id is unknown right after (a
    // socket's ack has no reply to wait for).
    let (status, _) = node
        .http("POST", "/v1/sessions/s/requests/a/ack", None)
        .await;
    assert_eq!(status, 204);
    let (status, _) = node.http("GET", "/v1/sessions/s/requests/a", None).await;
    assert_eq!(status, 404);

    // A limit: three open requests a session.
    for id in ["l1", "l2", "l3"] {
        agent.send(&ask("s", id, &["Color"], None)).await;
        agent.recv_until("accepted").await;
    }
    agent.send(&ask("s", "l4", &["Color"], None)).await;
    let full = agent.recv_until("rejected").await;
    assert_eq!(full["errors"][0]["code"], "unavailable", "{full}");

    // A tool-call approval, asked twice: one request (and, below, across a restart).
    let approval = json!({"type": "ask", "session": "t", "id": "p", "dialect": "approval",
        "calls": [{"name": "run_sql", "args": {"q": "DROP"}, "decisions": ["approve", "edit"],
                   "args_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}]});
    for _ in 0..2 {
        agent.send(&approval).await;
        assert_eq!(agent.recv_until("accepted").await["id"], "p");
    }

    // A restart: what was open is open again, answerable.
    if backend.keeps_across_restarts() {
        drop((tab_1, tab_2, agent));
        node.kill();
        node = backend.node(&[]);
        let (mut agent, link) = node.agent_opening("s").await;
        let (mut tab, snapshot) = node.tab("s", &link).await;
        let open: Vec<&str> = snapshot["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(open, ["l1", "l2", "l3"], "{snapshot}");
        agent.send(&ask("s", "l1", &["Color"], None)).await;
        agent.recv_until("accepted").await;
        tab.send(&answer("l1", &["Color"], "Green")).await;
        let outcome = agent.recv_until("outcome").await;
        assert_eq!(outcome["id"], "l1");

        let link = agent.open("t").await["viewer_url"]
            .as_str()
            .unwrap()
            .to_owned();
        let (mut tab, snapshot) = node.tab("t", &link).await;
        assert_eq!(
            snapshot["requests"][0]["calls"][0]["edit_check"], "schema",
            "{snapshot}"
        );
        agent.send(&approval).await;
        agent.recv_until("accepted").await;
        tab.send(
            &json!({"type": "answer", "id": "p", "response": {"decisions": [
            {"type": "edit", "args": {"q": "SELECT 1"}}]}}),
        )
        .await;
        let outcome = agent.recv_until("outcome").await;
        assert_eq!(outcome["model_text"], "run_sql: edited", "{outcome}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_store() {
    suite(Backend::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_store() {
    suite(Backend::Embedded(support::tempdir("backend"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_store() {
    suite(Backend::Redis(RedisServer::start(&[]))).await;
}
