//! Webhooks told of requests, against `askgate serve`: signed as Standard Webhooks has it
//! (checked by the `standardwebhooks` package, not askgate's code), routed by session and by
//! person, retried with the same id until the receiver takes them, and kept across a SIGKILL.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::time::Duration;

use askgate_testkit::frames::{answer, ask};
use serde_json::{Value, json};

use crate::support;
use askgate_testkit::webhooks::WebhookReceiver as Receiver;
use support::nodes::Node;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OLD_SECRET: &str = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0";
/// The first retry comes within 5 s of a failure; this leaves room for a busy machine.
const RETRY_WITHIN: Duration = Duration::from_secs(20);

fn write_notify_file(dir: &Path, text: &str) -> String {
    let path = dir.join("notify.toml");
    std::fs::write(&path, text).expect("the notify file is written");
    path.display().to_string()
}

fn notify_args(file: &str) -> Vec<String> {
    [
        "--notify",
        file,
        "--notify-allow-private",
        "--public-url",
        "https://askgate.example",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Waits until `node` has deleted the notification the receiver `got` as sent (killed before
/// that, it would send it again after a restart: at least once).
async fn wait_deleted_as_sent(node: &Node, got: &Value) {
    let line = format!(
        "a notification was sent notification={}",
        got["id"].as_str().expect("an id")
    );
    assert!(
        node.wrote_line(&line).await,
        "{line:?} not in {:?}",
        node.said()
    );
}

fn start(store: &str, data: Option<&Path>, args: &[String]) -> Node {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match data {
        Some(dir) => Node::start_in(dir.to_owned(), store, &args),
        None => Node::start(store, &args),
    }
}

#[tokio::test]
async fn webhooks_are_signed_routed_and_retried_with_one_id_until_taken() {
    let dir = support::tempdir("notify-webhooks");
    // `ops` watches the billing sessions and fails its first try; `pager` watches no session
    // of its own but is alice's, so it gets what is addressed to her (through her group).
    let mut ops = Receiver::start(&[SECRET, OLD_SECRET], None, 1).await;
    let mut pager = Receiver::start(&[SECRET], None, 0).await;
    let file = write_notify_file(
        &dir,
        &format!(
            r#"
[people."alice@example.com"]
webhooks = ["pager"]

[groups.oncall]
members = ["alice@example.com", "bob@example.com"]

[webhooks.ops]
url = "{ops}"
secret = "{SECRET}"
previous_secret = "{OLD_SECRET}"
sessions = "billing-"

[webhooks.pager]
url = "{pager}"
secret = "{SECRET}"
events = ["request.opened"]
sessions = "nobody-"
"#,
            ops = ops.url(),
            pager = pager.url()
        ),
    );
    let node = start("memory", None, &notify_args(&file));

    let (mut agent, link) = node.agent_opening("billing-1").await;
    let (status, issued) = node
        .http(
            "POST",
            "/v1/sessions/billing-1/links",
            Some(&json!({"user": "alice@example.com"})),
        )
        .await;
    assert_eq!(status, 201, "{issued}");
    let alice: Value = serde_json::from_str(&issued).unwrap();
    let (mut tab, _) = node.tab("billing-1", alice["url"].as_str().unwrap()).await;
    let mut frame = ask("billing-1", "r1", &["Color"], Some(600.0));
    frame["title"] = json!("Pick a colour");
    frame["answerers"] = json!(["group:oncall"]);
    agent.send(&frame).await;
    let accepted = agent.recv_until("accepted").await;

    // The first try is answered 500, the retry taken: the same id, both times signed with
    // both secrets as the independent verifier sees it.
    let first = ops.next(RETRY_WITHIN).await;
    assert_eq!(first["status"], 500, "{first}");
    let retried = ops.next(RETRY_WITHIN).await;
    assert_eq!(retried["status"], 204, "{retried}");
    assert_eq!(retried["id"], first["id"]);
    assert!(first["id"].as_str().unwrap().starts_with("msg_"), "{first}");
    for got in [&first, &retried] {
        assert_eq!(got["verified"], json!([true, true]), "{got}");
        assert_eq!(
            got["signature"].as_str().unwrap().split(' ').count(),
            2,
            "{got}"
        );
    }
    let body = &retried["body"];
    assert_eq!(body["type"], "request.opened");
    assert!(body["timestamp"].as_str().unwrap().ends_with('Z'), "{body}");
    let data = &body["data"];
    assert_eq!(data["session"], "billing-1");
    assert_eq!(data["id"], "r1");
    assert_eq!(data["dialect"], "harness");
    assert_eq!(data["title"], "Pick a colour");
    assert_eq!(data["answerers"], json!(["group:oncall"]));
    assert_eq!(data["deadline_ms"], accepted["deadline_ms"]);
    assert_eq!(data["questions"][0]["header"], "Color", "{data}");
    let url = data["url"].as_str().unwrap();
    assert!(
        url.starts_with("https://askgate.example/s/billing-1#k="),
        "{url}"
    );
    assert_eq!(
        url,
        link.replace(
            &link[..link.find("/s/").unwrap()],
            "https://askgate.example"
        )
    );

    // Alice's own webhook gets it too, though its session filter matches nothing.
    let paged = pager.next(RETRY_WITHIN).await;
    assert_eq!(paged["status"], 204, "{paged}");
    assert_eq!(paged["body"]["data"]["id"], "r1");
    assert_ne!(
        paged["id"], first["id"],
        "each target's notification has its own id"
    );

    // The answer: `request.resolved` to `ops` (pager takes only `request.opened`).
    tab.recv_about("request", "r1").await;
    tab.send(&answer("r1", &["Color"], "Red")).await;
    agent.recv_until("outcome").await;
    let resolved = ops.next(RETRY_WITHIN).await;
    assert_eq!(resolved["status"], 204, "{resolved}");
    assert_eq!(resolved["verified"], json!([true, true]));
    let data = &resolved["body"]["data"];
    assert_eq!(resolved["body"]["type"], "request.resolved");
    assert_eq!(data["outcome"], "answered");
    assert_eq!(data["via"], "personal-link");
    assert_eq!(data["user"], "alice@example.com");
    assert_eq!(
        data["response"]["answers"][0]["selected"],
        json!(["Red"]),
        "{data}"
    );

    // A session no webhook watches, addressed to nobody: nothing is sent.
    let (mut other, _) = node.agent_opening("sales-1").await;
    other.send(&ask("sales-1", "quiet", &["Color"], None)).await;
    other.recv_until("accepted").await;
    // Then one that is watched: what arrives next at `ops` is that one, not the quiet one.
    agent.send(&ask("billing-1", "r2", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    let next = ops.next(RETRY_WITHIN).await;
    assert_eq!(next["body"]["data"]["id"], "r2", "{next}");
    // One for alice alone: the next that `pager` gets. Had it been sent `quiet` or `r2`
    // (neither addressed to alice), those would have come first: a target's queue is sent
    // in order.
    let mut for_alice = ask("sales-1", "for-alice", &["Color"], None);
    for_alice["answerers"] = json!(["alice@example.com"]);
    other.send(&for_alice).await;
    other.recv_until("accepted").await;
    let paged = pager.next(RETRY_WITHIN).await;
    assert_eq!(paged["body"]["data"]["id"], "for-alice", "{paged}");

    // Counted once each queue's last one is done with (a target's queue is sent in order).
    for last in [&next, &paged] {
        wait_deleted_as_sent(&node, last).await;
    }
    let metrics = node.http("GET", "/metrics", None).await.1;
    for line in [
        "askgate_notifications_sent_total{channel=\"webhook\"} 5",
        "askgate_notifications_retried_total{channel=\"webhook\"} 1",
        "askgate_notifications_queued{channel=\"webhook\"} 0",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
    drop(node);
    support::remove_scratch(&dir);
}

#[tokio::test]
async fn a_notification_kept_before_a_sigkill_is_sent_after_the_restart_with_its_id() {
    let dir = support::tempdir("notify-restart");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    // Nothing listens at the webhook's address while the first gateway runs.
    let port = support::free_port();
    let file = write_notify_file(
        &dir,
        &format!("[webhooks.ops]\nurl = \"http://127.0.0.1:{port}/hook\"\nsecret = \"{SECRET}\"\n"),
    );
    let args = notify_args(&file);
    let mut node = start("embedded", Some(&data), &args);
    let mut agent = node.agent().await;
    agent.open("s").await;
    agent.send(&ask("s", "kept", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    node.kill();

    let mut receiver = Receiver::start(&[SECRET], Some(port), 0).await;
    let node = start("embedded", Some(&data), &args);
    let got = receiver.next(RETRY_WITHIN).await;
    assert_eq!(got["status"], 204, "{got}");
    assert_eq!(got["verified"], json!([true]));
    assert_eq!(got["body"]["type"], "request.opened");
    assert_eq!(got["body"]["data"]["id"], "kept");
    // Sent once: taken, it is deleted from the store, and another restart sends nothing.
    // (Killed between the receiver's answer and that deletion, the gateway would send it
    // again after the restart: at least once.)
    assert!(
        node.wrote_line("a notification was sent").await,
        "{:?}",
        node.said()
    );
    drop(node);
    let node = start("embedded", Some(&data), &args);
    let mut agent = node.agent().await;
    agent.open("s").await;
    agent.send(&ask("s", "after", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    let next = receiver.next(RETRY_WITHIN).await;
    assert_eq!(
        next["body"]["data"]["id"], "after",
        "the first notification came again: {next}"
    );
    drop(node);
    support::remove_scratch(&dir);
}

#[test]
fn a_bad_notify_file_or_a_missing_public_url_or_a_private_target_refuses_the_start() {
    let dir = support::tempdir("notify-refused");
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "[webhooks.ops]\nurl = \"https://ops.example/\"\nsecret = \"whsec_%%\"\n",
            &["--public-url", "https://askgate.example"],
            "notify.toml:3: webhooks.ops.secret: does not decode as base64",
        ),
        (
            "[people.\"a@x\"]\nwebhooks = [\"nope\"]\n",
            &["--public-url", "https://askgate.example"],
            "notify.toml:2: people.\"a@x\".webhooks[0]: no webhook \"nope\" is defined",
        ),
        (
            &format!("[webhooks.ops]\nurl = \"https://ops.example/\"\nsecret = \"{SECRET}\"\n"),
            &[],
            "give --public-url",
        ),
        (
            &format!("\n[webhooks.ops]\nurl = \"http://127.0.0.1:9/\"\nsecret = \"{SECRET}\"\n"),
            &["--public-url", "https://askgate.example"],
            "notify.toml:3: webhooks.ops.url: 127.0.0.1 is loopback; such targets are refused unless --notify-allow-private",
        ),
        (
            &format!("[webhooks.ops]\nurl = \"http://localhost:9/\"\nsecret = \"{SECRET}\"\n"),
            &["--public-url", "https://askgate.example"],
            "webhooks.ops.url: localhost resolves to",
        ),
        (
            "\n[slack]\nbot_token = \"xoxb-1\"\nsigning_secret = \"s\"\napi_url = \"http://slack.example/api/\"\n",
            &[
                "--public-url",
                "https://askgate.example",
                "--notify-allow-private",
            ],
            "notify.toml:2: slack.api_url: http://slack.example/api/ must be https:// (plain http only to a loopback stand-in, with --notify-allow-private)",
        ),
        (
            "\n[slack]\nbot_token = \"xoxb-1\"\nsigning_secret = \"s\"\napi_url = \"https://127.0.0.1:9/api/\"\n",
            &["--public-url", "https://askgate.example"],
            "notify.toml:2: slack.api_url: 127.0.0.1 is loopback; such targets are refused unless --notify-allow-private",
        ),
    ];
    for (text, extra, expected) in cases {
        let file = write_notify_file(&dir, text);
        let mut args = vec!["--store", "memory", "--notify", file.as_str()];
        args.extend_from_slice(extra);
        let ran = support::cli::serve_refused(&dir, &args);
        assert!(!ran.ok, "{ran}");
        assert!(
            ran.said.contains(expected),
            "expected {expected:?} in {ran}"
        );
    }
    support::remove_scratch(&dir);
}

/// Three nodes on one Redis: the node that asked cannot reach the webhook and is killed; one
/// of the others claims the notification once it is due and sends it, with its id; an answer
/// on a third node is told as well.
#[tokio::test]
async fn on_redis_another_node_sends_what_a_killed_node_could_not() {
    let dir = support::tempdir("notify-redis");
    let redis = support::redis::RedisServer::start(&[]);
    let port = support::free_port();
    let file = write_notify_file(
        &dir,
        &format!("[webhooks.ops]\nurl = \"http://127.0.0.1:{port}/hook\"\nsecret = \"{SECRET}\"\n"),
    );
    let args = notify_args(&file);
    let mut asking = start(&redis.url(), None, &args);
    let others = [
        start(&redis.url(), None, &args),
        start(&redis.url(), None, &args),
    ];
    let (mut agent, link) = asking.agent_opening("s").await;
    agent.send(&ask("s", "r1", &["Color"], Some(600.0))).await;
    agent.recv_until("accepted").await;
    // Its first try finds nobody listening; it hands the notification back, due within 5 s.
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
    assert_eq!(got["verified"], json!([true]));
    assert_eq!(got["body"]["type"], "request.opened");
    assert_eq!(got["body"]["data"]["id"], "r1");

    // Answered on another node: `request.resolved`, and nothing else before it (r1's opening
    // was sent once).
    let (mut tab, snapshot) = others[1].tab("s", &link).await;
    assert_eq!(snapshot["requests"][0]["id"], "r1", "{snapshot}");
    tab.send(&answer("r1", &["Color"], "Blue")).await;
    tab.recv_about("resolved", "r1").await;
    let resolved = receiver.next(RETRY_WITHIN).await;
    assert_eq!(resolved["body"]["type"], "request.resolved", "{resolved}");
    assert_eq!(resolved["body"]["data"]["outcome"], "answered");
    assert_eq!(resolved["verified"], json!([true]));
    drop(others);
    support::remove_scratch(&dir);
}

/// The webhook's next request's type and request id.
async fn next_event(receiver: &mut Receiver) -> (String, String) {
    let got = receiver.next(RETRY_WITHIN).await;
    assert_eq!(got["status"], 204, "{got}");
    let body = &got["body"];
    (
        body["type"].as_str().unwrap().to_owned(),
        body["data"]["id"].as_str().unwrap().to_owned(),
    )
}

/// The next `count` events' bodies, sorted by type then request id: notifications are not
/// ordered (a reminder and an escalation due close together are made, perhaps by different
/// nodes, and delivered each on its own), so tests compare what came, not in which order.
async fn next_bodies(receiver: &mut Receiver, count: usize) -> Vec<Value> {
    let mut bodies = Vec::with_capacity(count);
    for _ in 0..count {
        let got = receiver.next(RETRY_WITHIN).await;
        assert_eq!(got["status"], 204, "{got}");
        bodies.push(got["body"].clone());
    }
    let key = |body: &Value| {
        (
            body["type"].as_str().unwrap_or("").to_owned(),
            body["data"]["id"].as_str().unwrap_or("").to_owned(),
        )
    };
    bodies.sort_by_key(key);
    bodies
}

/// The flags of a node whose notify file has the group `leads` (carol) and the webhook `ops`
/// to `receiver`, written in `dir`.
fn leads_and_a_webhook(dir: &Path, receiver: &Receiver) -> Vec<String> {
    let file = write_notify_file(
        dir,
        &format!(
            "[groups.leads]\nmembers = [\"carol@example.com\"]\n\n[webhooks.ops]\nurl = \"{}\"\nsecret = \"{SECRET}\"\n",
            receiver.url()
        ),
    );
    notify_args(&file)
}

/// On the embedded store and a short clock: a reminder and an escalation each happen once,
/// told to the webhook; one due while the gateway was down happens once after its restart,
/// and a restart after they happened makes neither again.
#[tokio::test]
async fn reminders_and_escalations_happen_once_also_across_restarts() {
    let dir = support::tempdir("notify-follow-ups");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let mut receiver = Receiver::start(&[SECRET], None, 0).await;
    let args = leads_and_a_webhook(&dir, &receiver);
    let node = start("embedded", Some(&data), &args);
    let (mut agent, link) = node.agent_opening("s").await;
    let (mut tab, _) = node.tab("s", &link).await;
    let mut frame = ask("s", "r", &["Color"], None);
    frame["answerers"] = json!(["alice@example.com"]);
    frame["remind_after_s"] = json!(0.5);
    frame["escalate"] = json!({"after_s": 1, "to": ["group:leads"]});
    agent.send(&frame).await;
    agent.recv_until("accepted").await;
    assert_eq!(
        next_event(&mut receiver).await,
        ("request.opened".into(), "r".into())
    );
    let [escalated, reminded] =
        <[Value; 2]>::try_from(next_bodies(&mut receiver, 2).await).expect("two bodies");
    assert_eq!(reminded["type"], "request.reminded", "{reminded}");
    assert_eq!(reminded["data"]["id"], "r", "{reminded}");
    assert_eq!(escalated["type"], "request.escalated", "{escalated}");
    let data_sent = &escalated["data"];
    assert_eq!(data_sent["to"], json!(["group:leads"]));
    assert_eq!(
        data_sent["answerers"],
        json!(["alice@example.com", "group:leads"])
    );
    let shown = tab.recv_about("escalated", "r").await;
    assert_eq!(shown["to"], json!(["group:leads"]));

    // One due while the gateway is down: made once, after the restart. (Its opening is
    // waited for until deleted as sent, or the restart would send it again: at least once.)
    let mut frame = ask("s", "later", &["Color"], None);
    frame["remind_after_s"] = json!(2);
    agent.send(&frame).await;
    agent.recv_until("accepted").await;
    let opened = receiver.next(RETRY_WITHIN).await;
    assert_eq!(opened["body"]["type"], "request.opened", "{opened}");
    assert_eq!(opened["body"]["data"]["id"], "later", "{opened}");
    wait_deleted_as_sent(&node, &opened).await;
    let mut node = node;
    node.kill();
    let node = start("embedded", Some(&data), &args);
    assert_eq!(
        next_event(&mut receiver).await,
        ("request.reminded".into(), "later".into())
    );
    // Once each: after another restart, what comes next is a new request's, nothing of
    // `r` or `later` again.
    assert!(node.wrote_line("a notification was sent").await);
    drop(node);
    let node = start("embedded", Some(&data), &args);
    let mut agent = node.agent().await;
    agent.open("s").await;
    agent.send(&ask("s", "marker", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    assert_eq!(
        next_event(&mut receiver).await,
        ("request.opened".into(), "marker".into())
    );
    let trail = node.http("GET", "/v1/audit?session=s", None).await.1;
    let events: Vec<String> = trail
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|entry| {
            format!(
                "{} {}",
                entry["id"].as_str().unwrap_or(""),
                entry["event"].as_str().unwrap_or("")
            )
        })
        .collect();
    for (event, times) in [("r reminded", 1), ("r escalated", 1), ("later reminded", 1)] {
        assert_eq!(
            events.iter().filter(|e| *e == event).count(),
            times,
            "{event} in {events:?}"
        );
    }
    drop(node);
    support::remove_scratch(&dir);
}

/// Three nodes on one Redis: the asking node is killed once the request's opening is sent;
/// the others' sweep makes its reminder and its escalation, each once (the store's
/// compare-and-set), told to the webhook, and a tab on another node is told of the
/// escalation.
#[tokio::test]
async fn on_redis_follow_ups_are_made_once_by_another_node() {
    let dir = support::tempdir("notify-redis-follow-ups");
    let redis = support::redis::RedisServer::start(&[]);
    let mut receiver = Receiver::start(&[SECRET], None, 0).await;
    let args = leads_and_a_webhook(&dir, &receiver);
    let mut asking = start(&redis.url(), None, &args);
    let others = [
        start(&redis.url(), None, &args),
        start(&redis.url(), None, &args),
    ];
    let (mut agent, link) = asking.agent_opening("s").await;
    let (mut tab, _) = others[0].tab("s", &link).await;
    let mut frame = ask("s", "r", &["Color"], None);
    frame["answerers"] = json!(["alice@example.com"]);
    frame["remind_after_s"] = json!(2);
    frame["escalate"] = json!({"after_s": 2.5, "to": ["group:leads"]});
    agent.send(&frame).await;
    agent.recv_until("accepted").await;
    let opened = receiver.next(RETRY_WITHIN).await;
    assert_eq!(opened["body"]["type"], "request.opened", "{opened}");
    wait_deleted_as_sent(&asking, &opened).await;
    asking.kill();

    let made: Vec<(Value, Value)> = next_bodies(&mut receiver, 2)
        .await
        .into_iter()
        .map(|body| (body["type"].clone(), body["data"]["id"].clone()))
        .collect();
    assert_eq!(
        made,
        [
            (json!("request.escalated"), json!("r")),
            (json!("request.reminded"), json!("r"))
        ]
    );
    let shown = tab.recv_about("escalated", "r").await;
    assert_eq!(
        shown["answerers"],
        json!(["alice@example.com", "group:leads"])
    );
    // Once each: what comes next is a new request's.
    let (mut agent, _) = others[1].agent_opening("s").await;
    agent.send(&ask("s", "marker", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    assert_eq!(
        next_event(&mut receiver).await,
        ("request.opened".into(), "marker".into())
    );
    drop(others);
    support::remove_scratch(&dir);
}
