//! Concurrency: rival answers, idempotent re-asks, agents that come and go, many sessions.

use std::collections::HashSet;
use std::time::Duration;

use askgate_testkit::frames::{answer, ask};
use askgate_testkit::ws::WsClient;
use askgate_tests::server::{TestServer, raise_open_file_limit, test_config};
use serde_json::json;

/// Ten tabs answer the same request at once, a hundred times over: each time exactly one
/// wins, every tab learns who, and the agent receives exactly one outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_one_of_ten_simultaneous_answers_wins() {
    // A hundred rounds go faster than a person clicks: lift the per-tab frame rate so the
    // test measures races, not the rate limit (which has its own test).
    let mut config = test_config();
    config.limits.tab_frames_per_second = 100_000;
    let server = TestServer::start_with(config).await;
    let mut tabs = Vec::new();
    for i in 0..10 {
        tabs.push(server.tab_as("s", Some(&format!("tab-{i}"))).await.0);
    }
    let mut agent = server.agent().await;
    for round in 0..100 {
        let id = format!("r{round}");
        agent.send(&ask("s", &id, &["Color"], None)).await;
        agent.recv_type("accepted").await;
        for tab in &mut tabs {
            assert_eq!(
                tab.recv_until("request").await["request"]["id"],
                id.as_str()
            );
        }
        // Everyone answers at once, each with its own pick.
        let labels = ["Red", "Blue", "Green"];
        let sends = tabs.iter_mut().enumerate().map(|(i, tab)| {
            let frame = answer(&id, &["Color"], labels[i % 3]);
            async move { tab.send(&frame).await }
        });
        futures_util::future::join_all(sends).await;
        let mut winners = HashSet::new();
        let mut refused = 0;
        for (i, tab) in tabs.iter_mut().enumerate() {
            // Each tab sees `resolved`; every tab but the winner also an `answer_rejected`,
            // in either order.
            let me = format!("tab-{i}");
            let mut resolved_by: Option<String> = None;
            let mut was_refused = false;
            loop {
                let done = match &resolved_by {
                    Some(by) => *by == me || was_refused,
                    None => false,
                };
                if done {
                    break;
                }
                let frame = tab.recv().await;
                match frame["type"].as_str() {
                    Some("resolved") => resolved_by = frame["by"].as_str().map(str::to_owned),
                    Some("answer_rejected") => {
                        assert_eq!(frame["errors"][0]["message"], "already resolved");
                        was_refused = true;
                    }
                    _ => {}
                }
            }
            winners.insert(resolved_by.unwrap_or_default());
            refused += usize::from(was_refused);
        }
        assert_eq!(
            winners.len(),
            1,
            "round {round}: every tab names the same winner"
        );
        assert_eq!(refused, 9, "round {round}: nine rivals are refused");
        let outcome = agent.recv_type("outcome").await;
        assert_eq!(outcome["id"], id.as_str());
        assert_eq!(outcome["by"], winners.iter().next().unwrap().as_str());
        agent
            .send(&json!({"type": "ack", "session": "s", "id": id}))
            .await;
    }
    agent.silent_for(Duration::from_millis(100)).await;
}

/// Re-sending an ask is idempotent; the same id with other questions is rejected.
#[tokio::test(flavor = "multi_thread")]
async fn re_asks_are_idempotent_and_conflicts_rejected() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    agent.send(&ask("s", "r", &["Color"], Some(60.0))).await;
    let first = agent.recv_type("accepted").await;
    // The request, and the presence that says the agent is online, in either order.
    tab.recv_all(&[
        |f| f["type"] == "request",
        |f| f["type"] == "presence" && f["agent_online"] == true,
    ])
    .await;
    agent.send(&ask("s", "r", &["Color"], Some(60.0))).await;
    let again = agent.recv_type("accepted").await;
    assert_eq!(
        first["deadline_ms"], again["deadline_ms"],
        "the original deadline stands"
    );
    tab.silent_for(Duration::from_millis(150)).await;
    agent.send(&ask("s", "r", &["Size"], Some(60.0))).await;
    let rejected = agent.recv_type("rejected").await;
    assert_eq!(rejected["errors"][0]["path"], "id");
    // Once resolved, a re-ask returns the stored outcome instead of a new question.
    tab.send(&answer("r", &["Color"], "Blue")).await;
    let outcome = agent.recv_type("outcome").await;
    agent.send(&ask("s", "r", &["Color"], Some(60.0))).await;
    assert_eq!(agent.recv_type("outcome").await, outcome);
    tab.recv_until("resolved").await;
    tab.silent_for(Duration::from_millis(150)).await;
}

