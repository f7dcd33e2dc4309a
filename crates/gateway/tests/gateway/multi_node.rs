//! Several `askgate serve` nodes on one Redis, each reaching it through a TCP proxy the test
//! can cut: every guarantee of one node, across nodes and through their deaths (SIGKILL).
//! Each test starts its own `redis-server` on a free port in a temporary directory.
#![cfg(target_os = "linux")]

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use askgate_testkit::frames::{answer, ask};
use askgate_testkit::http::http_text;
use askgate_testkit::ws::WsClient;
use serde_json::{Value, json};
use support::nodes::Node;
use support::proxy::Proxy;
use support::redis::{RedisCluster, RedisServer};

/// Redis, and three nodes each reaching it through its own proxy.
struct Cluster {
    redis: RedisServer,
    proxies: Vec<Proxy>,
    nodes: Vec<Node>,
}

impl Cluster {
    async fn start(count: usize) -> Cluster {
        Cluster::start_with(count, &[]).await
    }

    /// `count` nodes started with `args` as well.
    async fn start_with(count: usize, args: &[&str]) -> Cluster {
        let redis = RedisServer::start(&[]);
        let upstream = format!("127.0.0.1:{}", redis.port).parse().unwrap();
        let mut proxies = Vec::new();
        let mut nodes = Vec::new();
        for _ in 0..count {
            let proxy = Proxy::start(upstream).await;
            let args: Vec<&str> = ["--strict-durability"]
                .iter()
                .chain(args)
                .copied()
                .collect();
            nodes.push(Node::start(&proxy.url(), &args));
            proxies.push(proxy);
        }
        Cluster {
            redis,
            proxies,
            nodes,
        }
    }

