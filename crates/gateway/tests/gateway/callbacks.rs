//! An ask's `callback`, against `askgate serve` without a notify file: the outcome POSTed
//! where the ask said, signed as Standard Webhooks has it (checked by the `standardwebhooks`
//! package, not askgate's code), kept across a SIGKILL until taken; the LangGraph Agent Server
//! format; and the URLs a gateway refuses, at `callback.url`.
#![cfg(target_os = "linux")]

use std::time::Duration;

use askgate_testkit::frames::{answer, ask};
use askgate_testkit::webhooks::WebhookReceiver as Receiver;
use serde_json::{Value, json};

use crate::support;
use support::nodes::Node;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// The first retry comes within 5 s of a failure; this leaves room for a busy machine.
const RETRY_WITHIN: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_callback_gets_the_outcome_signed_and_one_kept_before_a_sigkill_after_the_restart() {
    let dir = support::tempdir("callback-restart");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let args = ["--notify-allow-private"];
    // Nothing listens at the callback's address while the first gateway runs.
    let port = support::free_port();
    let mut node = Node::start_in(data.clone(), "embedded", &args);
    let (mut agent, link) = node.agent_opening("s").await;
    let mut frame = ask("s", "r1", &["Color"], Some(600.0));
    frame["callback"] = json!({"url": format!("http://127.0.0.1:{port}/cb"), "secret": SECRET});
    agent.send(&frame).await;
    agent.recv_until("accepted").await;
    let (mut tab, snapshot) = node.tab("s", &link).await;
    assert_eq!(snapshot["requests"][0]["id"], "r1", "{snapshot}");
    tab.send(&answer("r1", &["Color"], "Red")).await;
    agent.recv_until("outcome").await;
    assert!(
        node.wrote_line("a notification failed; it is tried again")
            .await,
        "{:?}",
        node.said()
    );
    node.kill();

    let mut receiver = Receiver::start(&[SECRET], Some(port), 0).await;
    let node = Node::start_in(data.clone(), "embedded", &args);
    let got = receiver.next(RETRY_WITHIN).await;
    assert_eq!(got["status"], 204, "{got}");
    assert_eq!(got["verified"], json!([true]), "{got}");
    let body = &got["body"];
    assert_eq!(body["type"], "request.resolved", "{body}");
    assert_eq!(body["data"]["id"], "r1");
    assert_eq!(body["data"]["outcome"], "answered");
    assert_eq!(
        body["data"]["response"]["answers"][0]["selected"],
        json!(["Red"]),
        "{body}"
    );
    // Not the session's viewer link: its key would let the receiver answer in the session.
    assert_eq!(body["data"].get("url"), None, "{body}");
    assert!(
        node.wrote_line("a notification was sent").await,
        "{:?}",
        node.said()
    );
    let metrics = node.http("GET", "/metrics", None).await.1;
    let sent = "askgate_notifications_sent_total{channel=\"callback\"} 1";
    assert!(metrics.contains(sent), "{sent} not in\n{metrics}");

    // Over HTTP, in LangGraph Agent Server's shape: a run resuming the thread with the
    // response, keyed by the interrupt; signed too, as a secret is given.
    let (status, posted) = node
        .http(
            "POST",
            "/v1/sessions/s/requests",
            Some(&json!({
                "id": "r2",
                "dialect": "approval",
                "calls": [{"name": "deploy", "args": {"env": "prod"}}],
                "callback": {
                    "url": format!("http://127.0.0.1:{port}"),
                    "format": "langgraph-server",
                    "thread_id": "thread-7",
                    "assistant_id": "agent",
                    "interrupt_id": "int-1",
                    "secret": SECRET,
                },
            })),
        )
        .await;
    assert_eq!(status, 201, "{posted}");
    let (mut tab, snapshot) = node.tab("s", &link).await;
    assert_eq!(snapshot["requests"][0]["id"], "r2", "{snapshot}");
    tab.send(&json!({"type": "answer", "id": "r2", "response": {"decisions": [{"type": "reject", "message": "not today"}]}}))
        .await;
    let run = receiver.next(RETRY_WITHIN).await;
    assert_eq!(run["status"], 204, "{run}");
    assert_eq!(run["verified"], json!([true]), "{run}");
    assert_eq!(
        run["body"],
        json!({
            "assistant_id": "agent",
            "command": {"resume": {"int-1": {"decisions": [{"type": "reject", "message": "not today"}]}}},
        }),
        "{run}"
    );
    drop(node);
    support::remove_scratch(&dir);
}