/// An agent that disconnects loses nothing: a tab answers meanwhile, and the agent, back
/// and re-asking, gets the outcome once; after its ack the gateway forgets it.
#[tokio::test(flavor = "multi_thread")]
async fn an_outcome_waits_for_its_agent_and_goes_after_ack() {
    let server = TestServer::start().await;
    let (mut tab, agent) = server.asked_request("s", "r").await;
    agent.close().await;
    // Presence is the latest state, so `agent_online: true` may still come first.
    tab.recv_all(&[|f| f["type"] == "presence" && f["agent_online"] == false])
        .await;
    tab.send(&answer("r", &["Color"], "Green")).await;
    tab.recv_until("resolved").await;
    let mut agent = server.agent().await;
    agent.send(&ask("s", "r", &["Color"], None)).await;
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["result"], json!({"Color": ["Green"]}));
    agent.silent_for(Duration::from_millis(150)).await;
    agent
        .send(&json!({"type": "ack", "session": "s", "id": "r"}))
        .await;
    wait_for(|| server.state.hub.census().2 == 0).await;
    // Acked: a re-ask now is a new question.
    agent.send(&ask("s", "r", &["Color"], None)).await;
    agent.recv_type("accepted").await;
}

/// A thousand sessions with three tabs each, all asked at once: every request reaches its
/// three tabs, every one is answered, and the agents get each outcome exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_sessions_with_three_tabs_lose_and_double_nothing() {
    raise_open_file_limit();
    const SESSIONS: usize = 1000;
    let mut config = test_config();
    // Three thousand tabs, all from this machine's one address.
    config.limits.max_connections_per_address = None;
    let server = TestServer::start_with(config).await;
    let mut tabs: Vec<Vec<WsClient>> = Vec::with_capacity(SESSIONS);
    for s in 0..SESSIONS {
        let mut three = Vec::with_capacity(3);
        for _ in 0..3 {
            three.push(server.tab(&format!("s{s}")).await.0);
        }
        tabs.push(three);
    }
    // Four agent connections share the sessions.
    let mut agents = Vec::new();
    for _ in 0..4 {
        agents.push(server.agent().await);
    }
    for s in 0..SESSIONS {
        agents[s % 4]
            .send(&ask(
                &format!("s{s}"),
                &format!("r{s}"),
                &["Color"],
                Some(600.0),
            ))
            .await;
    }
    for (s, three) in tabs.iter_mut().enumerate() {
        for tab in three.iter_mut() {
            assert_eq!(
                tab.recv_until("request").await["request"]["id"],
                format!("r{s}")
            );
        }
        let label = ["Red", "Blue", "Green"][s % 3];
        three[s % 3]
            .send(&answer(&format!("r{s}"), &["Color"], label))
            .await;
    }
    let mut outcomes: HashSet<String> = HashSet::new();
    for (a, agent) in agents.iter_mut().enumerate() {
        let expected = (0..SESSIONS).filter(|s| s % 4 == a).count();
        let mut accepted = 0;
        let mut got = 0;
        while accepted < expected || got < expected {
            let frame = agent.recv().await;
            match frame["type"].as_str() {
                Some("accepted") => accepted += 1,
                Some("outcome") => {
                    let s: usize = frame["session"].as_str().unwrap()[1..].parse().unwrap();
                    assert_eq!(frame["result"]["Color"][0], ["Red", "Blue", "Green"][s % 3]);
                    assert!(
                        outcomes.insert(frame["id"].as_str().unwrap().to_owned()),
                        "doubled: {frame}"
                    );
                    got += 1;
                }
                _ => panic!("unexpected {frame}"),
            }
        }
        agent.silent_for(Duration::from_millis(50)).await;
    }
    assert_eq!(outcomes.len(), SESSIONS);
    for three in &mut tabs {
        for tab in three.iter_mut() {
            assert_eq!(tab.recv_until("resolved").await["outcome"], "answered");
        }
    }
    let metrics = server.state.hub.metrics();
    assert_eq!(
        metrics.outcomes(askgate_protocol::Outcome::Answered),
        SESSIONS as u64
    );
}

async fn wait_for(mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met in time"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
