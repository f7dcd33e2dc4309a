//! People, not tabs: personal links, a trusted proxy's header, `--require-identity`, and
//! `answerers`. Every refusal is checked to have resolved nothing.

use std::time::Duration;

use askgate::config::PeopleSettings;
use askgate::hub::Link;
use askgate::people::proxy::Network;
use askgate::people::{Groups, Person};
use askgate_protocol::SessionId;
use askgate_protocol::wire::Via;
use askgate_testkit::TIMEOUT;
use askgate_testkit::frames::{answer, ask};
use askgate_testkit::ws::WsClient;
use askgate_tests::server::{TestServer, test_config};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// A personal link for `user` in `session`, from the HTTP API: its key.
async fn personal_key(server: &TestServer, session: &str, user: &str) -> String {
    let (status, body) = server
        .http(
            "POST",
            &format!("/v1/sessions/{session}/links"),
            Some(&json!({"user": user, "ttl_s": 600})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let url = body["url"].as_str().unwrap();
    assert!(
        url.starts_with(&server.http_url(&format!("/s/{session}#k="))),
        "{url}"
    );
    url.split("#k=").nth(1).unwrap().to_owned()
}

/// A tab that said hello with `key`: it and its snapshot.
async fn tab_with_key(server: &TestServer, session: &str, key: &str) -> (WsClient, Value) {
    let mut tab = server.raw_tab(session).await;
    tab.send(&json!({"type": "hello", "key": key})).await;
    let snapshot = tab.recv_type("snapshot").await;
    (tab, snapshot)
}

/// The close code and reason a tab saying hello with `key` gets.
async fn refused_hello(server: &TestServer, session: &str, key: &str) -> (u16, String) {
    let mut tab = server.raw_tab(session).await;
    tab.send(&json!({"type": "hello", "key": key})).await;
    tab.closed_with_reason().await
}

/// Whether request `id` of `session` is still pending, by the HTTP API.
async fn pending(server: &TestServer, session: &str, id: &str) -> bool {
    let (status, body) = server
        .http(
            "GET",
            &format!("/v1/sessions/{session}/requests/{id}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["state"] == "pending"
}

fn people_config(people: PeopleSettings) -> askgate::config::Config {
    askgate::config::Config {
        people,
        ..test_config()
    }
}

#[tokio::test]
async fn a_personal_link_names_its_person_and_every_other_key_is_refused_with_its_reason() {
    let server = TestServer::start().await;
    let mut agent = server.agent().await;
    agent.send(&ask("s1", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;

    let key = personal_key(&server, "s1", "alice@example.com").await;
    let (_alice, snapshot) = tab_with_key(&server, "s1", &key).await;
    assert_eq!(
        snapshot["you"],
        json!({"user": "alice@example.com", "via": "personal-link", "may_answer": true})
    );
    // The plain link is an anonymous link holder.
    let (_anonymous, snapshot) = server.tab("s1").await;
    assert_eq!(
        snapshot["you"],
        json!({"user": null, "via": "session-link", "may_answer": true})
    );

    // The socket frame gives the same kind of link.
    agent
        .send(&json!({"type": "link", "session": "s1", "user": "bob@example.com", "ttl_s": 60}))
        .await;
    let link = agent.recv_until("link").await;
    assert_eq!(
        (&link["session"], &link["user"]),
        (&json!("s1"), &json!("bob@example.com"))
    );
    let now = askgate::clock::now_ms();
    let expires = link["expires_ms"].as_u64().unwrap();
    assert!((now + 55_000..=now + 60_000).contains(&expires), "{link}");
    let bob_key = link["url"].as_str().unwrap().split("#k=").nth(1).unwrap();
    let (_bob, snapshot) = tab_with_key(&server, "s1", bob_key).await;
    assert_eq!(snapshot["you"]["user"], "bob@example.com");

    let keys = server.state.hub.keys();
    let s1 = SessionId::parse("s1").unwrap();
    let expired = keys.personal_key(&s1, "alice@example.com", now - 1);
    assert_eq!(
        refused_hello(&server, "s1", &expired).await,
        (
            4401,
            "this personal link has expired; ask for a new one".into()
        )
    );
    let elsewhere = personal_key(&server, "s2", "alice@example.com").await;
    assert_eq!(
        refused_hello(&server, "s1", &elsewhere).await,
        (4401, "this personal link is for another session".into())
    );
    // Bob's name under alice's signature.
    let parts: Vec<&str> = key.split('.').collect();
    let bob_parts: Vec<&str> = bob_key.split('.').collect();
    let forged = [parts[0], parts[1], bob_parts[2], parts[3], parts[4]].join(".");
    assert_eq!(
        refused_hello(&server, "s1", &forged).await,
        (4401, "wrong viewer key".into())
    );
    assert!(
        pending(&server, "s1", "r1").await,
        "a refused tab resolved nothing"
    );
}

#[tokio::test]
async fn a_link_needs_a_name_and_a_lifetime_within_bounds() {
    let server = TestServer::start().await;
    for (body, path) in [
        (json!({}), "user"),
        (json!({"user": 5}), "user"),
        (json!({"user": ""}), "user"),
        (json!({"user": " alice"}), "user"),
        (json!({"user": "a\nb"}), "user"),
        (json!({"user": "alice", "ttl_s": 0}), "ttl_s"),
        (json!({"user": "alice", "ttl_s": "1"}), "ttl_s"),
        (json!({"user": "alice", "ttl_s": 91 * 24 * 3600}), "ttl_s"),
    ] {
        let (status, reply) = server
            .http("POST", "/v1/sessions/s1/links", Some(&body))
            .await;
        assert_eq!(status, 422, "{body}: {reply}");
        assert_eq!(reply["errors"][0]["path"], path, "{body}: {reply}");
    }
    let (status, _) = server
        .http(
            "POST",
            "/v1/sessions/not%20a%20session/links",
            Some(&json!({"user": "alice"})),
        )
        .await;
    assert_eq!(status, 404);
    let mut agent = server.agent().await;
    agent
        .send_unchecked(&json!({"type": "link", "session": "s1", "user": ""}))
        .await;
    let error = agent.recv_until("error").await;
    assert_eq!(error["code"], "bad_link", "{error}");
    assert_eq!(error["session"], "s1");
    assert!(
        error["message"].as_str().unwrap().starts_with("user: "),
        "{error}"
    );
}

#[tokio::test]
async fn only_the_answerers_may_answer_and_the_outcome_names_the_person() {
    let groups = Groups::parse(r#"{"ops": ["carol@example.com"]}"#).unwrap();
    let server = TestServer::start_with(people_config(PeopleSettings {
        groups,
        ..PeopleSettings::default()
    }))
    .await;
    let mut agent = server.agent().await;
    let mut only_alice = ask("s1", "r1", &["Color"], None);
    only_alice["answerers"] = json!(["alice@example.com", "group:ops"]);
    agent.send(&only_alice).await;
    agent.recv_until("accepted").await;

    let bob_key = personal_key(&server, "s1", "bob@example.com").await;
    let (mut bob, snapshot) = tab_with_key(&server, "s1", &bob_key).await;
    assert_eq!(
        snapshot["requests"][0]["answerers"],
        json!(["alice@example.com", "group:ops"])
    );
    let (mut anonymous, _) = server.tab("s1").await;
    for (who, frame) in [
        ("bob", answer("r1", &["Color"], "Red")),
        ("anonymous", answer("r1", &["Color"], "Red")),
        ("bob", json!({"type": "decline", "id": "r1"})),
    ] {
        let tab = if who == "bob" {
            &mut bob
        } else {
            &mut anonymous
        };
        tab.send(&frame).await;
        let refused = tab.recv_until("answer_rejected").await;
        assert_eq!(refused["errors"][0]["code"], "forbidden", "{refused}");
        assert_eq!(
            refused["errors"][0]["message"],
            "only alice@example.com, group:ops may answer this request"
        );
    }
    assert!(
        pending(&server, "s1", "r1").await,
        "a refused answer resolved nothing"
    );
    agent.silent_for(Duration::from_millis(200)).await;

    let carol_key = personal_key(&server, "s1", "carol@example.com").await;
    let (mut carol, snapshot) = tab_with_key(&server, "s1", &carol_key).await;
    assert_eq!(snapshot["you"]["groups"], json!(["ops"]));
    carol.send(&answer("r1", &["Color"], "Blue")).await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["user"], "carol@example.com");
    assert_eq!(outcome["by"], snapshot["tab"]);
    let resolved = bob.recv_until("resolved").await;
    assert_eq!(
        (&resolved["user"], &resolved["via"]),
        (&json!("carol@example.com"), &json!("personal-link"))
    );
    let (_, looked_up) = server
        .http("GET", "/v1/sessions/s1/requests/r1", None)
        .await;
    assert_eq!(looked_up["user"], "carol@example.com");
    assert_eq!(looked_up["by"], snapshot["tab"]);
    // A tab joining later sees who answered in the finished list.
    let (_late, snapshot) = server.tab("s1").await;
    assert_eq!(snapshot["finished"][0]["user"], "carol@example.com");
    assert_eq!(snapshot["finished"][0]["via"], "personal-link");

    // An anonymous answer where anyone may answer names nobody.
    agent.send(&ask("s1", "r2", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    anonymous.recv_until("request").await;
    anonymous.send(&answer("r2", &["Color"], "Red")).await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["user"], Value::Null);
    assert!(outcome["by"].is_string());
}

#[tokio::test]
async fn an_ask_names_one_to_32_known_answerers() {
    let server = TestServer::start().await;
    let mut agent = server.agent().await;
    let many: Vec<String> = (0..33).map(|i| format!("p{i}@example.com")).collect();
    for (answerers, path) in [
        (json!([]), "answerers"),
        (json!(many), "answerers"),
        (json!("alice"), "answerers"),
        (json!(["alice", 3]), "answerers[1]"),
        (json!(["alice", ""]), "answerers[1]"),
        (json!(["group:"]), "answerers[0]"),
        (json!(["alice", "group:nobody"]), "answerers[1]"),
    ] {
        let mut frame = ask("s1", "r1", &["Color"], None);
        frame["answerers"] = answerers.clone();
        agent.send_unchecked(&frame).await;
        let rejected = agent.recv_until("rejected").await;
        assert_eq!(
            rejected["errors"][0]["path"], path,
            "{answerers}: {rejected}"
        );
    }
    // HTTP takes them too, with the same checks.
    let (status, body) = server.http("POST", "/v1/sessions/s1/requests", Some(&json!({"id": "r9", "questions": askgate_testkit::frames::questions(&["Color"]), "answerers": ["group:nobody"]})))
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["errors"][0]["path"], "answerers[0]");
}

#[tokio::test]
async fn with_identity_required_anonymous_tabs_watch_only() {
    let server = TestServer::start_with(people_config(PeopleSettings {
        require_identity: true,
        ..PeopleSettings::default()
    }))
    .await;
    let mut agent = server.agent().await;
    agent.send(&ask("s1", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    let (mut anonymous, snapshot) = server.tab("s1").await;
    assert_eq!(snapshot["you"]["may_answer"], false);
    assert_eq!(
        snapshot["requests"][0]["id"], "r1",
        "watch-only tabs see every question"
    );
    anonymous.send(&answer("r1", &["Color"], "Red")).await;
    let refused = anonymous.recv_until("answer_rejected").await;
    assert_eq!(refused["errors"][0]["code"], "forbidden", "{refused}");
    assert!(pending(&server, "s1", "r1").await);

    let key = personal_key(&server, "s1", "alice@example.com").await;
    let (mut alice, snapshot) = tab_with_key(&server, "s1", &key).await;
    assert_eq!(snapshot["you"]["may_answer"], true);
    alice.send(&answer("r1", &["Color"], "Red")).await;
    assert_eq!(
        agent.recv_until("outcome").await["user"],
        "alice@example.com"
    );
    // Watch-only tabs see the outcome.
    assert_eq!(
        anonymous.recv_until("resolved").await["user"],
        "alice@example.com"
    );
}

async fn proxied_tab(server: &TestServer, session: &str, email: &str) -> Value {
    let url = server.ws_url(&format!("/v1/sessions/{session}/live"));
    let mut tab = WsClient::connect_with_headers(&url, &[("x-forwarded-email", email)]).await;
    tab.send(&json!({"type": "hello", "key": server.viewer_key(session)}))
        .await;
    tab.recv_type("snapshot").await
}

#[tokio::test]
async fn a_proxy_header_names_the_person_only_from_a_trusted_address() {
    let trusting = |network: &str| {
        people_config(PeopleSettings {
            user_header: Some("x-forwarded-email".parse().unwrap()),
            trusted_proxies: vec![Network::parse(network).unwrap()],
            require_identity: true,
            ..PeopleSettings::default()
        })
    };
    let server = TestServer::start_with(trusting("127.0.0.1/32")).await;
    let snapshot = proxied_tab(&server, "s1", "alice@example.com").await;
    assert_eq!(
        snapshot["you"],
        json!({"user": "alice@example.com", "via": "proxy", "may_answer": true})
    );

    // The test's connections come from 127.0.0.1, which this gateway does not trust.
    let server = TestServer::start_with(trusting("127.0.0.2/32")).await;
    let mut agent = server.agent().await;
    agent.send(&ask("s1", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    let url = server.ws_url("/v1/sessions/s1/live");
    let mut tab =
        WsClient::connect_with_headers(&url, &[("x-forwarded-email", "alice@example.com")]).await;
    tab.send(&json!({"type": "hello", "key": server.viewer_key("s1")}))
        .await;
    let snapshot = tab.recv_type("snapshot").await;
    assert_eq!(snapshot["you"]["user"], Value::Null, "{snapshot}");
    tab.send(&answer("r1", &["Color"], "Red")).await;
    let refused = tab.recv_until("answer_rejected").await;
    assert_eq!(refused["errors"][0]["code"], "forbidden");
    assert!(pending(&server, "s1", "r1").await);
    // Nothing a page says is identity: a name in the hello is not read.
    let mut tab = server.raw_tab("s1").await;
    tab.send(
        &json!({"type": "hello", "key": server.viewer_key("s1"), "user": "alice@example.com"}),
    )
    .await;
    assert_eq!(tab.recv_type("snapshot").await["you"]["user"], Value::Null);
}

#[tokio::test]
async fn a_tab_is_its_person_only_until_its_link_expires() {
    let server = TestServer::start().await;
    let mut agent = server.agent().await;
    agent.send(&ask("s1", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    let s1 = SessionId::parse("s1").unwrap();
    let keys = server.state.hub.keys();

    // A link with a few seconds left: the tab joins as alice, then is told, and closed. A
    // machine too busy to finish the join before the link runs out tries again with twice
    // the time, a few times.
    let mut ttl_ms = 4_000;
    let (mut alice, soon) = loop {
        let soon = askgate::clock::now_ms() + ttl_ms;
        let key = keys.personal_key(&s1, "alice@example.com", soon);
        let mut tab = server.raw_tab("s1").await;
        tab.send(&json!({"type": "hello", "key": key})).await;
        let joined = match tab.next_message(TIMEOUT).await {
            Some(Message::Text(text)) => serde_json::from_str::<Value>(text.as_str()).ok(),
            _ => None,
        };
        if askgate::clock::now_ms() < soon
            && let Some(snapshot) = joined.filter(|frame| frame["type"] == "snapshot")
        {
            assert_eq!(snapshot["you"]["user"], "alice@example.com");
            break (tab, soon);
        }
        assert!(ttl_ms < 32_000, "no join finished before its link expired");
        ttl_ms *= 2;
    };
    // A retried link can outlive a receive's timeout: the wait for the close starts at the
    // expiry (a moment on the clock, not an event), so the timeout is the gateway's alone.
    tokio::time::sleep(Duration::from_millis(
        soon.saturating_sub(askgate::clock::now_ms()),
    ))
    .await;
    assert_eq!(
        alice.closed_with_reason().await,
        (
            4401,
            "this personal link has expired; ask for a new one".into()
        )
    );
    assert!(
        askgate::clock::now_ms() >= soon,
        "closed at the expiry, not before"
    );

    // An answer taken at the expiry's very moment, its tab not yet closed: refused.
    let person =
        Person::named("alice@example.com", Via::PersonalLink).until(askgate::clock::now_ms());
    let (link, _queue) = Link::new(8);
    let edge = server
        .state
        .hub
        .join_tab(s1.clone(), None, person, link)
        .unwrap();
    let refused = edge
        .answer("r1", answer("r1", &["Color"], "Red")["response"].clone())
        .await
        .expect("the answer is refused");
    let refused: Value = serde_json::from_str(&refused.frame.text()).unwrap();
    assert_eq!(refused["type"], "answer_rejected");
    assert_eq!(refused["errors"][0]["code"], "forbidden", "{refused}");
    assert_eq!(
        refused["errors"][0]["message"],
        "this personal link has expired; ask for a new one"
    );
    let declined = edge.decline("r1", false).await;
    assert!(
        declined.is_some_and(|declined| declined.for_who),
        "a decline is refused as well, for who sent it"
    );
    drop(edge);
    assert!(
        pending(&server, "s1", "r1").await,
        "nothing was resolved after the expiry"
    );
    let answers: Vec<Value> = server
        .trail("s1")
        .await
        .into_iter()
        .filter(|entry| entry["user"] == "alice@example.com")
        .collect();
    assert!(
        answers.is_empty(),
        "the trail records nothing by alice: {answers:?}"
    );

    // The same person, with a link still good, answers.
    let key = personal_key(&server, "s1", "alice@example.com").await;
    let (mut alice, _) = tab_with_key(&server, "s1", &key).await;
    alice.send(&answer("r1", &["Color"], "Red")).await;
    assert_eq!(
        agent.recv_until("outcome").await["user"],
        "alice@example.com"
    );
}
