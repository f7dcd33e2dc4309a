//! The embedded store's writer: each commit one transaction (several grouped when they
//! arrive together), counted for `/metrics`, and what it committed there after a restart.
#![cfg(target_os = "linux")]

mod support;

use std::sync::atomic::Ordering;

use askgate::store::{DurableStore, Store, StoreOp, StoredRequest, StoredResolution};
use askgate_protocol::{Dialect, Outcome, QuestionSet, RequestId, SessionId};
use serde_json::json;
use support::tempdir;

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

/// Transactions so far.
fn transactions(store: &DurableStore) -> u64 {
    store.writes().transactions.load(Ordering::Relaxed)
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
async fn each_commit_is_a_transaction_and_is_counted() {
    let store = DurableStore::open(&tempdir("durable-writes")).unwrap();
    store.commit(vec![put("r1")]).await.unwrap();
    store.commit(vec![resolve("r1")]).await.unwrap();
    store.commit(vec![ack("r1")]).await.unwrap();
    assert_eq!(transactions(&store), 3);
    assert_eq!(ids(&store).await, Vec::<String>::new());
    // One caller's operations are one transaction.
    store
        .commit(vec![put("r2"), resolve("r2"), ack("r2")])
        .await
        .unwrap();
    assert_eq!(transactions(&store), 4);
}

#[tokio::test]
async fn what_was_committed_is_there_after_a_restart() {
    let dir = tempdir("durable-writes-restart");
    {
        let store = DurableStore::open(&dir).unwrap();
        for id in ["r1", "r2"] {
            store.commit(vec![put(id)]).await.unwrap();
            store.commit(vec![resolve(id)]).await.unwrap();
        }
        store.commit(vec![ack("r1")]).await.unwrap();
        assert_eq!(transactions(&store), 5);
    }
    let store = DurableStore::open(&dir).unwrap();
    assert_eq!(ids(&store).await, ["r2"]);
}
