//! What one node tells the others of itself, on a shared store: its gauges, its last hour
//! and its latest notification errors, written every few seconds (see
//! [`NODE_REPORT_EVERY`](crate::store::shared::NODE_REPORT_EVERY)) so that any node's
//! `GET /v1/ops/summary` and `/v1/ops/history` can show them all. On a local store the one
//! node's report is made when asked, and never leaves the process.

use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use super::Metrics;
use super::history::{
    ANSWER_TIME_BOUNDS_S, MAX_NOTIFICATION_ERRORS, MINUTE_MS, MINUTES_SHOWN, MinuteFigures,
    NotificationError,
};

/// How many report intervals a node may miss before it is shown as not alive.
pub const ALIVE_FOR_INTERVALS: u64 = 3;

/// One node's figures, as of `at_ms`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeReport {
    /// The node (random, made at its start).
    pub id: String,
    /// When it was made (Unix ms, the node's clock).
    pub at_ms: u64,
    /// How often the node reports (ms): it is alive while its report is younger than
    /// [`ALIVE_FOR_INTERVALS`] of these.
    pub every_ms: u64,
    /// Sessions it holds.
    pub sessions: i64,
    /// Tabs connected to it.
    pub tabs: i64,
    /// Agents connected to it.
    pub agents: i64,
    /// Requests open that it holds.
    pub open_requests: i64,
    /// TCP connections it holds.
    pub connections: i64,
    /// Its last hour, oldest first.
    pub minutes: Vec<MinuteFigures>,
    /// Its latest notification errors, newest first.
    pub notification_errors: Vec<NotificationError>,
}

impl NodeReport {
    /// This process's report, as of `now_ms`, for a node that reports every `every_ms`.
    pub fn of(metrics: &Metrics, now_ms: u64, every_ms: u64) -> NodeReport {
        let gauge = |g: &std::sync::atomic::AtomicI64| g.load(Ordering::Relaxed);
        let history = metrics.history.figures(now_ms);
        NodeReport {
            id: metrics.node_id().to_owned(),
            at_ms: now_ms,
            every_ms,
            sessions: gauge(&metrics.sessions),
            tabs: gauge(&metrics.tabs),
            agents: gauge(&metrics.agents),
            open_requests: gauge(&metrics.open_requests),
            connections: gauge(&metrics.connections),
            minutes: history.minutes,
            notification_errors: history.notification_errors,
        }
    }

    /// A report another node wrote, checked against the bounds a node keeps to, so that a
    /// damaged or hostile entry cannot make a reply grow.
    ///
    /// # Errors
    /// It is not a report's JSON, or holds more than a node ever reports.
    pub fn parse(text: &str) -> Result<NodeReport, String> {
        let report: NodeReport =
            serde_json::from_str(text).map_err(|e| format!("not a node report: {e}"))?;
        if report.minutes.len() > MINUTES_SHOWN {
            return Err(format!(
                "minutes: at most {MINUTES_SHOWN}, got {}",
                report.minutes.len()
            ));
        }
        if report
            .minutes
            .iter()
            .any(|m| m.answer_time_counts.len() > ANSWER_TIME_BOUNDS_S.len() + 1)
        {
            return Err(format!(
                "minutes[].answer_time_counts: at most {} counts",
                ANSWER_TIME_BOUNDS_S.len() + 1
            ));
        }
        if report.notification_errors.len() > MAX_NOTIFICATION_ERRORS {
            return Err(format!(
                "notification_errors: at most {MAX_NOTIFICATION_ERRORS}, got {}",
                report.notification_errors.len()
            ));
        }
        if report.minutes.iter().any(|m| m.notifications.len() > 16) {
            return Err("minutes[].notifications: more channels than there are".to_owned());
        }
        Ok(report)
    }

    /// Whether the node reported lately enough, at `now_ms`, to count as alive.
    pub fn alive(&self, now_ms: u64) -> bool {
        now_ms.saturating_sub(self.at_ms) <= self.every_ms.saturating_mul(ALIVE_FOR_INTERVALS)
    }

    /// Its minutes laid over the [`MINUTES_SHOWN`] minutes up to the one holding `now_ms`
    /// (the reader's clock): a minute it did not report is empty.
    pub fn minutes_as_of(&self, now_ms: u64) -> Vec<MinuteFigures> {
        let current = now_ms - now_ms % MINUTE_MS;
        (0..MINUTES_SHOWN as u64)
            .rev()
            .filter_map(|back| current.checked_sub(back * MINUTE_MS))
            .map(|start_ms| {
                self.minutes
                    .iter()
                    .find(|m| m.start_ms == start_ms)
                    .cloned()
                    .unwrap_or_else(|| MinuteFigures::empty(start_ms))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_040_000;

    #[test]
    fn a_report_reads_back_and_says_when_its_node_stops_counting_as_alive() {
        let metrics = Metrics::default();
        metrics.history.asked(T0);
        let report = NodeReport::of(&metrics, T0 + 1_000, 5_000);
        let text = serde_json::to_string(&report).unwrap();
        let read = NodeReport::parse(&text).unwrap();
        assert_eq!(read, report);
        assert!(read.alive(T0 + 1_000 + 15_000));
        assert!(!read.alive(T0 + 1_000 + 15_001));
        // Read a minute later by another node's clock: the minutes shift by one.
        let minutes = read.minutes_as_of(T0 + MINUTE_MS);
        assert_eq!(minutes.len(), MINUTES_SHOWN);
        assert_eq!(minutes[59].asks, 1);
        assert_eq!(minutes[60], MinuteFigures::empty(T0 + MINUTE_MS));
    }

    /// A node's ask-to-answer counts are read by the minute, as of the reader's clock: a node
    /// that stopped reporting an hour ago adds none of its answers to the hour shown.
    #[test]
    fn answer_times_are_counted_only_for_the_minutes_still_shown() {
        let metrics = Metrics::default();
        metrics.history.answered(T0, 20_000);
        let report = NodeReport::of(&metrics, T0, 5_000);
        let counted = |now| {
            crate::metrics::history::answer_time_counts(&report.minutes_as_of(now))
                .iter()
                .sum::<u64>()
        };
        assert_eq!(counted(T0), 1);
        assert_eq!(counted(T0 + 60 * MINUTE_MS), 1, "still in the hour shown");
        assert_eq!(counted(T0 + 61 * MINUTE_MS), 0, "past it");
    }

    #[test]
    fn a_report_over_the_bounds_is_refused_with_what_was_wrong() {
        let metrics = Metrics::default();
        let mut report = NodeReport::of(&metrics, T0, 5_000);
        report.minutes.push(MinuteFigures::empty(T0));
        let error = NodeReport::parse(&serde_json::to_string(&report).unwrap()).unwrap_err();
        assert!(error.starts_with("minutes: at most 61"), "{error}");
        let error = NodeReport::parse("{}").unwrap_err();
        assert!(error.starts_with("not a node report"), "{error}");
    }
}
