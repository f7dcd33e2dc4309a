//! Every transition of a request and every refusal, on a hub built here: the memory store
//! (behind a wrapper that fails what a test asks it to), in-process links, and a paused clock
//! for deadlines. No socket, no server.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use askgate_protocol::wire::{CheckedAsk, Via};
use askgate_protocol::{Dialect, Outcome, QuestionSet, RequestId, SessionId, Settlement};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::super::{AckReply, AskReply, Hub, Link, Lookup, Queue, TabHandle, Withdrawal};
use super::*;
use crate::config::Limits;
use crate::keys::ViewerKeys;
use crate::people::{People, Person};
use crate::store::MemoryStore;
use crate::store::{Durability, Steps, Store, StoreError, StoreFuture, StoreOp, Trails};

/// The memory store, failing the changes a test asks it to.
#[derive(Default)]
struct Faulty {
    inner: MemoryStore,
    /// Refuse every new request.
    refuse_asks: AtomicBool,
    /// Refuse this many endings.
    refuse_endings: AtomicUsize,
    /// Take new requests but never make them durable.
    lose_asks: AtomicBool,
    /// Refuse every follow-up.
    refuse_follow_ups: AtomicBool,
    /// Refuse every follow and unfollow.
    refuse_follows: AtomicBool,
    /// While set, new requests and endings are stored only once it gives a permit.
    gate: std::sync::Mutex<Option<Arc<Semaphore>>>,
}

impl Faulty {
    /// Holds every new request and ending until the returned gate gives a permit each.
    fn hold(&self) -> Arc<Semaphore> {
        let gate = Arc::new(Semaphore::new(0));
        *self.gate.lock().unwrap() = Some(Arc::clone(&gate));
        gate
    }
}

impl Store for Faulty {
    fn commit(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, ()> {
        let refused = ops.iter().any(|op| match op {
            StoreOp::Put(_) => self.refuse_asks.load(Ordering::Relaxed),
            StoreOp::FollowedUp { .. } => self.refuse_follow_ups.load(Ordering::Relaxed),
            StoreOp::Follow { .. } => self.refuse_follows.load(Ordering::Relaxed),
            StoreOp::Resolve { .. } => self
                .refuse_endings
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok(),
            _ => false,
        });
        let held = ops
            .iter()
            .any(|op| matches!(op, StoreOp::Put(_) | StoreOp::Resolve { .. }));
        let gate = self.gate.lock().unwrap().clone().filter(|_| held);
        let committing = if refused {
            Box::pin(std::future::ready(Err(StoreError::unavailable(
                "refused by the test",
            ))))
        } else {
            self.inner.commit(ops)
        };
        match gate {
            Some(gate) => Box::pin(async move {
                gate.acquire().await.expect("the gate stays open").forget();
                committing.await
            }),
            None => committing,
        }
    }

    fn deliveries(&self) -> StoreFuture<'_, Vec<crate::store::StoredDelivery>> {
        self.inner.deliveries()
    }

    fn followers(&self) -> StoreFuture<'_, Vec<(SessionId, String)>> {
        self.inner.followers()
    }

    fn kept(&self) -> StoreFuture<'_, Vec<crate::store::KeptField>> {
        self.inner.kept()
    }

    fn load(&self) -> StoreFuture<'_, Vec<StoredRequest>> {
        self.inner.load()
    }

    fn decide_in_steps(&self, ops: Vec<StoreOp>, _durability: Durability) -> Steps {
        let lost = ops.iter().any(|op| matches!(op, StoreOp::Put(_)))
            && self.lose_asks.load(Ordering::Relaxed);
        Steps {
            taken: self.decide(ops),
            durable: Box::pin(std::future::ready(if lost {
                Err(StoreError::unavailable("lost by the test"))
            } else {
                Ok(())
            })),
        }
    }

    fn trails(&self) -> &dyn Trails {
        self.inner.trails()
    }
}

/// A hub over a [`Faulty`] store, one tab watching session `s`, and an agent's link.
struct Rig {
    hub: Arc<Hub>,
    store: Arc<Faulty>,
    tab: TabHandle,
    tab_queue: Queue,
    agent: Link,
    agent_queue: Queue,
}

/// A hub over `store` (not yet restored from it), as a gateway starting on it makes one.
fn hub_over(store: &Arc<Faulty>, limits: Limits, people: People) -> Arc<Hub> {
    Hub::new(
        Arc::clone(store) as Arc<dyn Store>,
        limits,
        ViewerKeys::new(&[7; 32], "http://gateway.test"),
        people,
        Arc::default(),
        None,
    )
}

fn rig_with(limits: Limits) -> Rig {
    let store = Arc::new(Faulty::default());
    let hub = hub_over(&store, limits, People::default());
    rig_of(store, hub)
}

/// A tab watching session `s` of `hub`, and an agent's link.
fn rig_of(store: Arc<Faulty>, hub: Arc<Hub>) -> Rig {
    let (link, tab_queue) = Link::new(64);
    let tab = hub
        .join_tab(session(), None, Person::anonymous(), link)
        .expect("room for a tab");
    let (agent, agent_queue) = Link::new(64);
    let mut rig = Rig {
        hub,
        store,
        tab,
        tab_queue,
        agent,
        agent_queue,
    };
    assert_eq!(rig.tab_frames(), ["snapshot"]);
    rig
}

fn rig() -> Rig {
    rig_with(Limits::default())
}

/// A [`rig`] whose hub has a notifier (no notify file: it sends only asks' callbacks), not
/// running: what it would send stays in the store's outbox to be looked at.
fn rig_with_callbacks() -> Rig {
    let store = Arc::new(Faulty::default());
    let keys = ViewerKeys::new(&[7; 32], "http://gateway.test");
    let notifier = crate::notify::Notifier::new(
        crate::notify::NotifyConfig {
            settings: crate::notify::NotifySettings::default(),
            retry_for: Duration::from_secs(3600),
            allow_private: false,
            vapid_key: None,
        },
        crate::people::Groups::default(),
        keys.clone(),
        Arc::clone(&store) as Arc<dyn Store>,
        Arc::default(),
        crate::notify::CallbackHosts::default(),
    )
    .unwrap();
    let hub = Hub::new(
        Arc::clone(&store) as Arc<dyn Store>,
        Limits::default(),
        keys,
        People::default(),
        Arc::default(),
        Some(notifier),
    );
    rig_of(store, hub)
}

fn session() -> SessionId {
    SessionId::parse("s").unwrap()
}

fn id(text: &str) -> RequestId {
    RequestId::parse(text).unwrap()
}

fn questions() -> Value {
    json!([{"header": "Color", "question": "Which?", "options": [{"label": "Red"}, {"label": "Blue"}]}])
}

fn ask_of(request: &str, timeout_ms: Option<u64>) -> CheckedAsk {
    CheckedAsk {
        callback: None,
        default: None,
        quorum: None,
        rules: true,
        session: session(),
        id: Some(id(request)),
        questions: QuestionSet::validate(Dialect::HARNESS, &questions()).unwrap(),
        timeout_ms,
        title: None,
        answerers: None,
        follow_ups: Default::default(),
    }
}

fn red() -> Value {
    json!({"answers": [{"header": "Color", "selected": ["Red"]}]})
}

/// The next frame `queue` is given, as JSON, waiting for it (on a paused clock, as long as
/// the timers before it take).
async fn next_frame(queue: &mut Queue) -> Value {
    let delivery = tokio::time::timeout(
        Duration::from_secs(10),
        std::future::poll_fn(|cx| queue.poll_next(cx)),
    )
    .await
    .expect("a frame within 10 s");
    let crate::hub::Delivery::Frame(frame) = delivery else {
        panic!("{delivery:?}")
    };
    serde_json::from_str(&frame.text()).unwrap()
}

/// The frames a queue holds now, as JSON.
fn drain(queue: &mut Queue) -> Vec<Value> {
    std::iter::from_fn(|| queue.try_frame())
        .map(|frame| serde_json::from_str(&frame.text()).unwrap())
        .collect()
}

