//! The shared side: what nodes coordinate through Redis besides decisions. A session loaded
//! when a tab first watches it here, sequence numbers to catch missed notices, claims on due
//! deadlines so one node times each out, and presence (tabs and agents on every node).

use std::sync::Arc;
use std::time::Duration;

use askgate_protocol::{RequestId, SessionId};
use tokio::sync::mpsc;

use super::Inner;
use super::keys::Keys;
use super::lua::redis_error;
use super::records::{self, Fields};
use super::subscriber::Subscriber;
use crate::store::shared::{
    ClaimedDelivery, DueClaim, FollowClaim, Notice, Presence, SessionRecords, Shared,
};
use crate::store::{FollowUp, StoreError, StoreFuture};

/// How long a sweeper's claim on a due entry lasts: if it dies holding it, another node takes
/// the entry then.
const CLAIM_LEASE: Duration = Duration::from_secs(5);

/// How many due entries one sweep claims at most.
const CLAIM_BATCH: usize = 64;
/// Sessions whose sequence numbers one MGET reads (a node's check of all it holds sends as
/// many MGETs as it needs, in one write).
const SEQUENCES_PER_MGET: usize = 500;

impl Inner {
    async fn load_session(&self, session: &SessionId) -> Result<SessionRecords, StoreError> {
        let reply: Vec<String> = self
            .run(
                "loading a session",
                self.scripts
                    .session
                    .key(self.keys.ids(session))
                    .key(self.keys.seq(session))
                    .key(self.keys.followers(session))
                    .key(self.keys.trail_head(session))
                    .arg(self.keys.request_prefix(session)),
            )
            .await?;
        let bad = |e: String| {
            StoreError::damaged(format!("redis holds a session askgate cannot read: {e}"))
        };
        let mut parts = reply.iter().map(String::as_str);
        let seq = records::millis(parts.next().unwrap_or("0")).map_err(bad)?;
        self.seals.loaded(session, parts.next().unwrap_or(""));
        let count = records::millis(parts.next().unwrap_or("0")).map_err(bad)?;
        let followers: Vec<String> = parts
            .by_ref()
            .take(usize::try_from(count).unwrap_or(usize::MAX))
            .map(str::to_owned)
            .collect();
        let rest: Vec<&str> = parts.collect();
        let mut requests = Vec::with_capacity(rest.len() / 9);
        for chunk in rest.chunks_exact(9) {
            let Ok(id) = RequestId::parse(chunk[0]) else {
                continue;
            };
            let fields = Fields {
                asked: chunk[1],
                deadline: chunk[2],
                state: chunk[3],
                resolution: chunk[4],
                resolved: chunk[5],
                body: chunk[6],
                follows: chunk[7],
                votes: chunk[8],
            };
            match records::request(session, &id, &fields) {
                Ok(request) => requests.push(request),
                // One damaged record must not keep the rest of the session from showing.
                Err(error) => {
                    tracing::error!(%session, request = %id, %error, "a request in redis could not be read; left there");
                }
            }
        }
        Ok(SessionRecords {
            seq,
            requests,
            followers,
        })
    }

