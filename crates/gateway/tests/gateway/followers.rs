//! Followers and the inbox against `askgate serve`: the followers endpoints and inbox links
//! with their errors at their paths and their scope refusals, the trail's entries, a
//! follower's mail of a request naming no one (through an SMTP server of the test's own),
//! followers kept across a restart of the embedded store and shared by two nodes on one
//! Redis, and the inbox socket's refusals and bounds.
#![cfg(target_os = "linux")]

use std::time::Duration;

use askgate_testkit::frames::ask;
use askgate_testkit::http::{http, http_text};
use askgate_testkit::smtp::SmtpSink;
use askgate_testkit::ws::WsClient;
use serde_json::{Value, json};

use crate::support;
use support::nodes::Node;
use support::redis::RedisServer;

const ALICE: &str = "alice@example.com";
const BOB: &str = "bob@example.com";
/// An agent key for every session, and one for the sessions under `team`.
const EVERYWHERE: &str = "key-for-everything";
const TEAM: &str = "key-for-the-team";

fn keyed_node(store: &str) -> Node {
    Node::start(
        store,
        &[
            "--agent-key",
            EVERYWHERE,
            "--agent-key",
            &format!("{TEAM}:team"),
        ],
    )
}

/// `(status, body)` of a call with `key`.
async fn call(node: &Node, method: &str, path: &str, body: Value, key: &str) -> (u16, Value) {
    http(node.addr, method, path, Some(&body), Some(key)).await
}

/// The paths of an error body's errors.
fn paths(body: &Value) -> Vec<String> {
    body["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("errors: {body}"))
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_owned())
        .collect()
}

