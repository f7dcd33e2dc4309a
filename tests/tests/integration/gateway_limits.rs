//! Keys, limits and backpressure, each with the close code or error the protocol promises.

use std::time::Duration;

use askgate::keys::AgentKey;
use askgate_protocol::close;
use askgate_testkit::TIMEOUT;
use askgate_testkit::frames::{answer, ask, questions};
use askgate_testkit::http::http_with_headers;
use askgate_testkit::ws::WsClient;
use askgate_tests::server::{TestServer, test_config};
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_tungstenite::tungstenite::Message;

/// A tab with the wrong viewer key is closed with 4401.
#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_viewer_key_closes_with_4401() {
    let server = TestServer::start().await;
    let mut tab = server.raw_tab("s").await;
    let other_key = server.viewer_key("other");
    tab.send(&json!({"type": "hello", "key": other_key})).await;
    assert_eq!(tab.closed().await, close::BAD_KEY);
}

/// A first frame that is not `hello` closes with 4400; a bad session id in the URL with 4404.
#[tokio::test(flavor = "multi_thread")]
async fn no_hello_or_a_bad_session_id_is_refused() {
    let server = TestServer::start().await;
    let mut tab = server.raw_tab("s").await;
    tab.send(&json!({"type": "answer", "id": "r", "response": {}}))
        .await;
    assert_eq!(tab.closed().await, close::MALFORMED);
    let mut tab = server.raw_tab("bad%20id").await;
    tab.send(&json!({"type": "hello", "key": "x"})).await;
    assert_eq!(tab.closed().await, close::UNKNOWN_SESSION);
}

/// A tab that says nothing within the hello timeout is closed with 4408, a code the page
/// reconnects after (a stalled network, not a broken page).
#[tokio::test(flavor = "multi_thread")]
async fn a_tab_silent_past_the_hello_timeout_may_come_back() {
    let mut config = test_config();
    config.limits.hello_timeout = Duration::from_millis(200);
    let server = TestServer::start_with(config).await;
    let mut tab = server.raw_tab("s").await;
    assert_eq!(tab.closed().await, close::TOO_SLOW);
    assert!(close::should_reconnect(close::TOO_SLOW));
    let (_tab, snapshot) = server.tab("s").await;
    assert_eq!(snapshot["type"], "snapshot");
}

/// A frame over the size limit closes the socket with 4413, for tabs and agents alike.
#[tokio::test(flavor = "multi_thread")]
async fn a_frame_too_large_closes_with_4413() {
    let mut config = test_config();
    config.limits.max_frame_bytes = 4096;
    config.limits.max_agent_frame_bytes = 6144;
    let server = TestServer::start_with(config).await;
    let (mut tab, _) = server.tab("s").await;
    let _ = tab
        .send_text(format!(
            "{{\"type\":\"decline\",\"id\":\"{}\"}}",
            "x".repeat(5000)
        ))
        .await;
    assert_eq!(tab.closed().await, close::TOO_LARGE);
    let mut agent = server.agent().await;
    let _ = agent.send_text("x".repeat(8 * 1024)).await;
    assert_eq!(agent.closed().await, close::TOO_LARGE);
    // A first frame too large, before any hello, the same.
    let mut early = server.raw_tab("s").await;
    let _ = early.send_text("x".repeat(5000)).await;
    assert_eq!(early.closed().await, close::TOO_LARGE);
    let closed = server
        .state
        .hub
        .metrics()
        .closed_too_large
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(closed, 3, "each closing counted");
}

