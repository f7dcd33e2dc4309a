//! Three nodes on one Redis under load while things die: a node SIGKILLed at random again and
//! again, and Redis itself SIGKILLed and restarted (its append-only file synced on every
//! write). After each round every claim the peers recorded is checked on a node
//! (`support/crash_load.rs`): every accepted ask is still there or ended, once, as announced.
//! The default run kills nodes for 10 s and Redis 2 times; `ASKGATE_SOAK=1` (`bench/soak.sh`)
//! for a minute and 5 times, and `ASKGATE_MULTI_CRASH_SECONDS` sets the first.
#![cfg(target_os = "linux")]

use crate::support;

use std::time::{Duration, Instant};

use rand::Rng as _;

use support::crash_load::{Ledger, SERVER_FLAGS, load, verify};
use support::nodes::Node;

use support::redis::RedisServer;

/// How long the node-killing test runs.
fn seconds() -> u64 {
    std::env::var("ASKGATE_MULTI_CRASH_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(support::soak_or(10, 60))
}

fn start_nodes(redis: &RedisServer, count: usize) -> Vec<Node> {
    (0..count)
        .map(|_| Node::start(&redis.url(), &SERVER_FLAGS))
        .collect()
}

/// The nodes' addresses, the one at `first` first (the agent connects there).
fn addrs(nodes: &[Node], first: usize) -> Vec<String> {
    let mut addrs: Vec<String> = nodes.iter().map(|n| n.addr.to_string()).collect();
    addrs.rotate_left(first);
    addrs
}

/// Waits until `node` says it is ready again.
async fn until_ready(node: &Node) {
    let deadline = Instant::now() + support::TIMEOUT;
    while node.http("GET", "/readyz", None).await.0 != 200 {
        assert!(
            Instant::now() < deadline,
            "node {} never became ready",
            node.addr
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_accepted_ask_ends_once_while_nodes_are_killed_at_random() {
    let redis = RedisServer::start(&[]);
    let mut nodes = start_nodes(&redis, 3);
    let mut ledger = Ledger::default();
    let mut rng =
        support::seeded_rng("every_accepted_ask_ends_once_while_nodes_are_killed_at_random");
    let started = Instant::now();
    let mut round = 0;
    let mut kills = 0;
    while started.elapsed() < Duration::from_secs(seconds()) {
        let victim = rng.random_range(0..nodes.len());
        let first = rng.random_range(0..nodes.len());
        let order = addrs(&nodes, first);
        let pid_killer = &mut nodes[victim];
        load(&order, round, &mut ledger, &mut rng, || pid_killer.kill()).await;
        kills += 1;
        nodes[victim] = Node::start(&redis.url(), &SERVER_FLAGS);
        let checker = rng.random_range(0..nodes.len());
        verify(&nodes[checker].addr.to_string(), &mut ledger).await;
        round += 1;
    }
    eprintln!(
        "{kills} nodes killed in {round} rounds: {} requests accepted, {} resolutions announced, all intact",
        ledger.accepted.len(),
        ledger.resolved.len()
    );
    assert!(
        ledger.resolved.len() > 10,
        "the load resolved too little to prove anything"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_told_is_lost_when_redis_is_killed_under_load() {
    let mut redis = RedisServer::start(&[]);
    let nodes = start_nodes(&redis, 3);
    let mut ledger = Ledger::default();
    let mut rng = support::seeded_rng("nothing_told_is_lost_when_redis_is_killed_under_load");
    let kills = support::soak_or(2, 5);
    for round in 0..kills {
        let order = addrs(&nodes, round % nodes.len());
        load(&order, round, &mut ledger, &mut rng, || redis.kill()).await;
        redis.restart();
        for node in &nodes {
            until_ready(node).await;
        }
        verify(
            &nodes[(round + 1) % nodes.len()].addr.to_string(),
            &mut ledger,
        )
        .await;
    }
    eprintln!(
        "redis killed {kills} times: {} requests accepted, {} resolutions announced, all intact",
        ledger.accepted.len(),
        ledger.resolved.len()
    );
    assert!(
        ledger.resolved.len() > 10,
        "the load resolved too little to prove anything"
    );
}
