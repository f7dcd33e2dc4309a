//! The fan-out scenario: S sessions × T tabs, A agents asking at R asks/s for D seconds.
//!
//! Setup opens the sessions (for their viewer keys) and connects every tab; each tab's task
//! starts reading as soon as its snapshot arrives, so presence frames from later joins never
//! pile up in the server's queue. Then the agents connect, the clock starts, and the run
//! ends when every ask has its outcome (or the drain deadline passes). The audit then checks
//! that nothing was lost or doubled.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde::Serialize;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinSet;

use crate::agent::{self, AgentPlan};
use crate::cli::{AnswerRule, FanoutArgs};
use crate::conn;
use crate::histo::Summary;
use crate::procstat::{self, Sampled, Sampler};
use crate::report::{Conditions, ServerInfo, Table, load_average, thousands};
use crate::scrape;
use crate::tab::{self, Join, Setup, TabPlan};
use crate::target::{Kind, Target};
use crate::tracker::{Audit, MAX_TABS, Oddities, Tracker};

/// How long the tabs get to close once told to stop.
const TABS_STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Pause after setup so join and presence traffic is over before the clock starts.
const SETTLE: Duration = Duration::from_secs(1);
/// Time tabs keep reading after the last outcome, for the last `resolved` frames.
const TAIL: Duration = Duration::from_millis(500);
/// The askgate limits this workload would otherwise run into, as `serve` flags.
pub(crate) fn server_flags(args: &FanoutArgs) -> Vec<String> {
    let mut flags = Vec::new();
    if args.tabs > 64 {
        flags.push(format!("--tabs-per-session={}", args.tabs));
    }
    // One tab answering every ask of its session at R/S answers a second needs headroom
    // over the default 20 frames/s per tab.
    let per_tab = match args.answer {
        AnswerRule::First | AnswerRule::All => args.rate / args.sessions as f64,
        AnswerRule::Random => args.rate / (args.sessions * args.tabs) as f64,
    };
    if per_tab * 2.0 > 20.0 {
        flags.push(format!(
            "--tab-frames-per-second={}",
            (per_tab * 2.0).ceil()
        ));
    }
    // Each agent sends an ask and an ack per request.
    let per_agent = 2.0 * args.rate / args.agents.clamp(1, args.sessions) as f64;
    if per_agent * 1.5 > 5000.0 {
        flags.push(format!(
            "--agent-frames-per-second={}",
            (per_agent * 1.5).ceil()
        ));
    }
    flags
}

/// Everything one fan-out run measured.
#[derive(Debug, Serialize)]
pub(crate) struct FanoutReport {
    /// `"fanout"`.
    pub(crate) scenario: &'static str,
    /// The server.
    pub(crate) server: ServerInfo,
    /// The workload.
    pub(crate) args: FanoutArgs,
    /// Conditions.
    pub(crate) conditions: Conditions,
    /// Seconds spent connecting the tabs.
    pub(crate) setup_s: f64,
    /// Tabs the server closed or refused while they joined (each then rejoined), by reason.
    pub(crate) setup_kicks: BTreeMap<String, u64>,
    /// Latencies.
    pub(crate) ask_to_first_tab: Summary,
    /// Latencies.
    pub(crate) ask_to_all_tabs: Summary,
    /// Latencies.
    pub(crate) answer_to_outcome: Summary,
    /// Latencies.
    pub(crate) ask_to_accepted: Summary,
    /// How late the generator wrote asks (its own health).
    pub(crate) send_lag: Summary,
    /// Asks written per second.
    pub(crate) asks_per_s: f64,
    /// Outcomes (resolutions) received per second, from the first ask to the last outcome.
    pub(crate) resolved_per_s: f64,
    /// The slowest full second of resolutions.
    pub(crate) resolved_per_s_min: f64,
    /// Whether every ask had its outcome before the drain deadline. When not, the server
    /// fell behind and the asks still outstanding are counted as lost outcomes.
    pub(crate) drained: bool,
    /// Lost or doubled frames: all must be zero.
    pub(crate) audit: Audit,
    /// Whether the audit is clean and nothing odd happened.
    pub(crate) clean: bool,
    /// Odd frames and closes.
    pub(crate) oddities: Oddities,
    /// Server and generator CPU and memory during the asking.
    pub(crate) usage: Sampled,
    /// Bytes the server processes caused to be written to storage during the asking
    /// (`/proc/PID/io` `write_bytes`; `None` when it cannot be read).
    pub(crate) server_disk_write_bytes: Option<u64>,
}

