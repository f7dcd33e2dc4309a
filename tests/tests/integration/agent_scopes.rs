//! Agent keys on a real gateway: how a key is presented, and which sessions it may act on.
//!
//! Key `ka` is bound to sessions starting `team-a-`, `kb` to `team-b-`; `kall` has no prefix.
//! Without scopes, `kb` could open `ka`'s session, read its viewer link, re-ask its ids to
//! take its outcomes, withdraw its requests and ack its outcomes away.

use std::time::Duration;

use askgate::keys::AgentKey;
use askgate::scope::SessionScope;
use askgate_testkit::TIMEOUT;
use askgate_testkit::frames::{answer, ask, questions};
use askgate_testkit::http::{http, http_with_headers};
use askgate_testkit::ws::WsClient;
use askgate_tests::server::{TestServer, test_config};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// How long a socket must stay quiet to show nothing more was sent to it.
const QUIET: Duration = Duration::from_millis(300);

/// The reply to `what`, the frame just sent: the gateway must answer it, within the usual
/// timeout.
async fn reply_to(agent: &mut WsClient, what: &str) -> Value {
    match agent.next_message(TIMEOUT).await {
        Some(Message::Text(text)) => serde_json::from_str(&text).expect("a JSON frame"),
        other => panic!("no reply to {what} within {TIMEOUT:?}, got {other:?}"),
    }
}

async fn scoped_server() -> TestServer {
    let scoped = |key: &str, prefix: &str| {
        AgentKey::scoped(key, SessionScope::prefix(prefix).expect("a valid prefix"))
    };
    let mut config = test_config();
    config.agent_keys = vec![
        scoped("ka", "team-a-"),
        scoped("kb", "team-b-"),
        AgentKey::unscoped("kall"),
    ];
    TestServer::start_with(config).await
}

/// Asserts `frame` is a refusal with code `forbidden` that gives away no viewer link.
fn assert_forbidden_error(frame: &Value, session: &str, id: Option<&str>) {
    assert_eq!(frame["type"], "error", "{frame}");
    assert_eq!(frame["code"], "forbidden", "{frame}");
    let message = frame["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("team-b-"),
        "the message names the key's prefix: {frame}"
    );
    match id {
        Some(id) => {
            assert_eq!(
                (&frame["session"], &frame["id"]),
                (&json!(session), &json!(id))
            );
        }
        None => assert!(frame.get("session").is_none(), "{frame}"),
    }
    assert!(
        !frame.to_string().contains("#k="),
        "a viewer link leaked: {frame}"
    );
}

/// Asserts an HTTP refusal: 403, one error at `session` with code `forbidden`.
fn assert_forbidden_call(call: &str, (status, body): &(u16, Value)) {
    assert_eq!(*status, 403, "{call}: {body}");
    assert_eq!(body["errors"][0]["path"], "session", "{call}: {body}");
    assert_eq!(body["errors"][0]["code"], "forbidden", "{call}: {body}");
    assert!(body.get("viewer_url").is_none(), "{call}: {body}");
}

