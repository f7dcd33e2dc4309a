//! The nodes' reports for the operator endpoints: each node's latest JSON under its own key
//! (expiring after [`NODE_REPORT_KEPT`]), and an index of who wrote when, trimmed at each
//! write to the reports still kept and to the newest [`MAX_REPORTED_NODES`]. Both keys carry
//! the hash tag `{ops}`, so on Redis Cluster a write is one pipeline and a read one `MGET`.

use super::Inner;
use super::lua::redis_error;
use crate::store::StoreError;
use crate::store::shared::{MAX_REPORTED_NODES, NODE_REPORT_KEPT};

impl Inner {
    /// Writes this node's report `text`, made at `at_ms`.
    pub(super) async fn report_node(&self, at_ms: u64, text: &str) -> Result<(), StoreError> {
        let kept_ms = u64::try_from(NODE_REPORT_KEPT.as_millis()).unwrap_or(u64::MAX);
        let index = self.keys.node_reports();
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(self.keys.node_report(&self.node))
            .arg(text)
            .arg("PX")
            .arg(kept_ms)
            .ignore();
        pipe.cmd("ZADD")
            .arg(&index)
            .arg(at_ms)
            .arg(&self.node)
            .ignore();
        pipe.cmd("ZREMRANGEBYSCORE")
            .arg(&index)
            .arg("-inf")
            .arg(format!("({}", at_ms.saturating_sub(kept_ms)))
            .ignore();
        // Ranks 0 up to the count past the bound are the oldest.
        pipe.cmd("ZREMRANGEBYRANK")
            .arg(&index)
            .arg(0)
            .arg(-i64::try_from(MAX_REPORTED_NODES + 1).unwrap_or(i64::MAX))
            .ignore();
        pipe.cmd("PEXPIRE").arg(&index).arg(kept_ms).ignore();
        let started = std::time::Instant::now();
        let mut conn = self.conn.clone();
        pipe.query_async::<()>(&mut conn)
            .await
            .map_err(|e| redis_error("writing this node's report", &e))?;
        self.metrics.shared.round_trip(started.elapsed());
        Ok(())
    }

    /// The reports written since `since_ms`, newest first.
    pub(super) async fn node_reports(&self, since_ms: u64) -> Result<Vec<String>, StoreError> {
        let mut conn = self.conn.clone();
        // Newest first, so that the bound keeps the nodes that reported last.
        let nodes: Vec<String> = redis::cmd("ZREVRANGEBYSCORE")
            .arg(self.keys.node_reports())
            .arg("+inf")
            .arg(since_ms)
            .arg("LIMIT")
            .arg(0)
            .arg(MAX_REPORTED_NODES)
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_error("reading the nodes' reports", &e))?;
        if nodes.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = nodes.iter().map(|n| self.keys.node_report(n)).collect();
        let reports: Vec<Option<String>> = redis::cmd("MGET")
            .arg(keys)
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_error("reading the nodes' reports", &e))?;
        Ok(reports.into_iter().flatten().collect())
    }
}