fn types(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .map(|f| f["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

impl Rig {
    async fn ask(&self, request: &str, timeout_ms: Option<u64>) -> AskReply {
        self.hub
            .ask(ask_of(request, timeout_ms), Some(&self.agent))
            .await
    }

    /// How request `id` ended, waiting for it (on a paused clock, as long as its timers take).
    async fn ended(&self, request: &str) -> StoredResolution {
        let lookup = self
            .hub
            .wait_for(&session(), &id(request), Duration::from_secs(60))
            .await;
        let Lookup::Resolved(resolution) = lookup else {
            panic!("{lookup:?}");
        };
        *resolution
    }

    fn tab_frames(&mut self) -> Vec<String> {
        types(&drain(&mut self.tab_queue))
    }

    fn agent_frames(&mut self) -> Vec<Value> {
        drain(&mut self.agent_queue)
    }

    /// The request's state, by name; `None` if the hub does not hold it.
    fn state(&self, request: &str) -> Option<&'static str> {
        let sessions = self.hub.lock();
        let entry = sessions.get(&session())?.requests.get(&id(request))?;
        Some(match entry.state {
            EntryState::Committing => "committing",
            EntryState::Open => "open",
            EntryState::Resolving => "resolving",
            EntryState::Resolved(_) => "resolved",
        })
    }

    fn has_timer(&self, request: &str) -> bool {
        let sessions = self.hub.lock();
        sessions
            .get(&session())
            .and_then(|s| s.requests.get(&id(request)))
            .is_some_and(|entry| entry.timer.is_some())
    }

    /// The open-requests gauge, the kept-outcomes gauge, the session's unresolved count and
    /// bytes, and the gateway's open bytes.
    fn counts(&self) -> (i64, i64, usize, usize, usize) {
        let metrics = self.hub.metrics();
        let sessions = self.hub.lock();
        let (unresolved, bytes) = sessions
            .get(&session())
            .map_or((0, 0), |s| (s.open.unresolved(), s.open.bytes()));
        (
            metrics.open_requests.load(Ordering::Relaxed),
            metrics.kept_outcomes.load(Ordering::Relaxed),
            unresolved,
            bytes,
            self.hub.ledger.open_bytes_total.load(Ordering::Relaxed),
        )
    }

    /// Open: counted in every count, its bytes the same here and gateway-wide.
    fn assert_open_only(&self, open: usize) {
        let (gauge, kept, unresolved, bytes, total) = self.counts();
        assert_eq!((gauge, kept, unresolved), (open as i64, 0, open));
        assert!(bytes > 0 && bytes == total, "{bytes} bytes, {total} in all");
    }

    /// Nothing open; `kept` outcomes.
    fn assert_none_open(&self, kept: i64) {
        assert_eq!(self.counts(), (0, kept, 0, 0, 0));
    }

    fn finished_ids(&self) -> Vec<String> {
        let sessions = self.hub.lock();
        let Some(session) = sessions.get(&session()) else {
            return Vec::new();
        };
        session
            .finished
            .views()
            .map(|[view, _]| {
                let mut whole = view.to_vec();
                whole.push(b'}');
                let view: Value = serde_json::from_slice(&whole).unwrap();
                view["id"].as_str().unwrap().to_owned()
            })
            .collect()
    }

    async fn answer(&self, request: &str, response: Value) -> Option<String> {
        let rejected = self.tab.answer(request, response).await?;
        let frame: Value = serde_json::from_str(&rejected.frame.text()).unwrap();
        Some(frame["errors"][0]["message"].as_str().unwrap().to_owned())
    }
}

#[tokio::test]
async fn an_ask_is_stored_then_open_counted_timed_and_shown() {
    let mut rig = rig();
    let reply = rig.ask("r", Some(60_000)).await;
    assert!(
        matches!(reply, AskReply::Accepted { created: true, .. }),
        "{reply:?}"
    );
    assert_eq!(rig.state("r"), Some("open"));
    assert!(rig.has_timer("r"));
    rig.assert_open_only(1);
    assert_eq!(rig.tab_frames(), ["request"]);
    assert_eq!(types(&rig.agent_frames()), ["accepted"]);
}

#[tokio::test]
async fn an_ask_the_store_refuses_leaves_nothing_counted_or_shown() {
    let mut rig = rig();
    rig.store.refuse_asks.store(true, Ordering::Relaxed);
    let reply = rig.ask("r", Some(60_000)).await;
    assert!(matches!(reply, AskReply::Rejected { .. }), "{reply:?}");
    assert_eq!(rig.state("r"), None);
    rig.assert_none_open(0);
    assert!(rig.tab_frames().is_empty());
    assert_eq!(types(&rig.agent_frames()), ["rejected"]);
}

#[tokio::test]
async fn an_ask_never_made_durable_is_taken_back_from_the_tabs() {
    let mut rig = rig();
    rig.store.lose_asks.store(true, Ordering::Relaxed);
    let reply = rig.ask("r", Some(60_000)).await;
    assert!(matches!(reply, AskReply::Rejected { .. }), "{reply:?}");
    assert_eq!(rig.state("r"), None);
    rig.assert_none_open(0);
    let frames = drain(&mut rig.tab_queue);
    assert_eq!(types(&frames), ["request", "resolved"]);
    assert_eq!(frames[1]["outcome"], "withdrawn");
    assert_eq!(types(&rig.agent_frames()), ["rejected"]);
    assert!(
        rig.finished_ids().is_empty(),
        "never asked, so never finished"
    );
}

#[tokio::test]
async fn an_answer_settles_the_request_and_tells_everyone() {
    let mut rig = rig();
    rig.ask("r", Some(60_000)).await;
    rig.tab_frames();
    rig.agent_frames();
    assert_eq!(rig.answer("r", red()).await, None);
    assert_eq!(rig.state("r"), Some("resolved"));
    assert!(!rig.has_timer("r"), "the deadline timer is stopped");
    rig.assert_none_open(1);
    assert_eq!(rig.tab_frames(), ["resolved"]);
    let agent = rig.agent_frames();
    assert_eq!(types(&agent), ["outcome"]);
    assert_eq!(agent[0]["outcome"], "answered");
    assert_eq!(rig.finished_ids(), ["r"]);
}

#[tokio::test]
async fn a_decline_settles_as_declined() {
    let mut rig = rig();
    rig.ask("r", None).await;
    rig.agent_frames();
    assert!(rig.tab.decline("r", false).await.is_none());
    rig.assert_none_open(1);
    assert_eq!(rig.agent_frames()[0]["outcome"], "declined");
}

#[tokio::test(start_paused = true)]
async fn the_deadline_times_the_request_out() {
    let mut rig = rig();
    rig.ask("r", Some(1_000)).await;
    rig.agent_frames();
    let resolution = rig.ended("r").await;
    assert_eq!(resolution.settlement.outcome, Outcome::TimedOut);
    rig.assert_none_open(1);
    assert_eq!(rig.agent_frames()[0]["outcome"], "timed_out");
}

/// With a default, the deadline ends the request as the default's answer: the agent gets the
/// framework's answer with `by` and `via` saying `default`, the tabs the same `resolved`, the
/// trail a `defaulted` entry. The request frame carried the default beforehand.
#[tokio::test(start_paused = true)]
async fn the_deadline_gives_the_default_when_the_ask_has_one() {
    let mut rig = rig();
    let ask = CheckedAsk {
        callback: None,
        default: Some(red()),
        ..ask_of("r", Some(1_000))
    };
    rig.hub.ask(ask, Some(&rig.agent)).await;
    let shown = drain(&mut rig.tab_queue);
    assert_eq!(shown[0]["request"]["default"], red());
    rig.agent_frames();
    let resolution = rig.ended("r").await;
    assert_eq!(resolution.settlement.outcome, Outcome::Answered);
    rig.assert_none_open(1);
    let outcome = &rig.agent_frames()[0];
    assert_eq!(outcome["outcome"], "answered");
    assert_eq!(outcome["by"], "default");
    assert_eq!(outcome["via"], "default");
    assert_eq!(outcome["user"], Value::Null);
    assert_eq!(
        outcome["response"]["answers"][0]["selected"],
        json!(["Red"])
    );
    let resolved = drain(&mut rig.tab_queue);
    assert_eq!(types(&resolved), ["resolved"]);
    assert_eq!(resolved[0]["via"], "default");
    assert_eq!(resolved[0]["by"], "default");
    assert_eq!(trail_events(&rig).await, ["asked", "defaulted"]);
    let lines = rig.store.trails().audit(&session(), 0, 100).await.unwrap();
    let defaulted: Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(defaulted["via"], "default");
    assert_eq!(defaulted["tab"], "default");
    assert_eq!(defaulted["user"], Value::Null);
    assert_eq!(defaulted["outcome"], "answered");
}

/// An answer before the deadline wins over the default, which is then never given.
#[tokio::test(start_paused = true)]
async fn an_answer_in_time_wins_over_the_default() {
    let mut rig = rig();
    let blue = json!({"answers": [{"header": "Color", "selected": ["Blue"]}]});
    let ask = CheckedAsk {
        callback: None,
        default: Some(red()),
        ..ask_of("r", Some(1_000))
    };
    rig.hub.ask(ask, Some(&rig.agent)).await;
    rig.agent_frames();
    assert!(rig.tab.answer("r", blue).await.is_none());
    tokio::time::sleep(Duration::from_secs(5)).await;
    let frames = rig.agent_frames();
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(
        frames[0]["response"]["answers"][0]["selected"],
        json!(["Blue"])
    );
    assert_ne!(frames[0]["via"], "default");
    assert_eq!(trail_events(&rig).await, ["asked", "answered"]);
}

#[tokio::test]
async fn a_withdrawal_settles_as_withdrawn_and_a_second_gets_the_same() {
    let mut rig = rig();
    rig.ask("r", None).await;
    rig.agent_frames();
    for _ in 0..2 {
        let withdrawal = rig
            .hub
            .withdraw(&session(), &id("r"), Some(&rig.agent), Via::Agent)
            .await;
        let Withdrawal::Ended(resolution) = withdrawal else {
            panic!("{withdrawal:?}");
        };
        assert_eq!(resolution.settlement.outcome, Outcome::Withdrawn);
        assert_eq!(rig.agent_frames()[0]["outcome"], "withdrawn");
    }
    rig.assert_none_open(1);
}

#[tokio::test]
async fn an_ending_the_store_refuses_reopens_the_request_with_its_timer() {
    let mut rig = rig();
    rig.ask("r", Some(60_000)).await;
    rig.tab_frames();
    rig.store.refuse_endings.store(1, Ordering::Relaxed);
    let refused = rig.answer("r", red()).await.expect("refused");
    assert!(refused.contains("could not save the answer"), "{refused}");
    assert_eq!(rig.state("r"), Some("open"));
    assert!(rig.has_timer("r"), "timed out again later");
    rig.assert_open_only(1);
    assert!(rig.tab_frames().is_empty(), "nothing ended");
    assert_eq!(rig.answer("r", red()).await, None, "the next answer wins");
    rig.assert_none_open(1);
}

#[tokio::test]
async fn an_ack_forgets_the_outcome_and_a_late_answer_is_already_resolved() {
    let rig = rig();
    rig.ask("r", None).await;
    rig.answer("r", red()).await;
    assert_eq!(
        rig.hub.acknowledge(&session(), &id("r")).await,
        AckReply::Forgotten
    );
    assert_eq!(rig.state("r"), None);
    rig.assert_none_open(0);
    assert_eq!(
        rig.finished_ids(),
        ["r"],
        "listed a while after it is forgotten"
    );
    assert_eq!(
        rig.answer("r", red()).await.as_deref(),
        Some("already resolved")
    );
    assert_eq!(
        rig.hub.acknowledge(&session(), &id("r")).await,
        AckReply::Forgotten,
        "acks are idempotent"
    );
    rig.assert_none_open(0);
}

#[tokio::test]
async fn the_sweep_forgets_outcomes_past_their_retention() {
    let rig = rig_with(Limits {
        retention: Duration::ZERO,
        ..Limits::default()
    });
    rig.ask("r", None).await;
    rig.ask("open", None).await;
    rig.answer("r", red()).await;
    assert_eq!(rig.hub.sweep().await, 1);
    assert_eq!(rig.state("r"), None);
    assert_eq!(rig.state("open"), Some("open"));
    rig.assert_open_only(1);
}

#[tokio::test]
async fn refusals_change_nothing() {
    let rig = rig();
    assert_eq!(
        rig.answer("nope", red()).await.as_deref(),
        Some("no open request with this id")
    );
    rig.ask("r", None).await;
    assert_eq!(
        rig.hub.acknowledge(&session(), &id("r")).await,
        AckReply::NotResolved
    );
    let misfit = rig
        .answer(
            "r",
            json!({"answers": [{"header": "Size", "selected": ["Red"]}]}),
        )
        .await
        .expect("does not fit");
    assert!(!misfit.is_empty());
    assert_eq!(rig.state("r"), Some("open"));
    rig.assert_open_only(1);
    rig.answer("r", red()).await;
    assert_eq!(
        rig.answer("r", red()).await.as_deref(),
        Some("already resolved")
    );
    assert!(rig.tab.decline("r", false).await.is_some());
    rig.assert_none_open(1);
}

#[tokio::test]
async fn a_full_session_refuses_a_new_ask() {
    let rig = rig_with(Limits {
        open_requests_per_session: 1,
        ..Limits::default()
    });
    rig.ask("r1", None).await;
    let reply = rig.ask("r2", None).await;
    let AskReply::Rejected { errors, .. } = reply else {
        panic!("{reply:?}");
    };
    assert!(errors[0].message.contains("1 open requests"), "{errors:?}");
    assert_eq!(rig.state("r2"), None);
    rig.assert_open_only(1);
}

#[tokio::test]
async fn an_answer_from_someone_not_allowed_leaves_the_request_open() {
    let rig = rig();
    let mut ask = ask_of("r", None);
    ask.answerers = Some(vec!["alice@example.com".into()]);
    rig.hub.ask(ask, None).await;
    let refused = rig.answer("r", red()).await.expect("forbidden");
    assert!(!refused.is_empty());
    assert_eq!(rig.state("r"), Some("open"));
    rig.assert_open_only(1);
}

#[tokio::test]
async fn an_answer_on_an_expired_link_leaves_the_request_open() {
    let rig = rig();
    rig.ask("r", None).await;
    let (link, _queue) = Link::new(8);
    let expired = Person::named("bob@example.com", Via::PersonalLink).until(1);
    let tab = rig.hub.join_tab(session(), None, expired, link).unwrap();
    assert!(tab.answer("r", red()).await.is_some_and(|r| r.for_who));
    assert_eq!(rig.state("r"), Some("open"));
    rig.assert_open_only(1);
}

/// A session on its own, for the transitions only a shared store's notices and loads make.
fn lone_session() -> Session {
    Session::new(session(), 10, Ledger::detached())
}

fn record(request: &str, resolution: Option<StoredResolution>) -> StoredRequest {
    StoredRequest {
        quorum: None,
        asked_by: None,
        callback: None,
        ruled: None,
        remember: Vec::new(),
        votes: Vec::new(),
        default: None,
        session: session(),
        id: id(request),
        dialect: Dialect::HARNESS,
        questions: questions(),
        title: None,
        asked_at_ms: 5,
        deadline_ms: None,
        answerers: None,
        follow_ups: Default::default(),
        resolution,
    }
}

fn withdrawn(at_ms: u64) -> StoredResolution {
    StoredResolution::untouched(Settlement::withdrawn(), at_ms)
}

fn read(request: &StoredRequest) -> Arc<QuestionSet> {
    Arc::new(QuestionSet::read_back(request.dialect, &request.questions).unwrap())
}

fn gauges(session: &Session) -> (i64, i64, usize) {
    let metrics = &session.open.ledger.metrics;
    (
        metrics.open_requests.load(Ordering::Relaxed),
        metrics.kept_outcomes.load(Ordering::Relaxed),
        session.open.unresolved(),
    )
}

#[tokio::test]
async fn requests_from_other_nodes_come_in_open_or_resolved_and_leave_unannounced() {
    let mut session = lone_session();
    let open = record("open", None);
    let questions = read(&open);
    assert_eq!(
        session.admit_record(open, Arc::clone(&questions), Arrival::Shared),
        Admitted::Open
    );
    let ended = record("ended", Some(withdrawn(9)));
    assert_eq!(
        session.admit_record(ended, questions, Arrival::Shared),
        Admitted::Resolved
    );
    assert_eq!(gauges(&session), (1, 1, 1));
    session.discard(&id("open"));
    session.discard(&id("ended"));
    assert_eq!(gauges(&session), (0, 0, 0));
    assert_eq!(session.open.bytes(), 0);
    assert!(session.forgot_lately(&id("open")) && session.forgot_lately(&id("ended")));
}

#[tokio::test]
async fn an_ask_found_ended_elsewhere_is_kept_not_opened() {
    let mut session = lone_session();
    let request = record("r", None);
    let questions = read(&request);
    let view = RequestView {
        quorum: None,
        ruled: None,
        remember: Vec::new(),
        orphaned: false,
        default: None,
        id: "r".into(),
        dialect: Dialect::HARNESS,
        title: None,
        questions: questions.to_json(),
        asked_at_ms: 5,
        deadline_ms: None,
        answerers: None,
        escalated_to: None,
    };
    let encoded = EncodedRequest::new(&view);
    session.begin_ask(
        &id("r"),
        &questions,
        view,
        encoded,
        None,
        Default::default(),
    );
    assert_eq!(gauges(&session), (0, 0, 1), "committing: not yet open");
    session.found_ended(&id("r"), &withdrawn(7));
    assert_eq!(gauges(&session), (0, 1, 0));
    assert!(session.finished.generation() > 0, "listed finished");
}

#[tokio::test]
async fn an_ending_the_shared_store_no_longer_has_vanishes() {
    let mut session = lone_session();
    let request = record("r", None);
    let questions = read(&request);
    session.admit_record(request, questions, Arrival::Shared);
    session.begin_resolving(&id("r"), false);
    session.vanished(&id("r"));
    assert_eq!(gauges(&session), (0, 0, 0));
    assert!(session.requests.is_empty());
}

#[tokio::test]
async fn letting_go_of_a_session_stops_its_counts() {
    let mut session = lone_session();
    let open = record("open", None);
    let questions = read(&open);
    session.admit_record(open, Arc::clone(&questions), Arrival::Shared);
    session.admit_record(
        record("ended", Some(withdrawn(9))),
        questions,
        Arrival::Shared,
    );
    let ledger = Arc::clone(&session.open.ledger);
    session.let_go();
    drop(session);
    assert_eq!(ledger.metrics.open_requests.load(Ordering::Relaxed), 0);
    assert_eq!(ledger.metrics.kept_outcomes.load(Ordering::Relaxed), 0);
    assert_eq!(ledger.open_bytes_total.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn a_restart_lists_ended_requests_in_the_order_they_ended_not_asked() {
    let rig = rig();
    let mut first = record("r1", Some(withdrawn(20)));
    first.asked_at_ms = 1;
    let mut second = record("r2", Some(withdrawn(10)));
    second.asked_at_ms = 2;
    let restored = rig.hub.restore(vec![first, second]).await;
    assert_eq!(restored.resolved, 2);
    assert_eq!(rig.finished_ids(), ["r2", "r1"]);
}

#[tokio::test]
async fn requests_ending_in_turn_are_listed_in_turn() {
    let rig = rig();
    for request in ["r1", "r2", "r3"] {
        rig.ask(request, None).await;
    }
    // Ended in another order than asked, each likely in the same millisecond as the last.
    for request in ["r2", "r3", "r1"] {
        assert_eq!(rig.answer(request, red()).await, None);
    }
    assert_eq!(rig.finished_ids(), ["r2", "r3", "r1"]);
}

/// Lets the other futures of a `join!` run until they wait, then gives `gate` a permit.
async fn open_after_a_while(gate: &Semaphore) {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    gate.add_permits(1);
}

#[tokio::test]
async fn an_answer_to_a_request_still_being_stored_is_refused() {
    let rig = rig();
    let gate = rig.store.hold();
    let (asked, refused) = tokio::join!(rig.ask("r", None), async {
        assert_eq!(rig.state("r"), Some("committing"));
        let refused = rig.answer("r", red()).await;
        gate.add_permits(1);
        refused
    });
    assert!(matches!(asked, AskReply::Accepted { .. }), "{asked:?}");
    assert_eq!(refused.as_deref(), Some("no open request with this id"));
    rig.assert_open_only(1);
}

/// A second tab of session `s` on `rig`'s hub, and its queue.
fn second_tab(rig: &Rig) -> (TabHandle, Queue) {
    let (link, queue) = Link::new(64);
    let tab = rig
        .hub
        .join_tab(session(), None, Person::anonymous(), link)
        .unwrap();
    (tab, queue)
}

#[tokio::test]
async fn a_rival_waits_while_the_winner_is_stored_then_is_told_it_lost() {
    let rig = rig();
    rig.ask("r", None).await;
    let (rival, _queue) = second_tab(&rig);
    let gate = rig.store.hold();
    let (won, lost, ()) = tokio::join!(
        rig.answer("r", red()),
        async {
            assert_eq!(rig.state("r"), Some("resolving"));
            rival.answer("r", red()).await
        },
        open_after_a_while(&gate),
    );
    assert_eq!(won, None);
    let lost = lost.expect("refused").frame.text();
    assert!(lost.contains("already resolved"), "{lost}");
    rig.assert_none_open(1);
}

#[tokio::test]
async fn a_rival_waiting_takes_the_request_when_the_winner_could_not_be_stored() {
    let rig = rig();
    rig.ask("r", None).await;
    let (rival, _queue) = second_tab(&rig);
    let gate = rig.store.hold();
    rig.store.refuse_endings.store(1, Ordering::Relaxed);
    let (failed, won, ()) = tokio::join!(
        rig.answer("r", red()),
        async {
            assert_eq!(rig.state("r"), Some("resolving"));
            let won = rival.answer("r", red()).await;
            won.map(|rejected| rejected.frame.text())
        },
        async {
            open_after_a_while(&gate).await;
            open_after_a_while(&gate).await;
        },
    );
    assert!(failed.is_some_and(|error| error.contains("could not save the answer")));
    assert_eq!(
        won, None,
        "the rival's answer won once the first was not kept"
    );
    rig.assert_none_open(1);
}

fn ask_following_up(request: &str) -> CheckedAsk {
    CheckedAsk {
        callback: None,
        answerers: Some(vec!["alice".into()]),
        follow_ups: askgate_protocol::wire::AskedFollowUps {
            remind_after_ms: Some(1_000),
            escalate: Some((2_000, vec!["bob".into()])),
        },
        ..ask_of(request, None)
    }
}

/// The events of session `s`'s trail, in order.
async fn trail_events(rig: &Rig) -> Vec<String> {
    let lines = rig.store.trails().audit(&session(), 0, 100).await.unwrap();
    lines
        .iter()
        .map(|line| {
            let entry: Value = serde_json::from_str(line).unwrap();
            entry["event"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_reminder_then_an_escalation_happen_once_each_while_open_and_are_kept() {
    let mut rig = rig();
    rig.hub.ask(ask_following_up("r"), Some(&rig.agent)).await;
    assert_eq!(rig.tab_frames(), ["request"]);
    // The paused clock moves on to each timer in turn: the reminder at 1 s, the escalation at
    // 2 s, and then nothing more.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(trail_events(&rig).await, ["asked", "reminded", "escalated"]);
    let frames = drain(&mut rig.tab_queue);
    assert_eq!(types(&frames), ["escalated"]);
    assert_eq!(frames[0]["to"], json!(["bob"]));
    assert_eq!(frames[0]["answerers"], json!(["alice", "bob"]));
    let stored = rig.store.load().await.unwrap();
    let follow_ups = &stored[0].follow_ups;
    assert!(
        follow_ups.reminded && follow_ups.escalated,
        "{follow_ups:?}"
    );
    // A tab joining now sees whom it was escalated to; bob may answer.
    let (link, mut queue) = Link::new(64);
    let bob = rig
        .hub
        .join_tab(session(), None, Person::named("bob", Via::Proxy), link)
        .unwrap();
    let snapshot = drain(&mut queue);
    assert_eq!(
        snapshot[0]["requests"][0]["escalated_to"],
        json!(["bob"]),
        "{snapshot:?}"
    );
    assert_eq!(
        snapshot[0]["requests"][0]["answerers"],
        json!(["alice", "bob"])
    );
    assert!(bob.answer("r", red()).await.is_none(), "bob's answer wins");
    rig.assert_none_open(1);
}

#[tokio::test(start_paused = true)]
async fn a_request_that_ends_first_is_neither_reminded_nor_escalated() {
    let mut rig = rig();
    rig.hub.ask(ask_following_up("r"), Some(&rig.agent)).await;
    rig.hub
        .withdraw(&session(), &id("r"), Some(&rig.agent), Via::Agent)
        .await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(trail_events(&rig).await, ["asked", "withdrawn"]);
    assert_eq!(rig.tab_frames(), ["request", "resolved"]);
}

#[tokio::test(start_paused = true)]
async fn a_follow_up_the_store_refuses_does_not_happen() {
    let mut rig = rig();
    let mut ask = ask_following_up("r");
    ask.follow_ups.escalate = None;
    rig.hub.ask(ask, Some(&rig.agent)).await;
    rig.tab_frames();
    rig.store.refuse_follow_ups.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(trail_events(&rig).await, ["asked"]);
    let sessions = rig.hub.lock();
    let entry = &sessions[&session()].requests[&id("r")];
    assert!(!entry.follow_ups.reminded, "unmarked once refused");
}

// ---------- followers and inboxes ----------

const ALICE: &str = "alice@example.com";
const BOB: &str = "bob@example.com";

/// A hub whose operator put alice in `group:oncall`, with one anonymous tab on session `s`.
fn rig_with_groups() -> Rig {
    let mut rig = rig();
    let store = Arc::clone(&rig.store);
    let hub = hub_over(
        &store,
        Limits::default(),
        People {
            require_identity: false,
            groups: crate::people::Groups::parse(&format!(r#"{{"oncall": ["{ALICE}"]}}"#)).unwrap(),
        },
    );
    let (link, tab_queue) = Link::new(64);
    rig.tab = hub
        .join_tab(session(), None, Person::anonymous(), link)
        .unwrap();
    rig.tab_queue = tab_queue;
    rig.hub = hub;
    assert_eq!(rig.tab_frames(), ["snapshot"]);
    rig
}

fn named(user: &str) -> Person {
    Person::named(user, Via::PersonalLink)
}

/// An ask of `request` in `in_session`, for `answerers`.
fn ask_in(
    in_session: &str,
    request: &str,
    answerers: Option<&[&str]>,
    timeout_ms: Option<u64>,
) -> CheckedAsk {
    let mut ask = ask_of(request, timeout_ms);
    ask.session = SessionId::parse(in_session).unwrap();
    ask.answerers = answerers.map(|list| list.iter().map(|s| (*s).to_owned()).collect());
    ask
}

/// `(session, id)` of each request in an inbox's frames: a snapshot's, then each `request`.
fn listed(frames: &[Value]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for frame in frames {
        let views: Vec<&Value> = match frame["type"].as_str() {
            Some("snapshot") => frame["requests"].as_array().unwrap().iter().collect(),
            Some("request") => vec![&frame["request"]],
            _ => continue,
        };
        for view in views {
            let session = view["session"]
                .as_str()
                .or(frame["session"].as_str())
                .unwrap();
            out.push((session.to_owned(), view["id"].as_str().unwrap().to_owned()));
        }
    }
    out
}

fn pair(session: &str, id: &str) -> (String, String) {
    (session.to_owned(), id.to_owned())
}

#[tokio::test]
async fn a_follow_is_stored_recorded_told_to_the_persons_tabs_and_said_in_their_snapshot() {
    let rig = rig();
    let (link, mut alice_tab) = Link::new(16);
    let _alice = rig
        .hub
        .join_tab(session(), None, named(ALICE), link)
        .unwrap();
    let snapshot = drain(&mut alice_tab);
    assert_eq!(
        snapshot[0]["you"].get("following"),
        None,
        "not following yet"
    );
    let followed = rig.hub.set_following(&session(), ALICE, true).await;
    assert_eq!(followed, Ok(crate::hub::Followed::Changed));
    assert_eq!(
        drain(&mut alice_tab),
        [json!({"type": "following", "on": true})]
    );
    // Again: already so, nothing recorded twice, no one told.
    let again = rig.hub.set_following(&session(), ALICE, true).await;
    assert_eq!(again, Ok(crate::hub::Followed::Already));
    assert!(drain(&mut alice_tab).is_empty());
    assert!(rig.hub.follows(&session(), ALICE));
    let (link, mut second) = Link::new(16);
    let _again = rig
        .hub
        .join_tab(session(), None, named(ALICE), link)
        .unwrap();
    assert_eq!(drain(&mut second)[0]["you"]["following"], true);
    assert_eq!(
        rig.store.inner.followers().await.unwrap(),
        [(session(), ALICE.to_owned())]
    );
    rig.hub
        .set_following(&session(), ALICE, false)
        .await
        .unwrap();
    assert_eq!(
        drain(&mut alice_tab),
        [json!({"type": "following", "on": false})]
    );
    assert!(rig.store.inner.followers().await.unwrap().is_empty());
    let trail = rig.store.inner.audit(&session(), 0, 100).await.unwrap();
    let events: Vec<(String, String)> = trail
        .iter()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_owned(),
                e["user"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("followed".to_owned(), ALICE.to_owned()),
            ("unfollowed".to_owned(), ALICE.to_owned())
        ]
    );
}

#[tokio::test]
async fn a_follow_the_store_refuses_changes_nothing_and_a_bad_name_is_refused_at_user() {
    let rig = rig();
    rig.store.refuse_follows.store(true, Ordering::Relaxed);
    let refused = rig.hub.set_following(&session(), ALICE, true).await;
    assert!(
        matches!(refused, Err(crate::hub::FollowRefused::Store(_))),
        "{refused:?}"
    );
    assert!(!rig.hub.follows(&session(), ALICE));
    let bad = rig
        .hub
        .set_following(&session(), " alice", true)
        .await
        .unwrap_err();
    assert_eq!(bad.errors()[0].path, "user");
}

#[tokio::test]
async fn an_anonymous_tab_cannot_follow() {
    let rig = rig();
    let reply = rig.tab.follow(true).await.expect("an error frame");
    let reply: Value = serde_json::from_str(&reply.text()).unwrap();
    assert_eq!(reply["type"], "error");
    assert_eq!(reply["code"], "forbidden");
    assert!(rig.store.inner.followers().await.unwrap().is_empty());
}

#[tokio::test]
async fn an_inbox_shows_what_is_addressed_to_its_person_their_group_or_a_followed_session() {
    let rig = rig_with_groups();
    let hub = Arc::clone(&rig.hub);
    hub.set_following(&SessionId::parse("followed").unwrap(), ALICE, true)
        .await
        .unwrap();
    hub.ask(ask_in("s", "for-alice", Some(&[ALICE]), Some(60_000)), None)
        .await;
    hub.ask(
        ask_in("other", "for-oncall", Some(&["group:oncall"]), Some(30_000)),
        None,
    )
    .await;
    hub.ask(ask_in("s", "for-bob", Some(&[BOB]), None), None)
        .await;
    hub.ask(ask_in("s", "for-anyone", None, None), None).await;
    hub.ask(ask_in("followed", "unaddressed", None, None), None)
        .await;
    let (link, mut alice) = Link::new(64);
    let alice_inbox = hub.open_inbox(named(ALICE), link).unwrap();
    let (link, mut bob) = Link::new(64);
    let _bob_inbox = hub.open_inbox(named(BOB), link).unwrap();
    let frames = drain(&mut alice);
    assert_eq!(types(&frames), ["snapshot"]);
    assert_eq!(frames[0]["you"]["user"], ALICE);
    // The nearest deadline first, those without one last.
    assert_eq!(
        listed(&frames),
        [
            pair("other", "for-oncall"),
            pair("s", "for-alice"),
            pair("followed", "unaddressed")
        ]
    );
    assert_eq!(listed(&drain(&mut bob)), [pair("s", "for-bob")]);
    // Live: a new request for her group comes with its session; bob hears nothing of it.
    hub.ask(
        ask_in("third", "later", Some(&["group:oncall"]), None),
        None,
    )
    .await;
    let frames = drain(&mut alice);
    assert_eq!(types(&frames), ["request"]);
    assert_eq!(frames[0]["session"], "third");
    assert_eq!(listed(&frames), [pair("third", "later")]);
    assert!(drain(&mut bob).is_empty());
    // Answered from the inbox: the session's tab sees it resolved, the inbox too.
    let mut rig = rig;
    let _ = rig.tab_frames();
    assert!(alice_inbox.answer("s", "for-alice", red()).await.is_none());
    assert_eq!(rig.state("for-alice"), Some("resolved"));
    assert_eq!(rig.tab_frames(), ["resolved"]);
    let frames = drain(&mut alice);
    assert_eq!(types(&frames), ["resolved"]);
    assert_eq!(frames[0]["session"], "s");
    assert_eq!(frames[0]["user"], ALICE);
    // Bob's inbox may not answer alice's request: refused as a tab would be, naming the session.
    let refused = _bob_inbox
        .answer("other", "for-oncall", red())
        .await
        .expect("refused");
    let refused: Value = serde_json::from_str(&refused.text()).unwrap();
    assert_eq!(refused["type"], "answer_rejected");
    assert_eq!(refused["session"], "other");
    assert_eq!(refused["errors"][0]["code"], "forbidden");
    let other = SessionId::parse("other").unwrap();
    let trail = rig.store.inner.audit(&other, 0, 100).await.unwrap();
    let refusal: Value = serde_json::from_str(trail.last().unwrap()).unwrap();
    assert_eq!(
        (&refusal["event"], &refusal["user"], &refusal["reason"]),
        (&json!("refused"), &json!(BOB), &json!("not an answerer"))
    );
}

#[tokio::test]
async fn following_a_session_refreshes_the_persons_inbox_and_an_escalation_reaches_it() {
    let rig = rig_with_groups();
    let hub = &rig.hub;
    hub.ask(ask_in("s", "unaddressed", None, None), None).await;
    let (link, mut alice) = Link::new(64);
    let _inbox = hub.open_inbox(named(ALICE), link).unwrap();
    assert!(listed(&drain(&mut alice)).is_empty());
    hub.set_following(&session(), ALICE, true).await.unwrap();
    let frames = drain(&mut alice);
    assert_eq!(types(&frames), ["snapshot"]);
    assert_eq!(listed(&frames), [pair("s", "unaddressed")]);
    hub.set_following(&session(), ALICE, false).await.unwrap();
    assert!(listed(&drain(&mut alice)).is_empty());
    // Escalated to her group: her inbox is sent the request, as it now stands.
    let mut ask = ask_in("s", "escalating", Some(&[BOB]), None);
    ask.follow_ups.escalate = Some((0, vec!["group:oncall".into()]));
    hub.ask(ask, None).await;
    let frame = next_frame(&mut alice).await;
    assert_eq!(frame["type"], "request");
    assert_eq!(frame["session"], "s");
    assert_eq!(frame["request"]["id"], "escalating");
    assert_eq!(frame["request"]["escalated_to"], json!(["group:oncall"]));

    // One anyone may answer, escalated to her group: hers to see from then on, to its end.
    let mut ask = ask_in("s", "open-escalating", None, None);
    ask.follow_ups.escalate = Some((0, vec!["group:oncall".into()]));
    hub.ask(ask, None).await;
    let frame = next_frame(&mut alice).await;
    assert_eq!(
        (frame["type"].as_str(), frame["request"]["id"].as_str()),
        (Some("request"), Some("open-escalating"))
    );
    let (link, _queue) = Link::new(8);
    let bob = hub.join_tab(session(), None, named(BOB), link).unwrap();
    assert!(bob.answer("open-escalating", red()).await.is_none());
    let resolved = drain(&mut alice);
    assert_eq!(types(&resolved), ["resolved"]);
    assert_eq!(resolved[0]["id"], "open-escalating");
}

/// The agent that asked goes away: after the grace (60 s by default) the request is orphaned
/// (tabs told, a late tab's snapshot says so, the operator's listing too) and still
/// answerable; asked again on a socket, it is live again and shown anew.
#[tokio::test(start_paused = true)]
async fn a_request_whose_agent_left_is_orphaned_after_the_grace_and_live_again_when_re_asked() {
    let mut rig = rig();
    rig.ask("r", Some(3_600_000)).await;
    assert_eq!(rig.tab_frames(), ["request"]);
    rig.hub.detach_agent(&rig.agent);
    tokio::time::sleep(Duration::from_secs(59)).await;
    assert_eq!(
        rig.tab_frames(),
        Vec::<String>::new(),
        "not before the grace"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let frames = drain(&mut rig.tab_queue);
    assert_eq!(types(&frames), ["orphaned"]);
    assert_eq!(frames[0]["id"], "r");
    let (link, mut late) = Link::new(64);
    let _late = rig
        .hub
        .join_tab(session(), None, Person::anonymous(), link)
        .unwrap();
    let snapshot = drain(&mut late);
    assert_eq!(snapshot[0]["requests"][0]["orphaned"], true);
    let filter = crate::hub::ListFilter {
        state: crate::hub::ListState::Orphaned,
        session_prefix: None,
        older_than_ms: None,
        limit: 10,
        after: None,
    };
    let (listed, _) = rig.hub.list_requests(&filter).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].orphaned);

    // Asked again by an agent that came back: live again, shown anew, nothing withdrawn.
    let (agent, mut agent_queue) = Link::new(64);
    rig.hub
        .ask(ask_of("r", Some(3_600_000)), Some(&agent))
        .await;
    let frames = drain(&mut rig.tab_queue);
    assert_eq!(types(&frames), ["request"]);
    assert_eq!(frames[0]["request"].get("orphaned"), None);
    assert_eq!(drain(&mut agent_queue)[0]["type"], "accepted");
    let (listed, _) = rig.hub.list_requests(&filter).await.unwrap();
    assert!(listed.is_empty());
    // Still answerable all along, by the agent that came back.
    assert!(rig.tab.answer("r", red()).await.is_none());
    assert_eq!(drain(&mut agent_queue)[0]["outcome"], "answered");
}

/// An orphaned request without a deadline is withdrawn by the gateway after
/// `--orphan-withdraw-after-s` (a day by default), counted from when it was orphaned; one with
/// a deadline is left to it.
#[tokio::test(start_paused = true)]
async fn an_orphaned_request_without_a_deadline_is_withdrawn_by_the_gateway_after_a_day() {
    let mut rig = rig();
    rig.ask("r", None).await;
    rig.ask("timed", Some(10 * 86_400_000)).await;
    rig.tab_frames();
    rig.hub.detach_agent(&rig.agent);
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(rig.tab_frames(), ["orphaned", "orphaned"]);
    tokio::time::sleep(Duration::from_secs(86_400 - 2)).await;
    assert_eq!(rig.tab_frames(), Vec::<String>::new(), "not before the day");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let frames = drain(&mut rig.tab_queue);
    assert_eq!(types(&frames), ["resolved"]);
    assert_eq!(
        (&frames[0]["id"], &frames[0]["outcome"], &frames[0]["via"]),
        (&json!("r"), &json!("withdrawn"), &json!("gateway"))
    );
    let trail = rig.store.trails().audit(&session(), 0, 100).await.unwrap();
    let withdrawn: Value = serde_json::from_str(trail.last().unwrap()).unwrap();
    assert_eq!(
        (&withdrawn["event"], &withdrawn["via"]),
        (&json!("withdrawn"), &json!("gateway"))
    );
    assert_eq!(rig.state("timed"), Some("open"));
}

/// A request posted over HTTP is its agent's while a long-poll waits on it: orphaned only
/// once none has waited for the grace.
#[tokio::test(start_paused = true)]
async fn a_long_poll_keeps_its_request_from_being_orphaned() {
    let mut rig = rig();
    rig.hub.ask(ask_of("r", None), None).await;
    rig.tab_frames();
    let hub = Arc::clone(&rig.hub);
    let poll = tokio::spawn(async move {
        hub.long_poll(&session(), &id("r"), Duration::from_secs(120))
            .await
    });
    tokio::time::sleep(Duration::from_secs(100)).await;
    assert_eq!(
        rig.tab_frames(),
        Vec::<String>::new(),
        "polled: not orphaned"
    );
    let _ = poll.await;
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(rig.tab_frames(), ["orphaned"]);
}

/// A tab joining after an open request was shown otherwise (escalated, orphaned) is sent
/// the request as it is now, not the snapshot body built before.
#[tokio::test(start_paused = true)]
async fn a_snapshot_after_a_request_is_shown_anew_has_it_as_it_is_now() {
    let rig = rig();
    rig.ask("r", None).await;
    let (link, mut early) = Link::new(64);
    let _early = rig
        .hub
        .join_tab(session(), None, Person::anonymous(), link)
        .unwrap();
    assert_eq!(drain(&mut early)[0]["requests"][0].get("orphaned"), None);
    rig.hub.detach_agent(&rig.agent);
    tokio::time::sleep(Duration::from_secs(61)).await;
    let (link, mut late) = Link::new(64);
    let _late = rig
        .hub
        .join_tab(session(), None, Person::anonymous(), link)
        .unwrap();
    assert_eq!(drain(&mut late)[0]["requests"][0]["orphaned"], true);
}

/// A look at a request without waiting (`GET …` with no `wait_s`) is its agent too: checked
/// every 30 s it is never orphaned; once the looks stop, it is after the grace.
#[tokio::test(start_paused = true)]
async fn a_look_without_waiting_keeps_its_request_from_being_orphaned() {
    let mut rig = rig();
    rig.hub.ask(ask_of("r", None), None).await;
    rig.tab_frames();
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_secs(30)).await;
        let _ = rig
            .hub
            .long_poll(&session(), &id("r"), Duration::ZERO)
            .await;
    }
    assert_eq!(
        rig.tab_frames(),
        Vec::<String>::new(),
        "looked at: not orphaned"
    );
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(rig.tab_frames(), ["orphaned"]);
}

/// A grace timer superseded while it waited (its agent looked in, and left again) does
/// nothing when it runs: only the current timer orphans.
#[tokio::test(start_paused = true)]
async fn a_superseded_grace_timer_does_not_orphan() {
    let mut rig = rig();
    rig.hub.ask(ask_of("r", None), None).await;
    rig.tab_frames();
    let generation = |rig: &Rig| rig.hub.lock()[&session()].requests[&id("r")].orphan_generation;
    let first = generation(&rig);
    let _ = rig
        .hub
        .long_poll(&session(), &id("r"), Duration::ZERO)
        .await;
    let current = generation(&rig);
    assert!(current > first);
    rig.hub
        .orphan_due(&session(), &id("r"), OrphanStage::Grace, first)
        .await;
    assert_eq!(
        rig.tab_frames(),
        Vec::<String>::new(),
        "a stale timer orphans nothing"
    );
    rig.hub
        .orphan_due(&session(), &id("r"), OrphanStage::Grace, current)
        .await;
    assert_eq!(rig.tab_frames(), ["orphaned"]);
}

/// An approval of one call that needs two people (`quorum: 2`).
fn ask_needing_two(request: &str, veto: bool) -> CheckedAsk {
    let calls = json!([{"name": "deploy", "args": {"env": "prod"}}]);
    CheckedAsk {
        callback: None,
        questions: QuestionSet::validate(Dialect::parse("approval").unwrap(), &calls).unwrap(),
        quorum: Some(Quorum { needed: 2, veto }),
        ..ask_of(request, None)
    }
}

/// A tab of `user` (a personal link's person) on the session, and its queue.
fn tab_of(rig: &Rig, user: &str) -> (TabHandle, Queue) {
    let (link, mut queue) = Link::new(64);
    let tab = rig
        .hub
        .join_tab(
            session(),
            None,
            Person::named(user, Via::PersonalLink),
            link,
        )
        .unwrap();
    drain(&mut queue);
    (tab, queue)
}

fn decisions(kind: &str) -> Value {
    json!({"decisions": [{"type": kind}]})
}

/// Two people must approve: the first approval is kept and shown as a tally, an anonymous
/// tab cannot vote, the second approval ends it with every voter in the outcome; each vote is
/// in the trail, and the kept votes go once it has ended.
#[tokio::test]
async fn a_quorum_of_two_needs_two_people_and_the_second_vote_ends_it() {
    let mut rig = rig();
    rig.hub
        .ask(ask_needing_two("r", true), Some(&rig.agent))
        .await;
    let shown = drain(&mut rig.tab_queue);
    assert_eq!(
        shown[0]["request"]["quorum"],
        json!({"needed": 2, "veto": true})
    );
    assert_eq!(
        shown[0]["request"]["tally"],
        json!([{"approved_by": [], "rejected_by": []}])
    );
    rig.agent_frames();
    let refused = rig
        .tab
        .answer("r", decisions("approve"))
        .await
        .expect("refused");
    assert!(refused.for_who, "an anonymous tab cannot vote");
    let (alice, _) = tab_of(&rig, "alice@example.com");
    let (bob, _) = tab_of(&rig, "bob@example.com");
    assert!(alice.answer("r", decisions("approve")).await.is_none());
    let tally = drain(&mut rig.tab_queue);
    assert_eq!(types(&tally), ["tally"]);
    assert_eq!(
        tally[0]["calls"],
        json!([{"approved_by": ["alice@example.com"], "rejected_by": []}])
    );
    assert_eq!(tally[0]["needed"], 2);
    assert_eq!(tally[0]["user"], "alice@example.com");
    assert!(
        rig.agent_frames().is_empty(),
        "one approval decides nothing"
    );
    assert_eq!(rig.state("r"), Some("open"));
    // The same person again is still one person.
    assert!(alice.answer("r", decisions("approve")).await.is_none());
    assert_eq!(rig.state("r"), Some("open"));
    let again = drain(&mut rig.tab_queue);
    assert_eq!(
        again[0]["calls"][0]["approved_by"],
        json!(["alice@example.com"])
    );
    assert!(bob.answer("r", decisions("approve")).await.is_none());
    let outcome = &rig.agent_frames()[0];
    assert_eq!(outcome["outcome"], "answered");
    assert_eq!(outcome["user"], "bob@example.com");
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "approve"}]})
    );
    assert_eq!(
        outcome["voters"],
        json!([
            {"user": "alice@example.com", "decisions": ["approve"]},
            {"user": "bob@example.com", "decisions": ["approve"]}
        ])
    );
    let ended = drain(&mut rig.tab_queue);
    assert_eq!(types(&ended), ["resolved"]);
    assert_eq!(ended[0]["voters"], outcome["voters"]);
    assert_eq!(
        trail_events(&rig).await,
        ["asked", "refused", "voted", "voted", "voted", "answered"]
    );
    let kept = rig.store.kept().await.unwrap();
    assert!(
        kept.iter()
            .all(|field| field.table != crate::store::KeptTable::Votes),
        "the votes go with the ending: {kept:?}"
    );
}

/// With veto (the default) one rejection rejects the call at once; without, it needs two.
#[tokio::test]
async fn one_rejection_vetoes_unless_veto_is_off() {
    let mut rig = rig();
    rig.hub
        .ask(ask_needing_two("v", true), Some(&rig.agent))
        .await;
    rig.hub
        .ask(ask_needing_two("n", false), Some(&rig.agent))
        .await;
    rig.agent_frames();
    let (alice, _) = tab_of(&rig, "alice@example.com");
    assert!(alice.answer("v", decisions("reject")).await.is_none());
    let outcome = &rig.agent_frames()[0];
    assert_eq!(outcome["id"], "v");
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "reject"}]})
    );
    assert!(alice.answer("n", decisions("reject")).await.is_none());
    assert!(rig.agent_frames().is_empty());
    assert_eq!(rig.state("n"), Some("open"));
}

