//! Which of the embedded store's commits wait for a sync: every one holding something a
//! restart must bring back; a deletion alone does not, and is synced within a second, or when
//! the store closes.
#![cfg(target_os = "linux")]

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use askgate::store::{DurableStore, Store, StoreOp, StoredRequest, StoredResolution};
use askgate_protocol::{Dialect, Outcome, QuestionSet, RequestId, SessionId};
use serde_json::json;
use support::{TIMEOUT, tempdir};

fn questions() -> QuestionSet {
    let questions = json!([{"header": "Color", "question": "Which?",
                            "options": [{"label": "Red"}, {"label": "Blue"}]}]);
    QuestionSet::validate(Dialect::HARNESS, &questions).unwrap()
}

fn put(id: &str) -> StoreOp {
    StoreOp::Put(StoredRequest {
        session: SessionId::parse("s").unwrap(),
        id: RequestId::parse(id).unwrap(),
        dialect: Dialect::HARNESS,
        questions: questions().to_json(),
        title: None,
        asked_at_ms: 1_000,
        deadline_ms: None,
        answerers: None,
        resolution: None,
    })
}

fn resolve(id: &str) -> StoreOp {
    StoreOp::Resolve {
        session: SessionId::parse("s").unwrap(),
        id: RequestId::parse(id).unwrap(),
        resolution: StoredResolution {
            settlement: questions().settle_without_answer(Outcome::Declined),
            by: Some("t-1".into()),
            user: None,
            via: None,
            at_ms: 2_000,
        },
        if_late: None,
    }
}

fn ack(id: &str) -> StoreOp {
    StoreOp::Delete {
        session: SessionId::parse("s").unwrap(),
        id: RequestId::parse(id).unwrap(),
        acked: true,
    }
}

/// (commits, of which synced) so far.
fn counts(store: &DurableStore) -> (u64, u64) {
    let counts = store.commits();
    (
        counts.transactions.load(Ordering::Relaxed),
        counts.synced.load(Ordering::Relaxed),
    )
}

async fn ids(store: &DurableStore) -> Vec<String> {
    let mut ids: Vec<String> = store
        .load()
        .await
        .unwrap()
        .iter()
        .map(|r| r.id.as_str().to_owned())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn a_deletion_alone_skips_the_sync_and_is_synced_within_a_second() {
    let store = DurableStore::open(&tempdir("durable-syncs")).unwrap();
    store.commit(vec![put("r1")]).await.unwrap();
    store.commit(vec![resolve("r1")]).await.unwrap();
    assert_eq!(counts(&store), (2, 2), "an ask and its outcome are synced");

    store.commit(vec![ack("r1")]).await.unwrap();
    assert_eq!(counts(&store), (3, 2), "an ack's deletion alone is not");
    assert_eq!(
        ids(&store).await,
        Vec::<String>::new(),
        "but it is committed"
    );

    // Within a second, with nothing else to ride on, an empty synced commit makes it durable.
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while counts(&store) != (4, 3) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no sync came: {:?}",
            counts(&store)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // And only one: a store with nothing unsynced does not sync again.
    store.commit(vec![put("r2"), ack("r2")]).await.unwrap();
    assert_eq!(
        counts(&store),
        (5, 4),
        "a deletion beside an ask is synced with it"
    );
}

#[tokio::test]
async fn a_deletion_not_yet_synced_is_synced_when_the_store_closes() {
    let dir = tempdir("durable-syncs-close");
    {
        let store = DurableStore::open(&dir).unwrap();
        for id in ["r1", "r2"] {
            store.commit(vec![put(id)]).await.unwrap();
            store.commit(vec![resolve(id)]).await.unwrap();
        }
        store.commit(vec![ack("r1")]).await.unwrap();
        assert_eq!(counts(&store), (5, 4));
    }
    let store = DurableStore::open(&dir).unwrap();
    assert_eq!(ids(&store).await, ["r2"]);
}