    /// A fresh node through proxy `i` (after the one there was killed).
    fn restart(&mut self, i: usize) {
        self.nodes[i] = Node::start(&self.proxies[i].url(), &[]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_on_one_node_reaches_tabs_on_the_others_and_their_answer_comes_back() {
    let cluster = Cluster::start(3).await;
    fan_out_and_back(&cluster.nodes).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_redis_cluster_an_ask_reaches_every_node_and_its_answer_comes_back() {
    let redis = RedisCluster::start();
    let nodes: Vec<Node> = (0..3).map(|_| Node::start(&redis.url(), &[])).collect();
    fan_out_and_back(&nodes).await;
    // Every key of the session is on one primary (its slot's), the others answer MOVED.
    let keys = ["askgate:{s1}:q:r1", "askgate:{s1}:ids", "askgate:{s1}:seq"];
    let holders: Vec<usize> = redis
        .servers
        .iter()
        .enumerate()
        .filter(|(_, server)| {
            let held = server.cli(&["EXISTS", keys[0], keys[1], keys[2]]);
            held.trim() == "3"
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(holders.len(), 1, "{holders:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_redis_cluster_twenty_tabs_race_and_exactly_one_wins_each_round() {
    let redis = RedisCluster::start();
    let nodes: Vec<Node> = (0..3).map(|_| Node::start(&redis.url(), &[])).collect();
    race(&nodes).await;
}

/// Scenario 1 on `nodes`: an ask on the first reaches tabs on the others, an answer on the
/// third comes back to the agent, every tab sees the same winner.
async fn fan_out_and_back(nodes: &[Node]) {
    let [a, b, c] = [&nodes[0], &nodes[1], &nodes[2]];
    let (mut agent, viewer) = a.agent_opening("s1").await;
    // A link printed by node A opens on B and C: the nodes share the secret through Redis.
    let (mut tab_b, _) = b.tab("s1", &viewer).await;
    let (mut tab_c, _) = c.tab("s1", &viewer).await;
    agent.send(&ask("s1", "r1", &["Color"], Some(600.0))).await;
    let accepted = agent.recv_until("accepted").await;
    let shown_b = tab_b.recv_about("request", "r1").await;
    let shown_c = tab_c.recv_about("request", "r1").await;
    // One deadline, Redis's, everywhere.
    assert_eq!(shown_b["request"]["deadline_ms"], accepted["deadline_ms"]);
    assert_eq!(shown_c["request"]["deadline_ms"], accepted["deadline_ms"]);
    tab_c.send(&answer("r1", &["Color"], "Blue")).await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["outcome"], "answered");
    let resolved_b = tab_b.recv_about("resolved", "r1").await;
    let resolved_c = tab_c.recv_about("resolved", "r1").await;
    assert_eq!(resolved_b["by"], outcome["by"]);
    assert_eq!(resolved_c["by"], outcome["by"]);
    // A tab that joins late on node B sees it finished, not open.
    let (_, snapshot) = b.tab("s1", &viewer).await;
    assert_eq!(snapshot["requests"], serde_json::json!([]), "{snapshot}");
    // The HTTP API on node B knows it too.
    let (status, body) = b.http("GET", "/v1/sessions/s1/requests/r1", None).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"answered\""), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_tabs_on_three_nodes_answer_at_once_and_exactly_one_wins_each_round() {
    let cluster = Cluster::start(3).await;
    race(&cluster.nodes).await;
}

/// Scenario 2 on `nodes`: twenty tabs spread over them answer at once, 25 rounds by default,
/// a hundred under `ASKGATE_SOAK=1`.
async fn race(nodes: &[Node]) {
    let (mut agent, viewer) = nodes[0].agent_opening("race").await;
    let mut tabs = Vec::new();
    for i in 0..20 {
        let (tab, snapshot) = nodes[i % nodes.len()].tab("race", &viewer).await;
        tabs.push((tab, snapshot["tab"].as_str().unwrap().to_owned()));
    }
    for round in 0..support::soak_or(25, 100) {
        let id = format!("r{round}");
        agent.send(&ask("race", &id, &["Color"], None)).await;
        agent.recv_until("accepted").await;
        for (tab, _) in &mut tabs {
            tab.recv_about("request", &id).await;
        }
        let labels = ["Red", "Blue", "Green"];
        for (i, (tab, _)) in tabs.iter_mut().enumerate() {
            tab.send(&answer(&id, &["Color"], labels[i % 3])).await;
        }
        let outcome = agent.recv_until("outcome").await;
        let winner = outcome["by"].as_str().unwrap().to_owned();
        let mut rejected = 0;
        for (tab, name) in &mut tabs {
            // Each tab hears the one winner, and every tab but the winner is told it lost.
            let mut heard_resolved = false;
            let mut heard_rejected = false;
            while !(heard_resolved && (heard_rejected || *name == winner)) {
                let frame = tab.recv().await;
                match frame["type"].as_str() {
                    Some("resolved") if frame["id"] == id.as_str() => {
                        assert_eq!(frame["by"], winner.as_str(), "round {round}");
                        heard_resolved = true;
                    }
                    Some("answer_rejected") if frame["id"] == id.as_str() => {
                        assert_ne!(*name, winner, "round {round}: the winner was refused");
                        heard_rejected = true;
                        rejected += 1;
                    }
                    _ => {}
                }
            }
        }
        assert_eq!(rejected, 19, "round {round}");
        agent
            .send(&serde_json::json!({"type": "ack", "session": "race", "id": id}))
            .await;
        // No second outcome for the round.
        if let Some(frame) = agent.recv_within(Duration::from_millis(1)).await {
            assert_ne!(frame["type"], "outcome", "round {round}: {frame}");
        }
    }
    // Nothing was dropped, so no node had to load the session again: notices that outran a
    // sequence poll's reply are not taken for a store that lost changes.
    for node in nodes {
        let (_, metrics) = node.http("GET", "/metrics", None).await;
        let behind = counter(
            &metrics,
            "askgate_redis_resnapshots_total{cause=\"behind\"}",
        );
        let gaps = counter(&metrics, "askgate_redis_resnapshots_total{cause=\"gap\"}");
        assert_eq!((behind, gaps), (0.0, 0.0), "node {}", node.addr);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_fires_once_from_another_node_when_the_asking_node_is_killed() {
    let mut cluster = Cluster::start(3).await;
    let (mut agent, viewer) = cluster.nodes[0].agent_opening("dl").await;
    let (mut tab, _) = cluster.nodes[1].tab("dl", &viewer).await;
    agent.send(&ask("dl", "r1", &["Color"], Some(2.0))).await;
    let accepted = agent.recv_until("accepted").await;
    let deadline_ms = accepted["deadline_ms"].as_u64().unwrap();
    tab.recv_about("request", "r1").await;
    cluster.nodes[0].kill();
    // The tab hears it within the test's patience (the node that set the timer is dead), and
    // not before the deadline: no upper bound on how late, which a busy machine could miss.
    let resolved = tab.recv_about("resolved", "r1").await;
    assert_eq!(resolved["outcome"], "timed_out");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(
        now_ms >= deadline_ms,
        "fired {} ms before the deadline",
        deadline_ms - now_ms
    );
    // Once: no second resolution, and the agent, now on node C, collects exactly that one.
    assert!(
        tab.recv_within(Duration::from_secs(2))
            .await
            .is_none_or(|f| f["type"] != "resolved")
    );
    let mut agent = cluster.nodes[2].agent().await;
    agent.send(&ask("dl", "r1", &["Color"], Some(2.0))).await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["outcome"], "timed_out");
    assert_eq!(outcome["at_ms"], resolved_at(&cluster.redis, "dl", "r1"));
    cluster.restart(0);
}

/// A default given at the deadline on three nodes: the asking node is killed, another gives
/// the default once, and a tab's answer after the deadline (on a third node) is refused as
/// already resolved rather than winning over it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_is_given_once_from_another_node_when_the_asking_node_is_killed() {
    let mut cluster = Cluster::start(3).await;
    let (mut agent, viewer) = cluster.nodes[0].agent_opening("df").await;
    let (mut tab, _) = cluster.nodes[1].tab("df", &viewer).await;
    let mut asked = ask("df", "r1", &["Color"], Some(1.0));
    asked["default"] = answer("r1", &["Color"], "Green")["response"].clone();
    agent.send(&asked).await;
    agent.recv_until("accepted").await;
    let shown = tab.recv_about("request", "r1").await;
    assert_eq!(shown["request"]["default"], asked["default"]);
    cluster.nodes[0].kill();
    let resolved = tab.recv_about("resolved", "r1").await;
    assert_eq!(resolved["outcome"], "answered");
    assert_eq!(
        (&resolved["by"], &resolved["via"]),
        (&json!("default"), &json!("default"))
    );
    let (mut late, _) = cluster.nodes[2].tab("df", &viewer).await;
    late.send(&answer("r1", &["Color"], "Red")).await;
    let refused = late.recv_about("answer_rejected", "r1").await;
    assert_eq!(refused["errors"][0]["message"], "already resolved");
    let mut agent = cluster.nodes[2].agent().await;
    agent.send(&asked).await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["via"], "default");
    assert_eq!(
        outcome["response"]["answers"][0]["selected"],
        json!(["Green"])
    );
    assert_eq!(outcome["at_ms"], resolved_at(&cluster.redis, "df", "r1"));
    cluster.restart(0);
}

/// When Redis says request `id` of `session` ended.
fn resolved_at(redis: &RedisServer, session: &str, id: &str) -> Value {
    let at = redis.cli(&["HGET", &format!("askgate:{{{session}}}:q:{id}"), "resolved"]);
    Value::from(
        at.trim()
            .parse::<u64>()
            .expect("a resolution time in redis"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_whose_node_is_killed_collects_each_outcome_once_on_another() {
    let mut cluster = Cluster::start(3).await;
    let (mut agent, viewer) = cluster.nodes[0].agent_opening("mv").await;
    let (mut tab, _) = cluster.nodes[1].tab("mv", &viewer).await;
    let ids: Vec<String> = (0..10).map(|i| format!("r{i}")).collect();
    for id in &ids {
        agent.send(&ask("mv", id, &["Color"], None)).await;
        agent.recv_until("accepted").await;
        tab.recv_about("request", id).await;
    }
    cluster.nodes[0].kill();
    let mut by = HashMap::new();
    for id in &ids {
        tab.send(&answer(id, &["Color"], "Green")).await;
        let resolved = tab.recv_about("resolved", id).await;
        by.insert(id.clone(), resolved["by"].clone());
    }
    // The agent comes back on node C and re-asks each id it has no outcome for.
    let mut agent = cluster.nodes[2].agent().await;
    for id in &ids {
        agent.send(&ask("mv", id, &["Color"], None)).await;
        let outcome = agent.recv_until("outcome").await;
        assert_eq!(outcome["id"], id.as_str());
        assert_eq!(outcome["outcome"], "answered");
        assert_eq!(outcome["by"], by[id]);
        agent
            .send(&serde_json::json!({"type": "ack", "session": "mv", "id": id}))
            .await;
    }
    // Acknowledged: each is forgotten everywhere, and asking again asks anew.
    agent.send(&ask("mv", "r0", &["Color"], None)).await;
    let accepted = agent.recv_until("accepted").await;
    assert_eq!(accepted["id"], "r0");
    tab.recv_about("request", "r0").await;
    cluster.restart(0);
}

/// Polls `GET /readyz` on `node` until it answers `status` (within the test's timeout).
async fn until_ready_is(node: &Node, status: u16) -> String {
    let deadline = tokio::time::Instant::now() + support::TIMEOUT;
    loop {
        let (got, body) = node.http("GET", "/readyz", None).await;
        if got == status {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "/readyz stayed {got} ({body}), not {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_redis_refuses_keeps_its_sockets_and_catches_up_when_back() {
    let cluster = Cluster::start(2).await;
    let (a, b) = (&cluster.nodes[0], &cluster.nodes[1]);
    let (mut agent, viewer) = a.agent_opening("cut").await;
    let (mut tab, _) = b.tab("cut", &viewer).await;
    agent.send(&ask("cut", "before", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    tab.recv_about("request", "before").await;

    cluster.proxies[1].cut();
    let why = until_ready_is(b, 503).await;
    assert!(why.contains("not ready"), "{why}");
    // Nothing is announced that Redis does not have: an ask over HTTP and a tab's answer on
    // node B are refused as unavailable.
    let body = serde_json::json!({"id": "http-1", "questions": ask("cut", "x", &["Color"], None)["questions"]});
    let (status, text) = b
        .http("POST", "/v1/sessions/cut/requests", Some(&body))
        .await;
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("unavailable"), "{text}");
    tab.send(&answer("before", &["Color"], "Red")).await;
    let refused = tab.recv_about("answer_rejected", "before").await;
    assert_eq!(refused["errors"][0]["code"], "unavailable", "{refused}");
    // Meanwhile node A goes on; node B's tab stays connected but cannot hear of it.
    agent.send(&ask("cut", "during", &["Color"], None)).await;
    agent.recv_until("accepted").await;

    cluster.proxies[1].restore();
    until_ready_is(b, 200).await;
    // Back: the tab learns of what it missed, and can answer.
    tab.recv_about("request", "during").await;
    tab.send(&answer("during", &["Color"], "Blue")).await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["id"], "during");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tabs_converge_after_their_nodes_subscriptions_are_killed() {
    let cluster = Cluster::start(3).await;
    let (mut agent, viewer) = cluster.nodes[0].agent_opening("sub").await;
    let (mut tab_b, _) = cluster.nodes[1].tab("sub", &viewer).await;
    let (mut tab_c, _) = cluster.nodes[2].tab("sub", &viewer).await;
    for round in 0..5 {
        // Each node subscribed again after the last round's kill before this one kills them:
        // a kill while one was still resubscribing would find only two.
        until_subscribed(&cluster.redis, 3).await;
        let killed = cluster.redis.cli(&["CLIENT", "KILL", "TYPE", "pubsub"]);
        assert!(
            killed.trim().parse::<u32>().unwrap_or(0) >= 3,
            "killed {killed:?}"
        );
        // Asked while the nodes are resubscribing: the notice may reach no one.
        let id = format!("r{round}");
        agent.send(&ask("sub", &id, &["Color"], None)).await;
        agent.recv_until("accepted").await;
        tab_b.recv_about("request", &id).await;
        tab_c.recv_about("request", &id).await;
    }
    // Each node subscribed again after each kill and loaded its session again for it (not
    // only when its sequence poll would have found it behind).
    // The last reconnect may still be under way: wait for it.
    let deadline = tokio::time::Instant::now() + support::TIMEOUT;
    loop {
        let (_, metrics) = cluster.nodes[1].http("GET", "/metrics", None).await;
        let reconnects = counter(&metrics, "askgate_redis_subscription_reconnects_total");
        let reloads = counter(
            &metrics,
            "askgate_redis_resnapshots_total{cause=\"resubscribed\"}",
        );
        if reconnects >= 5.0 && reloads >= 5.0 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{metrics}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until Redis has at least `count` subscribed connections.
async fn until_subscribed(redis: &RedisServer, count: usize) {
    let deadline = tokio::time::Instant::now() + support::TIMEOUT;
    loop {
        let clients = redis.cli(&["CLIENT", "LIST", "TYPE", "pubsub"]);
        let subscribed = clients
            .lines()
            .filter(|line| !line.trim().is_empty())
            .count();
        if subscribed >= count {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{subscribed} of {count} subscriptions: {clients}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The value of the metric line `name` in a Prometheus text body.
fn counter(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in the metrics"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_whose_notice_never_came_reaches_the_tabs_within_two_seconds() {
    let cluster = Cluster::start(2).await;
    let (mut agent, viewer) = cluster.nodes[0].agent_opening("lost").await;
    let (mut tab, _) = cluster.nodes[1].tab("lost", &viewer).await;
    agent.send(&ask("lost", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    tab.recv_about("request", "r1").await;
    // A resolution written straight into Redis, its notice never published: only the
    // sequence poll can find it.
    let key = "askgate:{lost}:q:r1";
    let ending = r#"{"settlement":{"outcome":"declined","response":{"answers":[],"cancelled":true},"result":"declined","model_text":"declined"},"by":"t-elsewhere"}"#;
    cluster.redis.cli(&[
        "HSET",
        key,
        "state",
        "resolved",
        "resolution",
        ending,
        "resolved",
        "1",
    ]);
    cluster.redis.cli(&["INCR", "askgate:{lost}:seq"]);
    // Found by node B's sequence poll (every second, two polls behind before it reloads):
    // the tab hears it within the test's patience, and the reload it took is counted, not
    // timed against a window a busy machine could miss.
    let resolved = tab.recv_about("resolved", "r1").await;
    assert_eq!(resolved["by"], "t-elsewhere");
    let reloads = metric(&cluster.nodes[1], RELOADS_FOR_BEING_BEHIND).await;
    assert!(reloads >= 1.0, "{reloads} reloads for being behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_that_can_lose_answers_are_warned_of_and_refused_when_strict() {
    let redis = RedisServer::start(&[
        "--appendfsync",
        "everysec",
        "--maxmemory-policy",
        "allkeys-lru",
    ]);
    let node = Node::start(&redis.url(), &[]);
    let said = node.said().join("\n");
    assert!(said.contains("appendfsync everysec"), "{said}");
    assert!(said.contains("maxmemory-policy allkeys-lru"), "{said}");
    let refused = Node::try_start(&redis.url(), &["--strict-durability"])
        .err()
        .expect("a strict node refuses to start");
    let refused = refused.join("\n");
    assert!(
        refused.contains("--strict-durability: refusing to start"),
        "{refused}"
    );
    assert!(refused.contains("appendfsync always"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployments_with_their_own_prefixes_share_one_redis_without_meeting() {
    let redis = RedisServer::start(&[]);
    let blue = Node::start(&redis.url(), &["--redis-prefix", "blue:"]);
    let green = Node::start(&redis.url(), &["--redis-prefix", "green:"]);
    let mut agent = blue.agent().await;
    agent.send(&ask("s", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    // The same session and id in the other deployment is a new request of its own.
    let mut other = green.agent().await;
    let mut different = ask("s", "r1", &["Color"], None);
    different["questions"][0]["question"] = "Something else?".into();
    other.send(&different).await;
    let accepted = other.recv_until("accepted").await;
    assert_eq!(accepted["id"], "r1");
    let keys = redis.cli(&["KEYS", "*"]);
    assert!(
        keys.contains("blue:{s}:q:r1") && keys.contains("green:{s}:q:r1"),
        "{keys}"
    );
    assert!(
        !keys
            .lines()
            .any(|k| !k.starts_with("blue:") && !k.starts_with("green:") && !k.is_empty()),
        "{keys}"
    );
}

/// The next `presence` frame that says `tabs` and `agent_online`, skipping others.
/// (A dead node's entry lives 20 s, and is read again within 5 s: up to 40 s are allowed.)
async fn until_presence(tab: &mut WsClient, tabs: usize, agent_online: bool) -> std::time::Instant {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let frame = tab
            .recv_within(left)
            .await
            .unwrap_or_else(|| panic!("no presence of {tabs} tabs, agent {agent_online}"));
        if frame["type"] == "presence"
            && frame["tabs"] == tabs
            && frame["agent_online"] == agent_online
        {
            return std::time::Instant::now();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presence_is_shared_by_the_nodes_and_a_dead_node_stops_counting() {
    // Entries that lapse 4 s after their last write, not the default 20: the dead node stops
    // counting well within the wait below, which the default would outlast.
    let mut cluster = Cluster::start_with(2, &["--presence-ttl-s", "4"]).await;
    let (_agent, viewer) = cluster.nodes[0].agent_opening("who").await;
    let (_tab_a, _) = cluster.nodes[0].tab("who", &viewer).await;
    let (mut tab_b, _) = cluster.nodes[1].tab("who", &viewer).await;
    // Node B's tab hears of node A's tab and agent.
    until_presence(&mut tab_b, 2, true).await;
    cluster.nodes[0].kill();
    let killed = std::time::Instant::now();
    let seen = until_presence(&mut tab_b, 1, false).await;
    // Generous for a busy machine, yet short of the default lifetime: the flag took effect.
    assert!(
        seen.duration_since(killed) < Duration::from_secs(20),
        "a dead node was counted for {:?}",
        seen.duration_since(killed)
    );
}

/// A node whose commands Redis answers slowly keeps the presence of every session it holds
/// alive: its upkeep writes them many at a time. Written one at a time, each waiting for its
/// reply, 60 sessions at a tenth of a second a reply took 6 s a round, longer than an entry
/// lives (4 s here), and the other node's tabs saw this node's tabs come and go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_answered_slowly_keeps_the_presence_of_all_its_sessions() {
    const SESSIONS: usize = 60;
    let redis = RedisServer::start(&[]);
    let upstream = format!("127.0.0.1:{}", redis.port).parse().unwrap();
    let slow = Proxy::start_delaying_replies(upstream, Duration::from_millis(100)).await;
    let ttl = ["--presence-ttl-s", "4"];
    let (a, b) = (
        Node::start(&slow.url(), &ttl),
        Node::start(&redis.url(), &ttl),
    );
    let names: Vec<String> = (0..SESSIONS).map(|i| format!("held{i}")).collect();
    let opened =
        futures_util::future::join_all(names.iter().map(|name| b.agent_opening(name))).await;
    let joined_a = futures_util::future::join_all(
        names
            .iter()
            .zip(&opened)
            .map(|(name, (_, viewer))| a.tab(name, viewer)),
    )
    .await;
    let mut tabs_b = futures_util::future::join_all(
        names
            .iter()
            .zip(&opened)
            .map(|(name, (_, viewer))| b.tab(name, viewer)),
    )
    .await;
    // Every tab on B has heard of the one on A (and of the agent on B).
    for (tab, _) in &mut tabs_b {
        until_presence(tab, 2, true).await;
    }
    // Two of an entry's lives, every session watched at once: A's tab never stops counting.
    let watched_until = tokio::time::Instant::now() + Duration::from_secs(8);
    let vanished: Vec<String> = futures_util::future::join_all(tabs_b.iter_mut().enumerate().map(
        |(index, (tab, _))| async move {
            let mut seen = Vec::new();
            while let Some(frame) = tab
                .recv_within(watched_until.saturating_duration_since(tokio::time::Instant::now()))
                .await
            {
                if frame["type"] == "presence" && frame["tabs"] != 2 {
                    seen.push(format!("session {index}: {frame}"));
                }
            }
            seen
        },
    ))
    .await
    .concat();
    assert!(vanished.is_empty(), "{vanished:#?}");
    drop((opened, joined_a));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_on_one_node_wakes_when_a_tab_on_another_answers_and_any_node_withdraws() {
    let cluster = Cluster::start(3).await;
    let [a, b, c] = [&cluster.nodes[0], &cluster.nodes[1], &cluster.nodes[2]];
    let questions = ask("hp", "x", &["Color"], None)["questions"].clone();
    let body = serde_json::json!({"id": "poll", "questions": questions});
    let (status, created) = a
        .http("POST", "/v1/sessions/hp/requests", Some(&body))
        .await;
    assert_eq!(status, 201, "{created}");
    let viewer: Value = serde_json::from_str(&created).unwrap();
    let viewer = viewer["viewer_url"].as_str().unwrap().to_owned();
    let (mut tab, snapshot) = c.tab("hp", &viewer).await;
    assert_eq!(snapshot["requests"][0]["id"], "poll", "{snapshot}");
    // Node B waits; node C's tab answers.
    let polling = tokio::spawn(http_text(
        b.addr,
        "GET",
        "/v1/sessions/hp/requests/poll?wait_s=30",
        None,
        None,
    ));
    // The poll is waiting once the tab sees an agent online.
    until_presence(&mut tab, 1, true).await;
    tab.send(&answer("poll", &["Color"], "Red")).await;
    let (status, body) = polling.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("\"resolved\"") && body.contains("\"answered\""),
        "{body}"
    );

    // A request asked on A is withdrawn on B; the tab on C sees it end.
    let body = serde_json::json!({"id": "gone", "questions": questions});
    let (status, _) = a
        .http("POST", "/v1/sessions/hp/requests", Some(&body))
        .await;
    assert_eq!(status, 201);
    tab.recv_about("request", "gone").await;
    let (status, body) = b
        .http("DELETE", "/v1/sessions/hp/requests/gone", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("withdrawn"), "{body}");
    let resolved = tab.recv_about("resolved", "gone").await;
    assert_eq!(resolved["outcome"], "withdrawn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_connects_over_tls_verified_against_the_operators_ca() {
    let (ca, cert, key) = support::redis::test_certificates();
    let tls_port = support::free_port().to_string();
    let redis = RedisServer::start(&[
        "--tls-port",
        &tls_port,
        "--tls-cert-file",
        cert.to_str().unwrap(),
        "--tls-key-file",
        key.to_str().unwrap(),
        "--tls-ca-cert-file",
        ca.to_str().unwrap(),
        "--tls-auth-clients",
        "no",
    ]);
    let url = format!("rediss://127.0.0.1:{tls_port}");
    // Trusting the operator's CA (SSL_CERT_FILE), the node talks TLS to Redis.
    let node = Node::start_with_env(&url, &[], &[("SSL_CERT_FILE", ca.to_str().unwrap())]);
    let mut agent = node.agent().await;
    agent.send(&ask("tls", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    let stored = redis.cli(&["HGET", "askgate:{tls}:q:r1", "state"]);
    assert_eq!(stored.trim(), "open");
    // Without it, the certificate is refused and the node does not start.
    let refused = Node::try_start(&url, &[])
        .err()
        .expect("an untrusted certificate is refused");
    let refused = refused.join("\n");
    assert!(refused.to_lowercase().contains("certificate"), "{refused}");
}

/// Two nodes, the first's command connection to Redis 150 ms slow (its notices are not):
/// what the store decided for it reaches it by notice before the store's own reply does.
async fn one_slow_reply() -> (RedisServer, Vec<Proxy>, Vec<Node>) {
    let redis = RedisServer::start(&[]);
    let upstream = format!("127.0.0.1:{}", redis.port).parse().unwrap();
    let slow = Proxy::start_delaying_replies(upstream, Duration::from_millis(150)).await;
    let fast = Proxy::start(upstream).await;
    let nodes = vec![Node::start(&slow.url(), &[]), Node::start(&fast.url(), &[])];
    (redis, vec![slow, fast], nodes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_hears_accepted_before_an_outcome_that_outran_the_stores_reply() {
    let (_redis, _proxies, nodes) = one_slow_reply().await;
    let (mut agent, viewer) = nodes[0].agent_opening("race").await;
    let (mut tab, _) = nodes[1].tab("race", &viewer).await;
    for round in 0..3 {
        let id = format!("r{round}");
        agent.send(&ask("race", &id, &["Color"], None)).await;
        // Node B shows it as soon as Redis publishes it; the tab answers at once, long before
        // node A has the ask script's reply.
        tab.recv_about("request", &id).await;
        tab.send(&answer(&id, &["Color"], "Red")).await;
        let first = agent.recv().await;
        assert_eq!(first["type"], "accepted", "round {round}: {first}");
        let second = agent.recv().await;
        assert_eq!(
            (second["type"].as_str(), second["id"].as_str()),
            (Some("outcome"), Some(id.as_str())),
            "{second}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_winning_answer_is_not_refused_when_its_ack_outran_the_stores_reply() {
    let (_redis, _proxies, nodes) = one_slow_reply().await;
    // The agent on the fast node B, the answering tab on the slow node A.
    let (mut agent, viewer) = nodes[1].agent_opening("ack").await;
    let (mut tab, _) = nodes[0].tab("ack", &viewer).await;
    for round in 0..3 {
        let id = format!("r{round}");
        agent.send(&ask("ack", &id, &["Color"], None)).await;
        agent.recv_until("accepted").await;
        tab.recv_about("request", &id).await;
        tab.send(&answer(&id, &["Color"], "Red")).await;
        // Node A handles a tab's frames one after another, an answer once the store has
        // decided it: the reply to this `history` comes after any refusal of the answer.
        tab.send(&serde_json::json!({"type": "history"})).await;
        // The outcome reaches B by notice, and its ack is forgotten, before A has its reply.
        agent.recv_until("outcome").await;
        agent
            .send(&serde_json::json!({"type": "ack", "session": "ack", "id": id}))
            .await;
        let (mut resolved, mut history) = (None, false);
        while resolved.is_none() || !history {
            let frame = tab.recv().await;
            assert_ne!(
                frame["type"], "answer_rejected",
                "round {round}: the winner was refused: {frame}"
            );
            match frame["type"].as_str() {
                Some("resolved") if frame["id"] == id.as_str() => resolved = Some(frame),
                Some("history") => history = true,
                _ => {}
            }
        }
        assert_eq!(resolved.unwrap()["outcome"], "answered");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_that_goes_deaf_is_found_by_its_probe_and_made_again() {
    // A second of silence rather than the default three: the test waits it out once.
    let cluster = Cluster::start_with(2, &["--probe-silence-s", "1"]).await;
    let (mut agent, viewer) = cluster.nodes[0].agent_opening("deaf").await;
    let (mut tab, _) = cluster.nodes[1].tab("deaf", &viewer).await;
    // Node B's subscription stays connected and hears nothing more.
    cluster.proxies[1].deafen_subscriptions();
    agent.send(&ask("deaf", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    tab.recv_about("request", "r1").await;
    // The probe went unheard, and the subscription was made again.
    let deadline = tokio::time::Instant::now() + support::TIMEOUT;
    loop {
        let (_, metrics) = cluster.nodes[1].http("GET", "/metrics", None).await;
        if counter(&metrics, "askgate_redis_probe_restarts_total") >= 1.0 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{metrics}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Notices flow again through the new subscription: the tab hears of r2 without node B's
    // sequence poll finding the session behind and loading it again (what a still-deaf node
    // would need), rather than within a window a busy machine could miss.
    until_ready_is(&cluster.nodes[1], 200).await;
    let reloads = metric(&cluster.nodes[1], RELOADS_FOR_BEING_BEHIND).await;
    agent.send(&ask("deaf", "r2", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    tab.recv_about("request", "r2").await;
    assert_eq!(
        metric(&cluster.nodes[1], RELOADS_FOR_BEING_BEHIND).await,
        reloads,
        "r2 came by the poll, not by notice"
    );
}

/// Sessions a node loaded again because its sequence poll found them behind the store.
const RELOADS_FOR_BEING_BEHIND: &str = "askgate_redis_resnapshots_total{cause=\"behind\"}";

/// The value of the metric `name` on `node` (read over HTTP: the read is a connection too).
async fn metric(node: &Node, name: &str) -> f64 {
    let (_, metrics) = node.http("GET", "/metrics", None).await;
    counter(&metrics, name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_gives_up_while_a_session_loads_leaves_it_loadable() {
    let redis = RedisServer::start(&[]);
    let upstream = format!("127.0.0.1:{}", redis.port).parse().unwrap();
    let held = Proxy::start(upstream).await;
    let node = Node::start(&held.url(), &[]);
    let fast = Node::start(&redis.url(), &[]);
    let (_agent, viewer) = fast.agent_opening("gaveup").await;
    let connections = metric(&node, "askgate_connections").await;
    // A long-poll on the held node, for a session it does not hold yet, whose client hangs up
    // while the node is loading the session: Redis's replies are held back from the moment
    // the node asks about the session until the node has closed the caller's connection.
    held.hold_replies();
    let loading = held.watch_upstream("{gaveup}");
    let mut stream = tokio::net::TcpStream::connect(node.addr).await.unwrap();
    use tokio::io::AsyncWriteExt as _;
    let request = format!(
        "GET /v1/sessions/gaveup/requests/x?wait_s=30 HTTP/1.1\r\nHost: {}\r\n\r\n",
        node.addr
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    tokio::time::timeout(support::TIMEOUT, loading)
        .await
        .expect("the node asks Redis about the session")
        .expect("the proxy is running");
    drop(stream);
    let deadline = tokio::time::Instant::now() + support::TIMEOUT;
    while metric(&node, "askgate_connections").await > connections {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the node never let go of the caller that hung up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    held.release_replies();
    // A tab on that node still gets its snapshot: the load went on without its caller.
    let (_tab, snapshot) = node.tab("gaveup", &viewer).await;
    assert_eq!(snapshot["type"], "snapshot");
}

/// A tab on `node` for `user`, through a personal link (local mode: no key).
async fn personal_tab(node: &Node, session: &str, user: &str) -> WsClient {
    let key = node
        .link_key(&format!("/v1/sessions/{session}/links"), user)
        .await;
    let live = node.ws(&format!("/v1/sessions/{session}/live"));
    WsClient::tab(&live, &key, None).await.0
}

fn approve(id: &str) -> Value {
    json!({"type": "answer", "id": id, "response": {"decisions": [{"type": "approve"}]}})
}

/// A quorum of two on Redis: alice votes on one node, bob on another (which shows the tally
/// of alice's vote first); each vote is counted once, in the store, and the second ends the
/// request with both voters. Then round after round both vote at the same moment on their
/// own nodes: each round ends exactly once, with both votes counted and in the trail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_quorum_counts_each_vote_once_across_nodes_even_at_once() {
    let cluster = Cluster::start(2).await;
    let (a, b) = (&cluster.nodes[0], &cluster.nodes[1]);
    let (mut agent, _) = a.agent_opening("quorum").await;
    let mut alice = personal_tab(a, "quorum", "alice@example.com").await;
    let mut bob = personal_tab(b, "quorum", "bob@example.com").await;
    let ask_two = |id: &str| {
        json!({"type": "ask", "session": "quorum", "id": id, "dialect": "approval",
        "calls": [{"name": "deploy", "args": {"env": "prod"}}], "quorum": 2})
    };
    agent.send(&ask_two("first")).await;
    agent.recv_until("accepted").await;
    bob.recv_about("request", "first").await;
    alice.send(&approve("first")).await;
    let tally = bob.recv_about("tally", "first").await;
    assert_eq!(
        tally["calls"],
        json!([{"approved_by": ["alice@example.com"], "rejected_by": []}]),
        "{tally}"
    );
    bob.send(&approve("first")).await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["user"], "bob@example.com");
    assert_eq!(
        outcome["voters"],
        json!([
            {"user": "alice@example.com", "decisions": ["approve"]},
            {"user": "bob@example.com", "decisions": ["approve"]}
        ])
    );

    for round in 0..support::soak_or(10, 50) {
        let id = format!("at-once-{round}");
        agent.send(&ask_two(&id)).await;
        agent.recv_until("accepted").await;
        alice.recv_about("request", &id).await;
        bob.recv_about("request", &id).await;
        let (sent_a, sent_b) = (approve(&id), approve(&id));
        tokio::join!(alice.send(&sent_a), bob.send(&sent_b));
        let outcome = agent.recv_until("outcome").await;
        assert_eq!(outcome["id"], id.as_str(), "round {round}");
        assert_eq!(
            outcome["voters"].as_array().map(Vec::len),
            Some(2),
            "round {round}: {outcome}"
        );
        agent
            .send(&json!({"type": "ack", "session": "quorum", "id": id}))
            .await;
        if let Some(frame) = agent.recv_within(Duration::from_millis(1)).await {
            assert_ne!(frame["type"], "outcome", "round {round}: {frame}");
        }
    }
    let (status, trail) = a.http("GET", "/v1/audit?session=quorum", None).await;
    assert_eq!(status, 200, "{trail}");
    let events: Vec<(String, String)> = trail
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|entry| entry["event"] == "voted" || entry["event"] == "answered")
        .map(|entry| {
            (
                entry["id"].as_str().unwrap().to_owned(),
                entry["event"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let rounds = support::soak_or(10, 50);
    for id in std::iter::once("first".to_owned()).chain((0..rounds).map(|r| format!("at-once-{r}")))
    {
        let of: Vec<&str> = events
            .iter()
            .filter(|(of, _)| *of == id)
            .map(|(_, event)| event.as_str())
            .collect();
        assert_eq!(of, ["voted", "voted", "answered"], "{id}");
    }
}

/// Orphaning on Redis: every node judges from the store's presence whether a request's agent
/// waits on some node. An agent that moves to another node and re-asks keeps its request live
/// on both; once it is gone from every node, both nodes' tabs see the request orphaned, and it
/// is withdrawn once, by the gateway, after `--orphan-withdraw-after-s`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_request_is_orphaned_only_once_its_agent_is_gone_from_every_node() {
    let grace = Duration::from_secs(1);
    let cluster = Cluster::start_with(
        2,
        &["--agent-grace-s", "1", "--orphan-withdraw-after-s", "2"],
    )
    .await;
    let (a, b) = (&cluster.nodes[0], &cluster.nodes[1]);
    let (mut first, viewer) = a.agent_opening("moving").await;
    let (mut tab_a, _) = a.tab("moving", &viewer).await;
    let (mut tab_b, _) = b.tab("moving", &viewer).await;
    let asked = ask("moving", "r1", &["Color"], None);
    first.send(&asked).await;
    first.recv_until("accepted").await;
    tab_a.recv_about("request", "r1").await;
    tab_b.recv_about("request", "r1").await;
    // The agent moves: a new connection on the other node asks the same request again, and
    // then the old one goes.
    let (mut second, _) = b.agent_opening("moving").await;
    second.send(&asked).await;
    second.recv_until("accepted").await;
    // Once node b has told the store it holds the agent too (its upkeep, within a second):
    // both nodes' entries name r1.
    let patience = tokio::time::Instant::now() + support::TIMEOUT;
    loop {
        let entries = cluster.redis.cli(&["HVALS", "askgate:{moving}:held"]);
        let holding = entries
            .lines()
            .filter(|entry| entry.split_whitespace().skip(1).any(|id| id == "r1"))
            .count();
        if holding == 2 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < patience,
            "node b never said it holds r1: {entries}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(first);
    // Twice the grace with the agent on the other node: neither node orphans it. (Waiting is
    // the point here: what is checked is that nothing happens in that time.)
    let held_until = tokio::time::Instant::now() + grace * 2;
    while let Ok(frame) = tokio::time::timeout_at(held_until, tab_a.recv()).await {
        assert_ne!(
            frame["type"], "orphaned",
            "orphaned while its agent was on node b"
        );
    }
    if let Some(frame) = tab_b.recv_within(Duration::from_millis(1)).await {
        assert_ne!(
            frame["type"], "orphaned",
            "orphaned while its agent was on node b"
        );
    }
    let gone_at = tokio::time::Instant::now();
    drop(second);
    let orphaned_a = tab_a.recv_about("orphaned", "r1").await;
    let orphaned_b = tab_b.recv_about("orphaned", "r1").await;
    assert_eq!(
        (orphaned_a["id"].as_str(), orphaned_b["id"].as_str()),
        (Some("r1"), Some("r1"))
    );
    assert!(
        gone_at.elapsed() >= grace,
        "orphaned before its grace ran out"
    );
    // Withdrawn by the gateway, once.
    let resolved = tab_b.recv_about("resolved", "r1").await;
    assert_eq!(
        (&resolved["outcome"], &resolved["via"]),
        (&json!("withdrawn"), &json!("gateway")),
        "{resolved}"
    );
    let (status, trail) = a.http("GET", "/v1/audit?session=moving", None).await;
    assert_eq!(status, 200, "{trail}");
    let withdrawals = trail
        .lines()
        .filter(|line| line.contains("\"event\":\"withdrawn\""))
        .count();
    assert_eq!(withdrawals, 1, "{trail}");
}