// ---------- remembered approvals ----------

use askgate_protocol::approval::rules::RuleScope;

/// An approval of `calls` (`[[name, args], ...]`), with `rules` as the ask says.
fn ask_approval(request: &str, calls: &[(&str, Value)], rules: bool) -> CheckedAsk {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(name, args)| json!({"name": name, "args": args}))
        .collect();
    CheckedAsk {
        callback: None,
        questions: QuestionSet::validate(Dialect::parse("approval").unwrap(), &json!(calls))
            .unwrap(),
        rules,
        ..ask_of(request, None)
    }
}

fn rm_tmp() -> (&'static str, Value) {
    ("rm", json!({"path": "/tmp/x"}))
}

/// The parsed trail of session `s`.
async fn trail(rig: &Rig) -> Vec<Value> {
    let lines = rig.store.trails().audit(&session(), 0, 100).await.unwrap();
    lines
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// alice approves `rm /tmp/x` on request `r`, remembering it as `remember` asks; the id of
/// the rule it made.
async fn remember_rm(rig: &mut Rig, remember: Value) -> String {
    rig.hub
        .ask(ask_approval("r", &[rm_tmp()], true), Some(&rig.agent))
        .await;
    let (alice, _) = tab_of(rig, ALICE);
    let mut decision = remember;
    decision["type"] = json!("approve");
    let answer = json!({"decisions": [decision]});
    assert!(alice.answer("r", answer).await.is_none());
    let outcome = rig.agent_frames().pop().unwrap();
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "approve"}]}),
        "what is remembered is not the agent's to read"
    );
    let made = trail(rig)
        .await
        .into_iter()
        .find(|entry| entry["event"] == "rule_made")
        .expect("a rule_made entry");
    assert_eq!(made["user"], ALICE);
    assert_eq!(made["rule"]["tool"], "rm");
    made["rule"]["id"].as_str().unwrap().to_owned()
}

