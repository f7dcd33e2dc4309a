//! The instruments of a node on a shared store (Redis), rendered only once the node uses one.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::Histogram;

/// Upper bounds (seconds) of the Redis round-trip buckets: a loopback round trip takes tens of
/// microseconds, a network one a millisecond or so.
const ROUND_TRIP_BUCKETS_S: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5,
];

/// What a node of several counts.
#[derive(Debug, Default)]
pub struct SharedMetrics {
    /// Set once the node runs on a shared store.
    pub enabled: AtomicBool,
    round_trips: Histogram<12>,
    /// Resolution scripts by what they decided: won, lost, late, early.
    won: AtomicU64,
    lost: AtomicU64,
    late: AtomicU64,
    early: AtomicU64,
    /// Sessions loaded again, by cause.
    pub resnapshots_gap: AtomicU64,
    /// ... after a (re)subscription.
    pub resnapshots_resubscribed: AtomicU64,
    /// ... because the sequence poll found them behind.
    pub resnapshots_behind: AtomicU64,
    /// Subscription connections made again.
    pub subscription_reconnects: AtomicU64,
    /// ... of which because the probe went unheard.
    pub probe_restarts: AtomicU64,
    /// Sweeps run, and the due entries they handled by what became of them.
    pub sweeps: AtomicU64,
    /// Requests a sweep timed out.
    pub sweep_timed_out: AtomicU64,
    /// Outcomes a sweep forgot (retention over).
    pub sweep_forgot: AtomicU64,
    /// Asks and endings whose audit entry this node sent a proposed hash for (the trail's
    /// head was known), and of those, the ones whose script took it.
    pub seals_proposed: AtomicU64,
    /// ... taken.
    pub seals_taken: AtomicU64,
}

impl SharedMetrics {
    /// Times one round trip to the store.
    pub fn round_trip(&self, took: Duration) {
        self.round_trips.observe(&ROUND_TRIP_BUCKETS_S, took);
    }

    /// Counts a resolution script's verdict.
    pub fn script_outcome(&self, verdict: &str) {
        let counter = match verdict {
            "won" => &self.won,
            "lost" => &self.lost,
            "late" => &self.late,
            "early" => &self.early,
            _ => return,
        };
        self.count(counter);
    }

    /// Adds one to `counter`.
    pub fn count(&self, counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn render(&self, out: &mut String) {
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        self.round_trips.render(
            out,
            &ROUND_TRIP_BUCKETS_S,
            "askgate_redis_round_trip_seconds",
            "Round trips to Redis (scripts, sequence polls, probes).",
        );
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP askgate_redis_resolutions_total Resolution scripts, by what Redis decided.\n# TYPE askgate_redis_resolutions_total counter"
        );
        for (verdict, counter) in [
            ("won", &self.won),
            ("lost", &self.lost),
            ("late", &self.late),
            ("early", &self.early),
        ] {
            let _ = writeln!(
                out,
                "askgate_redis_resolutions_total{{verdict=\"{verdict}\"}} {}",
                load(counter)
            );
        }
        let _ = writeln!(
            out,
            "# HELP askgate_redis_resnapshots_total Sessions loaded again from Redis, by cause.\n# TYPE askgate_redis_resnapshots_total counter"
        );
        for (cause, counter) in [
            ("gap", &self.resnapshots_gap),
            ("resubscribed", &self.resnapshots_resubscribed),
            ("behind", &self.resnapshots_behind),
        ] {
            let _ = writeln!(
                out,
                "askgate_redis_resnapshots_total{{cause=\"{cause}\"}} {}",
                load(counter)
            );
        }
        let counters = [
            (
                "askgate_redis_subscription_reconnects_total",
                "Subscription connections made again.",
                &self.subscription_reconnects,
            ),
            (
                "askgate_redis_probe_restarts_total",
                "Subscriptions restarted because their probe went unheard.",
                &self.probe_restarts,
            ),
            (
                "askgate_redis_sweeps_total",
                "Deadline sweeps run by this node.",
                &self.sweeps,
            ),
            (
                "askgate_redis_sweep_timed_out_total",
                "Requests this node's sweeps timed out.",
                &self.sweep_timed_out,
            ),
            (
                "askgate_redis_sweep_forgot_total",
                "Outcomes this node's sweeps forgot (retention over).",
                &self.sweep_forgot,
            ),
            (
                "askgate_redis_seals_proposed_total",
                "Asks and endings whose audit entry's hash this node worked out for the script.",
                &self.seals_proposed,
            ),
            (
                "askgate_redis_seals_taken_total",
                "Of those, the ones the script took (else Redis hashed the entry itself).",
                &self.seals_taken,
            ),
        ];
        for (name, help, counter) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                load(counter)
            );
        }
    }
}
