//! The Redis store's decisions, one script at a time, against a real `redis-server`: what
//! Redis's clock decides about deadlines (a timeout is refused before it, an answer after it
//! loses to the timeout), and what a second ending learns.
#![cfg(target_os = "linux")]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use std::sync::atomic::Ordering;

use askgate::audit::chain::{AuditKey, ChainKey, sha256_hex};
use askgate::audit::verify::ChainCheck;
use askgate::metrics::Metrics;
use askgate::store::redis::{RedisOptions, RedisStore};
use askgate::store::shared::{Change, Notice};
use askgate::store::{Store, StoreOp, StoredRequest, StoredResolution, Verdict};
use askgate_protocol::wire::Via;
use askgate_protocol::{Dialect, Outcome, QuestionSet, RequestId, SessionId};
use serde_json::json;
use support::redis::RedisServer;

fn questions() -> serde_json::Value {
    json!([{"header": "Color", "question": "Which?", "options": [{"label": "Red"}, {"label": "Blue"}]}])
}

fn request(id: &str, timeout_ms: Option<u64>) -> StoredRequest {
    let questions = QuestionSet::validate(Dialect::HARNESS, &questions()).unwrap();
    StoredRequest {
        quorum: None,
        asked_by: None,
        callback: None,
        ruled: None,
        remember: Vec::new(),
        votes: Vec::new(),
        default: None,
        session: SessionId::parse("s").unwrap(),
        id: RequestId::parse(id).unwrap(),
        dialect: Dialect::HARNESS,
        questions: questions.to_json(),
        title: None,
        asked_at_ms: 1_000,
        deadline_ms: timeout_ms.map(|t| 1_000 + t),
        answerers: None,
        follow_ups: Default::default(),
        resolution: None,
    }
}

fn ending(id: &str, outcome: Outcome, late: bool) -> StoreOp {
    let questions = QuestionSet::validate(Dialect::HARNESS, &questions()).unwrap();
    let settlement = match outcome {
        Outcome::Answered => questions
            .settle_answer(&json!({"answers": [{"header": "Color", "selected": ["Red"]}]}))
            .unwrap(),
        other => questions.settle_without_answer(other),
    };
    StoreOp::Resolve {
        session: SessionId::parse("s").unwrap(),
        id: RequestId::parse(id).unwrap(),
        resolution: StoredResolution {
            settlement,
            by: Some("t-1".into()),
            user: None,
            via: None,
            voters: None,
            at_ms: 0,
        },
        if_late: late.then(|| {
            StoredResolution::untouched(questions.settle_without_answer(Outcome::TimedOut), 0)
        }),
    }
}

async fn store(redis: &RedisServer) -> Arc<RedisStore> {
    store_counting(redis, Arc::new(Metrics::default())).await
}

async fn store_counting(redis: &RedisServer, metrics: Arc<Metrics>) -> Arc<RedisStore> {
    let options = RedisOptions {
        url: redis.url(),
        prefix: "askgate:".into(),
        retention: Duration::from_secs(3600),
        audit_retention: Duration::from_secs(3600),
        presence_ttl: askgate::store::shared::DEFAULT_PRESENCE_TTL,
        probe_silence: askgate::store::redis::DEFAULT_PROBE_SILENCE,
    };
    RedisStore::connect(&options, metrics)
        .await
        .expect("connected")
}

