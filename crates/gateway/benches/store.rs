//! Durable store throughput: `cargo bench -p askgate --bench store`.
//!
//! Prints the latency of one durable commit on its own, and the resolutions per second when
//! many peers commit at once (group commit folds them into shared transactions). Target on a
//! 2-core machine: at least 5,000 durable resolutions per second.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use askgate::store::{DurableStore, Store, StoreOp, StoredRequest, StoredResolution};
use askgate_protocol::{Dialect, Outcome, RequestId, SessionId, Settlement};
use serde_json::json;

fn request(i: usize) -> StoredRequest {
    StoredRequest {
        quorum: None,
        asked_by: None,
        callback: None,
        ruled: None,
        remember: Vec::new(),
        votes: Vec::new(),
        default: None,
        session: SessionId::parse(format!("s{}", i % 100)).expect("session id"),
        id: RequestId::parse(format!("r{i}")).expect("request id"),
        dialect: Dialect::HARNESS,
        questions: json!([{"header": "Color", "question": "Which colour should the button be?",
            "options": [{"label": "Red", "description": null}, {"label": "Blue", "description": null}], "multi_select": false}]),
        title: None,
        asked_at_ms: 1,
        deadline_ms: None,
        answerers: None,
        follow_ups: Default::default(),
        resolution: None,
    }
}

fn resolution(i: usize) -> StoreOp {
    let r = request(i);
    StoreOp::Resolve {
        session: r.session,
        id: r.id,
        if_late: None,
        resolution: StoredResolution {
            settlement: Settlement {
                outcome: Outcome::Answered,
                response: json!({"answers": [{"header": "Color", "selected": ["Red"]}], "cancelled": false}),
                result: json!({"Color": ["Red"]}),
                model_text: Some(r#"{"Color":["Red"]}"#.into()),
            },
            by: Some("tab-1".into()),
            user: None,
            via: None,
            voters: None,
            at_ms: 2,
        },
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    // `cargo test --all-targets` runs this without `--bench`: a quick smoke run then.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let dir = std::env::temp_dir().join(format!("askgate-store-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Arc::new(DurableStore::open(&dir).expect("open the store"));
    let (requests, alone, seconds) = if smoke {
        (2_000, 20, 0.2)
    } else {
        (200_000, 500, 3.0)
    };
    for chunk in (0..requests).collect::<Vec<_>>().chunks(10_000) {
        let ops = chunk.iter().map(|&i| StoreOp::Put(request(i))).collect();
        store.commit(ops).await.expect("fill");
    }

    // One commit at a time: the cost of a durable transaction.
    let started = Instant::now();
    for i in 0..alone {
        store.commit(vec![resolution(i)]).await.expect("commit");
    }
    let per_commit = started.elapsed() / u32::try_from(alone).unwrap_or(1);
    println!(
        "one resolution at a time:    {:>8.1} µs per durable commit ({:>6.0}/s)",
        per_commit.as_secs_f64() * 1e6,
        1.0 / per_commit.as_secs_f64()
    );

    // Many peers at once: group commit shares each fsync.
    for peers in [16, 64, 256] {
        let next = Arc::new(AtomicUsize::new(alone));
        let deadline = Instant::now() + Duration::from_secs_f64(seconds);
        let mut tasks = Vec::new();
        for _ in 0..peers {
            let store = Arc::clone(&store);
            let next = Arc::clone(&next);
            tasks.push(tokio::spawn(async move {
                let mut done = 0u64;
                while Instant::now() < deadline {
                    let i = next.fetch_add(1, Ordering::Relaxed) % requests;
                    store.commit(vec![resolution(i)]).await.expect("commit");
                    done += 1;
                }
                done
            }));
        }
        let started = Instant::now();
        let mut total = 0;
        for task in tasks {
            total += task.await.expect("task");
        }
        let rate = total as f64 / started.elapsed().as_secs_f64();
        println!("{peers:>3} peers committing at once: {rate:>8.0} durable resolutions/s");
    }
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
