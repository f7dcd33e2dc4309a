//! The Rust agent client against a live gateway: ask, concurrency, reconnect, withdrawal,
//! rejection, timeout, a wrong key and a key bound to other sessions.

use std::collections::HashMap;
use std::time::Duration;

use askgate::keys::AgentKey;
use askgate::scope::SessionScope;
use askgate_client::{Answered, Ask, Backoff, Client, ClientError, Outcome};
use askgate_protocol::close;
use askgate_protocol::harness::TIMED_OUT;
use askgate_testkit::frames::{answer, questions};
use askgate_testkit::ws::WsClient;
use askgate_tests::server::{TestServer, test_config};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// How long any step may take before the test fails.
const WAIT: Duration = Duration::from_secs(10);

/// `future`, or a failed test after [`WAIT`].
async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(WAIT, future)
        .await
        .expect("finished in time")
}

/// A client on the server's agent endpoint, no key.
async fn client(server: &TestServer) -> Client {
    within(Client::connect(&server.ws_url("/v1/agent"), None))
        .await
        .expect("connect")
}

/// `ask` on its own task, so the test can play the tab meanwhile.
fn spawn_ask(client: &Client, ask: Ask) -> JoinHandle<Result<Answered, ClientError>> {
    let client = client.clone();
    tokio::spawn(async move { client.ask(ask).await })
}

/// The ask's result, once it arrives.
async fn finished(
    asking: JoinHandle<Result<Answered, ClientError>>,
) -> Result<Answered, ClientError> {
    within(asking).await.expect("the ask task ran to the end")
}

