//! Counters and gauges, rendered in the Prometheus text format at `GET /metrics`.
//!
//! Plain atomics: every update is a single relaxed add, cheap enough for the fan-out path.
//! [`shared`]: what only a node of several on Redis counts; [`notify`]: what notifications
//! came to, by channel; [`history`]: the last hour minute by minute, for the operator
//! console; [`node_report`]: a node's figures as the other nodes read them.

pub mod history; // the last hour, minute by minute: asks, answers, latencies, notifications
pub mod node_report; // one node's figures, written to a shared store for the others to read
pub mod notify; // what notifications came to, by channel
mod shared; // what only a node of several on Redis counts

pub use notify::NotifyMetrics;
pub use shared::SharedMetrics;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use askgate_protocol::Outcome;

/// Upper bounds (seconds) of the answer-latency histogram buckets.
const LATENCY_BUCKETS_S: [f64; 14] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0,
];

/// Upper bounds (seconds) of the store-commit histogram buckets: a durable commit takes a few
/// hundred microseconds; the upper buckets are there to catch a disk that stalls.
const STORE_COMMIT_BUCKETS_S: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// Upper bounds (seconds) of the gateway's own hand-over latencies (an ask to its first tab,
/// an answer to its agent): a queue push takes microseconds; the upper buckets catch a stalled
/// store or lock.
const HAND_OVER_BUCKETS_S: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5, 10.0,
];

/// What the embedded store wrote: a log record per commit, a wait for the disk per group of
/// records, and its checkpoints into redb.
#[derive(Debug, Default)]
pub struct StoreWrites {
    /// Commits written to the log (each one record).
    pub transactions: AtomicU64,
    /// Waits for the disk (`fdatasync`) on the log, each for every record written meanwhile.
    pub syncs: AtomicU64,
    /// Checkpoints that wrote the log's records into redb.
    pub checkpoints: AtomicU64,
    /// Times redb's written pages were sent to the disk between its durable checkpoints.
    pub writebacks: AtomicU64,
}

/// The gateway's instruments.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Sessions held in memory.
    pub sessions: AtomicI64,
    /// Tabs connected.
    pub tabs: AtomicI64,
    /// Agent connections.
    pub agents: AtomicI64,
    /// Requests accepted and not yet resolved.
    pub open_requests: AtomicI64,
    /// Resolved requests kept until acked or expired.
    pub kept_outcomes: AtomicI64,
    /// Connection tasks running (agent and tab sockets).
    pub connection_tasks: AtomicI64,
    /// TCP connections held (HTTP and upgraded to WebSocket alike).
    pub connections: AtomicI64,
    /// Requests resolved, by outcome (indexed like [`Outcome::ALL`]).
    outcomes: [AtomicU64; 4],
    /// Sockets closed for a full queue (4408).
    pub closed_too_slow: AtomicU64,
    /// Sockets closed for too many frames (4429).
    pub closed_too_many_frames: AtomicU64,
    /// Sockets closed for a frame over the size limit (4413).
    pub closed_too_large: AtomicU64,
    /// TCP connections refused at a connection cap (answered 503).
    pub refused_connections: AtomicU64,
    /// HTTP connections closed for sending nothing, or their headers too slowly.
    pub closed_overstaying: AtomicU64,
    /// Asks rejected.
    pub rejected_asks: AtomicU64,
    /// Answers rejected (did not fit, or came too late).
    pub rejected_answers: AtomicU64,
    /// Answer latency: asked → answered or declined by a tab.
    answer_latency: Histogram<14>,
    /// Store commits, from handing the operations over to their being durable (queueing for
    /// the writer included: that is what a request waits for).
    store_commits: Histogram<12>,
    /// The embedded store's transactions.
    pub store_writes: std::sync::Arc<StoreWrites>,
    /// Redis: round trips, script outcomes, resnapshots, subscriptions, sweeps.
    pub shared: SharedMetrics,
    /// Notifications, by channel.
    pub notify: NotifyMetrics,
    /// The last hour, minute by minute.
    pub history: history::History,
    /// From accepting an ask to its request frame queued to the first tab.
    ask_to_tab: Histogram<12>,
    /// From a person's deciding answer to the outcome handed to the waiting agent.
    answer_to_agent: Histogram<12>,
    /// This process's node id, made at first use.
    node_id: std::sync::OnceLock<String>,
}

