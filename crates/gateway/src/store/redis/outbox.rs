//! Notifications on Redis: each session's outbox (a hash, in the session's slot, written by
//! the script of the change a notification tells of), and one index every node claims due
//! notifications from, so that one whose node died is sent by another.
//!
//! A new notification's index entry is scored at its making plus [`NOTIFY_LEASE`]: the node
//! that made it sends it first, and the others leave it alone until then. An entry whose
//! notification is not in the outbox (its change was not made, or it was sent and the index
//! entry outlived the deletion) is removed by whoever claims it.

use askgate_protocol::{RequestId, SessionId};

use super::Inner;
use super::keys::Keys;
use super::lua::{Index, redis_error};
use super::records;
use crate::store::shared::{ClaimedDelivery, NOTIFY_LEASE};
use crate::store::{StoreError, StoredDelivery, Verdict};

/// How many due notifications one claim takes at most.
const CLAIM_BATCH: usize = 64;

fn lease_ms() -> u64 {
    u64::try_from(NOTIFY_LEASE.as_millis()).unwrap_or(u64::MAX)
}

/// A notification as the outbox keeps it.
pub(super) fn json(delivery: &StoredDelivery) -> Result<String, StoreError> {
    serde_json::to_string(delivery)
        .map_err(|e| StoreError::internal(format!("encoding a notification: {e}")))
}

impl Inner {
    /// A new notification's index entry: due once its maker's lease has run out.
    pub(super) fn outbox_index(&self, delivery: &StoredDelivery) -> Index {
        Index {
            key: self.keys.outbox_index(),
            mode: "NX",
            score: delivery.created_ms.saturating_add(lease_ms()),
            member: Keys::outbox_member(&delivery.session, &delivery.id),
            keep_newest: None,
        }
    }

    /// Keeps notifications that come with no change of their own.
    pub(super) async fn keep_deliveries(
        &self,
        deliveries: &[StoredDelivery],
    ) -> Result<Verdict, StoreError> {
        for delivery in deliveries {
            self.index(&self.outbox_index(delivery)).await?;
            let mut conn = self.conn.clone();
            let started = std::time::Instant::now();
            let written: Result<(), _> = redis::cmd("HSET")
                .arg(self.keys.outbox(&delivery.session))
                .arg(&delivery.id)
                .arg(json(delivery)?)
                .query_async(&mut conn)
                .await;
            self.metrics.shared.round_trip(started.elapsed());
            written.map_err(|e| redis_error("keeping a notification", &e))?;
        }
        Ok(Verdict::Done)
    }

    /// Forgets a notification: out of its session's outbox, then out of the index (an entry
    /// left by a failure in between is removed by the next claim of it).
    pub(super) async fn delivered(
        &self,
        session: &SessionId,
        id: &str,
    ) -> Result<Verdict, StoreError> {
        let mut conn = self.conn.clone();
        let started = std::time::Instant::now();
        let removed: Result<(), _> = redis::cmd("HDEL")
            .arg(self.keys.outbox(session))
            .arg(id)
            .query_async(&mut conn)
            .await;
        removed.map_err(|e| redis_error("deleting a notification", &e))?;
        let unindexed: Result<(), _> = redis::cmd("ZREM")
            .arg(self.keys.outbox_index())
            .arg(Keys::outbox_member(session, id))
            .query_async(&mut conn)
            .await;
        self.metrics.shared.round_trip(started.elapsed());
        unindexed.map_err(|e| redis_error("deleting a notification", &e))?;
        Ok(Verdict::Done)
    }

    /// Claims due notifications for [`NOTIFY_LEASE`]: their index entries move to the
    /// lease's end, so if this node dies they are due again then.
    pub(super) async fn claim_deliveries(&self) -> Result<Vec<ClaimedDelivery>, StoreError> {
        let reply: Vec<String> = self
            .run(
                "claiming notifications",
                self.scripts
                    .claim
                    .key(self.keys.outbox_index())
                    .arg(lease_ms())
                    .arg(CLAIM_BATCH),
            )
            .await?;
        let bad = |e: String| {
            StoreError::damaged(format!(
                "redis replied to a notification claim unexpectedly: {e}"
            ))
        };
        let claimed_until_ms =
            records::millis(reply.get(1).map_or("", String::as_str)).map_err(bad)?;
        let mut claimed = Vec::new();
        for member in reply.iter().skip(2) {
            let Some((session, id)) = Keys::parse_outbox_member(member) else {
                self.settle_delivery_claim(member, claimed_until_ms, None)
                    .await?;
                continue;
            };
            let mut conn = self.conn.clone();
            let kept: Option<String> = redis::cmd("HGET")
                .arg(self.keys.outbox(&session))
                .arg(id)
                .query_async(&mut conn)
                .await
                .map_err(|e| redis_error("reading a notification", &e))?;
            match kept.map(|json| serde_json::from_str::<StoredDelivery>(&json)) {
                Some(Ok(delivery)) => claimed.push(ClaimedDelivery {
                    delivery,
                    claimed_until_ms,
                }),
                Some(Err(error)) => {
                    // Left in the outbox for a person to look at; not claimed again.
                    tracing::error!(%session, notification = %id, %error, "a notification in redis could not be read; left there");
                    self.settle_delivery_claim(member, claimed_until_ms, None)
                        .await?;
                }
                None => {
                    self.settle_delivery_claim(member, claimed_until_ms, None)
                        .await?;
                }
            }
        }
        Ok(claimed)
    }

    /// Ends this node's claim on a notification's index entry: due again at `next_ms`, or
    /// removed; only while the entry still holds the claim's score.
    pub(super) async fn settle_delivery_claim(
        &self,
        member: &str,
        claimed_until_ms: u64,
        next_ms: Option<u64>,
    ) -> Result<(), StoreError> {
        let _: i64 = self
            .run(
                "settling a notification claim",
                self.scripts
                    .unclaim
                    .key(self.keys.outbox_index())
                    .arg(member)
                    .arg(claimed_until_ms)
                    .arg(next_ms.map(|n| n.to_string()).unwrap_or_default()),
            )
            .await?;
        Ok(())
    }

    /// Whether request `id` of `session` is open, as Redis holds it.
    pub(super) async fn is_open(
        &self,
        session: &SessionId,
        id: &RequestId,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn.clone();
        let state: Option<String> = redis::cmd("HGET")
            .arg(self.keys.request(session, id))
            .arg("state")
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_error("reading a request's state", &e))?;
        Ok(state.as_deref() == Some("open"))
    }
}
