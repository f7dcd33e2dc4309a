//! Tool-call approvals through the gateway: an agent asks with `calls`, tabs see them,
//! the first valid decision wins, and the agent gets the decisions (or every call rejected
//! when the person declines or nobody answers in time).

use std::time::Duration;

use askgate_testkit::frames::error_paths;
use askgate_testkit::http::http;
use askgate_testkit::ws::WsClient;
use askgate_tests::server::TestServer;
use serde_json::{Value, json};

fn calls() -> Value {
    json!([
        {"name": "run_sql", "args": {"query": "DROP TABLE users"},
         "description": "Run one SQL statement",
         "args_schema": {"type": "object", "properties": {"query": {"type": "string", "minLength": 1}},
                         "required": ["query"], "additionalProperties": false},
         "decisions": ["respond", "reject", "edit", "approve"]},
        {"name": "send_email", "args": {"to": "ops@example.com", "body": "done"}}
    ])
}

/// An agent that asked `calls` as request `id`, and a tab that received the request.
async fn asked(
    server: &TestServer,
    id: &str,
    timeout_s: Option<f64>,
) -> (WsClient, WsClient, Value) {
    let (mut tab, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    let mut frame = json!({"type": "ask", "session": "s", "id": id, "dialect": "approval",
                           "calls": calls()});
    if let Some(timeout_s) = timeout_s {
        frame["timeout_s"] = json!(timeout_s);
    }
    agent.send(&frame).await;
    agent.recv_until("accepted").await;
    let request = tab.recv_until("request").await;
    (agent, tab, request)
}

#[tokio::test(flavor = "multi_thread")]
async fn tabs_see_normalised_calls_and_the_agent_gets_the_decisions() {
    let server = TestServer::start().await;
    let (mut agent, mut tab, request) = asked(&server, "r1", None).await;
    let view = &request["request"];
    assert_eq!(view["dialect"], "approval");
    assert!(view.get("questions").is_none(), "{view}");
    assert_eq!(
        view["calls"][0]["decisions"],
        json!(["approve", "edit", "reject", "respond"])
    );
    assert_eq!(view["calls"][0]["edit_check"], "schema");
    assert_eq!(view["calls"][1]["decisions"], json!(["approve", "reject"]));
    assert_eq!(view["calls"][1]["edit_check"], "object");
    assert!(view["calls"][1].get("description").is_none());

    // A schema-invalid edit and a decision the call does not allow are refused, with paths.
    tab.send(
        &json!({"type": "answer", "id": "r1", "response": {"decisions": [
        {"type": "edit", "args": {"query": 7}}, {"type": "edit", "args": {}}]}}),
    )
    .await;
    let refused = tab.recv_until("answer_rejected").await;
    let paths = error_paths(&refused);
    assert_eq!(
        paths,
        [
            "response.decisions[0].args.query",
            "response.decisions[1].type"
        ],
        "{refused}"
    );

    tab.send(
        &json!({"type": "answer", "id": "r1", "response": {"decisions": [
        {"type": "edit", "args": {"query": "SELECT 1"}},
        {"type": "reject", "message": "not today"}]}}),
    )
    .await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["outcome"], "answered");
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "edit", "args": {"query": "SELECT 1"}},
                             {"type": "reject", "message": "not today"}]})
    );
    assert_eq!(
        outcome["result"][0],
        json!({"name": "run_sql", "decision": "edit", "args": {"query": "SELECT 1"}})
    );
    assert_eq!(outcome["result"][1]["message"], "not today");
    assert_eq!(
        outcome["model_text"],
        "run_sql: edited\nsend_email: rejected: not today"
    );
    let resolved = tab.recv_until("resolved").await;
    assert_eq!(resolved["outcome"], "answered");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decline_and_a_timeout_reject_every_call() {
    let server = TestServer::start().await;
    let (mut agent, mut tab, _) = asked(&server, "r1", None).await;
    tab.send(&json!({"type": "decline", "id": "r1"})).await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["outcome"], "declined");
    let rejected = json!({"type": "reject", "message": "The person declined."});
    assert_eq!(
        outcome["response"],
        json!({"decisions": [rejected, rejected]})
    );

    let (mut agent, _tab, _) = asked(&server, "r2", Some(0.2)).await;
    let outcome = tokio::time::timeout(Duration::from_secs(10), agent.recv_until("outcome"))
        .await
        .expect("the deadline passes");
    assert_eq!(outcome["outcome"], "timed_out");
    assert_eq!(
        outcome["response"]["decisions"][1]["message"],
        "No answer in time."
    );
    assert_eq!(
        outcome["model_text"],
        "run_sql: rejected: No answer in time.\nsend_email: rejected: No answer in time."
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_calls_are_rejected_with_paths() {
    let server = TestServer::start().await;
    let mut agent = server.agent().await;
    agent
        .send_unchecked(
            &json!({"type": "ask", "session": "s", "id": "r1", "dialect": "approval",
                      "questions": [{"question": "?"}]}),
        )
        .await;
    let rejected = agent.recv_until("rejected").await;
    assert_eq!(rejected["errors"][0]["path"], "questions", "{rejected}");
    agent
        .send(
            &json!({"type": "ask", "session": "s", "id": "r2", "dialect": "approval",
                      "calls": [{"name": "x", "args": {}, "decisions": []},
                                {"name": "y", "args": {}, "args_schema": {"type": "objekt"}}]}),
        )
        .await;
    let rejected = agent.recv_until("rejected").await;
    let paths = error_paths(&rejected);
    assert_eq!(
        paths,
        ["calls[0].decisions", "calls[1].args_schema.type"],
        "{rejected}"
    );
}

/// A schema past its limits is refused when the agent asks, at the path of what is too large;
/// an `enum` at the limit is accepted, and an edit is judged against it by value.
#[tokio::test(flavor = "multi_thread")]
async fn a_schema_past_its_limits_is_refused_at_the_ask() {
    use askgate_protocol::approval::schema::MAX_ENUM_ENTRIES;
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    let call = |entries: usize| {
        let ids: Vec<usize> = (0..entries).collect();
        json!([{"name": "pick", "args": {"x": 1}, "decisions": ["approve", "edit"],
                "args_schema": {"type": "object", "properties": {"x": {"enum": ids}}}}])
    };
    agent
        .send(
            &json!({"type": "ask", "session": "s", "id": "r1", "dialect": "approval",
                      "calls": call(MAX_ENUM_ENTRIES + 1)}),
        )
        .await;
    let rejected = agent.recv_until("rejected").await;
    let error = &rejected["errors"][0];
    assert_eq!(
        (&error["path"], &error["code"], &error["message"]),
        (
            &json!("calls[0].args_schema.properties.x.enum"),
            &json!("too_many_items"),
            &json!(format!(
                "at most {MAX_ENUM_ENTRIES} entries, got {}",
                MAX_ENUM_ENTRIES + 1
            ))
        ),
        "{rejected}"
    );
    agent
        .send(
            &json!({"type": "ask", "session": "s", "id": "r2", "dialect": "approval",
                      "calls": call(MAX_ENUM_ENTRIES)}),
        )
        .await;
    agent.recv_until("accepted").await;
    tab.recv_until("request").await;
    let edit = |x: Value| {
        json!({"type": "answer", "id": "r2",
               "response": {"decisions": [{"type": "edit", "args": {"x": x}}]}})
    };
    tab.send(&edit(json!(MAX_ENUM_ENTRIES))).await;
    let refused = tab.recv_until("answer_rejected").await;
    assert_eq!(
        error_paths(&refused),
        ["response.decisions[0].args.x"],
        "{refused}"
    );
    tab.send(&edit(json!(9_999.0))).await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["result"][0]["args"], json!({"x": 9_999.0}));
}

