//! What a tab's frames cost the gateway, bounded: `history` served from a cache per session
//! and charged to the tab's frame budget; refused answers charged likewise, and recorded in
//! the trail once per tab, request and reason with a count, never crowding real events out
//! of the history.

use std::sync::Arc;

use askgate::audit::{Event, Note, Who};
use askgate::config::PeopleSettings;
use askgate::store::StoreOp;
use askgate_protocol::wire::Via;
use askgate_protocol::{RequestId, SessionId, close};
use askgate_testkit::frames::{answer, ask};
use askgate_testkit::ws::WsClient;
use askgate_tests::gated_store::GatedStore;
use askgate_tests::server::{TestServer, test_config};
use futures_util::SinkExt as _;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// The session's `history` entries, as a tab asks for them.
async fn history(tab: &mut WsClient) -> Vec<Value> {
    tab.send(&json!({"type": "history"})).await;
    let frame = tab.recv_until("history").await;
    frame["entries"].as_array().unwrap().clone()
}

/// Asks `id` in `session` and has `tab` answer it; returns once the tab has heard it end.
async fn ask_and_answer(agent: &mut WsClient, tab: &mut WsClient, session: &str, id: &str) {
    agent.send(&ask(session, id, &["Color"], None)).await;
    agent.recv_until("accepted").await;
    tab.recv_until("request").await;
    tab.send(&answer(id, &["Color"], "Red")).await;
    agent.recv_until("outcome").await;
    tab.recv_until("resolved").await;
}

/// Sends `frame` `times` times without waiting for a reply, as a flooding script does.
async fn flood(tab: &mut WsClient, frame: &Value, times: usize) {
    for _ in 0..times {
        if tab
            .stream()
            .feed(Message::text(frame.to_string()))
            .await
            .is_err()
        {
            break;
        }
    }
    let _ = tab.stream().flush().await;
}

#[tokio::test]
async fn history_is_read_from_the_trail_once_until_a_request_ends() {
    let store = Arc::new(GatedStore::default());
    let server = TestServer::start_with_store(test_config(), store.clone()).await;
    let mut agent = server.agent().await;
    let (mut tab, _) = server.tab("s1").await;
    let (mut other, _) = server.tab("s1").await;
    ask_and_answer(&mut agent, &mut tab, "s1", "r1").await;

    let before = store.trail_reads();
    for _ in 0..2 {
        for asking in [&mut tab, &mut other] {
            let entries = history(asking).await;
            assert_eq!(entries.len(), 1);
            assert_eq!(entries[0]["id"], "r1");
        }
    }
    assert_eq!(store.trail_reads() - before, 1, "read once for four frames");

    ask_and_answer(&mut agent, &mut tab, "s1", "r2").await;
    let entries = history(&mut other).await;
    assert_eq!(
        entries.iter().map(|e| e["id"].clone()).collect::<Vec<_>>(),
        [json!("r2"), json!("r1")],
        "the ending is seen"
    );
    assert_eq!(history(&mut tab).await.len(), 2);
    assert_eq!(store.trail_reads() - before, 2, "read again once");
}

#[tokio::test]
async fn a_history_frame_is_charged_as_five_frames() {
    let mut config = test_config();
    config.limits.tab_frames_per_second = 5;
    let server = TestServer::start_with(config).await;
    let (mut tab, _) = server.tab("s1").await;
    // Six frames of a burst of ten: within it as plain frames, thirty as `history`.
    flood(&mut tab, &json!({"type": "history"}), 6).await;
    assert_eq!(
        tab.closed_with_reason().await,
        (close::TOO_MANY_FRAMES, "too many frames".to_owned())
    );
}

fn watch_only() -> askgate::config::Config {
    askgate::config::Config {
        people: PeopleSettings {
            require_identity: true,
            ..PeopleSettings::default()
        },
        ..test_config()
    }
}

