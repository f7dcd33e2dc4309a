//! The churn scenario: C tab connects and disconnects a second for D seconds, then a leak
//! check. Each cycle connects, says hello, waits for the snapshot, optionally holds, and
//! leaves: cleanly (close handshake) or, for `--abrupt-percent` of them, by dropping TCP.
//!
//! Nothing may be left behind: after a settle period the server's live gauges (tabs,
//! sessions, agents, socket tasks, open requests, kept outcomes) must equal their baseline
//! and its RSS must be within 10 % of where it was before the churn. A short unmeasured
//! warm-up runs first, so memory the allocator keeps after its first use of many sockets is
//! not mistaken for a leak.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use serde::Serialize;
use tokio::task::JoinSet;

use crate::cli::ChurnArgs;
use crate::conn;
use crate::histo::{Hist, Summary};
use crate::procstat::{self, Sampled, Sampler, mib};
use crate::report::{Conditions, ServerInfo, Table, gauges, load_average, thousands};
use crate::scrape::{self, Metrics};
use crate::target::Target;

/// RSS may end at most this much above where it started.
pub(crate) const RSS_TOLERANCE: f64 = 0.10;

/// What one churn run measured.
#[derive(Debug, Serialize)]
pub(crate) struct ChurnReport {
    /// `"churn"`.
    pub(crate) scenario: &'static str,
    /// The server.
    pub(crate) server: ServerInfo,
    /// The workload.
    pub(crate) args: ChurnArgs,
    /// Conditions.
    pub(crate) conditions: Conditions,
    /// Cycles completed (connected, got the snapshot, left).
    pub(crate) completed: u64,
    /// Cycles that failed to connect or get a snapshot.
    pub(crate) failed: u64,
    /// Cycles skipped because too many were in flight.
    pub(crate) skipped: u64,
    /// Cycles completed per second.
    pub(crate) cycles_per_s: f64,
    /// Connect + hello → snapshot.
    pub(crate) connect_to_snapshot: Summary,
    /// Server RSS before the churn, MiB.
    pub(crate) rss_start_mib: f64,
    /// Server RSS after the churn and the settle period, MiB.
    pub(crate) rss_end_mib: f64,
    /// Live gauges before.
    pub(crate) live_start: BTreeMap<String, f64>,
    /// Live gauges after.
    pub(crate) live_end: BTreeMap<String, f64>,
    /// Gauges and RSS back where they started.
    pub(crate) leak_free: bool,
    /// Why not, if not.
    pub(crate) leaks: Vec<String>,
    /// Server and generator CPU and memory during the churn.
    pub(crate) usage: Sampled,
}

/// What a batch of cycles did; shared by the cycle tasks.
#[derive(Default)]
struct Counts {
    /// Cycles that got their snapshot and left (the sampler's progress counter).
    completed: Arc<AtomicU64>,
    failed: AtomicU64,
    failures: std::sync::Mutex<Vec<String>>,
    /// Connect + hello → snapshot.
    latency: Hist,
}

/// How to run cycles: where, in which sessions, how fast, how they leave.
struct Cycles {
    addr: SocketAddr,
    names: Vec<String>,
    keys: HashMap<String, String>,
    rate: f64,
    abrupt_percent: u64,
    hold: Duration,
    max_in_flight: usize,
}

/// Runs the scenario against `target`.
///
/// # Errors
/// The server's PID is unknown, or the sessions cannot be opened.
pub(crate) async fn run(
    args: &ChurnArgs,
    target: &Target,
    client_threads: usize,
) -> anyhow::Result<ChurnReport> {
    let Some(pid) = target.pid else {
        bail!("the churn scenario checks the server's RSS: spawn it, or give --pid");
    };
    if args.rate <= 0.0 || args.sessions == 0 {
        bail!("--rate must be positive and --sessions at least 1");
    }
    let load_start = load_average();
    let addr = target.addr;
    let run_id: u32 = rand::random();
    let names: Vec<String> = (0..args.sessions)
        .map(|i| format!("c{run_id:08x}-{i}"))
        .collect();
    let keys = conn::open_sessions(addr, &names).await?;
    let cycles = Arc::new(Cycles {
        addr,
        names,
        keys,
        rate: args.rate,
        abrupt_percent: u64::from(args.abrupt_percent),
        hold: Duration::from_millis(args.hold_ms),
        max_in_flight: args.max_in_flight,
    });
    let empty = |m: &Metrics| m.get("askgate_sessions").is_none_or(|v| *v == 0.0);
    let _ = scrape::wait_until(addr, Duration::from_secs(10), empty).await;

    if args.warmup_s > 0.0 {
        cycles
            .run(args.warmup_s, &Arc::new(Counts::default()))
            .await;
        let _ = scrape::wait_until(addr, Duration::from_secs(10), empty).await;
    }
    tokio::time::sleep(Duration::from_secs_f64(args.settle_s)).await;
    let rss_start = procstat::settled_rss(Some(pid)).await.unwrap_or(0);
    let live_start = scrape::live_gauges(addr).await;

    let counts = Arc::new(Counts::default());
    let sampler = Sampler::start(vec![pid], Arc::clone(&counts.completed));
    let began = Instant::now();
    let skipped = cycles.run(args.duration_s, &counts).await;
    let elapsed = began.elapsed().as_secs_f64();
    let usage = sampler.finish().await;

    // Settle: wait for the gauges to come back, then for the allocator to calm down.
    let back = |m: &Metrics| scrape::live(m) == live_start;
    let _ = scrape::wait_until(addr, Duration::from_secs(15), back).await;
    tokio::time::sleep(Duration::from_secs_f64(args.settle_s)).await;
    let rss_end = procstat::settled_rss(Some(pid)).await.unwrap_or(0);
    let live_end = scrape::live_gauges(addr).await;

    let mut leaks = Vec::new();
    for (name, before) in &live_start {
        let after = live_end.get(name).copied().unwrap_or(f64::NAN);
        if after != *before {
            leaks.push(format!("{name}: {before} before, {after} after"));
        }
    }
    if live_start.is_empty() {
        leaks.push("no metrics to compare (GET /metrics failed)".into());
    }
    if rss_start == 0 || rss_end == 0 {
        leaks.push("the server's RSS could not be read".into());
    } else if rss_end as f64 > rss_start as f64 * (1.0 + RSS_TOLERANCE) {
        leaks.push(format!(
            "RSS {:.1} MiB after vs {:.1} MiB before (over {:.0} %)",
            mib(rss_end),
            mib(rss_start),
            RSS_TOLERANCE * 100.0
        ));
    }
    let completed = counts.completed.load(Ordering::Relaxed);
    for failure in counts
        .failures
        .lock()
        .map(|f| f.clone())
        .unwrap_or_default()
    {
        eprintln!("  churn failure: {failure}");
    }
    Ok(ChurnReport {
        scenario: "churn",
        server: ServerInfo::from(target),
        args: args.clone(),
        conditions: Conditions {
            load_start,
            load_end: load_average(),
            client_threads,
        },
        completed,
        failed: counts.failed.load(Ordering::Relaxed),
        skipped,
        cycles_per_s: completed as f64 / elapsed,
        connect_to_snapshot: counts.latency.summary(),
        rss_start_mib: mib(rss_start),
        rss_end_mib: mib(rss_end),
        live_start,
        live_end,
        leak_free: leaks.is_empty(),
        leaks,
        usage,
    })
}