/// A session rule: the next identical call is approved at once (accepted, then answered by
/// the rule, in the trail as auto_approved, nobody asked); a call with other arguments, and
/// an ask with `rules: false`, are asked; once revoked, the rule approves nothing.
#[tokio::test]
async fn a_session_rule_approves_the_same_call_at_once_until_revoked() {
    let mut rig = rig();
    let rule = remember_rm(&mut rig, json!({"remember": "session"})).await;
    drain(&mut rig.tab_queue);
    rig.hub
        .ask(ask_approval("again", &[rm_tmp()], true), Some(&rig.agent))
        .await;
    let frames = rig.agent_frames();
    assert_eq!(
        types(&frames),
        ["accepted", "outcome"],
        "accepted, then at once its outcome"
    );
    assert_eq!(frames[1]["outcome"], "answered");
    assert_eq!(
        frames[1]["response"],
        json!({"decisions": [{"type": "approve"}]})
    );
    assert_eq!(frames[1]["by"], format!("rule:{rule}"));
    assert_eq!(frames[1]["user"], ALICE);
    assert_eq!(frames[1]["via"], "rule");
    let approved = trail(&rig).await.pop().unwrap();
    assert_eq!(approved["event"], "auto_approved");
    assert_eq!(approved["rule"], rule);
    assert_eq!(approved["via"], "rule");

    rig.hub
        .ask(
            ask_approval("other", &[("rm", json!({"path": "/etc"}))], true),
            Some(&rig.agent),
        )
        .await;
    rig.hub
        .ask(ask_approval("always", &[rm_tmp()], false), Some(&rig.agent))
        .await;
    assert_eq!(types(&rig.agent_frames()), ["accepted", "accepted"]);
    assert_eq!(rig.state("other"), Some("open"));
    assert_eq!(rig.state("always"), Some("open"));

    let rules = rig.hub.session_rules(&session()).await.unwrap();
    assert_eq!(rules.len(), 1);
    let revoked = rig
        .hub
        .revoke_rule(rules, &rule, super::super::Revoker::Operator)
        .await
        .unwrap();
    assert_eq!(revoked.map(|r| r.id), Some(rule.clone()));
    assert!(rig.hub.session_rules(&session()).await.unwrap().is_empty());
    rig.hub
        .ask(ask_approval("after", &[rm_tmp()], true), Some(&rig.agent))
        .await;
    assert_eq!(types(&rig.agent_frames()), ["accepted"]);
    assert_eq!(rig.state("after"), Some("open"));
    let revoked = trail(&rig)
        .await
        .into_iter()
        .find(|entry| entry["event"] == "rule_revoked")
        .expect("a rule_revoked entry");
    assert_eq!(
        (&revoked["rule"], &revoked["via"]),
        (&json!(rule), &json!("operator"))
    );
}