impl Metrics {
    /// Counts a resolution; `latency_ms` for answers and declines from a person, which the
    /// history counts as answers.
    pub fn resolved(&self, outcome: Outcome, latency_ms: Option<u64>) {
        let index = Outcome::ALL.iter().position(|o| *o == outcome).unwrap_or(0);
        self.outcomes[index].fetch_add(1, Ordering::Relaxed);
        if let Some(ms) = latency_ms {
            self.answer_latency
                .observe(&LATENCY_BUCKETS_S, Duration::from_millis(ms));
            self.history.answered(crate::clock::now_ms(), ms);
        }
    }

    /// Counts an ask accepted (once, on the node that accepted it).
    pub fn asked(&self) {
        self.history.asked(crate::clock::now_ms());
    }

    /// Times an ask's request frame queued to its first tab, `took` after it was accepted.
    pub fn shown_to_tab(&self, took: Duration) {
        self.ask_to_tab.observe(&HAND_OVER_BUCKETS_S, took);
        self.history.shown(crate::clock::now_ms(), took);
    }

    /// Times an outcome handed to its waiting agent, `took` after the deciding answer came.
    pub fn handed_back(&self, took: Duration) {
        self.answer_to_agent.observe(&HAND_OVER_BUCKETS_S, took);
        self.history.handed_back(crate::clock::now_ms(), took);
    }

    /// This process's node id: random, made once (16 hex digits).
    pub fn node_id(&self) -> &str {
        self.node_id
            .get_or_init(|| format!("{:016x}", rand::random::<u64>()))
    }

    /// Counts a store commit that took `took`, failed or not.
    pub fn store_committed(&self, took: Duration) {
        self.store_commits.observe(&STORE_COMMIT_BUCKETS_S, took);
    }

