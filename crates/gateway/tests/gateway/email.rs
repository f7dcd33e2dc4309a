//! Mail told of requests, against `askgate serve` and an SMTP server of the test's own
//! (aiosmtpd; each message read by Python's `email` package, not askgate's code): one message
//! per person, its agent text inert, its links signed for that person; opening a link answers
//! nothing, its button answers as that person through the tabs' first-wins path, and a link
//! that is forged, expired, cross-site or late says so.
#![cfg(target_os = "linux")]

use std::time::Duration;

use askgate_testkit::frames::ask;
use askgate_testkit::http::http_url;
use askgate_testkit::smtp::{SmtpSink, hrefs, part};
use askgate_testkit::ws::WsClient;
use serde_json::{Value, json};

use crate::support;
use support::nodes::Node;

const ALICE: &str = "alice@example.com";
/// The first retry comes within 5 s of a failure; this leaves room for a busy machine.
const RETRY_WITHIN: Duration = Duration::from_secs(20);
/// A title no mail may render as markup, with a right-to-left override in it.
const HOSTILE_TITLE: &str = "<img src=x onerror=alert(1)> \u{202E}gnp.exe";

/// A node on the memory store, listening where its public URL says, mailing alice through
/// `sink`: the node and its public URL.
pub(crate) fn start_node(dir: &std::path::Path, sink: &SmtpSink) -> (Node, String) {
    let file = dir.join("notify.toml");
    std::fs::write(
        &file,
        format!(
            r#"
[people."{ALICE}"]
email = "{ALICE}"

[email]
smtp_url = "{}"
from = "askgate <askgate@example.com>"
"#,
            sink.url()
        ),
    )
    .expect("the notify file is written");
    let listen = format!("127.0.0.1:{}", support::free_port());
    let public = format!("http://{listen}");
    let file = file.display().to_string();
    let node = Node::start(
        "memory",
        &[
            "--listen",
            &listen,
            "--notify",
            &file,
            "--notify-allow-private",
            "--public-url",
            &public,
        ],
    );
    assert_eq!(node.addr.to_string(), listen);
    (node, public)
}

/// An ask of `id` (the Color question: Red, Blue, Green) for alice alone.
fn ask_alice(session: &str, id: &str, title: &str, timeout_s: f64) -> Value {
    let mut frame = ask(session, id, &["Color"], Some(timeout_s));
    frame["title"] = json!(title);
    frame["answerers"] = json!([ALICE]);
    frame
}

/// The request `id` is still open: a request asked after it is accepted before any outcome
/// of it reaches the agent (frames to one agent keep their order).
async fn still_open(agent: &mut WsClient, session: &str, id: &str, probe: &str) {
    agent.send(&ask(session, probe, &["Probe"], None)).await;
    let next = agent.recv().await;
    assert_eq!(
        (next["type"].as_str(), next["id"].as_str()),
        (Some("accepted"), Some(probe)),
        "{id} is still open, so the probe's acceptance comes first: {next}"
    );
}

/// `url` with one character of its key's signature changed.
fn forged(url: &str) -> String {
    let mut bytes = url.as_bytes().to_vec();
    let at = bytes.len() - 3;
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    String::from_utf8(bytes).expect("ASCII")
}