/// Runs the scenario against `target`.
///
/// # Errors
/// The arguments are out of range, or setup fails (a tab or agent cannot connect).
pub(crate) async fn run(
    args: &FanoutArgs,
    target: &Target,
    client_threads: usize,
) -> anyhow::Result<FanoutReport> {
    run_spread(args, &[target], &[], client_threads).await
}

/// Which of `nodes` node a session's tab `index` joins, when the session's agent is on node
/// `agent_node`: never the agent's own node when there are others, so that every tab's
/// latency crosses from one node to another.
fn tab_node(agent_node: usize, index: usize, nodes: usize) -> usize {
    if nodes == 1 {
        0
    } else {
        (agent_node + 1 + index % (nodes - 1)) % nodes
    }
}

/// Runs the scenario spread over `nodes` (gateways sharing one store): agent `a` on node
/// `a % n`, each session's tabs on the other nodes. CPU and memory are summed over the nodes
/// and `also_sampled` (their Redis).
///
/// # Errors
/// As [`run`].
pub(crate) async fn run_spread(
    args: &FanoutArgs,
    nodes: &[&Target],
    also_sampled: &[u32],
    client_threads: usize,
) -> anyhow::Result<FanoutReport> {
    let target = *nodes.first().context("no node to run on")?;
    if args.tabs == 0 || args.tabs > MAX_TABS || args.sessions == 0 {
        bail!("--tabs must be 1..={MAX_TABS} and --sessions at least 1");
    }
    if args.rate <= 0.0 || args.duration_s <= 0.0 || args.think_min_ms > args.think_max_ms {
        bail!("--rate and --duration-s must be positive and --think-min-ms <= --think-max-ms");
    }
    let load_start = load_average();
    let addr = target.addr;
    let addrs: Vec<_> = nodes.iter().map(|node| node.addr).collect();
    let agents = args.agents.clamp(1, args.sessions);
    let run_id: u32 = rand::random();
    let names: Vec<String> = (0..args.sessions)
        .map(|i| format!("f{run_id:08x}-{i}"))
        .collect();
    let keys = conn::open_sessions(addr, &names).await?;
    let total = (args.rate * args.duration_s).ceil() as u64;
    let tracker = Arc::new(Tracker::new(total, args.tabs));

    // Tabs: each task joins, reports ready, then serves its socket until told to stop. A
    // tab the server closes during setup rejoins, as a page does after 4408 (the join burst
    // itself can overflow queues with presence frames); those closes are reported apart.
    let setup_began = Instant::now();
    let setup = Arc::new(Setup::default());
    let (stop, stopped) = watch::channel(false);
    let (ready_tx, mut ready) = mpsc::channel::<anyhow::Result<()>>(1024);
    let gate = Arc::new(Semaphore::new(args.connect_concurrency.max(1)));
    let mut tabs = JoinSet::new();
    for (s, name) in names.iter().enumerate() {
        let key = keys
            .get(name)
            .with_context(|| format!("no key for {name}"))?;
        for index in 0..args.tabs {
            let plan = TabPlan {
                index,
                tabs: args.tabs,
                rule: args.answer,
                think_ms: (args.think_min_ms, args.think_max_ms),
                seed: (s * MAX_TABS + index) as u64,
            };
            let join = Join {
                addr: addrs[tab_node((s % agents) % addrs.len(), index, addrs.len())],
                session: name.clone(),
                key: key.clone(),
                tab: format!("t{s}-{index}"),
            };
            tabs.spawn(tab::live(
                join,
                plan,
                Arc::clone(&tracker),
                Arc::clone(&setup),
                stopped.clone(),
                Arc::clone(&gate),
                ready_tx.clone(),
            ));
        }
    }
    drop(ready_tx);
    let expected = args.sessions * args.tabs;
    for _ in 0..expected {
        match ready.recv().await {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                let _ = stop.send(true);
                return Err(e.context("connecting a tab"));
            }
            None => bail!("tab tasks ended during setup"),
        }
    }
    // Every tab connected at once, and staying so for a settle period.
    let settled_by = Instant::now() + Duration::from_secs(30);
    loop {
        tokio::time::sleep(SETTLE).await;
        if setup.connected.load(Relaxed) == expected || Instant::now() > settled_by {
            break;
        }
    }
    if setup.connected.load(Relaxed) != expected {
        let _ = stop.send(true);
        bail!(
            "only {} of {expected} tabs stayed connected through setup",
            setup.connected.load(Relaxed)
        );
    }
    let setup_s = setup_began.elapsed().as_secs_f64();
    let mut sockets = Vec::with_capacity(agents);
    for a in 0..agents {
        sockets.push(
            conn::connect(addrs[a % addrs.len()], "/v1/agent")
                .await
                .context("connecting an agent")?,
        );
    }
    tokio::time::sleep(SETTLE).await;
    setup.measuring.store(true, Relaxed);

    // The measured phase.
    let start = Instant::now() + Duration::from_millis(100);
    let give_up = start + Duration::from_secs_f64(args.duration_s + args.drain_s);
    let mut sampled: Vec<u32> = nodes.iter().filter_map(|node| node.pid).collect();
    sampled.extend_from_slice(also_sampled);
    let disk_before = procstat::disk_write_bytes(&sampled);
    let disk_pids = sampled.clone();
    let sampler = Sampler::start(sampled, Arc::clone(&tracker.outcomes));
    let mut runs = JoinSet::new();
    for (a, ws) in sockets.into_iter().enumerate() {
        let plan = AgentPlan {
            index: a as u64,
            agents: agents as u64,
            sessions: names.iter().skip(a).step_by(agents).cloned().collect(),
            total,
            rate: args.rate,
            timeout_s: args.timeout_s,
            start,
            give_up,
        };
        runs.spawn(agent::run(ws, plan, Arc::clone(&tracker)));
    }
    let mut asked = 0;
    let mut outstanding = 0;
    let mut last_outcome = start;
    while let Some(result) = runs.join_next().await {
        let result = result.context("an agent task panicked")?;
        asked += result.asked;
        outstanding += result.outstanding;
        if let Some(at) = result.last_outcome {
            last_outcome = last_outcome.max(at);
        }
    }
    // Sampled up to here: the tail and the tabs closing are not part of the measured load.
    let usage = sampler.finish().await;
    let server_disk_write_bytes = procstat::disk_write_bytes(&disk_pids)
        .zip(disk_before)
        .map(|(after, before)| after.saturating_sub(before));
    tokio::time::sleep(TAIL).await;
    let _ = stop.send(true);
    let closing = async { while tabs.join_next().await.is_some() {} };
    if tokio::time::timeout(TABS_STOP_TIMEOUT, closing)
        .await
        .is_err()
    {
        eprintln!("  note: some tabs did not stop within {TABS_STOP_TIMEOUT:?}");
    }

    let audit = tracker.audit(total);
    let oddities = tracker.oddities();
    let outcomes = tracker.outcomes.load(Relaxed);
    let elapsed = last_outcome.duration_since(start).as_secs_f64().max(1e-9);
    let full_seconds = usage.timeline.len().saturating_sub(1);
    let resolved_per_s_min = usage.timeline[..full_seconds.min(args.duration_s as usize)]
        .iter()
        .skip(1)
        .map(|t| t.progress_per_s)
        .min_by(f64::total_cmp)
        .unwrap_or(0.0);
    let expected_rejections = match args.answer {
        AnswerRule::All => audit.asks * (args.tabs as u64 - 1),
        _ => 0,
    };
    let drained = outstanding == 0 && asked == total;
    let clean = audit.clean()
        && drained
        && oddities.rejected + oddities.errors + oddities.unparsed == 0
        && oddities.answer_rejected == expected_rejections
        && oddities.closed_by_server.is_empty();
    let latency = &tracker.latency;
    // Keep the server's own counters in the log of the run when it has them.
    if target.kind == Kind::Askgate
        && let Ok(metrics) = scrape::scrape(addr).await
    {
        let answered = metrics
            .get("askgate_outcomes_total{outcome=\"answered\"}")
            .copied()
            .unwrap_or(f64::NAN);
        eprintln!("  server counted {} answered outcomes", thousands(answered));
        eprintln!("  {}", store_commits(&metrics));
        if let Some(writes) = log_writes(&metrics, audit.asks) {
            eprintln!("  {writes}");
        }
        if let Some(bytes) = server_disk_write_bytes {
            eprintln!(
                "  written to storage while asking: {} bytes ({:.0} a request)",
                thousands(bytes as f64),
                bytes as f64 / audit.asks.max(1) as f64
            );
        }
    }
    Ok(FanoutReport {
        scenario: "fanout",
        server: ServerInfo::from(target),
        args: args.clone(),
        conditions: Conditions {
            load_start,
            load_end: load_average(),
            client_threads,
        },
        setup_s,
        setup_kicks: setup.kicks.lock().map(|k| k.clone()).unwrap_or_default(),
        ask_to_first_tab: latency.ask_to_first_tab.summary(),
        ask_to_all_tabs: latency.ask_to_all_tabs.summary(),
        answer_to_outcome: latency.answer_to_outcome.summary(),
        ask_to_accepted: latency.ask_to_accepted.summary(),
        send_lag: latency.send_lag.summary(),
        asks_per_s: asked as f64 / args.duration_s,
        resolved_per_s: outcomes as f64 / elapsed,
        resolved_per_s_min,
        drained,
        audit,
        clean,
        oddities,
        usage,
        server_disk_write_bytes,
    })
}

