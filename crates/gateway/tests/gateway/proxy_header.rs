//! `--user-header` from an address outside `--trusted-proxy`: the tab stays anonymous, and the
//! gateway says so in its log (at most every 10 s). The header more than once on a request
//! (or as a comma-joined list): the request is refused with 400, a socket is not upgraded, and
//! the gateway logs it.
#![cfg(target_os = "linux")]

use crate::support;

use askgate_testkit::ws::WsClient;
use serde_json::{Value, json};
use support::TIMEOUT;
use support::nodes::Node;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Waits until `node` has logged a line holding `text`.
async fn logged(node: &Node, text: &str) {
    assert!(
        node.wrote_line(text).await,
        "{text:?} was not logged: {:#?}",
        node.said()
    );
}

/// A request written out by hand, so that a header can come twice: its head (status line and
/// headers) and body, read up to the body's `Content-Length`.
async fn exchange(node: &Node, request: &str) -> (String, String) {
    let talk = async {
        let mut stream = TcpStream::connect(node.addr).await.expect("connect");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut read = Vec::new();
        let mut chunk = [0_u8; 4096];
        loop {
            let text = String::from_utf8_lossy(&read).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|line| {
                        let (name, value) = line.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if body.len() >= length {
                    return (head.to_owned(), body.to_owned());
                }
            }
            let n = stream.read(&mut chunk).await.expect("read");
            if n == 0 {
                let text = String::from_utf8_lossy(&read).into_owned();
                let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
                return (head.to_owned(), body.to_owned());
            }
            read.extend_from_slice(&chunk[..n]);
        }
    };
    tokio::time::timeout(TIMEOUT, talk)
        .await
        .expect("an answer in time")
}

/// `request` (a request line) with `emails`, one `X-Forwarded-Email` line each, and `extra`
/// headers.
fn with_emails(node: &Node, request: &str, emails: &[&str], extra: &str) -> String {
    let lines: String = emails
        .iter()
        .map(|email| format!("X-Forwarded-Email: {email}\r\n"))
        .collect();
    format!("{request}\r\nHost: {}\r\n{lines}{extra}\r\n", node.addr)
}

/// Asserts a refusal of the identity header given `how` (e.g. "2 times"): 400 and a JSON error
/// that names the header.
fn assert_refused((head, body): &(String, String), how: &str) {
    assert!(head.starts_with("HTTP/1.1 400"), "{head}\n\n{body}");
    let error: Value = serde_json::from_str(body).expect("a JSON body");
    let message = error["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("x-forwarded-email was sent") && message.contains(how),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_header_twice_is_refused_and_once_still_works() {
    // The test connects from 127.0.0.1, a trusted address here.
    let node = Node::start(
        "memory",
        &[
            "--user-header",
            "X-Forwarded-Email",
            "--trusted-proxy",
            "127.0.0.1/32",
        ],
    );
    let upgrade = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
                   Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
    let live = "GET /v1/sessions/s1/live HTTP/1.1";
    let twice = ["mallory@example.com", "alice@example.com"];
    // The tab's socket: refused, not upgraded.
    let refused = exchange(&node, &with_emails(&node, live, &twice, upgrade)).await;
    assert_refused(&refused, "2 times");
    assert!(!refused.0.contains("101"), "{}", refused.0);
    let listed = exchange(
        &node,
        &with_emails(
            &node,
            live,
            &["mallory@example.com, alice@example.com"],
            upgrade,
        ),
    )
    .await;
    assert_refused(&listed, "as a comma-separated list");
    // An HTTP call and the page: refused the same way.
    let body = json!({"user": "bob@example.com"}).to_string();
    let post = format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let request = with_emails(&node, "POST /v1/sessions/s1/links HTTP/1.1", &twice, &post);
    // The body follows the blank line `with_emails` ends the head with.
    let request = request.trim_end_matches("\r\n").to_owned();
    assert_refused(&exchange(&node, &request).await, "2 times");
    let page = with_emails(&node, "GET /s/s1 HTTP/1.1", &twice, "Connection: close\r\n");
    assert_refused(&exchange(&node, &page).await, "2 times");
    logged(
        &node,
        "refused a request with the user header more than once",
    )
    .await;

    // Once, as before: the upgrade goes through and the proxy's name is the tab's person.
    let key = bobs_key(&node, "s1").await;
    let snapshot = tab_claiming_alice(&node, "s1", &key).await;
    assert_eq!(snapshot["you"]["user"], "alice@example.com", "{snapshot}");
    assert_eq!(snapshot["you"]["via"], "proxy", "{snapshot}");
}

/// The key of a personal link for bob on `session`.
async fn bobs_key(node: &Node, session: &str) -> String {
    let (_, body) = node
        .http(
            "POST",
            &format!("/v1/sessions/{session}/links"),
            Some(&json!({"user": "bob@example.com"})),
        )
        .await;
    let link: Value = serde_json::from_str(&body).unwrap();
    let url = link["url"].as_str().expect("a link");
    url.split("#k=").nth(1).expect("a key").to_owned()
}

/// A tab on `session` at `node` whose upgrade carries `X-Forwarded-Email: alice`: its snapshot.
async fn tab_claiming_alice(node: &Node, session: &str, key: &str) -> Value {
    let live = node.ws(&format!("/v1/sessions/{session}/live"));
    let mut tab =
        WsClient::connect_with_headers(&live, &[("x-forwarded-email", "alice@example.com")]).await;
    tab.send(&json!({"type": "hello", "key": key})).await;
    tab.recv_until("snapshot").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_header_from_an_untrusted_address_is_ignored_and_logged() {
    // The test connects from 127.0.0.1; only 127.0.0.2 is trusted.
    let node = Node::start(
        "memory",
        &[
            "--user-header",
            "X-Forwarded-Email",
            "--trusted-proxy",
            "127.0.0.2/32",
        ],
    );
    // A personal link for bob, opened with a header claiming alice: the header must not count.
    let key = bobs_key(&node, "s1").await;
    let snapshot = tab_claiming_alice(&node, "s1", &key).await;
    assert_eq!(snapshot["you"]["user"], "bob@example.com", "{snapshot}");
    assert_eq!(snapshot["you"]["via"], "personal-link");
    logged(
        &node,
        "ignored a user header from an address outside --trusted-proxy",
    )
    .await;
}
