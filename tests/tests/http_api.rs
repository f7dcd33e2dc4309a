//! The HTTP API for paused runs: post, poll and long-poll, withdraw, acknowledge.

use askgate_tests::server::{TestServer, answer, http, questions, test_config};
use serde_json::json;

const DECLINED: &str = "The user declined to answer. Continue without the answer, or ask differently if it is essential.";

/// A posted request is shown to tabs; a long-poll returns as soon as a tab answers; the ack
/// forgets it.
#[tokio::test(flavor = "multi_thread")]
async fn post_long_poll_answer_ack() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    let (status, body) = http(
        server.addr,
        "POST",
        "/v1/sessions/s/requests",
        Some(&json!({"id": "call_1", "questions": questions(&["Color"]), "timeout_s": 300})),
        None,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["id"], "call_1");
    assert!(body["viewer_url"].as_str().unwrap().contains("/s/s#k="));
    assert!(body["deadline_ms"].as_u64().is_some());
    let (status, pending) = http(
        server.addr,
        "GET",
        "/v1/sessions/s/requests/call_1",
        None,
        None,
    )
    .await;
    assert_eq!((status, pending["state"].as_str()), (200, Some("pending")));
    tab.recv_until("request").await;
    let poll = tokio::spawn(http(
        server.addr,
        "GET",
        "/v1/sessions/s/requests/call_1?wait_s=30",
        None,
        None,
    ));
    tab.send(&answer("call_1", &["Color"], "Blue")).await;
    let (status, resolved) = poll.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(resolved["state"], "resolved");
    assert_eq!(resolved["outcome"], "answered");
    assert_eq!(resolved["result"], json!({"Color": ["Blue"]}));
    assert_eq!(resolved["model_text"], r#"{"Color":["Blue"]}"#);
    let (status, _) = http(
        server.addr,
        "POST",
        "/v1/sessions/s/requests/call_1/ack",
        None,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, body) = http(
        server.addr,
        "GET",
        "/v1/sessions/s/requests/call_1",
        None,
        None,
    )
    .await;
    assert_eq!(status, 404, "{body}");
}

/// Repeats are idempotent (200), other questions under the same id conflict (409), invalid
/// questions are refused with paths (422), and the body may carry a tool call's `args` as text.
#[tokio::test(flavor = "multi_thread")]
async fn idempotency_conflicts_and_validation() {
    let server = TestServer::start().await;
    let post = json!({"id": "r", "questions": questions(&["Color"])});
    assert_eq!(
        http(
            server.addr,
            "POST",
            "/v1/sessions/s/requests",
            Some(&post),
            None
        )
        .await
        .0,
        201
    );
    assert_eq!(
        http(
            server.addr,
            "POST",
            "/v1/sessions/s/requests",
            Some(&post),
            None
        )
        .await
        .0,
        200
    );
    let other = json!({"id": "r", "questions": questions(&["Size"])});
    let (status, body) = http(
        server.addr,
        "POST",
        "/v1/sessions/s/requests",
        Some(&other),
        None,
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(body["errors"][0]["path"], "id");
    let mut bad = questions(&["Color"]);
    bad[0]["options"][0]["label"] = json!("");
    let (status, body) = http(
        server.addr,
        "POST",
        "/v1/sessions/s/requests",
        Some(&json!({"questions": bad})),
        None,
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(body["errors"][0]["path"], "questions[0].options[0].label");
    // A deferred tool call's arguments as the model sent them: JSON text, extra keys ignored.
    let args = json!({"questions": questions(&["Size"]), "note": "ignored like from_tool_call"})
        .to_string();
    let (status, body) = http(
        server.addr,
        "POST",
        "/v1/sessions/s/requests",
        Some(&json!({"id": "call_9", "args": args})),
        None,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, _) = http(
        server.addr,
        "POST",
        "/v1/sessions/s/requests",
        Some(&json!({"args": "{not json"})),
        None,
    )
    .await;
    assert_eq!(status, 422);
    let (status, _) = http(
        server.addr,
        "POST",
        "/v1/sessions/s/requests",
        Some(&json!({"questions": questions(&["A"]), "timeout_s": 0})),
        None,
    )
    .await;
    assert_eq!(status, 422);
}

/// DELETE withdraws (tabs see `withdrawn`); on a request already answered it returns that
/// outcome instead.
#[tokio::test(flavor = "multi_thread")]
async fn delete_withdraws_or_returns_the_outcome() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    for id in ["a", "b"] {
        let post = json!({"id": id, "questions": questions(&["Color"])});
        assert_eq!(
            http(
                server.addr,
                "POST",
                "/v1/sessions/s/requests",
                Some(&post),
                None
            )
            .await
            .0,
            201
        );
        tab.recv_until("request").await;
    }
    let (status, body) = http(
        server.addr,
        "DELETE",
        "/v1/sessions/s/requests/a",
        None,
        None,
    )
    .await;
    assert_eq!((status, body["outcome"].as_str()), (200, Some("withdrawn")));
    assert_eq!(tab.recv_until("resolved").await["outcome"], "withdrawn");
    tab.send(&json!({"type": "decline", "id": "b"})).await;
    tab.recv_until("resolved").await;
    let (status, body) = http(
        server.addr,
        "DELETE",
        "/v1/sessions/s/requests/b",
        None,
        None,
    )
    .await;
    assert_eq!((status, body["outcome"].as_str()), (200, Some("declined")));
    assert_eq!(body["result"], DECLINED);
    let (status, _) = http(
        server.addr,
        "DELETE",
        "/v1/sessions/s/requests/nope",
        None,
        None,
    )
    .await;
    assert_eq!(status, 404);
}

/// With agent keys configured the API wants one too.
#[tokio::test(flavor = "multi_thread")]
async fn the_api_takes_the_agent_keys() {
    let mut config = test_config();
    config.agent_keys = vec!["k".into()];
    let server = TestServer::start_with(config).await;
    let post = json!({"questions": questions(&["Color"])});
    let (status, body) = http(
        server.addr,
        "POST",
        "/v1/sessions/s/requests",
        Some(&post),
        None,
    )
    .await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        http(
            server.addr,
            "POST",
            "/v1/sessions/s/requests",
            Some(&post),
            Some("wrong")
        )
        .await
        .0,
        401
    );
    assert_eq!(
        http(
            server.addr,
            "POST",
            "/v1/sessions/s/requests",
            Some(&post),
            Some("k")
        )
        .await
        .0,
        201
    );
}
