//! MCP forms and Claude's questions through the gateway: tabs see the normalised request,
//! a refused answer names its field, and the agent gets exactly what its framework takes
//! back (an `ElicitResult`, a `can_use_tool` permission result) for every ending.

use std::time::Duration;

use std::sync::Arc;

use askgate::store::{MemoryStore, Store, StoreOp, StoredRequest};
use askgate_protocol::{Dialect, RequestId, SessionId};
use askgate_testkit::frames::error_paths;
use askgate_testkit::http::http;
use askgate_testkit::ws::WsClient;
use askgate_tests::server::{TestServer, test_config};
use serde_json::{Value, json};

/// An agent that sent `frame` (an `ask`), and a tab that received the request.
async fn asked(server: &TestServer, frame: &Value) -> (WsClient, WsClient, Value) {
    let (mut tab, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    agent.send(frame).await;
    agent.recv_until("accepted").await;
    let request = tab.recv_until("request").await;
    (agent, tab, request)
}

fn form_ask(id: &str, timeout_s: Option<f64>) -> Value {
    let mut ask = json!({"type": "ask", "session": "s", "id": id, "dialect": "form",
        "message": "Where should the report go?", "server": "reports-mcp",
        "schema": {"type": "object", "properties": {
            "email": {"type": "string", "format": "email", "title": "E-mail"},
            "copies": {"type": "integer", "minimum": 1, "maximum": 5, "default": 1}},
            "required": ["email"]}});
    if let Some(timeout_s) = timeout_s {
        ask["timeout_s"] = json!(timeout_s);
    }
    ask
}

#[tokio::test(flavor = "multi_thread")]
async fn a_form_is_filled_in_and_the_server_gets_an_elicit_result() {
    let server = TestServer::start().await;
    let (mut agent, mut tab, request) = asked(&server, &form_ask("f1", None)).await;
    let view = &request["request"];
    assert_eq!(view["dialect"], "form");
    assert_eq!(view["message"], "Where should the report go?");
    assert_eq!(view["server"], "reports-mcp");
    assert_eq!(view["fields"][1]["default"], 1);
    assert!(view.get("questions").is_none(), "{view}");

    tab.send(&json!({"type": "answer", "id": "f1", "response": {"content": {"email": "ops", "copies": 9}}}))
        .await;
    let refused = tab.recv_until("answer_rejected").await;
    let paths = error_paths(&refused);
    assert_eq!(
        paths,
        ["response.content.email", "response.content.copies"],
        "{refused}"
    );

    tab.send(&json!({"type": "answer", "id": "f1", "response": {"content": {"email": "ops@example.com", "copies": 2}}}))
        .await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(
        outcome["response"],
        json!({"action": "accept", "content": {"email": "ops@example.com", "copies": 2}})
    );
    assert_eq!(outcome["model_text"], Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn decline_is_decline_and_a_timeout_or_withdrawal_is_cancel() {
    let server = TestServer::start().await;
    let (mut agent, mut tab, _) = asked(&server, &form_ask("f1", None)).await;
    tab.send(&json!({"type": "decline", "id": "f1"})).await;
    assert_eq!(
        agent.recv_until("outcome").await["response"],
        json!({"action": "decline"})
    );

    let (mut agent, _tab, _) = asked(&server, &form_ask("f2", Some(0.2))).await;
    let outcome = tokio::time::timeout(Duration::from_secs(10), agent.recv_until("outcome"))
        .await
        .expect("the deadline passes");
    assert_eq!(
        (outcome["outcome"].as_str(), &outcome["response"]),
        (Some("timed_out"), &json!({"action": "cancel"}))
    );

    let (mut agent, _tab, _) = asked(&server, &form_ask("f3", None)).await;
    agent
        .send(&json!({"type": "cancel", "session": "s", "id": "f3"}))
        .await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(
        (outcome["outcome"].as_str(), &outcome["response"]),
        (Some("withdrawn"), &json!({"action": "cancel"}))
    );
}

/// "Not now" (a `decline` with `dismiss`) gives a form's server `cancel` at once, recorded as
/// the person's decline; in a dialect with one way to say no it is a decline; `dismiss` must
/// be a boolean.
#[tokio::test(flavor = "multi_thread")]
async fn a_dismissal_is_cancel_for_a_form_and_a_decline_elsewhere() {
    let server = TestServer::start().await;
    let (mut agent, mut tab, _) = asked(&server, &form_ask("f1", Some(3600.0))).await;
    tab.send(&json!({"type": "decline", "id": "f1", "dismiss": true}))
        .await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(
        (outcome["outcome"].as_str(), &outcome["response"]),
        (Some("declined"), &json!({"action": "cancel"})),
        "{outcome}"
    );
    assert!(
        outcome["by"]
            .as_str()
            .is_some_and(|by| by.starts_with("t-")),
        "a tab's ending names the tab: {outcome}"
    );
    let resolved = tab.recv_until("resolved").await;
    assert_eq!(resolved["response"], json!({"action": "cancel"}));

    let (mut agent, mut tab, _) = asked(&server, &form_ask("f2", None)).await;
    tab.send(&json!({"type": "decline", "id": "f2", "dismiss": false}))
        .await;
    assert_eq!(
        agent.recv_until("outcome").await["response"],
        json!({"action": "decline"})
    );

    let (mut agent, mut tab, _) = asked(&server, &claude_ask("c1")).await;
    tab.send(&json!({"type": "decline", "id": "c1", "dismiss": true}))
        .await;
    assert_eq!(
        agent.recv_until("outcome").await["response"],
        json!({"behavior": "deny", "message": "The person declined to answer."})
    );
    let question = askgate_testkit::frames::ask("s", "h1", &["Color"], None);
    let (mut agent, mut tab, _) = asked(&server, &question).await;
    tab.send(&json!({"type": "decline", "id": "h1", "dismiss": true}))
        .await;
    assert_eq!(
        agent.recv_until("outcome").await["response"],
        json!({"answers": [], "cancelled": true})
    );

    let (_agent, mut tab, _) = asked(&server, &form_ask("f3", None)).await;
    tab.send_unchecked(&json!({"type": "decline", "id": "f3", "dismiss": "yes"}))
        .await;
    let error = tab.recv_until("error").await;
    assert_eq!(error["code"], "bad_frame", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("expected a boolean"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_url_request_over_http() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    let body = json!({"id": "u1", "dialect": "form", "mode": "url", "message": "Sign in to the CRM",
                      "url": "https://crm.example/oauth?state=1", "elicitation_id": "el-7"});
    let (status, posted) = server
        .http("POST", "/v1/sessions/s/requests", Some(&body))
        .await;
    assert_eq!(status, 201, "{posted}");
    let request = tab.recv_until("request").await;
    assert_eq!(request["request"]["host"], "crm.example");
    opened_by_the_tab(&server, &mut tab).await;

    let bad = json!({"id": "u2", "dialect": "form", "message": "m", "questions": []});
    let (status, refused) = server
        .http("POST", "/v1/sessions/s/requests", Some(&bad))
        .await;
    assert_eq!(
        (status, refused["errors"][0]["path"].as_str()),
        (422, Some("questions")),
        "{refused}"
    );
}

fn claude_ask(id: &str) -> Value {
    json!({"type": "ask", "session": "s", "id": id, "dialect": "claude", "questions": [
        {"question": "Which database?", "header": "Database", "multiSelect": false,
         "options": [{"label": "Postgres", "description": "what we run"}, {"label": "SQLite", "description": "embedded"}]},
        {"question": "Which regions?", "header": "Regions", "multiSelect": true,
         "options": [{"label": "eu", "description": "Frankfurt"}, {"label": "us", "description": "Virginia"}]}]})
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_questions_are_answered_with_the_updated_input() {
    let server = TestServer::start().await;
    let (mut agent, mut tab, request) = asked(&server, &claude_ask("c1")).await;
    assert_eq!(request["request"]["questions"][1]["multiSelect"], true);
    tab.send(&json!({"type": "answer", "id": "c1", "response": {"answers": {"Which database?": "Postgres"}}}))
        .await;
    let refused = tab.recv_until("answer_rejected").await;
    assert_eq!(
        refused["errors"][0]["path"], "response.answers[\"Which regions?\"]",
        "{refused}"
    );
    tab.send(
        &json!({"type": "answer", "id": "c1", "response": {"answers": {
        "Which database?": "Postgres", "Which regions?": ["eu", "us"]}}}),
    )
    .await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["response"]["behavior"], "allow");
    assert_eq!(
        outcome["response"]["updated_input"]["answers"],
        json!({"Which database?": "Postgres", "Which regions?": ["eu", "us"]})
    );
    assert_eq!(
        outcome["response"]["updated_input"]["questions"],
        claude_ask("c1")["questions"]
    );

    let (mut agent, mut tab, _) = asked(&server, &claude_ask("c2")).await;
    tab.send(&json!({"type": "decline", "id": "c2"})).await;
    assert_eq!(
        agent.recv_until("outcome").await["response"],
        json!({"behavior": "deny", "message": "The person declined to answer."})
    );
}

/// A question ask with keys of its own that happen to be a form's (`message`, `url`) is taken
/// as before; a form's main field (`schema`) is refused, since the ask is then in the wrong
/// dialect.
#[tokio::test(flavor = "multi_thread")]
async fn other_keys_are_ignored_but_another_dialects_request_is_not() {
    let server = TestServer::start().await;
    let mut agent = server.agent().await;
    let mut ask = askgate_testkit::frames::ask("s", "h1", &["Color"], None);
    ask["message"] = json!("a note of the client's own");
    ask["url"] = json!("https://example.com");
    agent.send(&ask).await;
    agent.recv_until("accepted").await;
    let mut ask = askgate_testkit::frames::ask("s", "h2", &["Color"], None);
    ask["schema"] = json!({"type": "object", "properties": {}});
    agent.send(&ask).await;
    let rejected = agent.recv_until("rejected").await;
    assert_eq!(rejected["errors"][0]["path"], "schema", "{rejected}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_url_request_stored_before_the_stricter_rules_is_restored_and_answered() {
    // An older askgate stored this URL (user info before `@`, which asks now refuse) with the
    // host it read: the request comes back, shown with the host the browser opens.
    let store = Arc::new(MemoryStore::new());
    let record = StoredRequest {
        quorum: None,
        asked_by: None,
        callback: None,
        ruled: None,
        remember: Vec::new(),
        votes: Vec::new(),
        default: None,
        session: SessionId::parse("s").unwrap(),
        id: RequestId::parse("u1").unwrap(),
        dialect: Dialect::parse("form").unwrap(),
        questions: json!({"message": "Sign in", "mode": "url",
                          "url": "https://accounts.example@evil.example/login",
                          "host": "accounts.example"}),
        title: None,
        asked_at_ms: askgate::clock::now_ms(),
        deadline_ms: None,
        answerers: None,
        follow_ups: Default::default(),
        resolution: None,
    };
    store.commit(vec![StoreOp::Put(record)]).await.unwrap();
    let server = TestServer::start_with_store(test_config(), store).await;
    let (mut tab, snapshot) = server.tab("s").await;
    let request = &snapshot["requests"][0];
    assert_eq!(request["id"], "u1", "{snapshot}");
    assert_eq!(request["host"], "evil.example", "{request}");
    opened_by_the_tab(&server, &mut tab).await;
}

/// The URL request `u1` of session `s`, opened by `tab` (an empty answer): the agent's long
/// poll gets MCP's `accept`.
async fn opened_by_the_tab(server: &TestServer, tab: &mut WsClient) {
    let poll = tokio::spawn(http(
        server.addr,
        "GET",
        "/v1/sessions/s/requests/u1?wait_s=30",
        None,
        None,
    ));
    tab.send(&json!({"type": "answer", "id": "u1", "response": {}}))
        .await;
    let (status, resolved) = poll.await.unwrap();
    assert_eq!(
        (status, &resolved["response"]),
        (200, &json!({"action": "accept"})),
        "{resolved}"
    );
}