/// The largest question set pydantic-ai-harness accepts is taken whole: over a socket with
/// every character outside ASCII escaped, as Python's `json.dumps` writes it by default
/// (about 243 KB), and as an HTTP body in UTF-8 (about 81 KB); both over the 64 KiB a tab may
/// send.
#[tokio::test(flavor = "multi_thread")]
async fn the_largest_harness_question_set_is_taken_in_any_encoding() {
    let server = TestServer::start().await;
    let text = |n: usize| "😀".repeat(n);
    let questions: Vec<Value> = (0..10)
        .map(|q| {
            let options: Vec<Value> = (0..6)
                .map(|o| json!({"label": format!("{o}{}", text(49)), "description": text(200)}))
                .collect();
            json!({"header": format!("{q}{}", text(24)), "question": text(500), "options": options})
        })
        .collect();
    let frame = json!({"type": "ask", "session": "s", "id": "big", "questions": questions});
    let escaped: String = frame
        .to_string()
        .chars()
        .map(|c| match c {
            ' '..='~' => c.to_string(),
            _ => c
                .encode_utf16(&mut [0; 2])
                .iter()
                .map(|unit| format!("\\u{unit:04x}"))
                .collect(),
        })
        .collect();
    assert!(escaped.len() > 240_000, "{} bytes", escaped.len());
    let mut agent = server.agent().await;
    agent.send_text(escaped).await.expect("sent");
    assert_eq!(agent.recv_type("accepted").await["id"], "big");

    let body = json!({"id": "big-http", "questions": questions});
    assert!(body.to_string().len() > 80_000);
    let (status, reply) = server
        .http("POST", "/v1/sessions/s/requests", Some(&body))
        .await;
    assert_eq!(status, 201, "{reply}");
}