impl FanoutReport {
    /// Prints the tables.
    pub(crate) fn print(&self) {
        let a = &self.args;
        println!(
            "\nfanout: {} sessions × {} tabs, {} asks/s for {} s, think {}–{} ms, answer {:?} — {:?}",
            a.sessions,
            a.tabs,
            a.rate,
            a.duration_s,
            a.think_min_ms,
            a.think_max_ms,
            a.answer,
            self.server.kind
        );
        let mut t = Table::latencies();
        t.latency("ask → first tab", &self.ask_to_first_tab);
        t.latency(&format!("ask → all {} tabs", a.tabs), &self.ask_to_all_tabs);
        t.latency("answer → agent outcome", &self.answer_to_outcome);
        t.latency("ask → accepted", &self.ask_to_accepted);
        t.latency("send lag (generator)", &self.send_lag);
        print!("{}", t.render());
        let mut t = Table::new(&["rates and resources", "value"]);
        t.row(vec![
            "asks/s sent".into(),
            format!("{:.0}", self.asks_per_s),
        ]);
        t.row(vec![
            "resolved/s (avg, slowest second)".into(),
            format!("{:.0}, {:.0}", self.resolved_per_s, self.resolved_per_s_min),
        ]);
        if let Some(s) = &self.usage.server {
            t.row(vec![
                "server CPU % (avg, peak second)".into(),
                format!("{:.0}, {:.0}", s.cpu_pct, s.cpu_peak_pct),
            ]);
            t.row(vec![
                "server RSS MiB (start, peak, end)".into(),
                format!(
                    "{:.1}, {:.1}, {:.1}",
                    s.rss_start_mib, s.rss_peak_mib, s.rss_end_mib
                ),
            ]);
        }
        let g = &self.usage.generator;
        t.row(vec![
            "generator CPU % (avg, peak second)".into(),
            format!("{:.0}, {:.0}", g.cpu_pct, g.cpu_peak_pct),
        ]);
        t.row(vec![
            "load average (start, end)".into(),
            format!(
                "{:.1}, {:.1}",
                self.conditions.load_start, self.conditions.load_end
            ),
        ]);
        let au = &self.audit;
        t.row(vec![
            "asks / outcomes lost / doubled".into(),
            format!(
                "{} / {} / {}",
                au.asks, au.outcomes_lost, au.outcomes_doubled
            ),
        ]);
        t.row(vec![
            "requests to tabs lost / doubled".into(),
            format!("{} / {}", au.requests_lost, au.requests_doubled),
        ]);
        t.row(vec![
            "resolved to tabs lost / doubled".into(),
            format!("{} / {}", au.resolved_lost, au.resolved_doubled),
        ]);
        t.row(vec![
            "accepted lost / doubled".into(),
            format!("{} / {}", au.accepted_lost, au.accepted_doubled),
        ]);
        let o = &self.oddities;
        t.row(vec![
            "rejected / error / answer_rejected".into(),
            format!("{} / {} / {}", o.rejected, o.errors, o.answer_rejected),
        ]);
        t.row(vec![
            "closed by server".into(),
            format!("{:?}", o.closed_by_server),
        ]);
        t.row(vec![
            "drained before the deadline".into(),
            self.drained.to_string(),
        ]);
        t.row(vec!["clean".into(), self.clean.to_string()]);
        if !self.setup_kicks.is_empty() {
            t.row(vec![
                "tabs closed while joining (rejoined)".into(),
                format!("{:?}", self.setup_kicks),
            ]);
        }
        print!("{}", t.render());
        for sample in &o.samples {
            println!("  odd frame: {sample}");
        }
        for m in &au.missing_samples {
            println!("  no outcome: {m:?}");
        }
    }
}

