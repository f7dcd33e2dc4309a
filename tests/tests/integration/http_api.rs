//! The HTTP API for paused runs: post, poll and long-poll, withdraw, acknowledge.

use askgate::keys::AgentKey;
use askgate_testkit::frames::{answer, questions};
use askgate_testkit::http::http;
use askgate_tests::server::{TestServer, test_config};
use serde_json::{Value, json};

const DECLINED: &str = "The user declined to answer. Continue without the answer, or ask differently if it is essential.";

/// A posted request is shown to tabs; a long-poll returns as soon as a tab answers; the ack
/// forgets it.
#[tokio::test(flavor = "multi_thread")]
async fn post_long_poll_answer_ack() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    let (status, body) = server
        .http(
            "POST",
            "/v1/sessions/s/requests",
            Some(&json!({"id": "call_1", "questions": questions(&["Color"]), "timeout_s": 300})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["id"], "call_1");
    assert!(body["viewer_url"].as_str().unwrap().contains("/s/s#k="));
    assert!(body["deadline_ms"].as_u64().is_some());
    let (status, pending) = server
        .http("GET", "/v1/sessions/s/requests/call_1", None)
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
    let (status, _) = server
        .http("POST", "/v1/sessions/s/requests/call_1/ack", None)
        .await;
    assert_eq!(status, 204);
    let (status, body) = server
        .http("GET", "/v1/sessions/s/requests/call_1", None)
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
        server
            .http("POST", "/v1/sessions/s/requests", Some(&post))
            .await
            .0,
        201
    );
    assert_eq!(
        server
            .http("POST", "/v1/sessions/s/requests", Some(&post))
            .await
            .0,
        200
    );
    let other = json!({"id": "r", "questions": questions(&["Size"])});
    let (status, body) = server
        .http("POST", "/v1/sessions/s/requests", Some(&other))
        .await;
    assert_eq!(status, 409);
    assert_eq!(body["errors"][0]["path"], "id");
    let mut bad = questions(&["Color"]);
    bad[0]["options"][0]["label"] = json!("");
    let (status, body) = server
        .http(
            "POST",
            "/v1/sessions/s/requests",
            Some(&json!({"questions": bad})),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["errors"][0]["path"], "questions[0].options[0].label");
    // A deferred tool call's arguments as the model sent them: JSON text, extra keys ignored.
    let args = json!({"questions": questions(&["Size"]), "note": "ignored like from_tool_call"})
        .to_string();
    let (status, body) = server
        .http(
            "POST",
            "/v1/sessions/s/requests",
            Some(&json!({"id": "call_9", "args": args})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, _) = server
        .http(
            "POST",
            "/v1/sessions/s/requests",
            Some(&json!({"args": "{not json"})),
        )
        .await;
    assert_eq!(status, 422);
    let (status, _) = server
        .http(
            "POST",
            "/v1/sessions/s/requests",
            Some(&json!({"questions": questions(&["A"]), "timeout_s": 0})),
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
            server
                .http("POST", "/v1/sessions/s/requests", Some(&post))
                .await
                .0,
            201
        );
        tab.recv_until("request").await;
    }
    let (status, body) = server
        .http("DELETE", "/v1/sessions/s/requests/a", None)
        .await;
    assert_eq!((status, body["outcome"].as_str()), (200, Some("withdrawn")));
    assert_eq!(tab.recv_until("resolved").await["outcome"], "withdrawn");
    tab.send(&json!({"type": "decline", "id": "b"})).await;
    tab.recv_until("resolved").await;
    let (status, body) = server
        .http("DELETE", "/v1/sessions/s/requests/b", None)
        .await;
    assert_eq!((status, body["outcome"].as_str()), (200, Some("declined")));
    assert_eq!(body["result"], DECLINED);
    let (status, _) = server
        .http("DELETE", "/v1/sessions/s/requests/nope", None)
        .await;
    assert_eq!(status, 404);
}