/// Waits until the gateway holds no request: every outcome was acknowledged.
async fn no_requests_left(server: &TestServer) {
    within(async {
        while server.state.hub.census().2 != 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// An answer from a tab comes back as the ask's result, and the client acks it.
#[tokio::test(flavor = "multi_thread")]
async fn an_answer_comes_back_and_is_acked() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    // The base URL works as well as the endpoint.
    let client = within(Client::connect(&server.http_url(""), None))
        .await
        .expect("connect");
    let asking = spawn_ask(&client, Ask::new("s", questions(&["Color"])).with_id("r1"));
    let request = tab.recv_until("request").await;
    assert_eq!(request["request"]["id"], "r1");
    tab.send(&answer("r1", &["Color"], "Red")).await;
    let answered = finished(asking).await.expect("answered");
    assert_eq!(answered.outcome(), Outcome::Answered);
    assert_eq!(answered.id(), "r1");
    assert_eq!(answered.result(), &json!({"Color": ["Red"]}));
    assert_eq!(answered.model_text(), Some(r#"{"Color":["Red"]}"#));
    assert!(answered.by().is_some());
    assert_eq!(answered.user(), None, "the plain link names nobody");
    no_requests_left(&server).await;
}

/// A tab of session `s` as `user`, through a personal key, once it has its snapshot.
async fn named_tab(server: &TestServer, user: &str) -> WsClient {
    let session = askgate_protocol::SessionId::parse("s").unwrap();
    let expires = askgate::clock::now_ms() + 60_000;
    let key = server
        .state
        .hub
        .keys()
        .personal_key(&session, user, expires);
    let mut tab = server.raw_tab("s").await;
    tab.send(&json!({"type": "hello", "key": key})).await;
    tab.recv_until("snapshot").await;
    tab
}

/// An ask limited to one person: their personal link's tab answers, and the result names them.
#[tokio::test(flavor = "multi_thread")]
async fn an_answer_from_a_named_person_says_who() {
    let server = TestServer::start().await;
    let mut tab = named_tab(&server, "alice@example.com").await;
    let client = client(&server).await;
    let ask = Ask::new("s", questions(&["Color"]))
        .with_id("r1")
        .with_answerers(["alice@example.com"]);
    let asking = spawn_ask(&client, ask);
    let request = tab.recv_until("request").await;
    assert_eq!(
        request["request"]["answerers"],
        json!(["alice@example.com"])
    );
    tab.send(&answer("r1", &["Color"], "Red")).await;
    let answered = finished(asking).await.expect("answered");
    assert_eq!(answered.user(), Some("alice@example.com"));
    assert!(answered.by().is_some());
}

/// An ask escalated to bob: his tab is told, and his answer is the result.
#[tokio::test(flavor = "multi_thread")]
async fn an_escalation_asked_by_the_client_lets_its_people_answer() {
    let server = TestServer::start().await;
    let mut tab = named_tab(&server, "bob@example.com").await;
    let client = client(&server).await;
    let ask = Ask::new("s", questions(&["Color"]))
        .with_id("r1")
        .with_answerers(["alice@example.com"])
        .with_reminder(Duration::from_millis(100))
        .with_escalation(Duration::from_millis(200), ["bob@example.com"]);
    let asking = spawn_ask(&client, ask);
    let escalated = tab.recv_until("escalated").await;
    assert_eq!(escalated["to"], json!(["bob@example.com"]));
    tab.send(&answer("r1", &["Color"], "Red")).await;
    let answered = finished(asking).await.expect("answered");
    assert_eq!(answered.user(), Some("bob@example.com"));
}

/// Twenty asks share one connection; answered in reverse order, each gets its own answer.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_asks_each_get_their_own_answer() {
    const LABELS: [&str; 3] = ["Red", "Blue", "Green"];
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    let client = client(&server).await;
    let asks: Vec<_> = (0..20)
        .map(|i| {
            let header = format!("Q{i}");
            (i, spawn_ask(&client, Ask::new("s", questions(&[&header]))))
        })
        .collect();
    // The ids are the client's own; learn which is which from the headers.
    let mut ids = Vec::new();
    for _ in 0..20 {
        let request = tab.recv_until("request").await;
        let id = request["request"]["id"].as_str().expect("id").to_owned();
        let header = request["request"]["questions"][0]["header"]
            .as_str()
            .expect("header")
            .to_owned();
        ids.push((id, header));
    }
    for (id, header) in ids.iter().rev() {
        let i: usize = header[1..].parse().expect("Q<n>");
        tab.send(&answer(id, &[header], LABELS[i % 3])).await;
    }
    let mut results = HashMap::new();
    for (i, asking) in asks {
        let answered = finished(asking).await.expect("answered");
        results.insert(i, answered.result().clone());
    }
    for i in 0..20 {
        assert_eq!(
            results[&i],
            json!({ format!("Q{i}"): [LABELS[i % 3]] }),
            "ask {i}"
        );
    }
    no_requests_left(&server).await;
}

/// An answer given while the agent is disconnected reaches the ask once it reconnects, and
/// is acked.
#[tokio::test(flavor = "multi_thread")]
async fn an_answer_given_while_disconnected_arrives_after_reconnect() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    // A fixed first wait, so the answer most likely lands while the client is away.
    let backoff = Backoff {
        initial: Duration::from_millis(200),
        jitter: 0.0,
        ..Backoff::default()
    };
    let client = within(
        Client::builder(server.ws_url("/v1/agent"))
            .backoff(backoff)
            .connect(),
    )
    .await
    .expect("connect");
    let asking = spawn_ask(&client, Ask::new("s", questions(&["Color"])).with_id("r"));
    tab.recv_until("request").await;
    server.state.hub.kick_agents(close::GOING_AWAY);
    // The tab sees the agent leave the session: from here it answers an absent agent.
    loop {
        let presence = tab.recv_until("presence").await;
        if presence["agent_online"] == false {
            break;
        }
    }
    tab.send(&answer("r", &["Color"], "Blue")).await;
    assert_eq!(tab.recv_until("resolved").await["outcome"], "answered");
    let answered = finished(asking)
        .await
        .expect("answered after the reconnect");
    assert_eq!(answered.result(), &json!({"Color": ["Blue"]}));
    no_requests_left(&server).await;
}

/// Dropping an ask future withdraws its request: tabs hear `resolved` with `withdrawn`.
#[tokio::test(flavor = "multi_thread")]
async fn dropping_an_ask_withdraws_it() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    let client = client(&server).await;
    let ask = client.ask(Ask::new("s", questions(&["Color"])).with_id("r"));
    // Nobody answers: the timeout drops the future (time itself is the subject here).
    assert!(
        tokio::time::timeout(Duration::from_millis(300), ask)
            .await
            .is_err()
    );
    let resolved = tab.recv_until("resolved").await;
    assert_eq!(resolved["id"], "r");
    assert_eq!(resolved["outcome"], "withdrawn");
    no_requests_left(&server).await;
}

/// A request asked by someone else (an earlier run, say) is withdrawn by id and its outcome
/// returned; one the gateway does not hold is `not_found`; an outcome collected over HTTP is
/// acknowledged by id.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_is_withdrawn_and_acknowledged_by_id() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    let mut earlier_run = server.agent().await;
    earlier_run
        .send(&askgate_testkit::frames::ask("s", "r", &["Color"], None))
        .await;
    earlier_run.recv_type("accepted").await;
    let client = client(&server).await;

    let withdrawn = within(client.withdraw("s", "r")).await.expect("withdrawn");
    assert_eq!(withdrawn.outcome(), Outcome::Withdrawn);
    assert_eq!(tab.recv_until("resolved").await["outcome"], "withdrawn");

    let error = within(client.withdraw("s", "never-asked"))
        .await
        .expect_err("not held");
    assert!(
        matches!(&error, ClientError::Gateway { code, .. } if code == "not_found"),
        "{error}"
    );

    earlier_run
        .send(&askgate_testkit::frames::ask("s", "r2", &["Color"], None))
        .await;
    earlier_run.recv_type("accepted").await;
    tab.recv_until("request").await;
    tab.send(&answer("r2", &["Color"], "Red")).await;
    earlier_run.recv_type("outcome").await;
    client.acknowledge("s", "r2").expect("sent");
    no_requests_left(&server).await;
}