#[tokio::test]
async fn a_refused_answer_is_charged_as_five_frames() {
    let mut config = watch_only();
    config.limits.tab_frames_per_second = 5;
    let server = TestServer::start_with(config).await;
    let mut agent = server.agent().await;
    agent.send(&ask("s1", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    let (mut tab, _) = server.tab("s1").await;
    flood(&mut tab, &answer("r1", &["Color"], "Red"), 6).await;
    assert_eq!(
        tab.closed_with_reason().await,
        (close::TOO_MANY_FRAMES, "too many frames".to_owned())
    );
}

/// Answers that lose a race or come late cost a frame each, as any frame: a page meets them
/// in ordinary use, and they write nothing to the trail.
#[tokio::test]
async fn an_answer_to_a_request_already_ended_costs_one_frame() {
    let mut config = test_config();
    config.limits.tab_frames_per_second = 5;
    let server = TestServer::start_with(config).await;
    let mut agent = server.agent().await;
    let (mut tab, _) = server.tab("s1").await;
    ask_and_answer(&mut agent, &mut tab, "s1", "r1").await;
    // With a burst of 10, six answers charged five frames each would close the tab.
    flood(&mut tab, &answer("r1", &["Color"], "Blue"), 6).await;
    for _ in 0..6 {
        let rejected = tab.recv_until("answer_rejected").await;
        assert_eq!(
            rejected["errors"][0]["message"], "already resolved",
            "{rejected}"
        );
    }
}

/// The `refused` entries of `trail` by tab `tab`.
fn refusals_by<'t>(trail: &'t [Value], tab: &Value) -> Vec<&'t Value> {
    trail
        .iter()
        .filter(|entry| entry["event"] == "refused" && entry["tab"] == *tab)
        .collect()
}

