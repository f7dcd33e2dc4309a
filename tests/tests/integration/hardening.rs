//! Peers that misbehave on purpose, against a real gateway: connections that say nothing or
//! trickle their headers, tabs that flood, break the protocol, join in crowds or stop
//! reading; and what a person should see of an agent that waits over HTTP, or of questions
//! that ended while they looked away.

use std::time::{Duration, Instant};

use askgate_protocol::close;
use askgate_testkit::TIMEOUT;
use askgate_testkit::frames::{answer, ask};
use askgate_testkit::http::http;
use askgate_testkit::ws::WsClient;
use askgate_tests::server::{TestServer, test_config};
use futures_util::SinkExt as _;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

/// How long the gateway may take, by the issue, to close a silent or trickling connection.
const CUT_OFF_WITHIN: Duration = Duration::from_secs(60);

/// The handshake and header timeouts the cut-off test runs with, instead of the defaults.
const SHORT_TIMEOUT: Duration = Duration::from_secs(1);

/// Reads until the server closes the connection; how long that took from `since`.
async fn read_until_closed(stream: &mut TcpStream, since: Instant) -> Duration {
    let mut buffer = [0u8; 1024];
    loop {
        match tokio::time::timeout(CUT_OFF_WITHIN, stream.read(&mut buffer)).await {
            Ok(Ok(0) | Err(_)) => return since.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("the connection was still open after {CUT_OFF_WITHIN:?}"),
        }
    }
}

/// A connection that sends nothing is closed, and one whose request headers trickle in a byte
/// at a time is cut off, by the handshake and header timeouts, which by default are well
/// within a minute (the test runs them at a second, so as not to wait out the defaults); a
/// request sent in good time on a third connection is still answered.
#[tokio::test(flavor = "multi_thread")]
async fn silent_and_trickling_connections_are_closed() {
    let defaults = test_config().limits;
    for (name, timeout) in [
        ("handshake", defaults.handshake_timeout),
        ("header read", defaults.header_read_timeout),
    ] {
        assert!(
            timeout < CUT_OFF_WITHIN,
            "the {name} timeout is {timeout:?}"
        );
    }
    let mut config = test_config();
    config.limits.handshake_timeout = SHORT_TIMEOUT;
    config.limits.header_read_timeout = SHORT_TIMEOUT;
    let server = TestServer::start_with(config).await;
    let opened = Instant::now();
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    let mut trickling = TcpStream::connect(server.addr).await.unwrap();
    let trickle = async {
        let request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ".to_vec();
        for byte in request.iter().chain(std::iter::repeat(&b'a')) {
            if trickling.write_all(&[*byte]).await.is_err() {
                return;
            }
            // A byte well within each read's patience: only the whole head's time runs out.
            tokio::time::sleep(SHORT_TIMEOUT / 5).await;
        }
    };
    let (silent_for, ()) = tokio::join!(read_until_closed(&mut silent, opened), async {
        // The trickle stops when the server closes the connection (a write fails), or when
        // the test gives up.
        let _ = tokio::time::timeout(CUT_OFF_WITHIN, trickle).await;
    });
    let trickled_for = opened.elapsed();
    assert!(silent_for < CUT_OFF_WITHIN, "silent for {silent_for:?}");
    assert!(
        trickled_for < CUT_OFF_WITHIN,
        "trickled for {trickled_for:?}"
    );
    let (status, _) = server.http("GET", "/healthz", None).await;
    assert_eq!(status, 200);
}

/// A tab that sends a burst far over its frame rate reads its 4429 close frame, rather than a
/// reset that the page would take for a network failure and reconnect after at once.
#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_frames_reads_its_close_code() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    for _ in 0..100 {
        let frame = json!({"type": "decline", "id": "nope"}).to_string();
        if tab.stream().feed(Message::text(frame)).await.is_err() {
            break;
        }
    }
    let _ = tab.stream().flush().await;
    assert_eq!(tab.closed().await, close::TOO_MANY_FRAMES);
}

/// A raw text frame carrying `payload` as it is (the client library would refuse to send
/// text that is not UTF-8).
fn raw_text(payload: &'static [u8]) -> Message {
    Message::Frame(Frame::message(payload, OpCode::Data(Data::Text), true))
}