/// Waits until Redis's clock, the one that decides deadlines, is past `deadline_ms`.
async fn until_redis_clock_passes(redis: &RedisServer, deadline_ms: u64) {
    let patience = tokio::time::Instant::now() + support::TIMEOUT;
    loop {
        let time = redis.cli(&["TIME"]);
        let mut parts = time
            .split_whitespace()
            .map(|part| part.parse::<u64>().unwrap());
        let (seconds, micros) = (parts.next().unwrap(), parts.next().unwrap());
        if seconds * 1000 + micros / 1000 > deadline_ms {
            return;
        }
        assert!(
            tokio::time::Instant::now() < patience,
            "Redis's clock never passed {deadline_ms}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn one(store: &RedisStore, op: StoreOp) -> Verdict {
    store.decide(vec![op]).await.expect("decided").remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_s_clock_decides_deadlines_and_the_first_ending_wins() {
    let redis = RedisServer::start(&[]);
    let store = store(&redis).await;

    // Created on Redis's clock, whatever the node guessed (asked_at 1,000).
    let Verdict::Created {
        asked_at_ms,
        deadline_ms,
    } = one(&store, StoreOp::Put(request("d", Some(300)))).await
    else {
        panic!("not created")
    };
    assert!(asked_at_ms > 1_000_000_000_000, "{asked_at_ms}");
    assert_eq!(deadline_ms, Some(asked_at_ms + 300));
    // A re-ask is the same request; other questions are a conflict.
    assert!(matches!(
        one(&store, StoreOp::Put(request("d", Some(300)))).await,
        Verdict::Exists(_)
    ));
    let mut other = request("d", Some(300));
    other.questions = json!([]);
    assert_eq!(one(&store, StoreOp::Put(other)).await, Verdict::Conflict);

    // A timeout before the deadline is refused, with what is left.
    let Verdict::Early { left_ms } = one(&store, ending("d", Outcome::TimedOut, false)).await
    else {
        panic!("a timeout before the deadline was taken")
    };
    assert!(left_ms <= 300, "{left_ms}");
    // Past the deadline, an answer loses to the timeout, which is what is kept.
    until_redis_clock_passes(&redis, deadline_ms.unwrap()).await;
    let Verdict::Lost(kept) = one(&store, ending("d", Outcome::Answered, true)).await else {
        panic!("a late answer won")
    };
    assert_eq!(kept.settlement.outcome, Outcome::TimedOut);
    assert_eq!(kept.by, None);
    // And every later ending learns that one.
    let Verdict::Lost(again) = one(&store, ending("d", Outcome::Declined, true)).await else {
        panic!("a second ending won")
    };
    assert_eq!(again, kept);

    // A default ends the request only once the deadline has passed on Redis's clock, as a
    // timeout does; a late answer then loses to the default it carried, which is kept whole.
    let Verdict::Created {
        deadline_ms: Some(deadline_ms),
        ..
    } = one(&store, StoreOp::Put(request("g", Some(300)))).await
    else {
        panic!("not created with a deadline")
    };
    let defaulted = StoredResolution {
        by: Some("default".into()),
        via: Some(Via::Default),
        ..StoredResolution::untouched(
            QuestionSet::validate(Dialect::HARNESS, &questions())
                .unwrap()
                .settle_answer(&json!({"answers": [{"header": "Color", "selected": ["Blue"]}]}))
                .unwrap(),
            0,
        )
    };
    // (The early default on a request of its own, a minute from its deadline: no busy machine
    // reaches that before the script runs.)
    one(&store, StoreOp::Put(request("g-early", Some(60_000)))).await;
    let early = StoreOp::Resolve {
        session: SessionId::parse("s").unwrap(),
        id: RequestId::parse("g-early").unwrap(),
        resolution: defaulted.clone(),
        if_late: None,
    };
    assert!(matches!(one(&store, early).await, Verdict::Early { .. }));
    until_redis_clock_passes(&redis, deadline_ms).await;
    let StoreOp::Resolve { resolution, .. } = ending("g", Outcome::Answered, false) else {
        unreachable!()
    };
    let late_answer = StoreOp::Resolve {
        session: SessionId::parse("s").unwrap(),
        id: RequestId::parse("g").unwrap(),
        resolution,
        if_late: Some(defaulted.clone()),
    };
    let Verdict::Lost(kept) = one(&store, late_answer).await else {
        panic!("a late answer won over the default")
    };
    assert_eq!(kept.settlement, defaulted.settlement);
    assert_eq!(
        (kept.by.as_deref(), kept.via),
        (Some("default"), Some(Via::Default))
    );

    // A request without a deadline never times out; the first answer wins.
    assert!(matches!(
        one(&store, StoreOp::Put(request("n", None))).await,
        Verdict::Created { .. }
    ));
    assert!(matches!(
        one(&store, ending("n", Outcome::TimedOut, false)).await,
        Verdict::Early { left_ms: u64::MAX }
    ));
    assert!(matches!(
        one(&store, ending("n", Outcome::Answered, false)).await,
        Verdict::Won { .. }
    ));
    // Forgotten once resolved, idempotently; an unknown one is unknown.
    let forget = || StoreOp::Delete {
        session: SessionId::parse("s").unwrap(),
        id: RequestId::parse("n").unwrap(),
        acked: true,
    };
    assert_eq!(one(&store, forget()).await, Verdict::Done);
    assert_eq!(one(&store, forget()).await, Verdict::Unknown);
    assert_eq!(
        one(&store, ending("n", Outcome::Answered, false)).await,
        Verdict::Unknown
    );
}

fn vote_of(user: &str) -> askgate_protocol::approval::Vote {
    askgate_protocol::approval::Vote {
        user: user.into(),
        approve: vec![Some(true)],
        reasons: Vec::new(),
    }
}

fn vote(user: &str, counted_on: &[&str]) -> StoreOp {
    vote_on("v", user, counted_on)
}

fn vote_on(id: &str, user: &str, counted_on: &[&str]) -> StoreOp {
    let counted_on: Vec<_> = counted_on.iter().map(|user| vote_of(user)).collect();
    let mut votes = counted_on.clone();
    votes.push(vote_of(user));
    StoreOp::Vote {
        session: SessionId::parse("s").unwrap(),
        id: RequestId::parse(id).unwrap(),
        user: user.into(),
        votes,
        counted_on,
    }
}

/// `vote.lua` keeps a vote only on the votes it was counted on: a vote counted on votes that
/// changed is told the votes as they are, and nothing after it in the commit is made; a
/// request that has ended takes no vote.
#[tokio::test]
async fn a_vote_is_kept_only_on_the_votes_it_was_counted_on() {
    let redis = RedisServer::start(&[]);
    let store = store(&redis).await;
    assert!(matches!(
        one(&store, StoreOp::Put(request("v", None))).await,
        Verdict::Created { .. }
    ));
    assert_eq!(one(&store, vote("alice", &[])).await, Verdict::Done);
    // Counted on no votes, as another node would have before it heard of alice's.
    assert_eq!(
        one(&store, vote("bob", &[])).await,
        Verdict::Stale(vec![vote_of("alice")])
    );
    // Stale, it stops the commit: the ending it would have made is not made.
    let verdicts = store
        .decide(vec![
            vote("bob", &[]),
            ending("v", Outcome::Answered, false),
        ])
        .await
        .unwrap();
    assert_eq!(verdicts, [Verdict::Stale(vec![vote_of("alice")])]);
    assert_eq!(one(&store, vote("bob", &["alice"])).await, Verdict::Done);
    let shared = store.shared().expect("a shared store");
    let loaded = shared.load_session(&SessionId::parse("s").unwrap()).await;
    let record = loaded
        .unwrap()
        .requests
        .into_iter()
        .find(|r| r.id.as_str() == "v")
        .unwrap();
    assert_eq!(record.votes, [vote_of("alice"), vote_of("bob")]);
    assert!(matches!(
        one(&store, ending("v", Outcome::Answered, false)).await,
        Verdict::Won { .. }
    ));
    assert!(matches!(
        one(&store, vote("carol", &["alice", "bob"])).await,
        Verdict::Lost(_)
    ));
    // At or after its deadline by Redis's clock, a vote is refused: the timeout ends it.
    let Verdict::Created {
        deadline_ms: Some(deadline_ms),
        ..
    } = one(&store, StoreOp::Put(request("late", Some(200)))).await
    else {
        panic!("not created")
    };
    until_redis_clock_passes(&redis, deadline_ms).await;
    assert_eq!(
        one(&store, vote_on("late", "alice", &[])).await,
        Verdict::Early { left_ms: 0 }
    );
}

/// A node reads the sequence numbers of every session it holds in batches (one MGET each):
/// the numbers come back in the sessions' order across batches, a session never written reads
/// 0, and each equals what asking for it alone gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequence_numbers_come_back_in_order_across_batches() {
    let redis = RedisServer::start(&[]);
    let store = store(&redis).await;
    let shared = store.shared().expect("a Redis store is shared");
    let sessions: Vec<SessionId> = (0..1_201)
        .map(|i| SessionId::parse(format!("seq-{i}")).unwrap())
        .collect();
    // Written: sessions at the edges of the batches, some more than once.
    let written = [(0, 1), (499, 2), (500, 3), (999, 1), (1_200, 2)];
    for (index, asks) in written {
        for ask in 0..asks {
            let mut put = request(&format!("r{ask}"), None);
            put.session = sessions[index].clone();
            store.commit(vec![StoreOp::Put(put)]).await.unwrap();
        }
    }
    let all = shared.sequences(sessions.clone()).await.unwrap();
    assert_eq!(all.len(), sessions.len());
    for (index, session) in sessions.iter().enumerate() {
        let alone = shared.sequences(vec![session.clone()]).await.unwrap();
        assert_eq!(alone, vec![all[index]], "{session}");
        let asked = written.iter().any(|(i, _)| *i == index);
        assert_eq!(all[index] > 0, asked, "{session}: {}", all[index]);
    }
    // More asks, more notices: a larger number.
    assert!(all[499] > all[0] && all[500] > all[499], "{all:?}");
}

/// Asks a node may make before one's audit entry takes the hash the node proposed: a proposal
/// covers four milliseconds of Redis's clock, which a busy machine can miss now and then.
const PROPOSAL_ATTEMPTS: usize = 50;

/// Waits for the notice of a request asked in session `s`.
async fn put_notice(notices: &mut tokio::sync::mpsc::Receiver<Notice>) {
    loop {
        let notice = tokio::time::timeout(support::TIMEOUT, notices.recv())
            .await
            .expect("a notice in time")
            .expect("the notices go on");
        if matches!(
            notice,
            Notice::Change {
                change: Change::Put(_),
                ..
            }
        ) {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_heard_the_trail_s_head_hashes_the_next_entry_for_redis() {
    let redis = RedisServer::start(&[]);
    let metrics = Arc::new(Metrics::default());
    let store = store_counting(&redis, Arc::clone(&metrics)).await;
    let key = AuditKey::from_bytes([9; 32]);
    store.use_audit_key(&key).await.expect("keyed");
    let shared = store.shared().expect("a shared store");
    let mut notices = shared.take_notices().expect("the notices");
    let session = SessionId::parse("s").unwrap();
    shared.watch(&session).await.expect("watching the session");
    let counted = |counter: &std::sync::atomic::AtomicU64| counter.load(Ordering::Relaxed);

    // The first ask's entry is hashed by Redis (no head heard of yet); its notice carries the
    // head, so every later one is proposed, and taken unless Redis's clock was outside the
    // proposal's milliseconds.
    let mut asked = 0;
    while counted(&metrics.shared.seals_taken) == 0 {
        assert!(
            asked < PROPOSAL_ATTEMPTS,
            "none of {asked} asks took the hash the node proposed"
        );
        let verdict = one(&store, StoreOp::Put(request(&format!("r{asked}"), None))).await;
        assert!(matches!(verdict, Verdict::Created { .. }), "{verdict:?}");
        put_notice(&mut notices).await;
        asked += 1;
        assert_eq!(counted(&metrics.shared.seals_proposed), asked as u64 - 1);
    }
    // An ending is proposed after the head its session's last notice carried.
    let won = one(&store, ending("r0", Outcome::Answered, false)).await;
    assert!(matches!(won, Verdict::Won { .. }), "{won:?}");
    assert_eq!(counted(&metrics.shared.seals_proposed), asked as u64);

    // Every entry holds under the key, whichever side hashed it.
    let lines = store
        .trails()
        .audit(&session, 0, 1000)
        .await
        .expect("the trail");
    let mut check = ChainCheck::with_key("s", Some(ChainKey::Keyed(Arc::new(key))));
    for line in &lines {
        check
            .next(line)
            .unwrap_or_else(|broken| panic!("{broken:?}: {line}"));
    }
    assert_eq!(check.checked(), asked as u64 + 1);
}

/// The sealing prefixes and `note.lua`, run as one script (the store loads them so).
const NOTE_LUA: &str = concat!(
    include_str!("../../src/store/redis/scripts/sha256.lua"),
    include_str!("../../src/store/redis/scripts/chain.lua"),
    include_str!("../../src/store/redis/scripts/note.lua")
);

/// Seals an entry onto trail `t` with `seal` as the seal argument; the entry's line.
fn note_sealed(redis: &RedisServer, seal: &str) -> String {
    let tail = r#""session":"s","id":"r","event":"link""#;
    let digest = sha256_hex(tail.as_bytes());
    let seq = redis.cli(&[
        "EVAL", NOTE_LUA, "2", "t", "t:head", tail, &digest, "60000", seal,
    ]);
    assert!(seq.trim().parse::<u64>().is_ok(), "note.lua replied {seq}");
    redis.cli(&["LINDEX", "t", "-1"]).trim().to_owned()
}

fn redis_ms(redis: &RedisServer) -> u64 {
    let time = redis.cli(&["TIME"]);
    let mut parts = time.split_whitespace().map(|p| p.parse::<u64>().unwrap());
    parts.next().unwrap() * 1000 + parts.next().unwrap() / 1000
}

#[test]
fn a_script_takes_a_proposed_hash_only_after_the_head_and_at_the_time_it_names() {
    let redis = RedisServer::start(&[]);
    let key = AuditKey::from_bytes([5; 32]);
    let states = key.hmac_states_hex();
    let chain = ChainKey::Keyed(Arc::new(key));
    let hash_of = |line: &str| -> String {
        let read = askgate::audit::chain::read_line(line).expect("a sealed line");
        assert!(
            read.hash_holds_with(&chain) || read.hash.starts_with("ffff"),
            "{line}"
        );
        read.hash.to_owned()
    };
    let marker = "f".repeat(64);
    // A proposal needs the head: with none yet, one naming an empty head is taken.
    let mut line = String::new();
    for _ in 0..PROPOSAL_ATTEMPTS {
        let now = redis_ms(&redis);
        line = note_sealed(&redis, &format!("{states}||{now}|{}", marker.repeat(1000)));
        if hash_of(&line) == marker {
            break;
        }
    }
    assert_eq!(hash_of(&line), marker, "never taken: {line}");
    let head = redis.cli(&["GET", "t:head"]).trim().to_owned();
    assert!(head.ends_with(&marker), "{head}");
    // Then the entry goes after it as hashed by Redis, for a proposal on another head, one for
    // a time not yet come, and ones that do not read as proposals.
    let now = redis_ms(&redis);
    let many = marker.repeat(1000);
    for seal in [
        format!("{states}|1 {}|{now}|{many}", "0".repeat(64)),
        format!("{states}|{head}|{}|{many}", now + 600_000),
        format!("{states}|{head}|{now}"),
        format!("{states}|{head}|soon|{many}"),
        format!("{states}|{head}|{now}|{}", "f".repeat(63)),
        format!("{states}|"),
    ] {
        let line = note_sealed(&redis, &seal);
        assert_ne!(hash_of(&line), marker, "taken: {seal:.200}");
        assert!(
            askgate::audit::chain::read_line(&line)
                .unwrap()
                .hash_holds_with(&chain)
        );
    }
}

/// An inbox's index keeps each session's latest time any node wrote: a node whose clock runs
/// behind does not move a session back (it would sink below older ones and be trimmed
/// first), a new session goes in at the node's time, and only the newest
/// `INBOX_INDEX_SESSIONS` are kept.
#[tokio::test]
async fn an_inbox_index_moves_a_session_only_later_and_keeps_the_newest() {
    use askgate::store::shared::INBOX_INDEX_SESSIONS;
    let redis = RedisServer::start(&[]);
    let store = store(&redis).await;
    let shared = store.shared().expect("redis is shared");
    let index = "askgate:{inbox}:to:alice";
    let ahead = askgate::clock::now_ms() + 3_600_000;
    redis.cli(&["ZADD", index, &ahead.to_string(), "written-ahead"]);
    for session in ["written-ahead", "new"] {
        let session = SessionId::parse(session).unwrap();
        shared
            .addressed(&session, vec!["alice".into()])
            .await
            .expect("noted");
    }
    let score = |member: &str| redis.cli(&["ZSCORE", index, member]).trim().to_owned();
    assert_eq!(score("written-ahead"), ahead.to_string());
    let new: u64 = score("new").parse().expect("the new session is in");
    assert!(new < ahead, "{new}");
    for n in 0..INBOX_INDEX_SESSIONS {
        let session = SessionId::parse(format!("s{n}")).unwrap();
        shared
            .addressed(&session, vec!["alice".into()])
            .await
            .expect("noted");
    }
    let count: usize = redis.cli(&["ZCARD", index]).trim().parse().unwrap();
    assert_eq!(count, INBOX_INDEX_SESSIONS);
    assert_eq!(
        score("written-ahead"),
        ahead.to_string(),
        "the newest stays"
    );
    assert_eq!(score("new"), "", "the oldest went");
}