/// A tab that stops reading is closed with 4408 once its queue overflows, while another tab
/// of the same session receives every frame.
#[tokio::test(flavor = "multi_thread")]
async fn a_slow_tab_is_closed_and_the_others_get_everything() {
    let mut config = test_config();
    config.limits.tab_queue = 4;
    config.limits.open_requests_per_session = 10_000;
    let server = TestServer::start_with(config).await;
    let (mut slow, _) = server.tab("s").await;
    let (mut reader, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    // Big question sets fill the slow tab's socket buffers quickly.
    let big: Vec<Value> = (0..10)
        .map(|q| json!({"header": format!("Q{q}"), "question": "x".repeat(500),
            "options": (0..6).map(|o| json!({"label": format!("option {o} {}", "y".repeat(40)), "description": "z".repeat(200)})).collect::<Vec<_>>()}))
        .collect();
    let mut sent = 0;
    let code = loop {
        agent
            .send(
                &json!({"type": "ask", "session": "s", "id": format!("r{sent}"), "questions": big}),
            )
            .await;
        agent.recv_type("accepted").await;
        let request = reader.recv_until("request").await;
        assert_eq!(request["request"]["id"], format!("r{sent}"));
        sent += 1;
        if server
            .state
            .hub
            .metrics()
            .closed_too_slow
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
        {
            break slow.closed().await;
        }
        assert!(sent < 2_000, "the slow tab was never closed");
    };
    assert_eq!(code, close::TOO_SLOW);
    // The reader keeps getting everything afterwards.
    agent.send(&ask("s", "after", &["Color"], None)).await;
    agent.recv_type("accepted").await;
    assert_eq!(reader.recv_until("request").await["request"]["id"], "after");
}

/// A tab that keeps sending but never reads its replies cannot hold its connection: once
/// its buffers are full and a write makes no progress for a ping interval, it is closed as
/// too slow.
#[tokio::test(flavor = "multi_thread")]
async fn a_tab_that_sends_but_never_reads_is_closed() {
    let mut config = test_config();
    config.limits.tab_frames_per_second = 1_000_000;
    config.limits.ping_interval = Duration::from_millis(300);
    let server = TestServer::start_with(config).await;
    let (mut tab, _) = server.tab("s").await;
    // Each refusal echoes the unknown type: about 4 KB of reply per frame sent.
    let flood = json!({"type": "x".repeat(4000)}).to_string();
    let mut sent = 0;
    loop {
        let send = tab.stream().send(Message::text(flood.clone()));
        match tokio::time::timeout(Duration::from_secs(2), send).await {
            Ok(Ok(())) => sent += 1,
            // Blocked: the gateway stopped reading, its writes to us being stuck. Or refused:
            // it already gave up on us.
            Err(_) | Ok(Err(_)) => break,
        }
        assert!(sent < 200_000, "the gateway never stopped reading");
    }
    // Now read: the replies already written, then the end of the connection.
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(Ok(message)) = tab.stream().next().await {
            if message.is_close() {
                break;
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the connection stayed open after {sent} frames"
    );
    let too_slow = server
        .state
        .hub
        .metrics()
        .closed_too_slow
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(too_slow, 1);
    assert_eq!(server.state.hub.census().1, 0, "the tab left its session");
}

/// A peer sending frames faster than its rate is closed with 4429.
#[tokio::test(flavor = "multi_thread")]
async fn too_many_frames_closes_with_4429() {
    let mut config = test_config();
    config.limits.tab_frames_per_second = 5;
    let server = TestServer::start_with(config).await;
    let (mut tab, _) = server.tab("s").await;
    for _ in 0..30 {
        let frame = json!({"type": "decline", "id": "nope"}).to_string();
        if tab.stream().feed(Message::text(frame)).await.is_err() {
            break;
        }
    }
    let _ = tab.stream().flush().await;
    assert_eq!(tab.closed().await, close::TOO_MANY_FRAMES);
}

/// The per-session tab limit closes the extra tab with 1013; the open-request limit rejects
/// the extra ask; the session limit refuses a new session.
#[tokio::test(flavor = "multi_thread")]
async fn capacity_limits_refuse_clearly() {
    let mut config = test_config();
    config.limits.tabs_per_session = 2;
    config.limits.open_requests_per_session = 2;
    config.limits.max_sessions = 3;
    let server = TestServer::start_with(config).await;
    let (_a, _) = server.tab("s").await;
    let (_b, _) = server.tab("s").await;
    let mut third = server.raw_tab("s").await;
    third
        .send(&json!({"type": "hello", "key": server.viewer_key("s")}))
        .await;
    assert_eq!(third.closed().await, close::TRY_AGAIN_LATER);
    let mut agent = server.agent().await;
    for id in ["r1", "r2"] {
        agent.send(&ask("s", id, &["Color"], None)).await;
        agent.recv_type("accepted").await;
    }
    agent.send(&ask("s", "r3", &["Color"], None)).await;
    let rejected = agent.recv_type("rejected").await;
    assert!(
        rejected["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("open requests")
    );
    assert_eq!(rejected["id"], "r3");
    // An ask without an id is rejected with none, not with one the gateway made up for it.
    let mut without_id = ask("s", "", &["Color"], None);
    without_id.as_object_mut().unwrap().remove("id");
    agent.send(&without_id).await;
    let rejected = agent.recv_type("rejected").await;
    assert_eq!(rejected["id"], Value::Null, "{rejected}");
    for s in ["t1", "t2"] {
        agent.send(&json!({"type": "open", "session": s})).await;
        agent.recv_type("opened").await;
    }
    agent.send(&ask("t3", "r", &["Color"], None)).await;
    let rejected = agent.recv_type("rejected").await;
    assert!(
        rejected["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("sessions")
    );
    let mut tab = server.raw_tab("t4").await;
    tab.send(&json!({"type": "hello", "key": server.viewer_key("t4")}))
        .await;
    assert_eq!(tab.closed().await, close::TRY_AGAIN_LATER);
}

/// The bytes a session's open requests hold are bounded (so is a joining tab's snapshot): past
/// the limit a new ask is rejected as `unavailable`, and an answer makes room again.
#[tokio::test(flavor = "multi_thread")]
async fn the_bytes_of_open_requests_are_bounded() {
    let mut config = test_config();
    config.limits.open_bytes_per_session = 1;
    let server = TestServer::start_with(config).await;
    let (mut tab, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    agent.send(&ask("s", "r1", &["Color"], None)).await;
    agent.recv_type("accepted").await;
    agent.send(&ask("s", "r2", &["Color"], None)).await;
    let rejected = agent.recv_type("rejected").await;
    assert_eq!(rejected["errors"][0]["code"], "unavailable", "{rejected}");
    let message = rejected["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("bytes, the most allowed is 1"),
        "{message}"
    );
    tab.recv_until("request").await;
    tab.send(&answer("r1", &["Color"], "Red")).await;
    agent.recv_type("outcome").await;
    agent.send(&ask("s", "r2", &["Color"], None)).await;
    agent.recv_type("accepted").await;
}

/// The open requests of all sessions together are bounded by `--max-open-bytes`: asks in
/// several sessions are accepted while their bytes fit, the one that would pass the limit is
/// rejected as `unavailable` over the socket and over HTTP (503), and the room comes back
/// when a request ends.
#[tokio::test(flavor = "multi_thread")]
async fn the_bytes_of_open_requests_are_bounded_over_all_sessions() {
    // Each request shows tabs about 9,300 bytes: room for two, not three.
    let mut config = test_config();
    config.limits.max_open_bytes = 25_000;
    let server = TestServer::start_with(config).await;
    let described = |session: &str, id: &str| {
        json!({"type": "ask", "session": session, "id": id, "dialect": "approval",
               "calls": [{"name": "deploy", "args": {}, "description": "d".repeat(9_000)}]})
    };
    let mut agent = server.agent().await;
    for session in ["s1", "s2"] {
        agent.send(&described(session, "r1")).await;
        agent.recv_type("accepted").await;
    }
    agent.send(&described("s3", "r1")).await;
    let rejected = agent.recv_type("rejected").await;
    assert_eq!(rejected["errors"][0]["code"], "unavailable", "{rejected}");
    let message = rejected["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("over all sessions") && message.contains("25000 (--max-open-bytes)"),
        "{message}"
    );
    let mut body = described("s4", "r1");
    body.as_object_mut().unwrap().remove("type");
    body.as_object_mut().unwrap().remove("session");
    let path = "/v1/sessions/s4/requests";
    let (status, refused) = server.http("POST", path, Some(&body)).await;
    assert_eq!(status, 503, "{refused}");
    assert_eq!(refused["errors"][0]["code"], "unavailable", "{refused}");

    agent
        .send(&json!({"type": "cancel", "session": "s1", "id": "r1"}))
        .await;
    assert_eq!(agent.recv_type("outcome").await["outcome"], "withdrawn");
    agent.send(&described("s3", "r1")).await;
    agent.recv_type("accepted").await;
    agent
        .send(&json!({"type": "cancel", "session": "s2", "id": "r1"}))
        .await;
    assert_eq!(agent.recv_type("outcome").await["outcome"], "withdrawn");
    let (status, posted) = server.http("POST", path, Some(&body)).await;
    assert_eq!(status, 201, "{posted}");
}

/// Outcomes kept for an agent that does not acknowledge them are bounded: at the limit a new
/// ask is rejected, a repeat of a resolved one still gets its outcome, and an ack makes room.
#[tokio::test(flavor = "multi_thread")]
async fn unacknowledged_outcomes_are_bounded() {
    let mut config = test_config();
    config.limits.kept_outcomes_per_session = 2;
    let server = TestServer::start_with(config).await;
    let mut agent = server.agent().await;
    for id in ["r1", "r2"] {
        agent.send(&ask("s", id, &["Color"], None)).await;
        agent.recv_type("accepted").await;
        agent
            .send(&json!({"type": "cancel", "session": "s", "id": id}))
            .await;
        assert_eq!(agent.recv_type("outcome").await["outcome"], "withdrawn");
    }
    agent.send(&ask("s", "r3", &["Color"], None)).await;
    let rejected = agent.recv_type("rejected").await;
    assert_eq!(rejected["id"], "r3");
    let message = rejected["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("2 outcomes") && message.contains("ack"),
        "{message}"
    );
    agent.send(&ask("s", "r2", &["Color"], None)).await;
    assert_eq!(agent.recv_type("outcome").await["id"], "r2");
    agent
        .send(&json!({"type": "ack", "session": "s", "id": "r1"}))
        .await;
    agent.send(&ask("s", "r3", &["Color"], None)).await;
    assert_eq!(agent.recv_type("accepted").await["id"], "r3");
}

/// With agent keys configured, a wrong key is closed with 4401 and a right one served.
#[tokio::test(flavor = "multi_thread")]
async fn agent_keys_are_enforced() {
    let mut config = test_config();
    config.agent_keys = vec![AgentKey::unscoped("k1"), AgentKey::unscoped("k2")];
    let server = TestServer::start_with(config).await;
    let mut wrong = server.agent_with_key("nope").await;
    assert_eq!(wrong.closed().await, close::BAD_KEY);
    let mut none = server.agent().await;
    assert_eq!(none.closed().await, close::BAD_KEY);
    let mut right = server.agent_with_key("k2").await;
    right.send(&json!({"type": "open", "session": "s"})).await;
    let opened = right.recv_type("opened").await;
    assert!(
        opened["viewer_url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/s/s#k={}", server.viewer_key("s")))
    );
}

/// In local mode (no agent keys) a web page may not act as an agent: any site the person
/// visits could otherwise open the agent socket on their machine, `open` a session and read its
/// viewer key. A socket or request with an `Origin`, or naming another host (DNS rebinding), is
/// refused; local programs are served.
#[tokio::test(flavor = "multi_thread")]
async fn local_mode_refuses_web_pages_as_agents() {
    let server = TestServer::start().await;
    let url = server.ws_url("/v1/agent");
    let mut page =
        WsClient::connect_with_headers(&url, &[("origin", "https://evil.example")]).await;
    assert_eq!(page.closed().await, close::BAD_KEY);
    let mut rebound = WsClient::connect_with_headers(&url, &[("host", "evil.example")]).await;
    assert_eq!(rebound.closed().await, close::BAD_KEY);

    let body = json!({"questions": questions(&["Color"])});
    let path = "/v1/sessions/s/requests";
    let from_page = format!("Host: {}\r\nOrigin: https://evil.example\r\n", server.addr);
    let (status, refused) =
        http_with_headers(server.addr, "POST", path, Some(&body), &from_page).await;
    assert_eq!(status, 403, "{refused}");
    let message = refused["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("web page"), "{refused}");
    let rebound = "Host: evil.example:8080\r\n";
    let (status, refused) =
        http_with_headers(server.addr, "POST", path, Some(&body), rebound).await;
    assert_eq!(status, 403, "{refused}");

    let (status, posted) = server.http("POST", path, Some(&body)).await;
    assert_eq!(status, 201, "{posted}");
    let mut agent = server.agent().await;
    agent.send(&json!({"type": "open", "session": "s"})).await;
    agent.recv_type("opened").await;
}

/// A peer that stops answering pings is dropped after two missed pongs.
#[tokio::test(flavor = "multi_thread")]
async fn a_peer_that_misses_two_pongs_is_dropped() {
    let mut config = test_config();
    config.limits.ping_interval = Duration::from_millis(100);
    let server = TestServer::start_with(config).await;
    let (mut tab, _) = server.tab("s").await;
    // Not reading means not answering pings (the client answers only while it reads): the
    // tab is left unread until the gateway has dropped it, then its close is read.
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while server.state.hub.census().1 != 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the tab was not dropped"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_ne!(tab.closed().await, 0);
}

/// Shutdown closes every socket, tabs and agents, with 1001, and `serve` returns.
#[tokio::test(flavor = "multi_thread")]
async fn shutdown_closes_every_socket_with_1001() {
    let server = TestServer::start().await;
    let mut tabs: Vec<WsClient> = Vec::new();
    for s in ["a", "b"] {
        tabs.push(server.tab(s).await.0);
    }
    let mut agent = server.agent().await;
    agent.send(&ask("a", "r", &["Color"], None)).await;
    agent.recv_type("accepted").await;
    let stopping = tokio::spawn(server.shutdown());
    for tab in &mut tabs {
        assert_eq!(tab.closed().await, close::GOING_AWAY);
    }
    assert_eq!(agent.closed().await, close::GOING_AWAY);
    stopping.await.unwrap().unwrap();
}

/// `/healthz` answers; `/metrics` counts sessions, tabs and outcomes in Prometheus format.
#[tokio::test(flavor = "multi_thread")]
async fn health_and_metrics_over_http() {
    let server = TestServer::start().await;
    assert!(
        http_get(&server, "/healthz")
            .await
            .starts_with("HTTP/1.1 200")
    );
    let (_tab, _agent) = server.answered_request("s", "r").await;
    let metrics = http_get(&server, "/metrics").await;
    for line in [
        "askgate_tabs 1",
        "askgate_agents 1",
        "askgate_sessions 1",
        "askgate_outcomes_total{outcome=\"answered\"} 1",
        "askgate_answer_latency_seconds_count 1",
    ] {
        assert!(metrics.contains(line), "missing {line:?} in:\n{metrics}");
    }
    // The ask and its answer were each committed to the store, and timed.
    let commits = metrics
        .lines()
        .find_map(|l| l.strip_prefix("askgate_store_commit_seconds_count "))
        .and_then(|n| n.trim().parse::<u64>().ok());
    assert!(
        commits.is_some_and(|n| n >= 2),
        "store commits {commits:?} in:\n{metrics}"
    );
}

async fn http_get(server: &TestServer, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut body = String::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut body))
        .await
        .unwrap()
        .unwrap();
    body
}

/// A hundred tabs joining one session at once do not overflow anyone's queue: presence is
/// the latest state, not one queued frame per join, and every tab ends up seeing all 100.
#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_joins_coalesces_presence() {
    let mut config = test_config();
    // A hundred at once: past the join rate, which is not what this is about.
    config.limits.joins_per_session_per_second = 100;
    let server = TestServer::start_with(config).await;
    let joins = (0..100).map(|_| server.tab("s"));
    let mut tabs: Vec<(WsClient, Value)> = futures_util::future::join_all(joins).await;
    for (tab, snapshot) in &mut tabs {
        // The last to join learns the count from its snapshot; the others from presence.
        if snapshot["tabs"] == 100 {
            continue;
        }
        loop {
            let presence = tab.recv_until("presence").await;
            if presence["tabs"] == 100 {
                break;
            }
        }
    }
    let metrics = server.state.hub.metrics();
    assert_eq!(
        metrics
            .closed_too_slow
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    assert_eq!(server.state.hub.census().1, 100);
}

/// Frames the gateway builds may be far larger than any frame it takes in: a snapshot carries
/// every open request, and an outcome carries a long custom answer three times over (the
/// response, the result, and the model's text, escaped once more). Both go out whole, to a
/// tab joining late and to the agent, instead of the socket being dropped mid-write.
#[tokio::test(flavor = "multi_thread")]
async fn frames_larger_than_the_write_buffer_go_out_whole() {
    let server = TestServer::start().await;
    let mut agent = server.agent().await;
    let long_question = |i: usize| {
        json!({
            "header": format!("Topic {i}"),
            "question": format!("{i} {}", "q".repeat(490)),
            "options": (0..6)
                .map(|o| json!({"label": format!("Option {o}"), "description": "d".repeat(200)}))
                .collect::<Vec<_>>(),
        })
    };
    let ids: Vec<String> = (0..16).map(|i| format!("big-{i}")).collect();
    for id in &ids {
        let questions: Vec<Value> = (0..10).map(long_question).collect();
        agent
            .send(&json!({"type": "ask", "session": "s", "id": id, "questions": questions}))
            .await;
        agent.recv_type("accepted").await;
    }
    let (mut tab, snapshot) = server.tab("s").await;
    let snapshot_bytes = snapshot.to_string().len();
    assert!(snapshot_bytes > 192 * 1024, "{snapshot_bytes} bytes");
    let listed: Vec<&str> = snapshot["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .map(|request| request["id"].as_str().expect("id"))
        .collect();
    assert_eq!(listed, ids);
    // A custom answer of 48,000 characters, a quarter of them quotes, in a frame under 64 KiB.
    let custom = "ab\"c".repeat(12_000);
    let mut answers = vec![json!({"header": "Topic 0", "custom_answer": custom})];
    answers
        .extend((1..10).map(|i| json!({"header": format!("Topic {i}"), "selected": ["Option 0"]})));
    tab.send(&json!({"type": "answer", "id": "big-0", "response": {"answers": answers}}))
        .await;
    assert_eq!(tab.recv_until("resolved").await["id"], "big-0");
    let outcome = agent.recv_type("outcome").await;
    // Over the write buffer (4 KiB) and twice the frame limit (64 KiB) together.
    let outcome_bytes = outcome.to_string().len();
    assert!(outcome_bytes > 192 * 1024, "{outcome_bytes} bytes");
    assert_eq!(outcome["result"]["Topic 0"][0], custom.as_str());
    assert_eq!(
        outcome["response"]["answers"][0]["custom_answer"],
        custom.as_str()
    );
}