    async fn sequences(&self, sessions: Vec<SessionId>) -> Result<Vec<u64>, StoreError> {
        if sessions.is_empty() {
            return Ok(Vec::new());
        }
        if self.conn.is_cluster() {
            // Keys in many slots: one GET each, all at once.
            let reads = sessions.iter().map(|session| {
                let mut conn = self.conn.clone();
                let key = self.keys.seq(session);
                async move {
                    redis::cmd("GET")
                        .arg(key)
                        .query_async::<Option<u64>>(&mut conn)
                        .await
                }
            });
            let started = std::time::Instant::now();
            let seqs = futures_util::future::join_all(reads).await;
            self.metrics.shared.round_trip(started.elapsed());
            return seqs
                .into_iter()
                .map(|seq| seq.map(Option::unwrap_or_default))
                .collect::<Result<_, _>>()
                .map_err(|e| redis_error("reading sequence numbers", &e));
        }
        // One MGET a batch, every batch in one write: a node reads every session it holds each
        // second, idle or not, and five nodes holding 19,000 sessions each sent Redis 95,000
        // GETs a second where 190 MGETs now do (the CPU was the same within the spread:
        // pipelined, the GETs cost Redis little; its commands stats and slow log read better).
        let mut pipe = redis::pipe();
        for batch in sessions.chunks(SEQUENCES_PER_MGET) {
            let keys: Vec<String> = batch.iter().map(|session| self.keys.seq(session)).collect();
            pipe.cmd("MGET").arg(keys);
        }
        let started = std::time::Instant::now();
        let mut conn = self.conn.clone();
        let batches: Vec<Vec<Option<u64>>> = pipe
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_error("reading sequence numbers", &e))?;
        self.metrics.shared.round_trip(started.elapsed());
        let seqs: Vec<u64> = batches
            .into_iter()
            .flatten()
            .map(Option::unwrap_or_default)
            .collect();
        if seqs.len() != sessions.len() {
            return Err(StoreError::damaged(format!(
                "redis answered {} sequence numbers for {} sessions",
                seqs.len(),
                sessions.len()
            )));
        }
        Ok(seqs)
    }

    async fn claim_due(&self) -> Result<Vec<DueClaim>, StoreError> {
        let lease_ms = u64::try_from(CLAIM_LEASE.as_millis()).unwrap_or(u64::MAX);
        let reply: Vec<String> = self
            .run(
                "claiming deadlines",
                self.scripts
                    .claim
                    .key(self.keys.due())
                    .arg(lease_ms)
                    .arg(CLAIM_BATCH),
            )
            .await?;
        let bad =
            |e: String| StoreError::damaged(format!("redis replied to a claim unexpectedly: {e}"));
        let now_ms = records::millis(reply.first().map_or("", String::as_str)).map_err(bad)?;
        let claimed_until_ms =
            records::millis(reply.get(1).map_or("", String::as_str)).map_err(bad)?;
        Ok(reply
            .iter()
            .skip(2)
            .filter_map(|member| Keys::parse_due_member(member))
            .map(|(session, id)| DueClaim {
                session,
                id,
                claimed_until_ms,
                now_ms,
            })
            .collect())
    }

    async fn claim_follow_ups(&self) -> Result<Vec<FollowClaim>, StoreError> {
        let lease_ms = u64::try_from(CLAIM_LEASE.as_millis()).unwrap_or(u64::MAX);
        let reply: Vec<String> = self
            .run(
                "claiming follow-ups",
                self.scripts
                    .claim
                    .key(self.keys.follow_index())
                    .arg(lease_ms)
                    .arg(CLAIM_BATCH),
            )
            .await?;
        let bad = |e: String| {
            StoreError::damaged(format!(
                "redis replied to a follow-up claim unexpectedly: {e}"
            ))
        };
        let claimed_until_ms =
            records::millis(reply.get(1).map_or("", String::as_str)).map_err(bad)?;
        Ok(reply
            .iter()
            .skip(2)
            .filter_map(|member| {
                let (session, id, letter) = Keys::parse_follow_member(member)?;
                let follow_up = [FollowUp::Remind, FollowUp::Escalate]
                    .into_iter()
                    .find(|f| records::follow_up_letter(*f) == letter)?;
                Some(FollowClaim {
                    session,
                    id,
                    follow_up,
                    claimed_until_ms,
                })
            })
            .collect())
    }

    async fn settle_follow_up(&self, claim: &FollowClaim) -> Result<(), StoreError> {
        let member = Keys::follow_member(
            &claim.session,
            &claim.id,
            records::follow_up_letter(claim.follow_up),
        );
        let _: i64 = self
            .run(
                "settling a follow-up claim",
                self.scripts
                    .unclaim
                    .key(self.keys.follow_index())
                    .arg(member)
                    .arg(claim.claimed_until_ms)
                    .arg(""),
            )
            .await?;
        Ok(())
    }

    async fn presence(
        &self,
        session: &SessionId,
        here: Presence,
        held: &[RequestId],
    ) -> Result<(Presence, Vec<RequestId>), StoreError> {
        let ttl_ms = u64::try_from(self.presence_ttl.as_millis()).unwrap_or(u64::MAX);
        let held: Vec<&str> = held.iter().map(RequestId::as_str).collect();
        let reply: Vec<redis::Value> = self
            .run(
                "writing presence",
                self.scripts
                    .presence
                    .key(self.keys.presence(session))
                    .key(self.keys.held(session))
                    .arg(&self.node)
                    .arg(here.tabs)
                    .arg(u8::from(here.agent_online))
                    .arg(ttl_ms)
                    .arg(self.keys.channel(session))
                    .arg(self.publish)
                    .arg(held.join(" ")),
            )
            .await?;
        let number = |value: Option<&redis::Value>| match value {
            Some(redis::Value::Int(n)) => usize::try_from(*n).unwrap_or(0),
            _ => 0,
        };
        let others_held = reply
            .iter()
            .skip(2)
            .filter_map(|value| match value {
                redis::Value::BulkString(bytes) => std::str::from_utf8(bytes)
                    .ok()
                    .and_then(|id| RequestId::parse(id).ok()),
                _ => None,
            })
            .collect();
        Ok((
            Presence {
                tabs: number(reply.first()),
                agent_online: number(reply.get(1)) == 1,
            },
            others_held,
        ))
    }

    async fn settle_claim(&self, claim: &DueClaim, next_ms: Option<u64>) -> Result<(), StoreError> {
        let _: i64 = self
            .run(
                "settling a deadline claim",
                self.scripts
                    .unclaim
                    .key(self.keys.due())
                    .arg(Keys::due_member(&claim.session, &claim.id))
                    .arg(claim.claimed_until_ms)
                    .arg(next_ms.map(|n| n.to_string()).unwrap_or_default()),
            )
            .await?;
        Ok(())
    }
}