    /// How many requests ended with `outcome`.
    pub fn outcomes(&self, outcome: Outcome) -> u64 {
        let index = Outcome::ALL.iter().position(|o| *o == outcome).unwrap_or(0);
        self.outcomes[index].load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        let gauges = [
            (
                "askgate_sessions",
                "Sessions held in memory.",
                &self.sessions,
            ),
            ("askgate_tabs", "Browser tabs connected.", &self.tabs),
            ("askgate_agents", "Agent connections.", &self.agents),
            (
                "askgate_open_requests",
                "Requests accepted and not yet resolved.",
                &self.open_requests,
            ),
            (
                "askgate_kept_outcomes",
                "Outcomes kept until the agent acks them.",
                &self.kept_outcomes,
            ),
            (
                "askgate_connection_tasks",
                "Socket tasks running.",
                &self.connection_tasks,
            ),
            (
                "askgate_connections",
                "TCP connections held.",
                &self.connections,
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {}",
                value.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP askgate_outcomes_total Requests resolved, by outcome.\n# TYPE askgate_outcomes_total counter"
        );
        for (outcome, count) in Outcome::ALL.iter().zip(&self.outcomes) {
            let _ = writeln!(
                out,
                "askgate_outcomes_total{{outcome=\"{}\"}} {}",
                outcome.as_str(),
                count.load(Ordering::Relaxed)
            );
        }
        let counters = [
            (
                "askgate_closed_too_slow_total",
                "Sockets closed because their queue overflowed (4408).",
                &self.closed_too_slow,
            ),
            (
                "askgate_closed_too_many_frames_total",
                "Sockets closed for sending too many frames (4429).",
                &self.closed_too_many_frames,
            ),
            (
                "askgate_closed_too_large_total",
                "Sockets closed for a frame over the size limit (4413).",
                &self.closed_too_large,
            ),
            (
                "askgate_refused_connections_total",
                "TCP connections refused at a connection cap (503).",
                &self.refused_connections,
            ),
            (
                "askgate_closed_overstaying_total",
                "HTTP connections closed for sending nothing, or their headers too slowly.",
                &self.closed_overstaying,
            ),
            (
                "askgate_rejected_asks_total",
                "Asks rejected.",
                &self.rejected_asks,
            ),
            (
                "askgate_rejected_answers_total",
                "Answers rejected.",
                &self.rejected_answers,
            ),
            (
                "askgate_store_transactions_total",
                "Commits the embedded store wrote, each one record in its log.",
                &self.store_writes.transactions,
            ),
            (
                "askgate_store_syncs_total",
                "Waits for the disk (fdatasync) on the embedded store's log, each for every record written meanwhile.",
                &self.store_writes.syncs,
            ),
            (
                "askgate_store_checkpoints_total",
                "Checkpoints that wrote the embedded store's log into its redb file.",
                &self.store_writes.checkpoints,
            ),
            (
                "askgate_store_writebacks_total",
                "Times the embedded store sent redb's written pages to the disk between its durable checkpoints.",
                &self.store_writes.writebacks,
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                value.load(Ordering::Relaxed)
            );
        }
        self.answer_latency.render(
            &mut out,
            &LATENCY_BUCKETS_S,
            "askgate_answer_latency_seconds",
            "From ask to a tab's answer or decline.",
        );
        self.ask_to_tab.render(
            &mut out,
            &HAND_OVER_BUCKETS_S,
            "askgate_ask_to_tab_seconds",
            "From accepting an ask to its request frame queued to the first tab watching.",
        );
        self.answer_to_agent.render(
            &mut out,
            &HAND_OVER_BUCKETS_S,
            "askgate_answer_to_agent_seconds",
            "From a person's deciding answer to the outcome handed to the agent waiting for it.",
        );
        self.store_commits.render(
            &mut out,
            &STORE_COMMIT_BUCKETS_S,
            "askgate_store_commit_seconds",
            "From handing operations to the store until the caller may go on: durable, or for an ack's deletion, written.",
        );
        self.shared.render(&mut out);
        self.notify.render(&mut out, crate::clock::now_ms());
        out
    }
}

/// A Prometheus histogram: cumulative bucket counts over bounds its owner keeps, a count and a
/// sum (kept in microseconds, so that sub-millisecond observations add up).
#[derive(Debug)]
pub(crate) struct Histogram<const N: usize> {
    buckets: [AtomicU64; N],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl<const N: usize> Default for Histogram<N> {
    fn default() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum_us: AtomicU64::new(0),
        }
    }
}

impl<const N: usize> Histogram<N> {
    pub(crate) fn observe(&self, bounds: &[f64; N], value: Duration) {
        let seconds = value.as_secs_f64();
        for (bound, bucket) in bounds.iter().zip(&self.buckets) {
            if seconds <= *bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(value.as_micros()).unwrap_or(u64::MAX);
        self.sum_us.fetch_add(micros, Ordering::Relaxed);
    }

    pub(crate) fn render(&self, out: &mut String, bounds: &[f64; N], name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (bound, bucket) in bounds.iter().zip(&self.buckets) {
            let _ = writeln!(
                out,
                "{name}_bucket{{le=\"{bound}\"}} {}",
                bucket.load(Ordering::Relaxed)
            );
        }
        let count = self.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let sum_s = self.sum_us.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum_s}");
        let _ = writeln!(out, "{name}_count {count}");
    }
}

/// Adds `delta` to a gauge.
pub fn gauge_add(gauge: &AtomicI64, delta: i64) {
    gauge.fetch_add(delta, Ordering::Relaxed);
}

/// Adds one to a counter.
pub fn count(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}