/// A request only some of whose calls rules approve asks for the rest, the ruled ones shown
/// as approved; whatever a tab sends for those, they are approved.
#[tokio::test]
async fn calls_a_rule_approves_are_shown_ruled_and_the_rest_asked() {
    let mut rig = rig();
    let rule = remember_rm(&mut rig, json!({"remember": "session", "args": "any"})).await;
    drain(&mut rig.tab_queue);
    let ls = ("ls", json!({}));
    rig.hub
        .ask(
            ask_approval("two", &[("rm", json!({"path": "/etc"})), ls], true),
            Some(&rig.agent),
        )
        .await;
    assert_eq!(types(&rig.agent_frames()), ["accepted"]);
    let shown = drain(&mut rig.tab_queue);
    assert_eq!(
        shown[0]["request"]["ruled"],
        json!([{"rule": rule, "user": ALICE, "scope": "session"}, null])
    );
    assert_eq!(shown[0]["request"]["remember"], json!(["session", "key"]));
    let (bob, _) = tab_of(&rig, BOB);
    let answer = json!({"decisions": [{"type": "reject"}, {"type": "approve"}]});
    assert!(bob.answer("two", answer).await.is_none());
    let outcome = rig.agent_frames().pop().unwrap();
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "approve"}, {"type": "approve"}]})
    );
    assert_eq!(outcome["user"], BOB);
}

