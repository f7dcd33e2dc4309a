//! The live gateway through real sockets: ask, fan-out, answer, decline, timeout, withdraw.

use askgate_testkit::frames::{answer, ask, error_paths};
use askgate_tests::server::TestServer;
use serde_json::{Value, json};

const TIMED_OUT: &str = "The user did not answer in time. Continue without the answer: make a reasonable choice and say which one you made.";
const DECLINED: &str = "The user declined to answer. Continue without the answer, or ask differently if it is essential.";

/// An ask reaches every tab of the session, and only them.
#[tokio::test(flavor = "multi_thread")]
async fn ask_fans_out_to_every_tab_of_the_session() {
    let server = TestServer::start().await;
    let mut tabs = Vec::new();
    for _ in 0..5 {
        tabs.push(server.tab("s1").await.0);
    }
    let (mut other, _) = server.tab("s2").await;
    let mut agent = server.agent().await;
    agent.send(&ask("s1", "r1", &["Color"], None)).await;
    let accepted = agent.recv_type("accepted").await;
    assert_eq!(accepted["id"], "r1");
    assert_eq!(accepted["deadline_ms"], json!(null));
    assert!(
        accepted["viewer_url"]
            .as_str()
            .unwrap()
            .contains("/s/s1#k=")
    );
    for tab in &mut tabs {
        let request = tab.recv_until("request").await;
        assert_eq!(request["request"]["id"], "r1");
        assert_eq!(
            request["request"]["questions"][0]["options"][0]["description"],
            json!(null)
        );
    }
    // The other session's tab hears nothing of r1: the first request it is shown is one of
    // its own session, asked after r1 reached every tab (a frame about r1 would come first).
    agent.send(&ask("s2", "r2", &["Size"], None)).await;
    agent.recv_type("accepted").await;
    let shown = other.recv_until("request").await;
    assert_eq!(shown["request"]["id"], "r2", "{shown}");
}

/// The first answer wins; every tab hears `resolved`; the agent gets the harness result.
#[tokio::test(flavor = "multi_thread")]
async fn an_answer_resolves_for_every_tab_and_the_agent() {
    let server = TestServer::start().await;
    let (mut a, _) = server.tab_as("s", Some("tab-a")).await;
    let (mut b, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    agent
        .send(&ask("s", "r", &["Color", "Size"], Some(60.0)))
        .await;
    agent.recv_type("accepted").await;
    a.recv_until("request").await;
    b.recv_until("request").await;
    a.send(
        &json!({"type": "answer", "id": "r", "response": {"answers": [
            {"header": "Size", "selected": ["Blue"]},
            {"header": "Color", "custom_answer": "Teal, please"}
        ]}}),
    )
    .await;
    for tab in [&mut a, &mut b] {
        let resolved = tab.recv_until("resolved").await;
        assert_eq!(resolved["outcome"], "answered");
        assert_eq!(resolved["by"], "tab-a");
    }
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["outcome"], "answered");
    assert_eq!(outcome["by"], "tab-a");
    assert_eq!(
        outcome["result"],
        json!({"Size": ["Blue"], "Color": ["Teal, please"]})
    );
    assert_eq!(
        outcome["model_text"],
        r#"{"Size":["Blue"],"Color":["Teal, please"]}"#
    );
    assert_eq!(outcome["response"]["cancelled"], false);
    // A rival answer afterwards is refused.
    b.send(&answer("r", &["Color", "Size"], "Red")).await;
    let rejected = b.recv_until("answer_rejected").await;
    assert_eq!(rejected["errors"][0]["message"], "already resolved");
}

/// A late answer is "already resolved" even once the agent has acked the outcome and the
/// gateway forgot it; an answer to an id never asked is told there is no such request.
#[tokio::test(flavor = "multi_thread")]
async fn a_late_answer_after_the_ack_is_already_resolved() {
    let server = TestServer::start().await;
    let (mut tab, _agent) = server.answered_request("s", "r").await;
    let ack = "/v1/sessions/s/requests/r/ack";
    assert_eq!(server.http("POST", ack, None).await.0, 204);
    let (status, _) = server.http("GET", "/v1/sessions/s/requests/r", None).await;
    assert_eq!(status, 404, "forgotten");
    tab.send(&answer("r", &["Color"], "Blue")).await;
    let rejected = tab.recv_until("answer_rejected").await;
    assert_eq!(rejected["errors"][0]["message"], "already resolved");
    tab.send(&answer("never-asked", &["Color"], "Blue")).await;
    let rejected = tab.recv_until("answer_rejected").await;
    assert_eq!(
        rejected["errors"][0]["message"],
        "no open request with this id"
    );
}

/// An answer that does not fit is rejected with the harness's message; the request stays open.
#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_answer_is_rejected_and_the_request_stays_open() {
    let server = TestServer::start().await;
    let (mut tab, mut agent) = server.asked_request("s", "r").await;
    tab.send(&answer("r", &["Color"], "Purple")).await;
    let rejected = tab.recv_until("answer_rejected").await;
    assert_eq!(
        rejected["errors"][0]["message"],
        "answer for 'Color' picked options it does not offer: ['Purple']"
    );
    assert_eq!(
        rejected["errors"][0]["path"],
        "response.answers[0].selected"
    );
    tab.send(&answer("r", &["Color"], "Red")).await;
    assert_eq!(tab.recv_until("resolved").await["outcome"], "answered");
    assert_eq!(
        agent.recv_type("outcome").await["result"],
        json!({"Color": ["Red"]})
    );
}

