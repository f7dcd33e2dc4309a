//! `--user-header` from an address outside `--trusted-proxy`: the tab stays anonymous, and the
//! gateway says so in its log (at most every 10 s).
#![cfg(target_os = "linux")]

mod support;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use support::TIMEOUT;
use support::nodes::Node;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

/// A tab on `session` at `node` whose upgrade carries `X-Forwarded-Email: alice`: its snapshot.
async fn tab_claiming_alice(node: &Node, session: &str, key: &str) -> Value {
    let mut request = node
        .ws(&format!("/v1/sessions/{session}/live"))
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("x-forwarded-email", "alice@example.com".parse().unwrap());
    let (mut socket, _) = tokio::time::timeout(TIMEOUT, tokio_tungstenite::connect_async(request))
        .await
        .expect("connected in time")
        .expect("connected");
    socket
        .send(Message::text(
            json!({"type": "hello", "key": key}).to_string(),
        ))
        .await
        .unwrap();
    loop {
        let message = tokio::time::timeout(TIMEOUT, socket.next())
            .await
            .expect("a frame in time")
            .expect("the socket is open")
            .unwrap();
        if let Message::Text(text) = message {
            let frame: Value = serde_json::from_str(&text).unwrap();
            if frame["type"] == "snapshot" {
                return frame;
            }
        }
    }
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
    let (_, body) = support::peer::http(
        &node,
        "POST",
        "/v1/sessions/s1/links",
        Some(&json!({"user": "bob@example.com"})),
    )
    .await;
    let link: Value = serde_json::from_str(&body).unwrap();
    let url = link["url"].as_str().unwrap();
    // A personal link for bob, opened with a header claiming alice: the header must not count.
    let key = url.split("#k=").nth(1).unwrap();
    let snapshot = tab_claiming_alice(&node, "s1", key).await;
    assert_eq!(snapshot["you"]["user"], "bob@example.com", "{snapshot}");
    assert_eq!(snapshot["you"]["via"], "personal-link");
    let deadline = std::time::Instant::now() + TIMEOUT;
    while !node
        .said()
        .iter()
        .any(|line| line.contains("ignored a user header from an address outside --trusted-proxy"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the ignored header was not logged: {:#?}",
            node.said()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
