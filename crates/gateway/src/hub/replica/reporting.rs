//! This node's report to the others, for the operator endpoints: written every
//! [`NODE_REPORT_EVERY`] (or every `ASKGATE_TEST_NODE_REPORT_MS`, for tests), and the
//! reports every node wrote lately, read back.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::super::Hub;
use crate::clock::now_ms;
use crate::metrics::node_report::NodeReport;
use crate::store::StoreError;
use crate::store::shared::{NODE_REPORT_EVERY, NODE_REPORT_KEPT};

/// The variable that shortens the report interval, in ms, for tests that wait for a killed
/// node to be shown as not alive; not for production (a report is a few kilobytes written to
/// Redis each time).
const TEST_REPORT_EVERY_VAR: &str = "ASKGATE_TEST_NODE_REPORT_MS";

/// The shortest interval the variable may set.
const MIN_REPORT_EVERY: Duration = Duration::from_millis(50);

/// How often this node reports: [`NODE_REPORT_EVERY`], unless the test variable says
/// otherwise (a value that is not a number of ms is ignored, and logged).
fn report_every() -> Duration {
    let Ok(text) = std::env::var(TEST_REPORT_EVERY_VAR) else {
        return NODE_REPORT_EVERY;
    };
    match text.trim().parse::<u64>() {
        Ok(ms) => Duration::from_millis(ms).max(MIN_REPORT_EVERY),
        Err(_) => {
            tracing::warn!(variable = TEST_REPORT_EVERY_VAR, value = %text, "not a number of milliseconds; the node reports every 5 s");
            NODE_REPORT_EVERY
        }
    }
}

impl Hub {
    /// The reports of every node that wrote one within [`NODE_REPORT_KEPT`], this node's
    /// made now; `None` on a local store, where this node is the only one.
    ///
    /// # Errors
    /// The shared store could not be read.
    pub async fn node_reports(&self) -> Option<Result<Vec<NodeReport>, StoreError>> {
        let shared = self.shared()?;
        let now = now_ms();
        let kept_ms = u64::try_from(NODE_REPORT_KEPT.as_millis()).unwrap_or(u64::MAX);
        let every_ms = u64::try_from(report_every().as_millis()).unwrap_or(u64::MAX);
        let texts = match shared.node_reports(now.saturating_sub(kept_ms)).await {
            Ok(texts) => texts,
            Err(error) => return Some(Err(error)),
        };
        let me = NodeReport::of(&self.metrics, now, every_ms);
        let mut reports = vec![];
        for text in texts {
            match NodeReport::parse(&text) {
                Ok(report) if report.id != me.id => reports.push(report),
                Ok(_) => {}
                // One node's damaged report must not hide the others.
                Err(error) => {
                    tracing::warn!(%error, "a node's report in the store could not be read; left out");
                }
            }
        }
        reports.sort_by(|a, b| a.id.cmp(&b.id));
        reports.insert(0, me);
        Some(Ok(reports))
    }

    /// Starts writing this node's report, for as long as the hub lives (on a shared store).
    pub(super) fn start_reporting(self: &Arc<Self>) {
        tokio::spawn(report(Arc::downgrade(self), report_every()));
    }
}

/// Writes this node's report every `every`; a failed write is tried at the next.
async fn report(hub: Weak<Hub>, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let every_ms = u64::try_from(every.as_millis()).unwrap_or(u64::MAX);
    loop {
        ticks.tick().await;
        let Some(hub) = hub.upgrade() else { return };
        let Some(shared) = hub.shared() else { return };
        let now = now_ms();
        let report = NodeReport::of(&hub.metrics, now, every_ms);
        drop(hub);
        let text = match serde_json::to_string(&report) {
            Ok(text) => text,
            Err(error) => {
                tracing::error!(%error, "this node's report could not be written as JSON");
                continue;
            }
        };
        if let Err(error) = shared.report_node(now, text).await {
            tracing::debug!(%error, "this node's report could not be written; tried again at the next");
        }
    }
}