/// Questions the gateway refuses come back as `Rejected`, with the path of the problem.
#[tokio::test(flavor = "multi_thread")]
async fn invalid_questions_are_rejected_with_a_path() {
    let server = TestServer::start().await;
    let client = client(&server).await;
    let long_label = "x".repeat(60);
    let questions = json!([{"header": "Color", "question": "Which?",
        "options": [{"label": long_label}, {"label": "Blue"}]}]);
    let error = within(client.ask(Ask::new("s", questions)))
        .await
        .expect_err("rejected");
    let errors = error.field_errors().expect("a rejection");
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["questions[0].options[0].label"], "{error}");
    assert_eq!(server.state.hub.census().2, 0, "nothing was stored");
}

/// A deadline that passes unanswered ends the ask as `timed_out`, with the harness's sentence.
#[tokio::test(flavor = "multi_thread")]
async fn an_unanswered_ask_times_out() {
    let server = TestServer::start().await;
    let client = client(&server).await;
    let ask = Ask::new("s", questions(&["Color"])).with_timeout(Duration::from_millis(300));
    let answered = within(client.ask(ask)).await.expect("an outcome");
    assert_eq!(answered.outcome(), Outcome::TimedOut);
    assert_eq!(answered.model_text(), Some(TIMED_OUT));
    assert_eq!(answered.result(), &Value::from(TIMED_OUT));
    no_requests_left(&server).await;
}

/// A wrong agent key stops the client with a fatal 4401 instead of a reconnect loop.
#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_key_is_fatal() {
    let mut config = test_config();
    config.agent_keys = vec![AgentKey::unscoped("k")];
    let server = TestServer::start_with(config).await;
    let url = server.ws_url("/v1/agent");
    // The gateway upgrades and then closes, so the error shows on connect or on the first call.
    let error = match within(Client::connect(&url, Some("wrong".into()))).await {
        Err(error) => error,
        Ok(client) => {
            let error = within(client.ask(Ask::new("s", questions(&["Color"]))))
                .await
                .expect_err("fatal");
            // Stopped for good: a later call fails at once with the same reason.
            let again = within(client.open(None)).await.expect_err("still fatal");
            assert_eq!(again.fatal_code(), Some(close::BAD_KEY), "{again}");
            error
        }
    };
    assert_eq!(error.fatal_code(), Some(close::BAD_KEY), "{error}");
}

/// The right agent key is sent as a bearer token and lets the client open a session.
#[tokio::test(flavor = "multi_thread")]
async fn the_right_key_opens_a_session() {
    let mut config = test_config();
    config.agent_keys = vec![AgentKey::unscoped("k")];
    let server = TestServer::start_with(config).await;
    let client = within(Client::connect(
        &server.ws_url("/v1/agent"),
        Some("k".into()),
    ))
    .await
    .expect("connect");
    let opened = within(client.open(Some("s1"))).await.expect("opened");
    assert_eq!(opened.session, "s1");
    assert!(
        opened.viewer_url.contains("/s/s1#k="),
        "{}",
        opened.viewer_url
    );
}