/// A rule for the agent key holds in its other sessions, and not for another key.
#[tokio::test]
async fn a_key_rule_holds_for_that_key_in_every_session() {
    let mut rig = rig();
    let rule = remember_rm(&mut rig, json!({"remember": "key"})).await;
    let elsewhere = |request: &str| CheckedAsk {
        callback: None,
        session: SessionId::parse("t").unwrap(),
        ..ask_approval(request, &[rm_tmp()], true)
    };
    rig.hub
        .ask_as(
            elsewhere("mine"),
            Some(&rig.agent),
            crate::keys::LOCAL_KEY_ID,
        )
        .await;
    rig.hub
        .ask_as(elsewhere("theirs"), Some(&rig.agent), "k0123456789ab")
        .await;
    let frames = rig.agent_frames();
    assert_eq!(types(&frames), ["accepted", "outcome", "accepted"]);
    assert_eq!(frames[1]["id"], "mine");
    assert_eq!(frames[1]["by"], format!("rule:{rule}"));
    let keys = rig
        .hub
        .key_rules(&[crate::keys::LOCAL_KEY_ID.to_owned()])
        .await
        .unwrap();
    assert_eq!(keys.len(), 1);
    assert!(rig.hub.session_rules(&session()).await.unwrap().is_empty());
}