/// A text frame that is not UTF-8 closes the socket with 1007; a continuation frame with no
/// message to continue (a protocol violation) with 1002. Before, neither got a close frame.
#[tokio::test(flavor = "multi_thread")]
async fn broken_frames_are_answered_with_their_close_codes() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    tab.stream()
        .send(raw_text(b"{\"type\":\"\xff\"}"))
        .await
        .unwrap();
    assert_eq!(tab.closed().await, close::INVALID_PAYLOAD);

    let (mut tab, _) = server.tab("s").await;
    let stray = Frame::message(&b"{}"[..], OpCode::Data(Data::Continue), true);
    tab.stream().send(Message::Frame(stray)).await.unwrap();
    assert_eq!(tab.closed().await, close::PROTOCOL_ERROR);

    // Before hello, too.
    let mut early = server.raw_tab("s").await;
    early.stream().send(raw_text(b"\xc3\x28")).await.unwrap();
    assert_eq!(early.closed().await, close::INVALID_PAYLOAD);
}

/// Pings count against a peer's frame rate like any frame.
#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_pings_is_paced() {
    let mut config = test_config();
    config.limits.tab_frames_per_second = 5;
    let server = TestServer::start_with(config).await;
    let (mut tab, _) = server.tab("s").await;
    for _ in 0..50 {
        if tab
            .stream()
            .feed(Message::Ping(Vec::new().into()))
            .await
            .is_err()
        {
            break;
        }
    }
    let _ = tab.stream().flush().await;
    assert_eq!(tab.closed().await, close::TOO_MANY_FRAMES);
}

/// Tabs joining one session faster than the join rate are told to come back later (1013);
/// those within the burst get their snapshot.
#[tokio::test(flavor = "multi_thread")]
async fn tabs_joining_too_fast_are_told_to_come_back() {
    let mut config = test_config();
    config.limits.joins_per_session_per_second = 5;
    let server = TestServer::start_with(config).await;
    let key = server.viewer_key("s");
    let joins = (0..30).map(|_| async {
        let mut tab = server.raw_tab("s").await;
        tab.send(&json!({"type": "hello", "key": key})).await;
        match tab.next_message(TIMEOUT).await {
            Some(Message::Text(text)) => {
                let frame: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(frame["type"], "snapshot");
                (tab, None)
            }
            Some(Message::Close(Some(frame))) => (tab, Some(u16::from(frame.code))),
            other => panic!("expected a snapshot or a close, got {other:?}"),
        }
    });
    let joined: Vec<(WsClient, Option<u16>)> = futures_util::future::join_all(joins).await;
    let refused: Vec<u16> = joined.iter().filter_map(|(_, code)| *code).collect();
    let admitted = joined.len() - refused.len();
    // A burst of twice the rate, and a little refill while the others connect.
    assert!((10..=14).contains(&admitted), "{admitted} admitted");
    assert!(refused.iter().all(|code| *code == close::TRY_AGAIN_LATER));
    // Other sessions are paced on their own.
    let (_other, snapshot) = server.tab("other").await;
    assert_eq!(snapshot["type"], "snapshot");
}

/// The deepagents questions of a request about `bytes` long as tabs receive it.
fn bulky_questions(bytes: usize) -> Value {
    let per_question = 9_000;
    let questions: Vec<Value> = (0..bytes.div_ceil(per_question).min(50))
        .map(|i| json!({"question": format!("{i}: {}", "x".repeat(per_question)), "type": "text"}))
        .collect();
    Value::Array(questions)
}