/// With agent keys configured the API wants one too.
#[tokio::test(flavor = "multi_thread")]
async fn the_api_takes_the_agent_keys() {
    let mut config = test_config();
    config.agent_keys = vec![AgentKey::unscoped("k")];
    let server = TestServer::start_with(config).await;
    let post = json!({"questions": questions(&["Color"])});
    let (status, body) = server
        .http("POST", "/v1/sessions/s/requests", Some(&post))
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

/// pydantic-ai's deferred flow: a `ask_user_question` call as `DeferredToolRequests` carries
/// it (arguments as JSON text or an object, the tool call id), posted with the call id as the
/// request id and answered in a tab, comes back as exactly what the real
/// `ask_user_result` returns for `DeferredToolResults`.
#[tokio::test(flavor = "multi_thread")]
async fn a_deferred_tool_call_comes_back_as_ask_user_result() {
    use askgate_tests::oracle;
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("run-1").await;
    let args = json!({"questions": [
        {"header": "  Plan ", "question": "Which plan?", "options": [{"label": "Free"}, {"label": "Pro", "description": "Paid"}]},
        {"header": "Extras", "question": "Which extras?", "options": [{"label": "SSO"}, {"label": "Audit"}, {"label": "SLA"}], "multi_select": "yes"}
    ]});
    let calls = [
        ("call_Xy12", json!(args.to_string())),
        ("toolu_01AbC", args.clone()),
    ];
    let mut lines = Vec::new();
    let mut ours = Vec::new();
    for (tool_call_id, call_args) in calls {
        let (status, body) = server
            .http(
                "POST",
                "/v1/sessions/run-1/requests",
                Some(&json!({"id": tool_call_id, "args": call_args})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        let request = tab.recv_until("request").await;
        assert_eq!(
            request["request"]["questions"][0]["header"], "Plan",
            "stored stripped"
        );
        tab.send(
            &json!({"type": "answer", "id": tool_call_id, "response": {"answers": [
                {"header": "Extras", "selected": ["SLA", "SSO"]},
                {"header": "Plan", "custom_answer": "Team, if it exists"}
            ]}}),
        )
        .await;
        let (status, resolved) = server
            .http(
                "GET",
                &format!("/v1/sessions/run-1/requests/{tool_call_id}?wait_s=10"),
                None,
            )
            .await;
        assert_eq!(
            (status, resolved["outcome"].as_str()),
            (200, Some("answered")),
            "{resolved}"
        );
        let mut response = resolved["response"].clone();
        response.as_object_mut().unwrap().remove("cancelled");
        lines.push(json!({"dialect": "harness", "kind": "response", "input": {"request": args, "response": response}}).to_string());
        ours.push(resolved);
    }
    let python = oracle::harness_python().expect("the harness virtualenv");
    let script = oracle::repo_root().join("tests/oracle/harness_oracle.py");
    let real = oracle::ask(
        &python,
        &script,
        &lines,
        std::time::Duration::from_secs(120),
    )
    .expect("the oracle answers");
    for (ours, real) in ours.iter().zip(&real) {
        assert_eq!(real["ok"], true, "{real}");
        assert_eq!(ours["result"], real["normalized"]["result"]);
        assert_eq!(ours["model_text"], real["normalized"]["model_text"]);
    }
}

/// Every refusal of the HTTP API is a JSON `errors` list that names the field: a value of the
/// wrong type, a body that is not an object, a bad session id, a `wait_s` that is not a
/// number, a body over the frame limit; a capacity limit is 503 (try again), not "invalid".
#[tokio::test(flavor = "multi_thread")]
async fn every_refusal_names_its_field_in_json() {
    let mut config = test_config();
    config.limits.open_requests_per_session = 1;
    config.limits.max_agent_frame_bytes = 4096;
    let server = TestServer::start_with(config).await;
    let post = |body: Value, session: &'static str| {
        let path = format!("/v1/sessions/{session}/requests");
        let addr = server.addr;
        async move { http(addr, "POST", &path, Some(&body), None).await }
    };
    let refused = |(status, body): (u16, Value)| {
        let error = &body["errors"][0];
        (
            status,
            error["path"].as_str().unwrap_or("?").to_owned(),
            error["code"].as_str().unwrap_or("?").to_owned(),
        )
    };
    let color = questions(&["Color"]);
    let cases = [
        (
            json!({"id": 5, "questions": color}),
            "s",
            (422, "id", "wrong_type"),
        ),
        (
            json!({"dialect": ["harness"], "questions": color}),
            "s",
            (422, "dialect", "wrong_type"),
        ),
        (json!(["not", "an", "object"]), "s", (422, "", "wrong_type")),
        (
            json!({"questions": color}),
            "bad%20id",
            (422, "session", "invalid_value"),
        ),
        (
            json!({"questions": color, "title": "t".repeat(5000)}),
            "s",
            (413, "", "invalid_value"),
        ),
    ];
    for (body, session, (status, path, code)) in cases {
        let answer = refused(post(body.clone(), session).await);
        assert_eq!(answer, (status, path.to_owned(), code.to_owned()), "{body}");
    }

    let (status, _) = post(json!({"id": "r1", "questions": color}), "s").await;
    assert_eq!(status, 201);
    let full = post(json!({"id": "r2", "questions": color}), "s").await;
    assert_eq!(
        refused(full),
        (503, String::new(), "unavailable".to_owned())
    );

    for wait in ["abc", "", "-1", "nan"] {
        let path = format!("/v1/sessions/s/requests/r1?wait_s={wait}");
        let answer = refused(server.http("GET", &path, None).await);
        assert_eq!(
            answer,
            (400, "wait_s".to_owned(), "invalid_value".to_owned()),
            "{wait:?}"
        );
    }
    let (status, pending) = server
        .http("GET", "/v1/sessions/s/requests/r1?wait_s=0.05", None)
        .await;
    assert_eq!((status, pending["state"].as_str()), (200, Some("pending")));
    // Longer than the 60 s a poll may last: taken (and cut to 60 s), not refused.
    let (status, _) = server
        .http("GET", "/v1/sessions/s/requests/gone?wait_s=120", None)
        .await;
    assert_eq!(status, 404);
}