/// What the embedded store wrote for each request: log records, waits for the disk, and
/// checkpoints into redb (counted from the server's start, setup included).
fn log_writes(metrics: &scrape::Metrics, requests: u64) -> Option<String> {
    let count = |name: &str| metrics.get(name).copied();
    let records = count("askgate_store_transactions_total")?;
    let syncs = count("askgate_store_syncs_total")?;
    let checkpoints = count("askgate_store_checkpoints_total").unwrap_or(f64::NAN);
    (records > 0.0).then(|| {
        let per = |n: f64| n / requests as f64;
        format!(
            "embedded store: {} log records ({:.2} a request), {} syncs ({:.3} a request), {} checkpoints",
            thousands(records),
            per(records),
            thousands(syncs),
            per(syncs),
            thousands(checkpoints),
        )
    })
}

/// The server's store commits: how many, their mean, and how many were slow (a stalling disk
/// shows here, not in the server's CPU).
fn store_commits(metrics: &scrape::Metrics) -> String {
    let name = "askgate_store_commit_seconds";
    let value = |key: String| metrics.get(&key).copied().unwrap_or(f64::NAN);
    let count = value(format!("{name}_count"));
    let mean_ms = value(format!("{name}_sum")) / count * 1000.0;
    let over = |bound: &str| count - value(format!("{name}_bucket{{le=\"{bound}\"}}"));
    format!(
        "store commits: {} (mean {mean_ms:.2} ms), over 10 ms: {}, over 100 ms: {}",
        thousands(count),
        over("0.01"),
        over("0.1"),
    )
}