/// Over HTTP, an approval is posted with `calls` and polled like any other request.
#[tokio::test(flavor = "multi_thread")]
async fn approvals_over_http() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    let (status, body) = server
        .http(
            "POST",
            "/v1/sessions/s/requests",
            Some(&json!({"id": "call_1", "dialect": "approval", "calls": calls()})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let request = tab.recv_until("request").await;
    assert_eq!(request["request"]["calls"][0]["name"], "run_sql");
    let poll = tokio::spawn(http(
        server.addr,
        "GET",
        "/v1/sessions/s/requests/call_1?wait_s=30",
        None,
        None,
    ));
    tab.send(
        &json!({"type": "answer", "id": "call_1", "response": {"decisions": [
        {"type": "respond", "message": "use the staging database"}, {"type": "approve"}]}}),
    )
    .await;
    let (status, resolved) = poll.await.unwrap();
    assert_eq!(status, 200, "{resolved}");
    assert_eq!(resolved["outcome"], "answered");
    assert_eq!(resolved["result"][0]["decision"], "respond");
    assert_eq!(
        resolved["result"][1],
        json!({"name": "send_email", "decision": "approve",
                                              "args": {"to": "ops@example.com", "body": "done"}})
    );
    let (status, refused) = server
        .http(
            "POST",
            "/v1/sessions/s/requests",
            Some(&json!({"id": "call_2", "dialect": "approval", "args": {"questions": []}})),
        )
        .await;
    assert_eq!(
        (status, refused["errors"][0]["path"].as_str()),
        (422, Some("args")),
        "{refused}"
    );
}

/// An open approval comes back after a restart of the embedded store, and is answered then.
#[tokio::test(flavor = "multi_thread")]
async fn an_open_approval_survives_a_restart() {
    let dir = std::env::temp_dir().join(format!(
        "askgate-approval-restart-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    let mut config = askgate_tests::server::test_config();
    config.store = askgate::config::StoreKind::Embedded;
    config.data_dir = dir.clone();
    let server = TestServer::start_with(config.clone()).await;
    let (_agent, _tab, before) = asked(&server, "r1", Some(600.0)).await;
    server.shutdown().await.unwrap();

    let server = TestServer::start_with(config).await;
    let (mut tab, snapshot) = server.tab("s").await;
    assert_eq!(snapshot["requests"][0], before["request"], "{snapshot}");
    let mut agent = server.agent().await;
    agent
        .send(
            &json!({"type": "ask", "session": "s", "id": "r1", "dialect": "approval",
                      "calls": calls(), "timeout_s": 600}),
        )
        .await;
    agent.recv_until("accepted").await;
    tab.send(
        &json!({"type": "answer", "id": "r1", "response": {"decisions": [
        {"type": "approve"}, {"type": "approve"}]}}),
    )
    .await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(
        outcome["model_text"],
        "run_sql: approved\nsend_email: approved"
    );
    server.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