impl Cycles {
    /// Launches `rate × seconds` cycles on a fixed schedule and waits for them; returns how
    /// many were skipped because [`Cycles::max_in_flight`] were still running.
    async fn run(self: &Arc<Self>, seconds: f64, counts: &Arc<Counts>) -> u64 {
        let total = (self.rate * seconds).ceil() as u64;
        let start = Instant::now();
        let mut running = JoinSet::new();
        let mut skipped = 0;
        for i in 0..total {
            let due = start + Duration::from_secs_f64(i as f64 / self.rate);
            tokio::time::sleep_until(due.into()).await;
            while running.try_join_next().is_some() {}
            if running.len() >= self.max_in_flight {
                skipped += 1;
                continue;
            }
            running.spawn(Arc::clone(self).cycle(i, Arc::clone(counts)));
        }
        while running.join_next().await.is_some() {}
        skipped
    }

    /// One tab: connect, hello, snapshot, (hold), leave.
    async fn cycle(self: Arc<Self>, i: u64, counts: Arc<Counts>) {
        let name = &self.names[(i as usize) % self.names.len()];
        let key = self.keys.get(name).map_or("", String::as_str);
        let t0 = Instant::now();
        match conn::join_tab(self.addr, name, key, &format!("c{i}")).await {
            Ok(ws) => {
                counts.latency.record_ns(t0.elapsed().as_nanos() as u64);
                if !self.hold.is_zero() {
                    tokio::time::sleep(self.hold).await;
                }
                if i % 100 < self.abrupt_percent {
                    drop(ws);
                } else {
                    conn::close(ws).await;
                }
                counts.completed.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut failures) = counts.failures.lock()
                    && failures.len() < 5
                {
                    failures.push(format!("{e:#}"));
                }
            }
        }
    }
}

impl ChurnReport {
    /// Prints the table.
    pub(crate) fn print(&self) {
        let a = &self.args;
        println!(
            "\nchurn: {} connects+disconnects/s for {} s over {} sessions, {} % abrupt — {:?}",
            a.rate, a.duration_s, a.sessions, a.abrupt_percent, self.server.kind
        );
        let mut t = Table::new(&["churn", "value"]);
        t.row(vec![
            "cycles completed / failed / skipped".into(),
            format!(
                "{} / {} / {}",
                thousands(self.completed as f64),
                self.failed,
                self.skipped
            ),
        ]);
        t.row(vec!["cycles/s".into(), format!("{:.0}", self.cycles_per_s)]);
        t.row(vec![
            "server RSS before / after, MiB".into(),
            format!("{:.1} / {:.1}", self.rss_start_mib, self.rss_end_mib),
        ]);
        if let Some(s) = &self.usage.server {
            t.row(vec![
                "server CPU % (avg, peak second)".into(),
                format!("{:.0}, {:.0}", s.cpu_pct, s.cpu_peak_pct),
            ]);
            t.row(vec![
                "server RSS peak, MiB".into(),
                format!("{:.1}", s.rss_peak_mib),
            ]);
        }
        t.row(vec![
            "generator CPU % (avg)".into(),
            format!("{:.0}", self.usage.generator.cpu_pct),
        ]);
        t.row(vec!["gauges before".into(), gauges(&self.live_start)]);
        t.row(vec!["gauges after".into(), gauges(&self.live_end)]);
        t.row(vec!["leak free".into(), self.leak_free.to_string()]);
        t.row(vec![
            "load average (start, end)".into(),
            format!(
                "{:.1}, {:.1}",
                self.conditions.load_start, self.conditions.load_end
            ),
        ]);
        print!("{}", t.render());
        for leak in &self.leaks {
            println!("  leak: {leak}");
        }
        let mut t = Table::latencies();
        t.latency("connect → snapshot", &self.connect_to_snapshot);
        print!("{}", t.render());
    }
}