/// A decline resolves with the harness's DECLINED sentence.
#[tokio::test(flavor = "multi_thread")]
async fn decline_gives_the_declined_sentence() {
    let server = TestServer::start().await;
    let (mut tab, mut agent) = server.asked_request("s", "r").await;
    tab.send(&json!({"type": "decline", "id": "r"})).await;
    assert_eq!(tab.recv_until("resolved").await["outcome"], "declined");
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["outcome"], "declined");
    assert_eq!(outcome["result"], DECLINED);
    assert_eq!(
        outcome["response"],
        json!({"answers": [], "cancelled": true})
    );
}

/// At the deadline the request times out: tabs and agent hear it within 50 ms of it.
#[tokio::test(flavor = "multi_thread")]
async fn the_deadline_times_the_request_out_promptly() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    agent.send(&ask("s", "r", &["Color"], Some(0.3))).await;
    let deadline_ms = agent.recv_type("accepted").await["deadline_ms"]
        .as_u64()
        .unwrap();
    tab.recv_until("request").await;
    let resolved = tab.recv_until("resolved").await;
    let late_by = askgate::clock::now_ms().saturating_sub(deadline_ms);
    assert_eq!(resolved["outcome"], "timed_out");
    assert!(late_by <= 50, "resolved {late_by} ms after the deadline");
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["result"], TIMED_OUT);
    assert_eq!(outcome["model_text"], TIMED_OUT);
}

/// `cancel` withdraws: tabs drop it, the agent gets a `withdrawn` outcome.
#[tokio::test(flavor = "multi_thread")]
async fn cancel_withdraws_the_request() {
    let server = TestServer::start().await;
    let (mut tab, mut agent) = server.asked_request("s", "r").await;
    agent
        .send(&json!({"type": "cancel", "session": "s", "id": "r"}))
        .await;
    assert_eq!(tab.recv_until("resolved").await["outcome"], "withdrawn");
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["outcome"], "withdrawn");
    // The snapshot of a tab that arrives now has nothing open.
    let (_, snapshot) = server.tab("s").await;
    assert_eq!(snapshot["requests"], json!([]));
}

/// A late tab gets every open request, oldest first, with the server's clock.
#[tokio::test(flavor = "multi_thread")]
async fn a_late_tab_gets_the_snapshot_with_remaining_time() {
    let server = TestServer::start().await;
    let mut agent = server.agent().await;
    for id in ["first", "second", "third"] {
        agent.send(&ask("s", id, &["Color"], Some(120.0))).await;
        agent.recv_type("accepted").await;
    }
    let (_, snapshot) = server.tab("s").await;
    let ids: Vec<&str> = snapshot["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["first", "second", "third"]);
    let now = snapshot["now_ms"].as_u64().unwrap();
    let deadline = snapshot["requests"][0]["deadline_ms"].as_u64().unwrap();
    assert!(deadline > now && deadline - now <= 120_000);
    assert_eq!(snapshot["agent_online"], true);
}

/// A default is refused with the path of what is wrong: one that does not fit the questions,
/// one without a deadline; the agent's ask is refused whole, and a good one is taken.
#[tokio::test(flavor = "multi_thread")]
async fn a_bad_default_is_refused_with_its_path() {
    let server = TestServer::start().await;
    let mut agent = server.agent().await;
    let mut frame = ask("s", "r", &["Color"], Some(30.0));
    frame["default"] = answer("r", &["Color"], "Purple")["response"].clone();
    agent.send(&frame).await;
    let rejected = agent.recv_type("rejected").await;
    assert!(
        error_paths(&rejected)[0].starts_with("default"),
        "{rejected}"
    );
    let mut frame = ask("s", "r", &["Color"], None);
    frame["default"] = answer("r", &["Color"], "Red")["response"].clone();
    agent.send(&frame).await;
    let rejected = agent.recv_type("rejected").await;
    assert_eq!(error_paths(&rejected), ["default"]);
    frame["timeout_s"] = json!(30);
    agent.send(&frame).await;
    assert_eq!(agent.recv_type("accepted").await["id"], "r");
}

/// Asks are validated exactly as the harness would; errors carry paths.
#[tokio::test(flavor = "multi_thread")]
async fn a_bad_ask_is_rejected_with_paths() {
    let server = TestServer::start().await;
    let mut agent = server.agent().await;
    let mut frame = ask("s", "r", &["Color", "COLOR"], Some(-1.0));
    frame["questions"][0]["options"][1]["label"] = json!("x".repeat(51));
    agent.send_unchecked(&frame).await;
    let rejected = agent.recv_type("rejected").await;
    let paths = error_paths(&rejected);
    assert_eq!(
        paths,
        [
            "timeout_s",
            "questions[0].options[1].label",
            "questions[1].header"
        ]
    );
    assert_eq!(rejected["id"], "r");

    // A field of the wrong type is rejected at its path too, not the whole frame refused.
    let mut frame = ask("s", "r", &["Color"], None);
    frame["id"] = json!(7);
    frame["dialect"] = json!(["harness"]);
    agent.send_unchecked(&frame).await;
    let rejected = agent.recv_type("rejected").await;
    let errors: Vec<(&str, &str)> = rejected["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap(), e["code"].as_str().unwrap()))
        .collect();
    assert_eq!(errors, [("id", "wrong_type"), ("dialect", "wrong_type")]);
    assert_eq!(rejected["session"], "s");
    assert_eq!(rejected["id"], Value::Null);
    let mut frame = ask("s", "r", &["Color"], None);
    frame.as_object_mut().unwrap().remove("session");
    agent.send_unchecked(&frame).await;
    let rejected = agent.recv_type("rejected").await;
    assert_eq!(rejected["errors"][0]["path"], "session", "{rejected}");
    assert_eq!(rejected["errors"][0]["code"], "missing_field", "{rejected}");
}