/// Key B is refused every socket frame naming a session of key A's, and nothing of A's
/// session changes: A's open request stays open, its outcome stays unacknowledged and goes
/// to A, not B.
#[tokio::test(flavor = "multi_thread")]
async fn a_scoped_key_is_refused_every_socket_frame_outside_its_scope() {
    let server = scoped_server().await;
    let session = "team-a-1";
    let (mut tab, _) = server.tab(session).await;
    let mut a = server.agent_with_key("ka").await;
    a.send(&json!({"type": "open", "session": session})).await;
    let opened = a.recv_type("opened").await;
    assert!(
        opened["viewer_url"]
            .as_str()
            .unwrap()
            .ends_with(&server.viewer_key(session))
    );
    a.send(&ask(session, "answered", &["Color"], None)).await;
    a.recv_type("accepted").await;
    tab.recv_until("request").await;
    tab.send(&answer("answered", &["Color"], "Red")).await;
    assert_eq!(a.recv_type("outcome").await["id"], "answered");
    a.send(&ask(session, "open", &["Color"], None)).await;
    a.recv_type("accepted").await;
    assert_eq!(tab.recv_until("request").await["request"]["id"], "open");

    let mut b = server.agent_with_key("kb").await;
    b.send(&json!({"type": "open", "session": session})).await;
    assert_forbidden_error(&reply_to(&mut b, "B's open").await, session, None);
    // A re-ask of A's id would otherwise hand B the stored outcome.
    b.send(&ask(session, "answered", &["Color"], None)).await;
    let rejected = reply_to(&mut b, "B's re-ask").await;
    assert_eq!(rejected["type"], "rejected", "{rejected}");
    assert_eq!(
        (&rejected["session"], &rejected["id"]),
        (&json!(session), &json!("answered"))
    );
    let error = &rejected["errors"][0];
    assert_eq!(
        (&error["path"], &error["code"]),
        (&json!("session"), &json!("forbidden"))
    );
    assert_eq!(
        rejected["errors"].as_array().map(Vec::len),
        Some(1),
        "{rejected}"
    );
    b.send(&json!({"type": "cancel", "session": session, "id": "open"}))
        .await;
    assert_forbidden_error(&reply_to(&mut b, "B's cancel").await, session, Some("open"));
    b.send(&json!({"type": "ack", "session": session, "id": "answered"}))
        .await;
    assert_forbidden_error(
        &reply_to(&mut b, "B's ack").await,
        session,
        Some("answered"),
    );
    // A new id in A's session, and a session no key holds, are refused alike.
    b.send(&ask(session, "new", &["Color"], None)).await;
    assert_eq!(
        b.recv_type("rejected").await["errors"][0]["code"],
        "forbidden"
    );
    b.send(&ask("elsewhere", "new", &["Color"], None)).await;
    assert_eq!(
        b.recv_type("rejected").await["errors"][0]["code"],
        "forbidden"
    );
    b.silent_for(QUIET).await;
    // Tabs saw no request withdrawn, and no new one.
    while let Some(message) = tab.next_message(QUIET).await {
        let frame: Value = serde_json::from_str(message.to_text().unwrap_or_default())
            .unwrap_or_else(|e| panic!("a tab frame is JSON ({e}): {message:?}"));
        assert_eq!(frame["type"], "presence", "the tab was told: {frame}");
    }

    // A's session is as A left it: the outcome is still held for A, the request still open.
    a.send(&ask(session, "answered", &["Color"], None)).await;
    let again = a.recv_type("outcome").await;
    assert_eq!(
        (&again["id"], &again["outcome"]),
        (&json!("answered"), &json!("answered"))
    );
    a.send(&json!({"type": "cancel", "session": session, "id": "open"}))
        .await;
    let withdrawn = a.recv_type("outcome").await;
    assert_eq!(
        (&withdrawn["id"], &withdrawn["outcome"]),
        (&json!("open"), &json!("withdrawn"))
    );
    a.send(&json!({"type": "ack", "session": session, "id": "answered"}))
        .await;
    a.send(&json!({"type": "ack", "session": session, "id": "open"}))
        .await;
    a.silent_for(QUIET).await;
    // B is still refused in its own scope's neighbour, and served in its own.
    b.send(&json!({"type": "open", "session": "team-b-1"}))
        .await;
    assert_eq!(b.recv_type("opened").await["session"], "team-b-1");
}