/// On Redis, where the ending's callback is kept by the script that records the ending, and a
/// node that dies with it unsent leaves it to another: sent by the node that is left.
#[tokio::test]
async fn on_redis_another_node_sends_a_callback_a_killed_node_could_not() {
    let redis = support::redis::RedisServer::start(&[]);
    let args = ["--notify-allow-private"];
    let port = support::free_port();
    let mut asking = Node::start(&redis.url(), &args);
    let other = Node::start(&redis.url(), &args);
    let (mut agent, link) = asking.agent_opening("s").await;
    let mut frame = ask("s", "r1", &["Color"], Some(600.0));
    frame["callback"] = json!({"url": format!("http://127.0.0.1:{port}/cb"), "secret": SECRET});
    agent.send(&frame).await;
    agent.recv_until("accepted").await;
    let (mut tab, snapshot) = asking.tab("s", &link).await;
    assert_eq!(snapshot["requests"][0]["id"], "r1", "{snapshot}");
    tab.send(&answer("r1", &["Color"], "Blue")).await;
    agent.recv_until("outcome").await;
    // Its first try finds nobody listening; it hands the callback back, due within 5 s.
    assert!(
        asking
            .wrote_line("it is handed back to be tried again")
            .await,
        "{:?}",
        asking.said()
    );
    asking.kill();

    let mut receiver = Receiver::start(&[SECRET], Some(port), 0).await;
    let got = receiver.next(RETRY_WITHIN).await;
    assert_eq!(got["status"], 204, "{got}");
    assert_eq!(got["verified"], json!([true]), "{got}");
    assert_eq!(got["body"]["type"], "request.resolved");
    assert_eq!(got["body"]["data"]["id"], "r1");
    assert_eq!(got["body"]["data"]["outcome"], "answered");
    drop(other);
}

/// Every node on Redis claims due notifications (each may hold callbacks), also one without
/// the notify file another node has: what it cannot send it hands back, for a node that can.
#[tokio::test]
async fn on_redis_a_node_without_the_webhook_hands_its_notification_back() {
    let dir = support::tempdir("callback-hand-back");
    let redis = support::redis::RedisServer::start(&[]);
    let port = support::free_port();
    let file = dir.join("notify.toml");
    std::fs::write(
        &file,
        format!("[webhooks.ops]\nurl = \"http://127.0.0.1:{port}/hook\"\nsecret = \"{SECRET}\"\n"),
    )
    .unwrap();
    let file = file.display().to_string();
    let with_file = [
        "--notify",
        &file,
        "--notify-allow-private",
        "--public-url",
        "https://askgate.example",
    ];
    let mut asking = Node::start(&redis.url(), &with_file);
    let bare = Node::start(&redis.url(), &["--notify-allow-private"]);
    let (mut agent, _) = asking.agent_opening("s").await;
    agent.send(&ask("s", "r1", &["Color"], Some(600.0))).await;
    agent.recv_until("accepted").await;
    assert!(
        asking
            .wrote_line("it is handed back to be tried again")
            .await,
        "{:?}",
        asking.said()
    );
    asking.kill();
    // Only the node without the webhook is left: it claims the notification and hands it
    // back, again and again, rather than dropping it.
    assert!(
        bare.wrote_line("a notification this node cannot send is handed back")
            .await,
        "{:?}",
        bare.said()
    );
    let mut receiver = Receiver::start(&[SECRET], Some(port), 0).await;
    let _again = Node::start(&redis.url(), &with_file);
    let got = receiver.next(RETRY_WITHIN).await;
    assert_eq!(got["status"], 204, "{got}");
    assert_eq!(got["body"]["type"], "request.opened", "{got}");
    assert_eq!(got["body"]["data"]["id"], "r1");
    drop(bare);
    support::remove_scratch(&dir);
}

#[tokio::test]
async fn a_callback_to_a_host_the_gateway_does_not_allow_is_refused_at_its_path() {
    let node = Node::start(
        "memory",
        &["--callback-hosts", "hooks.example.com,*.runs.example.org"],
    );
    let refused = |callback: Value| {
        let node = &node;
        async move {
            let (status, text) = node
                .http(
                    "POST",
                    "/v1/sessions/s/requests",
                    Some(&json!({
                        "questions": [{"header": "H", "question": "Q?", "options": [{"label": "A"}, {"label": "B"}]}],
                        "callback": callback,
                    })),
                )
                .await;
            assert_eq!(status, 422, "{text}");
            let body: Value = serde_json::from_str(&text).unwrap();
            body["errors"][0].clone()
        }
    };
    let error = refused(json!({"url": "https://evil.example.com/x", "secret": SECRET})).await;
    assert_eq!(error["path"], "callback.url", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("--callback-hosts"),
        "{error}"
    );
    let error =
        refused(json!({"url": "https://hooks.example.com/x", "secret": "whsec_short"})).await;
    assert_eq!(error["path"], "callback.secret", "{error}");
    let error = refused(json!({"url": "https://a.runs.example.org", "format": "langgraph-server", "assistant_id": "agent"})).await;
    assert_eq!(error["path"], "callback.thread_id", "{error}");

    // Allowed by name but written as a loopback address: refused without
    // --notify-allow-private, whatever the list says.
    let open = Node::start("memory", &[]);
    let (status, text) = open
        .http(
            "POST",
            "/v1/sessions/s/requests",
            Some(&json!({
                "questions": [{"header": "H", "question": "Q?", "options": [{"label": "A"}, {"label": "B"}]}],
                "callback": {"url": "http://127.0.0.1:9/cb", "secret": SECRET},
            })),
        )
        .await;
    assert_eq!(status, 422, "{text}");
    assert!(
        text.contains("callback.url") && text.contains("loopback"),
        "{text}"
    );
}