/// What cannot be remembered is refused at its path, and the request stays open: by an
/// anonymous tab, for a scope the gateway does not allow, on an ask with `rules: false`.
#[tokio::test]
async fn a_remember_that_cannot_be_kept_is_refused_at_its_path() {
    let rig = rig_with(Limits {
        approval_rules: vec![RuleScope::Session],
        ..Limits::default()
    });
    rig.hub
        .ask(ask_approval("r", &[rm_tmp()], true), Some(&rig.agent))
        .await;
    rig.hub
        .ask(ask_approval("off", &[rm_tmp()], false), Some(&rig.agent))
        .await;
    let remember = |scope: &str| json!({"decisions": [{"type": "approve", "remember": scope}]});
    let refusal = |rejected: Option<crate::hub::Rejected>| {
        let frame: Value = serde_json::from_str(&rejected.expect("refused").frame.text()).unwrap();
        let error = &frame["errors"][0];
        format!(
            "{}: {}",
            error["path"].as_str().unwrap(),
            error["message"].as_str().unwrap()
        )
    };
    let anonymous = refusal(rig.tab.answer("r", remember("session")).await);
    assert!(
        anonymous.starts_with("response.decisions[0].remember: only a person the gateway knows"),
        "{anonymous}"
    );
    let (alice, _) = tab_of(&rig, ALICE);
    let key = refusal(alice.answer("r", remember("key")).await);
    assert!(
        key.contains("remembers approvals only for the session"),
        "{key}"
    );
    let off = refusal(alice.answer("off", remember("session")).await);
    assert!(off.contains("cannot be remembered"), "{off}");
    assert_eq!(rig.state("r"), Some("open"));
    assert_eq!(rig.state("off"), Some("open"));
    assert!(rig.hub.session_rules(&session()).await.unwrap().is_empty());
}

/// Rules are kept in the store: a hub started again over it holds them.
#[tokio::test]
async fn rules_survive_a_restart() {
    let mut rig = rig();
    let rule = remember_rm(&mut rig, json!({"remember": "session"})).await;
    let hub = hub_over(&rig.store, Limits::default(), People::default());
    assert!(
        hub.session_rules(&session()).await.unwrap().is_empty(),
        "not read yet"
    );
    hub.restore(Vec::new()).await;
    let rules = hub.session_rules(&session()).await.unwrap();
    assert_eq!(
        rules.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        [rule]
    );
}