/// Key B is refused every HTTP call on key A's session (403 `forbidden` at `session`), and
/// they change nothing; key A's same calls succeed.
#[tokio::test(flavor = "multi_thread")]
async fn a_scoped_key_is_refused_every_http_call_outside_its_scope() {
    let server = scoped_server().await;
    let requests = "/v1/sessions/team-a-1/requests";
    let post = json!({"id": "r1", "questions": questions(&["Color"])});
    let b = |method: &'static str, path: String, body: Option<Value>| {
        let addr = server.addr;
        async move { http(addr, method, &path, body.as_ref(), Some("kb")).await }
    };
    assert_forbidden_call(
        "POST as B",
        &b("POST", requests.into(), Some(post.clone())).await,
    );
    let (status, created) = http(server.addr, "POST", requests, Some(&post), Some("ka")).await;
    assert_eq!(status, 201, "{created}");

    let r1 = format!("{requests}/r1");
    // A repeat of A's POST would otherwise hand B the viewer link, or the outcome.
    assert_forbidden_call(
        "POST again as B",
        &b("POST", requests.into(), Some(post.clone())).await,
    );
    assert_forbidden_call("GET as B", &b("GET", r1.clone(), None).await);
    assert_forbidden_call("DELETE as B", &b("DELETE", r1.clone(), None).await);
    let (status, pending) = http(server.addr, "GET", &r1, None, Some("ka")).await;
    assert_eq!(
        (status, &pending["state"]),
        (200, &json!("pending")),
        "{pending}"
    );

    let (status, withdrawn) = http(server.addr, "DELETE", &r1, None, Some("ka")).await;
    assert_eq!(
        (status, &withdrawn["outcome"]),
        (200, &json!("withdrawn")),
        "{withdrawn}"
    );
    let ack = format!("{r1}/ack");
    assert_forbidden_call("ack as B", &b("POST", ack.clone(), None).await);
    let (status, resolved) = http(server.addr, "GET", &r1, None, Some("ka")).await;
    assert_eq!(
        (status, &resolved["state"]),
        (200, &json!("resolved")),
        "{resolved}"
    );
    let (status, _) = http(server.addr, "POST", &ack, None, Some("ka")).await;
    assert_eq!(status, 204);
    let (status, _) = http(server.addr, "GET", &r1, None, Some("ka")).await;
    assert_eq!(status, 404);
    // An unknown request outside the scope is refused too: B learns nothing of what exists.
    assert_forbidden_call(
        "GET unknown as B",
        &b("GET", format!("{requests}/nope"), None).await,
    );
}

/// An `open` without a session from a scoped key makes one inside its scope, which the key
/// may then use and the other scoped key may not.
#[tokio::test(flavor = "multi_thread")]
async fn an_open_without_a_session_lands_in_the_keys_scope() {
    let server = scoped_server().await;
    let mut a = server.agent_with_key("ka").await;
    a.send(&json!({"type": "open"})).await;
    let opened = a.recv_type("opened").await;
    let session = opened["session"].as_str().expect("a session id").to_owned();
    let generated = session.strip_prefix("team-a-").expect("within the scope");
    assert!(generated.starts_with("s-"), "{session}");
    assert!(
        opened["viewer_url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/s/{session}#k={}", server.viewer_key(&session)))
    );
    a.send(&ask(&session, "r1", &["Color"], None)).await;
    assert_eq!(a.recv_type("accepted").await["session"], json!(session));
    let mut b = server.agent_with_key("kb").await;
    b.send(&ask(&session, "r1", &["Color"], None)).await;
    assert_eq!(
        b.recv_type("rejected").await["errors"][0]["code"],
        "forbidden"
    );
}

/// A key without a prefix acts on every session, scoped keys' included, as keys did before.
#[tokio::test(flavor = "multi_thread")]
async fn an_unscoped_key_still_acts_everywhere() {
    let server = scoped_server().await;
    let mut all = server.agent_with_key("kall").await;
    for session in ["team-a-1", "team-b-1", "elsewhere"] {
        all.send(&json!({"type": "open", "session": session})).await;
        assert_eq!(all.recv_type("opened").await["session"], session);
        all.send(&ask(session, "r1", &["Color"], None)).await;
        assert_eq!(all.recv_type("accepted").await["session"], session);
        all.send(&json!({"type": "cancel", "session": session, "id": "r1"}))
            .await;
        assert_eq!(all.recv_type("outcome").await["outcome"], "withdrawn");
        all.send(&json!({"type": "ack", "session": session, "id": "r1"}))
            .await;
        let path = format!("/v1/sessions/{session}/requests");
        let post = json!({"id": "h1", "questions": questions(&["Color"])});
        let (status, body) = http(server.addr, "POST", &path, Some(&post), Some("kall")).await;
        assert_eq!(status, 201, "{session}: {body}");
        let (status, body) = http(
            server.addr,
            "DELETE",
            &format!("{path}/h1"),
            None,
            Some("kall"),
        )
        .await;
        assert_eq!(status, 200, "{session}: {body}");
    }
    all.send(&json!({"type": "open"})).await;
    let opened = all.recv_type("opened").await;
    assert!(
        opened["session"].as_str().unwrap().starts_with("s-"),
        "{opened}"
    );
}