/// The shared side of the Redis store.
pub(super) struct SharedSide {
    pub(super) inner: Arc<Inner>,
    pub(super) subscriber: Subscriber,
}

impl Shared for SharedSide {
    fn addressed(&self, session: &SessionId, names: Vec<String>) -> StoreFuture<'static, ()> {
        let (inner, session) = (Arc::clone(&self.inner), session.clone());
        Box::pin(async move { inner.addressed(&session, &names).await })
    }

    fn inbox_sessions(&self, names: Vec<String>) -> StoreFuture<'static, Vec<SessionId>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.inbox_sessions(&names).await })
    }

    fn asked_sessions(&self) -> StoreFuture<'static, Vec<SessionId>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.asked_sessions().await })
    }

    fn report_node(&self, at_ms: u64, text: String) -> StoreFuture<'static, ()> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.report_node(at_ms, &text).await })
    }

    fn node_reports(&self, since_ms: u64) -> StoreFuture<'static, Vec<String>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.node_reports(since_ms).await })
    }

    fn load_session(&self, session: &SessionId) -> StoreFuture<'static, SessionRecords> {
        let (inner, session) = (Arc::clone(&self.inner), session.clone());
        Box::pin(async move { inner.load_session(&session).await })
    }

    fn sequences(&self, sessions: Vec<SessionId>) -> StoreFuture<'static, Vec<u64>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.sequences(sessions).await })
    }

    fn watch(&self, session: &SessionId) -> StoreFuture<'static, ()> {
        let watching = self.subscriber.watch(self.inner.keys.channel(session));
        Box::pin(watching)
    }

    fn unwatch(&self, session: &SessionId) {
        self.subscriber.unwatch(self.inner.keys.channel(session));
    }

    fn take_notices(&self) -> Option<mpsc::Receiver<Notice>> {
        self.subscriber.take_notices()
    }

    fn claim_deliveries(&self) -> StoreFuture<'static, Vec<ClaimedDelivery>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.claim_deliveries().await })
    }

    fn retry_delivery(
        &self,
        session: &SessionId,
        id: &str,
        claimed_until_ms: u64,
        due_ms: u64,
    ) -> StoreFuture<'static, ()> {
        let inner = Arc::clone(&self.inner);
        let member = Keys::outbox_member(session, id);
        Box::pin(async move {
            inner
                .settle_delivery_claim(&member, claimed_until_ms, Some(due_ms))
                .await
        })
    }

    fn claim_follow_ups(&self) -> StoreFuture<'static, Vec<FollowClaim>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.claim_follow_ups().await })
    }

    fn settle_follow_up(&self, claim: FollowClaim) -> StoreFuture<'static, ()> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.settle_follow_up(&claim).await })
    }

    fn is_open(&self, session: &SessionId, id: &RequestId) -> StoreFuture<'static, bool> {
        let (inner, session, id) = (Arc::clone(&self.inner), session.clone(), id.clone());
        Box::pin(async move { inner.is_open(&session, &id).await })
    }

    fn claim_due(&self) -> StoreFuture<'static, Vec<DueClaim>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.claim_due().await })
    }

    fn settle_claim(&self, claim: DueClaim, next_ms: Option<u64>) -> StoreFuture<'static, ()> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.settle_claim(&claim, next_ms).await })
    }

    fn presence(
        &self,
        session: &SessionId,
        here: Presence,
        held: Vec<RequestId>,
    ) -> StoreFuture<'static, (Presence, Vec<RequestId>)> {
        let (inner, session) = (Arc::clone(&self.inner), session.clone());
        Box::pin(async move { inner.presence(&session, here, &held).await })
    }

    fn presence_ttl(&self) -> Duration {
        self.inner.presence_ttl
    }

    fn ready(&self) -> Result<(), String> {
        self.subscriber.ready()
    }

    fn kept(
        &self,
        table: crate::store::KeptTable,
        key: &str,
    ) -> StoreFuture<'static, Vec<(String, String)>> {
        let (inner, key) = (Arc::clone(&self.inner), key.to_owned());
        Box::pin(async move { inner.kept(table, &key).await })
    }
}