/// A page asks for its rules and hears of each change; a named person revokes one, an
/// anonymous tab cannot.
#[tokio::test]
async fn a_page_lists_its_rules_and_a_named_person_revokes_one() {
    let mut rig = rig();
    let (alice, mut alice_queue) = tab_of(&rig, ALICE);
    let rule = remember_rm(&mut rig, json!({"remember": "key"})).await;
    let told: Vec<Value> = drain(&mut rig.tab_queue)
        .into_iter()
        .filter(|frame| frame["type"] == "rules")
        .collect();
    assert_eq!(told.len(), 1, "told once the rule is made");
    assert_eq!(told[0]["rules"][0]["id"], rule.as_str());
    assert_eq!(told[0]["rules"][0]["scope"], "key");
    let listed: Value = serde_json::from_str(&rig.tab.rules().await.text()).unwrap();
    assert_eq!(listed["rules"], told[0]["rules"]);
    let refused: Value =
        serde_json::from_str(&rig.tab.revoke_rule(&rule).await.expect("refused").text()).unwrap();
    assert_eq!(refused["code"], "forbidden");
    let unknown: Value =
        serde_json::from_str(&alice.revoke_rule("nope").await.expect("refused").text()).unwrap();
    assert_eq!(unknown["code"], "not_found");
    drain(&mut alice_queue);
    assert!(alice.revoke_rule(&rule).await.is_none());
    let after = drain(&mut alice_queue);
    assert_eq!(types(&after), ["rules"]);
    assert_eq!(after[0]["rules"], json!([]));
    let revoked = trail(&rig).await.pop().unwrap();
    assert_eq!(revoked["event"], "rule_revoked");
    assert_eq!(
        (&revoked["user"], &revoked["via"]),
        (&json!(ALICE), &json!("personal-link"))
    );
}

/// A rule acts as its maker: it approves nothing its maker may not answer (here an ask for
/// bob alone); and a rule keeps arguments only up to its limit.
#[tokio::test]
async fn a_rule_answers_only_where_its_maker_may_and_keeps_bounded_arguments() {
    let mut rig = rig();
    remember_rm(&mut rig, json!({"remember": "session"})).await;
    let for_bob = CheckedAsk {
        callback: None,
        answerers: Some(vec![BOB.to_owned()]),
        ..ask_approval("bobs", &[rm_tmp()], true)
    };
    rig.hub.ask(for_bob, Some(&rig.agent)).await;
    assert_eq!(types(&rig.agent_frames()), ["accepted"]);
    assert_eq!(rig.state("bobs"), Some("open"), "alice may not answer it");

    let big = (
        "write",
        json!({"text": "x".repeat(crate::config::MAX_RULE_ARGS_BYTES)}),
    );
    rig.hub
        .ask(ask_approval("big", &[big], true), Some(&rig.agent))
        .await;
    let (alice, _) = tab_of(&rig, ALICE);
    let same = json!({"decisions": [{"type": "approve", "remember": "session"}]});
    let refused = alice.answer("big", same).await.expect("refused");
    let frame: Value = serde_json::from_str(&refused.frame.text()).unwrap();
    assert_eq!(frame["errors"][0]["path"], "response.decisions[0].args");
    let any = json!({"decisions": [{"type": "approve", "remember": "session", "args": "any"}]});
    assert!(
        alice.answer("big", any).await.is_none(),
        "any arguments keeps none"
    );
}

/// `reopen` moves only a request in `Resolving`: one settled meanwhile (another node's ending
/// heard first, while this node's vote was refused as stale) stays resolved.
#[tokio::test]
async fn a_settled_request_is_not_reopened() {
    let rig = rig();
    rig.ask("r", None).await;
    assert!(
        rig.tab
            .answer(
                "r",
                json!({"answers": [{"header": "Color", "selected": ["Red"]}]})
            )
            .await
            .is_none()
    );
    assert_eq!(rig.state("r"), Some("resolved"));
    rig.hub
        .lock()
        .get_mut(&session())
        .unwrap()
        .reopen(&id("r"), None);
    assert_eq!(rig.state("r"), Some("resolved"));
}

/// Votes kept that decide every call, with no ending made (a crash between the two, here a
/// restart that finds them): the request ends by them after a pause, as by the last voter,
/// with every voter.
#[tokio::test(start_paused = true)]
async fn votes_that_decide_a_request_left_open_end_it() {
    let mut rig = rig();
    rig.hub
        .ask(ask_needing_two("q", true), Some(&rig.agent))
        .await;
    rig.agent_frames();
    let kept = |user: &str| StoreOp::Keep {
        table: crate::store::KeptTable::Votes,
        key: "s/q".to_owned(),
        field: user.to_owned(),
        value: Some(json!({"at_ms": 1, "approve": [true]}).to_string()),
    };
    rig.store
        .commit(vec![kept(ALICE), kept(BOB)])
        .await
        .unwrap();
    let records = rig.store.load().await.unwrap();
    let hub = hub_over(&rig.store, Limits::default(), People::default());
    hub.restore(records).await;
    let lookup = hub
        .wait_for(&session(), &id("q"), Duration::from_secs(60))
        .await;
    let Lookup::Resolved(resolution) = lookup else {
        panic!("{lookup:?}");
    };
    assert_eq!(
        resolution.settlement.response,
        json!({"decisions": [{"type": "approve"}]})
    );
    assert!(resolution.user.is_some());
    assert_eq!(
        resolution
            .voters
            .as_ref()
            .and_then(Value::as_array)
            .map(Vec::len),
        Some(2)
    );
}

/// A request asked with a callback has no agent waiting, by design: it is never orphaned nor
/// withdrawn for want of one, and its ending's commit carries the callback, whose body does
/// not hold the session's viewer link (the receiver is the agent's, not the operator's).
#[tokio::test(start_paused = true)]
async fn a_request_with_a_callback_is_never_orphaned_and_its_ending_carries_the_callback() {
    let mut rig = rig_with_callbacks();
    let mut ask = ask_of("r", None);
    ask.callback = askgate_protocol::wire::callback::check_callback(Some(&json!({
        "url": "https://hooks.example.com/askgate",
        "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    })))
    .unwrap();
    let reply = rig.hub.ask(ask, None).await;
    assert!(matches!(reply, AskReply::Accepted { .. }), "{reply:?}");
    rig.tab_frames();
    tokio::time::sleep(Duration::from_secs(2 * 86_400)).await;
    assert_eq!(
        rig.tab_frames(),
        Vec::<String>::new(),
        "neither orphaned nor withdrawn"
    );
    assert_eq!(rig.state("r"), Some("open"));
    assert!(
        rig.store.deliveries().await.unwrap().is_empty(),
        "nothing told at the ask"
    );

    assert_eq!(rig.answer("r", red()).await, None);
    let kept = rig.store.deliveries().await.unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(
        matches!(&kept[0].target, crate::store::DeliveryTarget::Callback(callback) if callback.url == "https://hooks.example.com/askgate"),
        "{kept:?}"
    );
    let body: Value = serde_json::from_str(&kept[0].body).unwrap();
    assert_eq!(body["type"], "request.resolved");
    assert_eq!(body["data"]["outcome"], "answered");
    assert_eq!(body["data"].get("url"), None, "{body}");
}

/// The operator's history, summed over its minutes: asks, answers, and how many minutes have
/// an ask-to-tab and an answer-to-agent time.
fn history_totals(rig: &Rig) -> (u64, u64, usize, usize) {
    let figures = rig.hub.metrics().history.figures(now_ms());
    let minutes = &figures.minutes;
    (
        minutes.iter().map(|m| m.asks).sum(),
        minutes.iter().map(|m| m.answers).sum(),
        minutes.iter().filter(|m| m.ask_to_tab_ms.is_some()).count(),
        minutes
            .iter()
            .filter(|m| m.answer_to_agent_ms.is_some())
            .count(),
    )
}

/// An ask is counted once with its time to the tab; a person's answer is counted with its
/// time back to the agent; a timeout is neither.
#[tokio::test(start_paused = true)]
async fn the_history_counts_the_ask_and_the_persons_answer_with_their_hand_over_times() {
    let mut rig = rig();
    rig.ask("r", None).await;
    assert_eq!(history_totals(&rig), (1, 0, 1, 0));
    rig.agent_frames();
    assert_eq!(rig.answer("r", red()).await, None);
    assert_eq!(types(&rig.agent_frames()), ["outcome"]);
    assert_eq!(history_totals(&rig), (1, 1, 1, 1));
    rig.ask("t", Some(1_000)).await;
    assert_eq!(rig.ended("t").await.settlement.outcome, Outcome::TimedOut);
    assert_eq!(history_totals(&rig), (2, 1, 1, 1));
}

/// An ending the store did not keep stops its clock: when the request is later settled (here
/// by another node's ending, heard as a notice), the answer-to-agent time is not counted from
/// the ending that failed twenty minutes before.
#[tokio::test(start_paused = true)]
async fn a_reopened_request_forgets_when_its_failed_ending_began() {
    let mut session = lone_session();
    let request = record("r", None);
    let questions = read(&request);
    session.admit_record(request, questions, Arrival::Shared);
    // A long-poll waits on it: its outcome is handed over when it settles.
    session.requests.get_mut(&id("r")).unwrap().polls = 1;
    session.begin_resolving(&id("r"), false);
    session.reopen(&id("r"), None);
    tokio::time::advance(Duration::from_secs(20 * 60)).await;
    let mut answered = Settlement::withdrawn();
    answered.outcome = Outcome::Answered;
    session.settle(&id("r"), StoredResolution::untouched(answered, 7));
    let figures = session.open.ledger.metrics.history.figures(now_ms());
    assert!(
        figures
            .minutes
            .iter()
            .all(|m| m.answer_to_agent_ms.is_none()),
        "{:?}",
        figures.minutes.last()
    );
}