/// The authentication scheme is case-insensitive (RFC 7235), and any run of spaces or tabs
/// may separate it from the key: clients that write `bearer` were refused.
#[tokio::test(flavor = "multi_thread")]
async fn the_bearer_scheme_is_read_in_any_case() {
    let mut config = test_config();
    config.agent_keys = vec![AgentKey::unscoped("k1")];
    let server = TestServer::start_with(config).await;
    let url = server.ws_url("/v1/agent");
    for authorization in ["bearer k1", "BEARER \t k1"] {
        let mut agent =
            WsClient::connect_with_headers(&url, &[("authorization", authorization)]).await;
        agent.send(&json!({"type": "open", "session": "s"})).await;
        let opened = agent.recv().await;
        assert_eq!(opened["type"], "opened", "{authorization:?}: {opened}");
    }
    let post = json!({"questions": questions(&["Color"])});
    for (n, authorization) in ["bearer k1", "bEaReR\tk1"].into_iter().enumerate() {
        let headers = format!(
            "Host: {}\r\nAuthorization: {authorization}\r\n",
            server.addr
        );
        let path = format!("/v1/sessions/http-{n}/requests");
        let (status, body) =
            http_with_headers(server.addr, "POST", &path, Some(&post), &headers).await;
        assert_eq!(status, 201, "{authorization:?}: {body}");
    }
}

/// A scope ends at a separator: a key bound to `team-a` (no separator at its end) acts on
/// `team-a` and `team-a-1`, is refused on `team-ab-1` (another team's, which a plain
/// `starts_with` let it reach) on the socket and over HTTP, and its generated sessions land
/// inside its scope.
#[tokio::test(flavor = "multi_thread")]
async fn a_scope_ends_at_a_separator() {
    let mut config = test_config();
    config.agent_keys = vec![AgentKey::scoped(
        "kt",
        SessionScope::prefix("team-a").expect("a valid prefix"),
    )];
    let server = TestServer::start_with(config).await;
    let mut agent = server.agent_with_key("kt").await;

    agent
        .send(&json!({"type": "open", "session": "team-ab-1"}))
        .await;
    let refused = reply_to(&mut agent, "the open of team-ab-1").await;
    assert_eq!(
        (&refused["type"], &refused["code"]),
        (&json!("error"), &json!("forbidden")),
        "{refused}"
    );
    assert!(!refused.to_string().contains("#k="), "{refused}");
    agent.send(&ask("team-ab-1", "r1", &["Color"], None)).await;
    let rejected = reply_to(&mut agent, "the ask on team-ab-1").await;
    assert_eq!(rejected["type"], "rejected", "{rejected}");
    assert_eq!(rejected["errors"][0]["code"], "forbidden", "{rejected}");
    let post = json!({"id": "r1", "questions": questions(&["Color"])});
    assert_forbidden_call(
        "POST on team-ab-1",
        &http(
            server.addr,
            "POST",
            "/v1/sessions/team-ab-1/requests",
            Some(&post),
            Some("kt"),
        )
        .await,
    );

    for session in ["team-a", "team-a-1"] {
        agent
            .send(&json!({"type": "open", "session": session}))
            .await;
        assert_eq!(agent.recv_type("opened").await["session"], session);
        let path = format!("/v1/sessions/{session}/requests");
        let (status, created) = http(server.addr, "POST", &path, Some(&post), Some("kt")).await;
        assert_eq!(status, 201, "{session}: {created}");
    }

    agent.send(&json!({"type": "open"})).await;
    let opened = agent.recv_type("opened").await;
    let generated = opened["session"].as_str().expect("a session id").to_owned();
    assert!(generated.starts_with("team-a-s-"), "{generated}");
    agent.send(&ask(&generated, "r1", &["Color"], None)).await;
    assert_eq!(
        agent.recv_type("accepted").await["session"],
        json!(generated)
    );
}