#[tokio::test]
async fn refusals_are_recorded_once_per_tab_request_and_reason_with_a_count() {
    let mut config = watch_only();
    config.limits.tab_frames_per_second = 1_000_000;
    let server = TestServer::start_with(config).await;
    let mut agent = server.agent().await;
    agent.send(&ask("s1", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    let (mut leaving, snapshot) = server.tab("s1").await;
    let leaving_tab = snapshot["tab"].clone();
    let (mut staying, snapshot) = server.tab("s1").await;
    let staying_tab = snapshot["tab"].clone();

    for (tab, times) in [(&mut leaving, 30), (&mut staying, 12)] {
        for n in 0..times {
            let frame = if n % 2 == 0 {
                answer("r1", &["Color"], "Red")
            } else {
                json!({"type": "decline", "id": "r1"})
            };
            tab.send(&frame).await;
            let refused = tab.recv_until("answer_rejected").await;
            assert_eq!(refused["errors"][0]["code"], "forbidden", "{refused}");
        }
    }
    let entries = server.trail("s1").await;
    for tab in [&leaving_tab, &staying_tab] {
        let refused = refusals_by(&entries, tab);
        assert_eq!(refused.len(), 1, "the first only, so far");
        assert_eq!(refused[0]["action"], "answer");
        assert_eq!(refused[0]["reason"], "identity required");
        assert!(refused[0].get("count").is_none());
    }

    // One tab leaves: its count is recorded then.
    leaving.close().await;
    let counted = tokio::time::timeout(askgate_testkit::TIMEOUT, async {
        loop {
            let entries = server.trail("s1").await;
            if let [_, counted] = refusals_by(&entries, &leaving_tab)[..] {
                return counted.clone();
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the count is recorded as the tab leaves");
    assert_eq!(counted["count"], 30);
    assert_eq!(counted["reason"], "identity required");

    // The request ends: the other tab's count is recorded with it.
    let key = server.state.hub.keys().personal_key(
        &SessionId::parse("s1").unwrap(),
        "alice@example.com",
        askgate::clock::now_ms() + 600_000,
    );
    let mut alice = server.raw_tab("s1").await;
    alice.send(&json!({"type": "hello", "key": key})).await;
    alice.recv_until("snapshot").await;
    alice.send(&answer("r1", &["Color"], "Blue")).await;
    agent.recv_until("outcome").await;
    staying.recv_until("resolved").await;
    let entries = server.trail("s1").await;
    let refused = refusals_by(&entries, &staying_tab);
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert_eq!(refused[1]["count"], 12);
    assert_eq!(
        entries.iter().filter(|e| e["event"] == "refused").count(),
        4,
        "42 refusals, four entries"
    );
    // The staying tab leaves with nothing left to record.
    drop(staying);
}

#[tokio::test]
async fn a_history_build_reads_a_bounded_number_of_bytes_and_its_frame_is_kept() {
    // 3,000 large entries above the one ended request: the search for older endings stops
    // at its byte budget (8 MiB) rather than read all 30 MB, and the frame is kept.
    const NOTE_BYTES: usize = 10_000;
    let store = Arc::new(GatedStore::default());
    let server = TestServer::start_with_store(test_config(), store.clone()).await;
    let mut agent = server.agent().await;
    let (mut tab, _) = server.tab("s1").await;
    ask_and_answer(&mut agent, &mut tab, "s1", "r1").await;
    let session = SessionId::parse("s1").unwrap();
    let notes = (0..3_000)
        .map(|_| {
            StoreOp::Note(Note {
                session: session.clone(),
                id: Some(RequestId::parse("r1").unwrap()),
                at_ms: askgate::clock::now_ms(),
                event: Event::Refused {
                    who: Who {
                        user: None,
                        tab: None,
                        via: Some(Via::SessionLink),
                    },
                    action: "answer",
                    reason: "x".repeat(NOTE_BYTES),
                    count: None,
                },
            })
        })
        .collect();
    server.state.hub.store_handle().commit(notes).await.unwrap();

    let (reads, bytes) = (store.trail_reads(), store.trail_bytes());
    for _ in 0..3 {
        assert!(history(&mut tab).await.is_empty(), "r1 is past the budget");
    }
    let read = store.trail_bytes() - bytes;
    assert!(
        read <= 8 * 1024 * 1024 + 2 * NOTE_BYTES,
        "{read} bytes read for one history"
    );
    assert_eq!(store.trail_reads() - reads, 2, "one build: two windows");
}

#[tokio::test]
async fn a_tab_refused_on_many_open_requests_in_a_loop_writes_one_entry_per_request() {
    // More open requests than a tab once kept counts for (64): refused round after round,
    // each request's first refusal is recorded once, never again as "first".
    const REQUESTS: usize = 70;
    let mut config = watch_only();
    config.limits.tab_frames_per_second = 1_000_000;
    let server = TestServer::start_with(config).await;
    let mut agent = server.agent().await;
    for n in 0..REQUESTS {
        agent
            .send(&ask("s1", &format!("r{n}"), &["Color"], None))
            .await;
        agent.recv_until("accepted").await;
    }
    let (mut tab, snapshot) = server.tab("s1").await;
    let tab_id = snapshot["tab"].clone();
    for _round in 0..3 {
        for n in 0..REQUESTS {
            tab.send(&answer(&format!("r{n}"), &["Color"], "Red")).await;
            let refused = tab.recv_until("answer_rejected").await;
            assert_eq!(refused["errors"][0]["code"], "forbidden", "{refused}");
        }
    }
    let entries = server.trail("s1").await;
    let refused = refusals_by(&entries, &tab_id);
    assert_eq!(refused.len(), REQUESTS, "one first refusal per request");
    assert!(refused.iter().all(|entry| entry.get("count").is_none()));
}

#[tokio::test]
async fn refusals_never_push_ended_requests_out_of_the_history() {
    let server = TestServer::start().await;
    let mut agent = server.agent().await;
    let (mut tab, _) = server.tab("s1").await;
    for id in ["r1", "r2"] {
        ask_and_answer(&mut agent, &mut tab, "s1", id).await;
    }
    // Far more refusals than the history's first read holds (as many tabs each refused once
    // on many requests would write), newer than every ending.
    let session = SessionId::parse("s1").unwrap();
    let notes = (0..2_000)
        .map(|n| {
            StoreOp::Note(Note {
                session: session.clone(),
                id: RequestId::parse(format!("x{n}")).ok(),
                at_ms: askgate::clock::now_ms(),
                event: Event::Refused {
                    who: Who {
                        user: None,
                        tab: Some(format!("t-{n}")),
                        via: Some(Via::SessionLink),
                    },
                    action: "answer",
                    reason: "identity required".to_owned(),
                    count: None,
                },
            })
        })
        .collect();
    server.state.hub.store_handle().commit(notes).await.unwrap();
    // A third ending, so the history is built again past the refusals.
    ask_and_answer(&mut agent, &mut tab, "s1", "r3").await;
    let entries = history(&mut tab).await;
    assert_eq!(
        entries.iter().map(|e| e["id"].clone()).collect::<Vec<_>>(),
        [json!("r3"), json!("r2"), json!("r1")]
    );
    assert_eq!(entries[2]["outcome"], "answered");
    assert_eq!(
        entries[2]["questions"][0]["header"], "Color",
        "what was asked"
    );
}
