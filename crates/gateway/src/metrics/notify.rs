//! What notifications came to, by channel.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The channels notifications go out on, as they are labelled.
pub const CHANNELS: [&str; 5] = ["webhook", "email", "slack", "push", "callback"];

/// One channel's counts.
#[derive(Debug, Default)]
pub struct ChannelCounts {
    /// Notifications waiting to be sent (a gauge).
    pub queued: AtomicI64,
    /// Sent and taken (a 2xx; the mail server's acceptance).
    pub sent: AtomicU64,
    /// Tries that failed and will be made again.
    pub retried: AtomicU64,
    /// Given up after `--notify-retry-for-s` of failures.
    pub given_up: AtomicU64,
    /// Not queued: the target's queue was full.
    pub shed: AtomicU64,
    /// Tries not made: the target resolved to a refused address.
    pub refused: AtomicU64,
    /// Dropped unsent: their request had ended (all but `request.resolved`).
    pub dropped: AtomicU64,
    /// Refused for good by the target, which took the call (Slack's `ok: false`).
    pub rejected: AtomicU64,
}

/// Every channel's counts, and when the oldest due notification of each queue fell due.
#[derive(Debug, Default)]
pub struct NotifyMetrics {
    /// By channel, indexed like [`CHANNELS`].
    pub channels: [ChannelCounts; CHANNELS.len()],
    /// Each queue's channel and the due time (Unix ms) of its earliest notification, 0 when
    /// it has none.
    queues: Mutex<Vec<(usize, Arc<AtomicU64>)>>,
}

impl NotifyMetrics {
    /// Watches a queue of `channel` whose earliest due time is `earliest_due_ms`.
    pub fn watch_queue(&self, channel: usize, earliest_due_ms: Arc<AtomicU64>) {
        if let Ok(mut queues) = self.queues.lock() {
            queues.push((channel, earliest_due_ms));
        }
    }

    /// The Prometheus text of the counts, at `now_ms`.
    pub fn render(&self, out: &mut String, now_ms: u64) {
        type Pick = fn(&ChannelCounts) -> &AtomicU64;
        let counters: [(&str, &str, Pick); 7] = [
            ("sent", "Notifications sent and taken.", |c| &c.sent),
            (
                "retried",
                "Notification tries that failed and will be made again.",
                |c| &c.retried,
            ),
            (
                "given_up",
                "Notifications given up after --notify-retry-for-s of failures.",
                |c| &c.given_up,
            ),
            (
                "shed",
                "Notifications not queued because their target's queue was full.",
                |c| &c.shed,
            ),
            (
                "refused",
                "Notification tries not made: the target resolved to a refused address.",
                |c| &c.refused,
            ),
            (
                "dropped",
                "Notifications dropped unsent because their request had ended.",
                |c| &c.dropped,
            ),
            (
                "rejected",
                "Notifications the target took and refused for good (not tried again).",
                |c| &c.rejected,
            ),
        ];
        let _ = writeln!(
            out,
            "# HELP askgate_notifications_queued Notifications waiting to be sent.\n# TYPE askgate_notifications_queued gauge"
        );
        for (channel, counts) in CHANNELS.iter().zip(&self.channels) {
            let _ = writeln!(
                out,
                "askgate_notifications_queued{{channel=\"{channel}\"}} {}",
                counts.queued.load(Ordering::Relaxed)
            );
        }
        for (name, help, pick) in counters {
            let _ = writeln!(
                out,
                "# HELP askgate_notifications_{name}_total {help}\n# TYPE askgate_notifications_{name}_total counter"
            );
            for (channel, counts) in CHANNELS.iter().zip(&self.channels) {
                let _ = writeln!(
                    out,
                    "askgate_notifications_{name}_total{{channel=\"{channel}\"}} {}",
                    pick(counts).load(Ordering::Relaxed)
                );
            }
        }
        let mut oldest = [0u64; CHANNELS.len()];
        if let Ok(queues) = self.queues.lock() {
            for (channel, due) in queues.iter() {
                let due = due.load(Ordering::Relaxed);
                if due != 0 && due <= now_ms {
                    oldest[*channel] = oldest[*channel].max(now_ms - due);
                }
            }
        }
        let _ = writeln!(
            out,
            "# HELP askgate_notifications_oldest_due_seconds How long the oldest notification that is due has waited past its time.\n# TYPE askgate_notifications_oldest_due_seconds gauge"
        );
        for (channel, age_ms) in CHANNELS.iter().zip(oldest) {
            let _ = writeln!(
                out,
                "askgate_notifications_oldest_due_seconds{{channel=\"{channel}\"}} {}",
                age_ms as f64 / 1000.0
            );
        }
    }
}