/// `(event, user)` of each entry of `session`'s trail as `GET /v1/audit` gives it.
async fn trail(node: &Node, session: &str, key: Option<&str>) -> Vec<(String, String)> {
    let (status, text) = http_text(
        node.addr,
        "GET",
        &format!("/v1/audit?session={session}"),
        None,
        key,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_owned(),
                e["user"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// A tab of `user` on `session` through a personal link: the tab and its snapshot.
async fn personal_tab(
    node: &Node,
    session: &str,
    user: &str,
    key: Option<&str>,
) -> (WsClient, Value) {
    let (status, body) = http(
        node.addr,
        "POST",
        &format!("/v1/sessions/{session}/links"),
        Some(&json!({"user": user})),
        key,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let url = body["url"].as_str().unwrap();
    let personal = url.split_once("#k=").unwrap().1;
    WsClient::tab(
        &node.ws(&format!("/v1/sessions/{session}/live")),
        personal,
        None,
    )
    .await
}

#[tokio::test]
async fn followers_are_added_and_removed_over_http_within_the_keys_scope() {
    let node = keyed_node("memory");
    let path = "/v1/sessions/team-1/followers";
    let (status, body) = call(&node, "POST", path, json!({"user": ALICE}), TEAM).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body,
        json!({"session": "team-1", "user": ALICE, "following": true})
    );
    let (status, _) = call(&node, "POST", path, json!({"user": ALICE}), TEAM).await;
    assert_eq!(status, 200, "already following");
    let (status, body) = call(&node, "POST", path, json!({"user": BOB}), EVERYWHERE).await;
    assert_eq!(status, 201, "{body}");

    // Errors at their paths.
    for (body, code) in [
        (json!({}), "missing_field"),
        (json!({"user": 7}), "wrong_type"),
        (json!({"user": " alice"}), "invalid_value"),
        (json!({"user": ""}), "invalid_value"),
    ] {
        let (status, refused) = call(&node, "POST", path, body.clone(), TEAM).await;
        assert_eq!(status, 422, "{body}: {refused}");
        assert_eq!(paths(&refused), ["user"], "{refused}");
        assert_eq!(refused["errors"][0]["code"], code, "{refused}");
    }
    // Outside the key's scope: refused before the body is looked at.
    let (status, refused) = call(
        &node,
        "POST",
        "/v1/sessions/other-1/followers",
        json!({"user": ALICE}),
        TEAM,
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(paths(&refused), ["session"]);
    let (status, _) = call(
        &node,
        "DELETE",
        "/v1/sessions/other-1/followers",
        json!({"user": ALICE}),
        TEAM,
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = call(&node, "POST", path, json!({"user": ALICE}), "wrong").await;
    assert_eq!(status, 401);

    // The snapshot of alice's tab says she follows; removing her tells it.
    let (mut tab, snapshot) = personal_tab(&node, "team-1", ALICE, Some(TEAM)).await;
    assert_eq!(snapshot["you"]["following"], true, "{snapshot}");
    let (status, _) = call(&node, "DELETE", path, json!({"user": ALICE}), TEAM).await;
    assert_eq!(status, 204);
    assert_eq!(tab.recv_type("following").await["on"], false);
    let (status, _) = call(&node, "DELETE", path, json!({"user": ALICE}), TEAM).await;
    assert_eq!(status, 204, "not following is not an error");

    // The tab follows again itself.
    tab.send(&json!({"type": "follow", "on": true})).await;
    assert_eq!(tab.recv_type("following").await["on"], true);

    assert_eq!(
        trail(&node, "team-1", Some(TEAM)).await,
        [
            ("followed".to_owned(), ALICE.to_owned()),
            ("followed".to_owned(), BOB.to_owned()),
            ("link_issued".to_owned(), ALICE.to_owned()),
            ("unfollowed".to_owned(), ALICE.to_owned()),
            ("followed".to_owned(), ALICE.to_owned()),
        ]
    );
}

#[tokio::test]
async fn an_inbox_link_is_for_a_key_of_every_session_and_checked_at_its_paths() {
    let node = keyed_node("memory");
    let (status, body) = call(
        &node,
        "POST",
        "/v1/inbox/links",
        json!({"user": ALICE, "ttl_s": 600}),
        EVERYWHERE,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["user"], ALICE);
    let url = body["url"].as_str().unwrap();
    assert!(url.contains("/inbox#k=i1."), "{url}");
    let expires = body["expires_ms"].as_u64().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(
        (now + 590_000..=now + 610_000).contains(&expires),
        "{expires}"
    );

    let (status, refused) = call(
        &node,
        "POST",
        "/v1/inbox/links",
        json!({"user": ALICE}),
        TEAM,
    )
    .await;
    assert_eq!(status, 403, "a scoped key: {refused}");
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("every session"),
        "{refused}"
    );
    let (status, refused) = call(
        &node,
        "POST",
        "/v1/inbox/links",
        json!({"user": "", "ttl_s": "soon"}),
        EVERYWHERE,
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(paths(&refused), ["user", "ttl_s"]);
    let (status, refused) = call(&node, "POST", "/v1/inbox/links", json!({}), EVERYWHERE).await;
    assert_eq!(status, 422);
    assert_eq!(paths(&refused), ["user"]);

    // The link opens alice's inbox; a personal key of a session does not, nor no key.
    let key = url.split_once("#k=").unwrap().1;
    let mut inbox = WsClient::connect(&node.ws("/v1/inbox/live"), None).await;
    inbox.send(&json!({"type": "hello", "key": key})).await;
    let snapshot = inbox.recv_type("snapshot").await;
    assert_eq!(snapshot["you"]["user"], ALICE);
    let mut stranger = WsClient::connect(&node.ws("/v1/inbox/live"), None).await;
    stranger.send(&json!({"type": "hello"})).await;
    let (code, reason) = stranger.closed_with_reason().await;
    assert_eq!(code, 4401);
    assert!(reason.contains("inbox link"), "{reason}");
    let last = if key.ends_with('A') { "B" } else { "A" };
    let forged = format!("{}{last}", &key[..key.len() - 1]);
    let mut forger = WsClient::connect(&node.ws("/v1/inbox/live"), None).await;
    forger.send(&json!({"type": "hello", "key": forged})).await;
    assert_eq!(forger.closed_with_reason().await.0, 4401);
}

/// `user`'s inbox socket on `node`, its hello sent.
async fn open_inbox(node: &Node, user: &str) -> WsClient {
    let key = node.link_key("/v1/inbox/links", user).await;
    let mut inbox = WsClient::connect(&node.ws("/v1/inbox/live"), None).await;
    inbox.send(&json!({"type": "hello", "key": key})).await;
    inbox
}

#[tokio::test]
async fn an_inbox_answers_across_sessions_and_a_person_has_a_bound_on_inboxes() {
    let node = Node::start("memory", &[]);
    let key = node.link_key("/v1/inbox/links", ALICE).await;
    let open = || async {
        let mut inbox = WsClient::connect(&node.ws("/v1/inbox/live"), None).await;
        inbox.send(&json!({"type": "hello", "key": key})).await;
        inbox
    };
    let (mut agent, viewer) = node.agent_opening("inbox-1").await;
    let (mut tab, _) = node.tab("inbox-1", &viewer).await;
    let mut question = ask("inbox-1", "r1", &["Color"], Some(600.0));
    question["answerers"] = json!([ALICE]);
    agent.send(&question).await;
    agent.recv_until("accepted").await;

    let mut inbox = open().await;
    let snapshot = inbox.recv_type("snapshot").await;
    assert_eq!(snapshot["requests"][0]["session"], "inbox-1", "{snapshot}");
    assert_eq!(snapshot["requests"][0]["id"], "r1");
    inbox
        .send(&json!({"type": "answer", "session": "inbox-1", "id": "r1",
            "response": {"answers": [{"header": "Color", "selected": ["Red"]}]}}))
        .await;
    let resolved = inbox.recv_type("resolved").await;
    assert_eq!(
        (resolved["session"].as_str(), resolved["user"].as_str()),
        (Some("inbox-1"), Some(ALICE))
    );
    assert_eq!(tab.recv_until("resolved").await["user"], ALICE);
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["outcome"], "answered", "{outcome}");

    // An answer naming no session is not an inbox frame.
    inbox
        .send_unchecked(&json!({"type": "answer", "id": "r1", "response": {}}))
        .await;
    assert_eq!(inbox.recv_type("error").await["code"], "bad_frame");

    // Eight inboxes of hers at once, and not a ninth.
    let mut more = Vec::new();
    for _ in 1..8 {
        let mut another = open().await;
        another.recv_type("snapshot").await;
        more.push(another);
    }
    let mut ninth = open().await;
    let (code, reason) = ninth.closed_with_reason().await;
    assert_eq!(code, 1013, "{reason}");
    assert!(reason.contains("most inboxes"), "{reason}");
    drop(more);
}

/// A node on the memory store mailing alice through `sink` (as the mail tests start one).
fn mailing_node(sink: &SmtpSink) -> Node {
    let dir = support::tempdir("followers-mail");
    crate::email::start_node(&dir, sink).0
}

#[tokio::test]
async fn a_follower_with_an_address_gets_the_mail_of_a_request_naming_no_one() {
    let mut sink = SmtpSink::start(0).await;
    let node = mailing_node(&sink);
    let (status, body) = node
        .http(
            "POST",
            "/v1/sessions/mail-f/followers",
            Some(&json!({"user": ALICE})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (mut agent, _) = node.agent_opening("mail-f").await;
    let mut question = ask("mail-f", "r1", &["Color"], Some(600.0));
    question["title"] = json!("Which colour for the follower?");
    agent.send(&question).await;
    agent.recv_until("accepted").await;
    let mail = sink.next_message(Duration::from_secs(20)).await;
    assert_eq!(mail["to"], json!([ALICE]), "{mail}");
    assert_eq!(
        mail["parsed"]["subject"],
        "[askgate] Which colour for the follower?"
    );
    // A request for bob alone is not hers, follower or not: no second mail comes for it.
    let mut for_bob = ask("mail-f", "r2", &["Color"], Some(600.0));
    for_bob["answerers"] = json!([BOB]);
    agent.send(&for_bob).await;
    agent.recv_until("accepted").await;
    // Unfollowed, she is not told of the next request naming no one either; a request for her
    // by name after it is, so the one message that comes is that one.
    let (status, _) = node
        .http(
            "DELETE",
            "/v1/sessions/mail-f/followers",
            Some(&json!({"user": ALICE})),
        )
        .await;
    assert_eq!(status, 204);
    agent
        .send(&ask("mail-f", "r3", &["Color"], Some(600.0)))
        .await;
    agent.recv_until("accepted").await;
    let mut for_alice = ask("mail-f", "r4", &["Color"], Some(600.0));
    for_alice["title"] = json!("Addressed to alice");
    for_alice["answerers"] = json!([ALICE]);
    agent.send(&for_alice).await;
    agent.recv_until("accepted").await;
    let next = sink.next_message(Duration::from_secs(20)).await;
    assert_eq!(
        next["parsed"]["subject"], "[askgate] Addressed to alice",
        "{next}"
    );
}

#[tokio::test]
async fn followers_survive_a_restart_of_the_embedded_store() {
    let dir = support::tempdir("followers-restart");
    let node = Node::start_in(dir.clone(), "embedded", &[]);
    for user in [ALICE, BOB] {
        let (status, body) = node
            .http(
                "POST",
                "/v1/sessions/kept/followers",
                Some(&json!({"user": user})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, _) = node
        .http(
            "DELETE",
            "/v1/sessions/kept/followers",
            Some(&json!({"user": BOB})),
        )
        .await;
    assert_eq!(status, 204);
    drop(node);
    let node = Node::start_in(dir.clone(), "embedded", &[]);
    let (_, snapshot) = personal_tab(&node, "kept", ALICE, None).await;
    assert_eq!(snapshot["you"]["following"], true, "{snapshot}");
    let (_, snapshot) = personal_tab(&node, "kept", BOB, None).await;
    assert_eq!(snapshot["you"].get("following"), None, "{snapshot}");
    let (status, _) = node
        .http(
            "POST",
            "/v1/sessions/kept/followers",
            Some(&json!({"user": ALICE})),
        )
        .await;
    assert_eq!(status, 200, "still following after the restart");
    drop(node);
    support::remove_scratch(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_follow_on_one_node_is_seen_by_another_and_kept() {
    let redis = RedisServer::start(&[]);
    let url = redis.url();
    let first = Node::start(&url, &[]);
    let second = Node::start(&url, &[]);
    // Alice watches the session on the second node before anything happens to it.
    let (mut tab, snapshot) = personal_tab(&second, "shared-f", ALICE, None).await;
    assert_eq!(snapshot["you"].get("following"), None);
    let (status, body) = first
        .http(
            "POST",
            "/v1/sessions/shared-f/followers",
            Some(&json!({"user": ALICE})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(tab.recv_type("following").await["on"], true);
    // The same follow on the other node is already so: not recorded twice.
    let (status, _) = second
        .http(
            "POST",
            "/v1/sessions/shared-f/followers",
            Some(&json!({"user": ALICE})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        redis
            .cli(&["SMEMBERS", "askgate:{shared-f}:followers"])
            .trim(),
        ALICE
    );
    // A node started later loads them with the session.
    let third = Node::start(&url, &[]);
    let (_, snapshot) = personal_tab(&third, "shared-f", ALICE, None).await;
    assert_eq!(snapshot["you"]["following"], true, "{snapshot}");
    let followed: Vec<(String, String)> = trail(&third, "shared-f", None)
        .await
        .into_iter()
        .filter(|(event, _)| event.contains("followed"))
        .collect();
    assert_eq!(followed, [("followed".to_owned(), ALICE.to_owned())]);
    // Unfollowed on the third: the second's tab hears of it.
    let (status, _) = third
        .http(
            "DELETE",
            "/v1/sessions/shared-f/followers",
            Some(&json!({"user": ALICE})),
        )
        .await;
    assert_eq!(status, 204);
    assert_eq!(tab.recv_type("following").await["on"], false);
}

/// Whether inbox frame `frame` shows request `id` of `session`: in its snapshot, or as a
/// `request`.
fn shows(frame: &Value, session: &str, id: &str) -> bool {
    let is = |view: &Value, in_session: &Value| view["id"] == id && in_session == session;
    match frame["type"].as_str() {
        Some("snapshot") => frame["requests"]
            .as_array()
            .is_some_and(|views| views.iter().any(|v| is(v, &v["session"]))),
        Some("request") => is(&frame["request"], &frame["session"]),
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_an_inbox_shows_requests_of_sessions_only_another_node_holds() {
    let redis = RedisServer::start(&[]);
    let url = redis.url();
    let asking = Node::start(&url, &[]);
    let inboxing = Node::start(&url, &[]);
    let (mut agent, _) = asking.agent_opening("far-1").await;
    let mut first = ask("far-1", "r1", &["Color"], Some(600.0));
    first["answerers"] = json!([ALICE]);
    agent.send(&first).await;
    agent.recv_until("accepted").await;

    // Opened on a node that holds nothing of far-1: the index brings it.
    let mut inbox = open_inbox(&inboxing, ALICE).await;
    inbox.recv_matching(|f| shows(f, "far-1", "r1")).await;

    // Asked on the other node while the inbox is open, in a session new to both.
    agent.open("far-2").await;
    let mut second = ask("far-2", "r2", &["Color"], Some(600.0));
    second["answerers"] = json!([ALICE]);
    agent.send(&second).await;
    agent.recv_until("accepted").await;
    inbox.recv_matching(|f| shows(f, "far-2", "r2")).await;

    // Followed on the other node: its next request naming no one reaches her too.
    let (status, _) = asking
        .http(
            "POST",
            "/v1/sessions/far-3/followers",
            Some(&json!({"user": ALICE})),
        )
        .await;
    assert_eq!(status, 201);
    agent.open("far-3").await;
    agent
        .send(&ask("far-3", "r3", &["Color"], Some(600.0)))
        .await;
    agent.recv_until("accepted").await;
    inbox.recv_matching(|f| shows(f, "far-3", "r3")).await;

    // Answered from the inbox on its node: the asking node's agent hears it was alice.
    inbox
        .send(&json!({"type": "answer", "session": "far-2", "id": "r2",
            "response": {"answers": [{"header": "Color", "selected": ["Blue"]}]}}))
        .await;
    let resolved = inbox
        .recv_matching(|f| f["type"] == "resolved" && f["id"] == "r2")
        .await;
    assert_eq!(resolved["session"], "far-2");
    let outcome = agent
        .recv_matching(|f| f["type"] == "outcome" && f["id"] == "r2")
        .await;
    assert_eq!(outcome["user"], ALICE, "{outcome}");
    // Bob's inbox on the same node shows none of it.
    let mut bob = open_inbox(&inboxing, BOB).await;
    let snapshot = bob.recv_type("snapshot").await;
    assert_eq!(snapshot["requests"], json!([]), "{snapshot}");
}
