//! Audit retention: a session's trail is dropped whole once its newest entry is older than
//! `--audit-retention-days`, on every store; a trail still written to is kept whole.
#![cfg(target_os = "linux")]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use askgate::audit::verify::ChainCheck;
use askgate::audit::{Event, Note};
use askgate::clock::now_ms;
use askgate::metrics::Metrics;
use askgate::store::redis::{RedisOptions, RedisStore};
use askgate::store::{DurableStore, MemoryStore, Store, StoreOp};
use askgate_protocol::SessionId;
use support::redis::RedisServer;
use support::{TIMEOUT, tempdir};

fn link_issued(session: &str, at_ms: u64) -> StoreOp {
    StoreOp::Note(Note {
        session: SessionId::parse(session).unwrap(),
        id: None,
        at_ms,
        event: Event::LinkIssued {
            user: "alice@example.com".into(),
            expires_ms: at_ms + 1,
        },
    })
}

async fn sessions(store: &dyn Store) -> Vec<String> {
    let mut names: Vec<String> = store
        .trails()
        .audit_sessions()
        .await
        .unwrap()
        .iter()
        .map(|s| s.as_str().to_owned())
        .collect();
    names.sort();
    names
}

/// A stale trail and a fresh one; a sweep at `before_ms` drops the stale one only, whole.
async fn local_suite(store: &dyn Store) {
    let day = 24 * 3600 * 1000;
    let now = now_ms();
    store
        .commit(vec![
            link_issued("old", now - 100 * day),
            link_issued("old", now - 95 * day),
            link_issued("kept", now - 100 * day),
            link_issued("kept", now - day),
        ])
        .await
        .unwrap();
    assert_eq!(sessions(store).await, ["kept", "old"]);
    store
        .commit(vec![StoreOp::DropStaleTrails {
            before_ms: now - 90 * day,
        }])
        .await
        .unwrap();
    assert_eq!(sessions(store).await, ["kept"]);
    let kept = SessionId::parse("kept").unwrap();
    let lines = store.trails().audit(&kept, 0, 100).await.unwrap();
    assert_eq!(lines.len(), 2, "a trail still written to is kept whole");
    let mut check = ChainCheck::new("kept");
    for line in &lines {
        check.next(line).unwrap();
    }
    // A dropped trail starts again from its first entry.
    store.commit(vec![link_issued("old", now)]).await.unwrap();
    let old = SessionId::parse("old").unwrap();
    let lines = store.trails().audit(&old, 0, 100).await.unwrap();
    assert_eq!(lines.len(), 1);
    ChainCheck::new("old").next(&lines[0]).unwrap();
}

#[tokio::test]
async fn the_memory_store_drops_stale_trails_whole() {
    local_suite(&MemoryStore::new()).await;
}

#[tokio::test]
async fn the_embedded_store_drops_stale_trails_whole() {
    let store = DurableStore::open(&tempdir("audit-retention")).unwrap();
    local_suite(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_trail_expires_with_its_retention_and_leaves_the_index() {
    let redis = RedisServer::start(&[]);
    let options = RedisOptions {
        url: redis.url(),
        prefix: "askgate:".into(),
        retention: Duration::from_secs(3600),
        audit_retention: Duration::from_millis(300),
        presence_ttl: askgate::store::shared::DEFAULT_PRESENCE_TTL,
        probe_silence: askgate::store::redis::DEFAULT_PROBE_SILENCE,
    };
    let store: Arc<RedisStore> = RedisStore::connect(&options, Arc::new(Metrics::default()))
        .await
        .unwrap();
    store
        .commit(vec![link_issued("brief", now_ms())])
        .await
        .unwrap();
    assert_eq!(sessions(store.as_ref()).await, ["brief"]);
    let ttl: i64 = redis
        .cli(&["PTTL", "askgate:{brief}:audit"])
        .trim()
        .parse()
        .unwrap();
    assert!(
        (1..=300).contains(&ttl),
        "the trail expires with its retention: {ttl}"
    );
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while redis.cli(&["EXISTS", "askgate:{brief}:audit:head"]).trim() != "0" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the trail never expired"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(redis.cli(&["EXISTS", "askgate:{brief}:audit"]).trim(), "0");
    store
        .commit(vec![StoreOp::DropStaleTrails {
            before_ms: now_ms(),
        }])
        .await
        .unwrap();
    assert!(sessions(store.as_ref()).await.is_empty());
}