#[tokio::test]
async fn a_mail_link_answers_as_its_person_only_when_its_button_is_pressed() {
    let dir = support::tempdir("email");
    // The server defers the first message: the queue tries it again.
    let mut sink = SmtpSink::start(1).await;
    let (node, public) = start_node(&dir, &sink);
    let (mut agent, viewer) = node.agent_opening("mail-1").await;
    let (mut tab, _) = node.tab("mail-1", &viewer).await;
    agent
        .send(&ask_alice("mail-1", "r1", HOSTILE_TITLE, 600.0))
        .await;
    let accepted = agent.recv_until("accepted").await;
    assert_eq!(sink.next(RETRY_WITHIN).await, json!({"refused": 1}));
    let mail = sink.next_message(RETRY_WITHIN).await;

    // One message to alice, from the configured sender, its id the notification's.
    assert_eq!(mail["to"], json!([ALICE]), "{mail}");
    assert_eq!(mail["from"], "askgate@example.com");
    let parsed = &mail["parsed"];
    assert_eq!(parsed["to_header"], ALICE);
    assert_eq!(parsed["from_header"], "askgate <askgate@example.com>");
    assert!(
        parsed["message_id"].as_str().unwrap().starts_with("<msg_"),
        "{parsed}"
    );
    assert_eq!(parsed["content_type"], "multipart/alternative");
    assert_eq!(
        parsed["subject"],
        "[askgate] <img src=x onerror=alert(1)> [RLO]gnp.exe"
    );
    let text = part(&mail, "text/plain");
    let html = part(&mail, "text/html");
    assert!(mail["data"].as_str().unwrap().contains("text/html"));
    for shown in [text, html, mail["data"].as_str().unwrap()] {
        assert!(
            !shown.contains('\u{202E}'),
            "the override is shown, never sent"
        );
    }
    assert!(!html.contains("<img"), "{html}");
    assert!(
        html.contains("&lt;img src=x onerror=alert(1)&gt; <span class=\"bidi-mark\""),
        "{html}"
    );
    assert!(html.contains(">RLO</span>gnp.exe"), "{html}");
    assert!(
        text.contains("<img src=x onerror=alert(1)> [RLO]gnp.exe"),
        "{text}"
    );
    assert!(text.contains("Which Color?"), "{text}");

    // A link per option, then the page as alice; every one in both parts.
    let links = hrefs(html);
    assert_eq!(links.len(), 4, "{links:?}");
    for link in &links {
        assert!(text.contains(link.as_str()), "{link} is in the text part");
    }
    let [red, blue, green, page] = [&links[0], &links[1], &links[2], &links[3]];
    for link in [red, blue, green] {
        assert!(link.starts_with(&format!("{public}/a/m1.")), "{link}");
    }
    assert!(
        page.starts_with(&format!("{public}/s/mail-1#k=p1.")),
        "{page}"
    );
    assert!(
        !accepted["deadline_ms"].is_null(),
        "the links expire with it"
    );

    // Opening a link shows the question and a button, and answers nothing.
    let (status, shown) = http_url("GET", blue, &[]).await;
    assert_eq!(status, 200, "{shown}");
    assert!(shown.contains("<form method=\"post\">"), "{shown}");
    assert!(shown.contains("Answer “Blue”"), "{shown}");
    assert!(
        shown.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{shown}"
    );
    assert!(
        !shown.contains("<img") && !shown.contains('\u{202E}'),
        "{shown}"
    );
    assert!(!shown.contains("<script"), "{shown}");
    still_open(&mut agent, "mail-1", "r1", "probe-1").await;

    // A POST from another site's page is refused, and answers nothing.
    let (status, shown) = http_url("POST", red, &[("origin", "https://evil.example")]).await;
    assert_eq!(status, 403, "{shown}");
    assert!(!shown.contains("<form"), "{shown}");
    still_open(&mut agent, "mail-1", "r1", "probe-2").await;

    // The button: alice's answer, as any answer reaches the agent.
    let (status, shown) = http_url("POST", blue, &[("origin", &public)]).await;
    assert_eq!(status, 200, "{shown}");
    assert!(shown.contains("Your answer was recorded"), "{shown}");
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["id"], "r1");
    assert_eq!(outcome["outcome"], "answered");
    assert_eq!(outcome["user"], ALICE);
    assert_eq!(outcome["by"], Value::Null, "no tab answered");
    assert_eq!(
        outcome["response"]["answers"],
        json!([{"header": "Color", "selected": ["Blue"]}])
    );

    // Tabs are told as of any answer: alice's, from a mail, by no tab.
    let resolved = tab.recv_about("resolved", "r1").await;
    assert_eq!(
        (&resolved["user"], &resolved["via"], &resolved["by"]),
        (&json!(ALICE), &json!("email"), &Value::Null),
        "{resolved}"
    );

    // The trail records it as alice's, by mail.
    let (status, trail) = node.http("GET", "/v1/audit?session=mail-1", None).await;
    assert_eq!(status, 200, "{trail}");
    let answered: Vec<Value> = trail
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("an entry"))
        .filter(|entry| entry["event"] == "answered")
        .collect();
    assert_eq!(answered.len(), 1, "{trail}");
    assert_eq!(answered[0]["id"], "r1");
    assert_eq!(answered[0]["via"], "email");
    assert_eq!(answered[0]["user"], ALICE);
    assert_eq!(answered[0]["tab"], Value::Null);

    // Late: another link's button, and the same link opened again, say who answered.
    let (status, shown) = http_url("POST", green, &[]).await;
    assert_eq!(status, 409, "{shown}");
    assert!(
        shown.contains("Already answered by <bdi>alice@example.com</bdi>"),
        "{shown}"
    );
    let (status, shown) = http_url("GET", blue, &[]).await;
    assert_eq!(status, 200, "{shown}");
    assert!(
        shown.contains("Already answered by <bdi>alice@example.com</bdi>"),
        "{shown}"
    );
    assert!(!shown.contains("<form"), "{shown}");

    // A key changed by one character works for nothing.
    for method in ["GET", "POST"] {
        let (status, shown) = http_url(method, &forged(red), &[]).await;
        assert_eq!(status, 403, "{method}: {shown}");
        assert!(shown.contains("not one this gateway made"), "{shown}");
        assert!(!shown.contains("<form"), "{shown}");
    }

    // Acknowledged and asked again under the same id with other questions: the old mail's
    // links do not reach the new request.
    agent
        .send(&json!({"type": "ack", "session": "mail-1", "id": "r1"}))
        .await;
    let mut again = ask("mail-1", "r1", &["Size"], Some(600.0));
    again["answerers"] = json!([ALICE]);
    agent.send(&again).await;
    agent.recv_until("accepted").await;
    let _ = sink.next_message(RETRY_WITHIN).await;
    let (status, shown) = http_url("POST", blue, &[]).await;
    assert_eq!(status, 410, "{shown}");
    assert!(
        shown.contains("asked again with other questions"),
        "{shown}"
    );
    still_open(&mut agent, "mail-1", "r1", "probe-3").await;

    support::remove_scratch(&dir);
}