/// Dropping the last client along with an ask in flight still withdraws the request before
/// the connection task ends.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_dropped_mid_ask_still_withdraws() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    let client = client(&server).await;
    let asking = spawn_ask(&client, Ask::new("s", questions(&["Color"])).with_id("r"));
    tab.recv_until("request").await;
    asking.abort();
    drop(client);
    let resolved = tab.recv_until("resolved").await;
    assert_eq!(resolved["id"], "r");
    assert_eq!(resolved["outcome"], "withdrawn");
    no_requests_left(&server).await;
}

/// A gateway that cannot be reached fails `connect` with a connect error.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_gateway_fails_connect() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let error = within(Client::connect(&format!("ws://{addr}/v1/agent"), None))
        .await
        .expect_err("nobody listens");
    assert!(matches!(error, ClientError::Connect { .. }), "{error}");
}

/// A client whose key `ka` may act only on sessions starting `team-a-`.
async fn scoped_client() -> (TestServer, Client) {
    let mut config = test_config();
    let scope = SessionScope::prefix("team-a-").expect("a valid prefix");
    config.agent_keys = vec![AgentKey::scoped("ka", scope)];
    let server = TestServer::start_with(config).await;
    let client = within(Client::connect(
        &server.ws_url("/v1/agent"),
        Some("ka".into()),
    ))
    .await
    .expect("connect");
    (server, client)
}

/// Asserts `error` is the refusal of `session` to a key bound to `team-a-`.
fn assert_forbidden(error: &ClientError, session: &str) {
    match error {
        ClientError::Forbidden {
            session: refused,
            message,
        } => {
            assert_eq!(refused, session, "{error}");
            assert!(message.contains("\"team-a-\""), "names the prefix: {error}");
        }
        other => panic!("expected Forbidden for {session}, got {other:?}"),
    }
    assert!(error.to_string().contains("forbidden"), "{error}");
}

/// An `open` outside the key's scope fails with `Forbidden` (its `error` names no session:
/// it answers that open, not the ones around it), instead of waiting for an `opened`.
#[tokio::test(flavor = "multi_thread")]
async fn an_open_outside_the_keys_scope_is_forbidden() {
    let (_server, client) = scoped_client().await;
    let (before, refused, after) = within(async {
        tokio::join!(
            client.open(Some("team-a-1")),
            client.open(Some("team-b-1")),
            client.open(Some("team-a-2")),
        )
    })
    .await;
    assert_eq!(before.expect("in scope").session, "team-a-1");
    assert_forbidden(&refused.expect_err("out of scope"), "team-b-1");
    assert_eq!(after.expect("in scope").session, "team-a-2");
}

/// An ask outside the key's scope fails with `Forbidden`, not as questions to fix.
#[tokio::test(flavor = "multi_thread")]
async fn an_ask_outside_the_keys_scope_is_forbidden() {
    let (server, client) = scoped_client().await;
    let ask = Ask::new("team-b-1", questions(&["Color"])).with_id("r");
    let error = within(client.ask(ask)).await.expect_err("out of scope");
    assert_forbidden(&error, "team-b-1");
    assert_eq!(server.state.hub.census().2, 0, "nothing was stored");
}

/// A withdrawal by id outside the key's scope fails with `Forbidden` instead of waiting.
#[tokio::test(flavor = "multi_thread")]
async fn a_withdrawal_outside_the_keys_scope_is_forbidden() {
    let (_server, client) = scoped_client().await;
    let error = within(client.withdraw("team-b-1", "r"))
        .await
        .expect_err("out of scope");
    assert_forbidden(&error, "team-b-1");
    // The client goes on.
    within(client.open(Some("team-a-1")))
        .await
        .expect("in scope");
}

/// The session ids a URL path would resolve away are refused before anything is sent.
#[tokio::test(flavor = "multi_thread")]
async fn dot_session_ids_are_refused_locally() {
    let server = TestServer::start().await;
    let client = client(&server).await;
    for dots in [".", ".."] {
        let error = within(client.open(Some(dots)))
            .await
            .expect_err("not a session id");
        let errors = error.field_errors().expect("refused by the client");
        assert_eq!(errors[0].path, "session", "{dots}: {error}");
        assert!(
            errors[0].message.contains("directory step"),
            "{dots}: {error}"
        );
    }
}