/// Waits until the server holds `left` tabs, and checks it closed exactly one as too slow.
/// The silent tab cannot read its close frame (its buffers are full), so the gateway's side
/// shows it went.
async fn only_the_silent_tab_was_closed(server: &TestServer, left: usize) {
    let deadline = Instant::now() + TIMEOUT;
    while server.state.hub.census().1 > left {
        assert!(Instant::now() < deadline, "the silent tab was not closed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let closed = server
        .state
        .hub
        .metrics()
        .closed_too_slow
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(closed, 1);
}

/// A tab that has stopped reading is closed with 4408 once the bytes queued to its session's
/// tabs pass the session's budget, while a tab of the same session that reads gets every
/// request. Without the budget the silent tab held every frame sent to it, up to its queue.
#[tokio::test(flavor = "multi_thread")]
async fn a_tab_that_stops_reading_is_closed_past_the_sessions_budget() {
    let mut config = test_config();
    config.limits.queued_bytes_per_session = 2 * 1024 * 1024;
    config.limits.tab_queue = 1024;
    let server = TestServer::start_with(config).await;
    let (silent, _) = server.tab("s").await;
    let (mut reading, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    let mut asked = 0;
    // Enough to fill the silent tab's socket buffers and then its budget: 32 MB.
    for i in 0..80 {
        let id = format!("r{i}");
        agent
            .send(
                &json!({"type": "ask", "session": "s", "id": id, "dialect": "deepagents",
                          "questions": bulky_questions(400_000)}),
            )
            .await;
        let reply = agent.recv().await;
        assert_eq!(reply["type"], "accepted", "{reply}");
        let shown = reading.recv_until("request").await;
        assert_eq!(shown["request"]["id"], id);
        asked += 1;
        // Keep the session under its open-bytes limit: withdraw as we go.
        agent
            .send(&json!({"type": "cancel", "session": "s", "id": id}))
            .await;
        agent.recv_until("outcome").await;
        agent
            .send(&json!({"type": "ack", "session": "s", "id": id}))
            .await;
        reading.recv_until("resolved").await;
    }
    assert_eq!(asked, 80);
    only_the_silent_tab_was_closed(&server, 1).await;
    agent.send(&ask("s", "last", &["Color"], None)).await;
    agent.recv_type("accepted").await;
    reading.recv_until("request").await;
    drop(silent);
}

/// The gateway-wide budget holds across sessions: with each session's budget out of reach, a
/// tab that stopped reading in one session is closed once the bytes queued to all tabs pass
/// the gateway's budget, while tabs that read, in this session and another, get everything.
#[tokio::test(flavor = "multi_thread")]
async fn a_tab_that_stops_reading_is_closed_past_the_gateways_budget() {
    let mut config = test_config();
    config.limits.queued_bytes_per_session = usize::MAX;
    config.limits.queued_bytes_total = 2 * 1024 * 1024;
    config.limits.tab_queue = 1024;
    let server = TestServer::start_with(config).await;
    let (silent, _) = server.tab("a").await;
    let (mut reading, _) = server.tab("a").await;
    let (mut elsewhere, _) = server.tab("b").await;
    let mut agent = server.agent().await;
    for i in 0..80 {
        for (session, tab) in [("a", &mut reading), ("b", &mut elsewhere)] {
            let id = format!("{session}{i}");
            agent
                .send(&json!({"type": "ask", "session": session, "id": id,
                              "dialect": "deepagents", "questions": bulky_questions(200_000)}))
                .await;
            assert_eq!(agent.recv().await["type"], "accepted");
            assert_eq!(tab.recv_until("request").await["request"]["id"], id);
            agent
                .send(&json!({"type": "cancel", "session": session, "id": id}))
                .await;
            agent.recv_until("outcome").await;
            agent
                .send(&json!({"type": "ack", "session": session, "id": id}))
                .await;
            tab.recv_until("resolved").await;
        }
    }
    only_the_silent_tab_was_closed(&server, 2).await;
    drop(silent);
}

/// An agent waiting on an HTTP long-poll counts as an agent waiting: tabs see it arrive, and
/// leave once its polls stop (after a short grace, so back-to-back polls do not flicker).
#[tokio::test(flavor = "multi_thread")]
async fn an_http_long_poll_counts_as_an_agent_waiting() {
    let server = TestServer::start().await;
    let (status, _) = server
        .http(
            "POST",
            "/v1/sessions/s/requests",
            Some(&json!({"id": "r1", "questions": askgate_testkit::frames::questions(&["Color"])})),
        )
        .await;
    assert_eq!(status, 201);
    let (mut tab, snapshot) = server.tab("s").await;
    assert_eq!(snapshot["agent_online"], false, "{snapshot}");
    let addr = server.addr;
    let poll = tokio::spawn(async move {
        http(
            addr,
            "GET",
            "/v1/sessions/s/requests/r1?wait_s=2",
            None,
            None,
        )
        .await
    });
    let online = tab.recv_until("presence").await;
    assert_eq!(online["agent_online"], true, "{online}");
    let (status, body) = poll.await.unwrap();
    assert_eq!((status, body["state"].clone()), (200, json!("pending")));
    let offline = tab.recv_until("presence").await;
    assert_eq!(offline["agent_online"], false, "{offline}");
}

/// A tab that joins after requests ended gets them in its snapshot's `finished`: what was
/// asked, how it ended, by whom and when; still after the agent acknowledged the outcome.
#[tokio::test(flavor = "multi_thread")]
async fn a_late_tab_gets_the_finished_requests() {
    let server = TestServer::start().await;
    let (tab, mut agent) = server.answered_request("s", "r1").await;
    drop(tab);
    agent.send(&ask("s", "r2", &["Size"], Some(0.05))).await;
    agent.recv_type("accepted").await;
    agent.recv_until("outcome").await;
    agent
        .send(&json!({"type": "ack", "session": "s", "id": "r1"}))
        .await;
    // The ack is taken in order with the frames after it.
    agent.send(&ask("s", "r3", &["Shape"], None)).await;
    agent.recv_type("accepted").await;
    let (_late, snapshot) = server.tab("s").await;
    let finished = snapshot["finished"].as_array().expect("a finished list");
    let ids: Vec<&str> = finished.iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["r1", "r2"], "{snapshot}");
    let answered = &finished[0];
    assert_eq!(answered["outcome"], "answered");
    assert_eq!(answered["dialect"], "harness");
    assert_eq!(answered["questions"][0]["header"], "Color");
    assert_eq!(
        answered["response"]["answers"][0]["selected"],
        json!(["Red"])
    );
    assert!(
        answered["by"]
            .as_str()
            .is_some_and(|by| by.starts_with("t-"))
    );
    assert!(answered["at_ms"].as_u64().is_some());
    assert_eq!(finished[1]["outcome"], "timed_out");
    assert_eq!(finished[1]["by"], Value::Null);
    assert_eq!(snapshot["requests"][0]["id"], "r3");
    // Asked anew, an id's old ending is no longer listed.
    let (mut tab, _) = server.tab("s").await;
    agent.send(&ask("s", "r1", &["Again"], None)).await;
    agent.recv_type("accepted").await;
    tab.recv_until("request").await;
    tab.send(&answer("r1", &["Again"], "Blue")).await;
    agent.recv_until("outcome").await;
    let (_later, snapshot) = server.tab("s").await;
    let again: Vec<&Value> = snapshot["finished"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "r1")
        .collect();
    assert_eq!(again.len(), 1, "{snapshot}");
    assert_eq!(again[0]["questions"][0]["header"], "Again");
}

/// A tab that closes its socket gets the gateway's close frame back before the connection
/// ends, as the closing handshake asks (a browser otherwise reports an unclean close).
#[tokio::test(flavor = "multi_thread")]
async fn a_close_from_the_tab_is_answered() {
    let server = TestServer::start().await;
    let (mut tab, _) = server.tab("s").await;
    tab.stream().close(None).await.unwrap();
    let reply = tokio::time::timeout(TIMEOUT, futures_util::StreamExt::next(tab.stream()))
        .await
        .expect("a reply in time");
    assert!(
        matches!(reply, Some(Ok(Message::Close(_)))),
        "expected the close frame back, got {reply:?}"
    );
}

/// A message far over the frame limit, still arriving when the gateway refuses it, is
/// answered with 4413 that the peer reads, not a reset.
#[tokio::test(flavor = "multi_thread")]
async fn a_frame_too_large_still_arriving_reads_its_4413() {
    let server = TestServer::start().await;
    for _ in 0..3 {
        let (mut tab, _) = server.tab("s").await;
        let huge = format!(r#"{{"type":"decline","id":"{}"}}"#, "x".repeat(8 << 20));
        // The send may fail once the gateway closes: what matters is what the tab reads.
        let _ = tab.stream().send(Message::text(huge)).await;
        assert_eq!(tab.closed().await, close::TOO_LARGE);
    }
}
