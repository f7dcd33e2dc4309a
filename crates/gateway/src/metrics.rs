//! Counters and gauges, rendered in the Prometheus text format at `GET /metrics`.
//!
//! Plain atomics: every update is a single relaxed add, cheap enough for the fan-out path.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use askgate_protocol::Outcome;

/// Upper bounds (seconds) of the answer-latency histogram buckets.
const LATENCY_BUCKETS_S: [f64; 14] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0,
];

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
    /// Requests resolved, by outcome (indexed like [`Outcome::ALL`]).
    outcomes: [AtomicU64; 4],
    /// Sockets closed for a full queue (4408).
    pub closed_too_slow: AtomicU64,
    /// Sockets closed for too many frames (4429).
    pub closed_too_many_frames: AtomicU64,
    /// Sockets closed for a frame over the size limit (4413).
    pub closed_too_large: AtomicU64,
    /// Asks rejected.
    pub rejected_asks: AtomicU64,
    /// Answers rejected (did not fit, or came too late).
    pub rejected_answers: AtomicU64,
    /// Answer latency (asked → answered or declined by a tab), cumulative bucket counts.
    latency_buckets: [AtomicU64; 14],
    latency_count: AtomicU64,
    latency_sum_ms: AtomicU64,
}

impl Metrics {
    /// Counts a resolution; `latency_ms` for answers and declines from a tab.
    pub fn resolved(&self, outcome: Outcome, latency_ms: Option<u64>) {
        let index = Outcome::ALL.iter().position(|o| *o == outcome).unwrap_or(0);
        self.outcomes[index].fetch_add(1, Ordering::Relaxed);
        if let Some(ms) = latency_ms {
            let seconds = ms as f64 / 1000.0;
            for (bound, bucket) in LATENCY_BUCKETS_S.iter().zip(&self.latency_buckets) {
                if seconds <= *bound {
                    bucket.fetch_add(1, Ordering::Relaxed);
                }
            }
            self.latency_count.fetch_add(1, Ordering::Relaxed);
            self.latency_sum_ms.fetch_add(ms, Ordering::Relaxed);
        }
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
                "askgate_rejected_asks_total",
                "Asks rejected.",
                &self.rejected_asks,
            ),
            (
                "askgate_rejected_answers_total",
                "Answers rejected.",
                &self.rejected_answers,
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                value.load(Ordering::Relaxed)
            );
        }
        let name = "askgate_answer_latency_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} From ask to a tab's answer or decline.\n# TYPE {name} histogram"
        );
        for (bound, bucket) in LATENCY_BUCKETS_S.iter().zip(&self.latency_buckets) {
            let _ = writeln!(
                out,
                "{name}_bucket{{le=\"{bound}\"}} {}",
                bucket.load(Ordering::Relaxed)
            );
        }
        let count = self.latency_count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(
            out,
            "{name}_sum {}",
            self.latency_sum_ms.load(Ordering::Relaxed) as f64 / 1000.0
        );
        let _ = writeln!(out, "{name}_count {count}");
        out
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