#[tokio::test]
async fn a_link_expires_with_its_request() {
    let dir = support::tempdir("email-expiry");
    let mut sink = SmtpSink::start(0).await;
    let (node, _) = start_node(&dir, &sink);
    let (mut agent, _) = node.agent_opening("mail-2").await;
    agent.send(&ask_alice("mail-2", "r1", "Soon", 2.0)).await;
    let accepted = agent.recv_until("accepted").await;
    let mail = sink.next_message(RETRY_WITHIN).await;
    let link = hrefs(part(&mail, "text/html"))[0].clone();
    let (status, shown) = http_url("GET", &link, &[]).await;
    assert_eq!(status, 200, "open until its deadline: {shown}");

    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["outcome"], "timed_out");
    for method in ["GET", "POST"] {
        let (status, shown) = http_url(method, &link, &[]).await;
        assert_eq!(status, 410, "{method}: {shown}");
        assert!(shown.contains("This link expired at"), "{shown}");
        assert!(!shown.contains("<form"), "{shown}");
    }
    assert!(accepted["deadline_ms"].as_u64().is_some());
    support::remove_scratch(&dir);
}

/// A server that offers STARTTLS is spoken to over TLS, its certificate checked against the
/// system's roots: one signed by nobody they know fails the try (and is tried again), and no
/// mail goes out in the clear.
#[tokio::test]
async fn starttls_is_used_when_offered_and_its_certificate_checked() {
    let dir = support::tempdir("email-starttls");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs (Debian's openssl package)");
    assert!(made.status.success(), "{made:?}");
    let sink = SmtpSink::start_tls(&cert, &key).await;
    let (node, _) = start_node(&dir, &sink);
    let (mut agent, _) = node.agent_opening("mail-3").await;
    agent
        .send(&ask_alice("mail-3", "r1", "Secret", 600.0))
        .await;
    agent.recv_until("accepted").await;
    assert!(
        node.wrote_line("a notification failed").await,
        "{:#?}",
        node.said()
    );
    let failed = node
        .said()
        .into_iter()
        .find(|line| line.contains("a notification failed"))
        .expect("the line waited for");
    assert!(failed.contains("certificate"), "{failed}");
    assert!(failed.contains("mail to alice@example.com"), "{failed}");
    support::remove_scratch(&dir);
}
