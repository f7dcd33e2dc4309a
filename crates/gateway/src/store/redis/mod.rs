//! The Redis store: several nodes, one truth. Every transition is one Lua script (the files in
//! `scripts/`, each saying what it guarantees), decided by Redis against its own clock; a node
//! announces only what a script returned. The design, with its failure table:
//! `docs/SCALE-OUT.md`.
//!
//! - [`conn`]: the command connection, standalone or Cluster (found out at start).
//! - [`keys`]: key and channel names, hash-tagged by session.
//! - [`records`]: requests as hash fields, and the notices scripts publish.
//! - [`subscriber`]: the pub/sub connection, its probe and its reconnects.
//! - [`settings`]: the start-up check of Redis's durability settings, and the shared secret.
//! - [`trails`]: the audit trails: the entries scripts seal, reading them back, their index.

mod conn;
mod keys;
mod records;
mod settings;
mod subscriber;
mod trails;

use std::sync::Arc;
use std::time::Duration;

use askgate_protocol::{Outcome, RequestId, SessionId};
use redis::Script;
use tokio::sync::mpsc;

use self::conn::Conn;
use self::keys::Keys;
use self::records::Fields;
use self::subscriber::Subscriber;
use self::trails::{Entry, Index};
use super::shared::{DueClaim, Notice, Presence, SessionRecords, Shared};
use super::{
    Store, StoreError, StoreFuture, StoreOp, StoredRequest, StoredResolution, Trails, Verdict,
};
use crate::audit::Note;
use crate::metrics::Metrics;

pub use settings::{Durability, check_durability};

/// How long a sweeper's claim on a due entry lasts: if it dies holding it, another node takes
/// the entry then.
const CLAIM_LEASE: Duration = Duration::from_secs(5);

/// How many due entries one sweep claims at most.
const CLAIM_BATCH: usize = 64;

/// How long a node's presence entry counts after it was written. A node writes its entries
/// on every change and every 5 s, so one that dies stops counting within this (and others
/// notice at their next read, within 5 s more).
const PRESENCE_TTL: Duration = Duration::from_secs(20);

/// How long one command may take before the node counts Redis as unreachable for it.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(3);

/// How the Redis store is set up.
#[derive(Clone, Debug)]
pub struct RedisOptions {
    /// `redis://HOST:PORT[/DB]` or `rediss://...`.
    pub url: String,
    /// What every key starts with, so deployments can share one Redis.
    pub prefix: String,
    /// How long an outcome is kept for its agent, for the sweep.
    pub retention: Duration,
    /// How long a session's audit trail is kept after its newest entry.
    pub audit_retention: Duration,
}

/// The scripts, loaded once (and again by `EVALSHA`'s fallback when Redis forgot them).
struct Scripts {
    ask: Script,
    resolve: Script,
    forget: Script,
    session: Script,
    claim: Script,
    unclaim: Script,
    presence: Script,
    note: Script,
}

/// A script that seals audit entries: SHA-256 and the chain in front of its own text.
macro_rules! with_chain {
    ($file:literal) => {
        concat!(
            include_str!("scripts/sha256.lua"),
            include_str!("scripts/chain.lua"),
            include_str!($file)
        )
    };
}
impl Scripts {
    fn new() -> Scripts {
        Scripts {
            ask: Script::new(with_chain!("scripts/ask.lua")),
            resolve: Script::new(with_chain!("scripts/resolve.lua")),
            forget: Script::new(with_chain!("scripts/forget.lua")),
            note: Script::new(with_chain!("scripts/note.lua")),
            session: Script::new(include_str!("scripts/session.lua")),
            claim: Script::new(include_str!("scripts/claim.lua")),
            unclaim: Script::new(include_str!("scripts/unclaim.lua")),
            presence: Script::new(include_str!("scripts/presence.lua")),
        }
    }
}

/// A store on Redis, shared by every node that uses the same server and prefix.
pub struct RedisStore {
    inner: Arc<Inner>,
    subscriber: Subscriber,
}

/// What the store's futures share.
struct Inner {
    conn: Conn,
    keys: Keys,
    scripts: Scripts,
    retention_ms: u64,
    audit_retention_ms: u64,
    metrics: Arc<Metrics>,
    publish: &'static str,
    /// This node, in presence entries and its probe channel.
    node: String,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").finish_non_exhaustive()
    }
}

fn redis_error(doing: &str, error: &redis::RedisError) -> StoreError {
    StoreError(format!("redis unavailable while {doing}: {error}"))
}

impl RedisStore {
    /// Connects to Redis and starts the subscription.
    ///
    /// # Errors
    /// The URL is not a Redis URL, or Redis cannot be reached.
    pub async fn connect(
        options: &RedisOptions,
        metrics: Arc<Metrics>,
    ) -> Result<Arc<RedisStore>, StoreError> {
        // rediss://: rustls needs one process-wide crypto provider (ring), chosen here before
        // the first TLS connection; a provider installed already (by an embedder) is kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (conn, subscribing) = Conn::open(&options.url, COMMAND_TIMEOUT).await?;
        let publish = conn.publish_command();
        let keys = Keys::new(&options.prefix);
        let node = format!("{:016x}", rand::random::<u64>());
        let inner = Arc::new(Inner {
            conn: conn.clone(),
            keys: keys.clone(),
            scripts: Scripts::new(),
            retention_ms: u64::try_from(options.retention.as_millis()).unwrap_or(u64::MAX),
            audit_retention_ms: u64::try_from(options.audit_retention.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
            metrics: Arc::clone(&metrics),
            publish,
            node: node.clone(),
        });
        let subscriber = Subscriber::start(subscribing, conn, keys, &node, metrics);
        Ok(Arc::new(RedisStore { inner, subscriber }))
    }

    /// The viewer-link secret every node of this deployment uses: created by the first.
    ///
    /// # Errors
    /// Redis cannot be reached.
    pub async fn shared_secret(&self) -> Result<Vec<u8>, StoreError> {
        settings::shared_secret(&mut self.inner.conn.clone(), &self.inner.keys.secret()).await
    }

    /// The durability settings of the server, read at start.
    ///
    /// # Errors
    /// Redis cannot be reached.
    pub async fn durability(&self) -> Result<Durability, StoreError> {
        settings::read(&mut self.inner.conn.clone()).await
    }
}

/// `url` without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://…@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

impl Inner {
    /// Runs `script` with its keys and arguments, timing it for the metrics.
    async fn run<T: redis::FromRedisValue>(
        &self,
        doing: &str,
        invocation: &mut redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        let started = std::time::Instant::now();
        let mut conn = self.conn.clone();
        let result = invocation.invoke_async(&mut conn).await;
        self.metrics.shared.round_trip(started.elapsed());
        result.map_err(|e| redis_error(doing, &e))
    }

    /// Writes `indexes` (entries of the sorted sets nodes look things up in), then runs
    /// `script`. On one server all go in one write (a pipeline: Redis runs them in order, so
    /// the entries are there before the script's change is), saving the round trip an answer
    /// would otherwise wait for; on a Cluster the keys are in different slots, so one after
    /// the other.
    async fn index_then_run<T: redis::FromRedisValue>(
        &self,
        doing: &str,
        indexes: &[Index],
        script: &mut redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        if indexes.is_empty() {
            return self.run(doing, script).await;
        }
        if self.conn.is_cluster() {
            for index in indexes {
                self.index(index).await?;
            }
            return self.run(doing, script).await;
        }
        let mut pipe = redis::pipe();
        for index in indexes {
            pipe.add_command(index.command()).ignore();
        }
        pipe.invoke_script(script);
        let started = std::time::Instant::now();
        let mut conn = self.conn.clone();
        let result: redis::RedisResult<(T,)> = pipe.query_async(&mut conn).await;
        self.metrics.shared.round_trip(started.elapsed());
        match result {
            Ok((reply,)) => Ok(reply),
            // Redis does not have the script (it restarted): the entries are in; load and run it.
            Err(error)
                if error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
            {
                self.run(doing, script).await
            }
            Err(error) => Err(redis_error(doing, &error)),
        }
    }

    /// Writes one index entry.
    async fn index(&self, index: &Index) -> Result<(), StoreError> {
        let started = std::time::Instant::now();
        let mut conn = self.conn.clone();
        let result: Result<(), _> = index.command().query_async(&mut conn).await;
        self.metrics.shared.round_trip(started.elapsed());
        result.map_err(|e| redis_error("writing an index", &e))
    }

    /// The deadline index's entry for a request, brought forward to `at_ms` (or added).
    fn due_index(&self, session: &SessionId, id: &RequestId, at_ms: u64) -> Index {
        Index {
            key: self.keys.due(),
            mode: "LT",
            score: at_ms,
            member: Keys::due_member(session, id),
        }
    }

    async fn put(&self, request: &StoredRequest) -> Result<Verdict, StoreError> {
        let (session, id) = (&request.session, &request.id);
        let timeout_ms = request
            .deadline_ms
            .map(|deadline| deadline.saturating_sub(request.asked_at_ms));
        let entry = Entry::of(&Note::asked(request));
        let mut script = self.scripts.ask.key(self.keys.request(session, id));
        script
            .key(self.keys.ids(session))
            .key(self.keys.seq(session))
            .key(self.keys.trail(session))
            .key(self.keys.trail_head(session))
            .arg(id.as_str())
            .arg(records::digest(request))
            .arg(records::body(request))
            .arg(timeout_ms.map(|t| t.to_string()).unwrap_or_default())
            .arg(self.keys.channel(session))
            .arg(self.publish)
            .arg(&entry.tail)
            .arg(&entry.digest)
            .arg(self.audit_retention_ms);
        let mut indexes = vec![self.trails_index(session)];
        indexes.extend(
            request
                .deadline_ms
                .map(|deadline| self.due_index(session, id, deadline)),
        );
        let reply: Vec<String> = self.index_then_run("asking", &indexes, &mut script).await?;
        let text = |i: usize| reply.get(i).map_or("", String::as_str);
        let bad = |e: String| StoreError(format!("redis replied to an ask unexpectedly: {e}"));
        match text(0) {
            "created" => Ok(Verdict::Created {
                asked_at_ms: records::millis(text(1)).map_err(bad)?,
                deadline_ms: records::deadline(text(2)).map_err(bad)?,
            }),
            "exists" => {
                let fields = Fields {
                    asked: text(1),
                    deadline: text(2),
                    state: text(3),
                    resolution: text(4),
                    resolved: text(5),
                    body: text(6),
                };
                let stored = records::request(session, id, &fields).map_err(bad)?;
                Ok(Verdict::Exists(Box::new(stored)))
            }
            "conflict" => Ok(Verdict::Conflict),
            other => Err(bad(format!("{other:?}"))),
        }
    }

    async fn resolve(
        &self,
        session: &SessionId,
        id: &RequestId,
        resolution: &StoredResolution,
        if_late: Option<&askgate_protocol::Settlement>,
    ) -> Result<Verdict, StoreError> {
        let kind = match resolution.settlement.outcome {
            Outcome::Answered | Outcome::Declined => "answer",
            Outcome::TimedOut => "timeout",
            Outcome::Withdrawn => "withdraw",
        };
        // The sweep forgets the outcome once its retention has run out, whichever node kept it.
        let retained_until = crate::clock::now_ms().saturating_add(self.retention_ms);
        let late = if_late.map(|settlement| StoredResolution::untouched(settlement.clone(), 0));
        let won_entry = Entry::of(&Note::ended(session, id, resolution));
        let late_entry = late
            .as_ref()
            .map(|late| Entry::of(&Note::ended(session, id, late)))
            .unwrap_or_default();
        let reply: Vec<String> = self
            .index_then_run(
                "resolving",
                &[self.due_index(session, id, retained_until)],
                self.scripts
                    .resolve
                    .key(self.keys.request(session, id))
                    .key(self.keys.seq(session))
                    .key(self.keys.trail(session))
                    .key(self.keys.trail_head(session))
                    .arg(id.as_str())
                    .arg(kind)
                    .arg(records::ending(resolution))
                    .arg(late.as_ref().map(records::ending).unwrap_or_default())
                    .arg(self.keys.channel(session))
                    .arg(self.publish)
                    .arg(&won_entry.tail)
                    .arg(&won_entry.digest)
                    .arg(&late_entry.tail)
                    .arg(&late_entry.digest)
                    .arg(self.audit_retention_ms),
            )
            .await?;
        let text = |i: usize| reply.get(i).map_or("", String::as_str);
        let bad =
            |e: String| StoreError(format!("redis replied to a resolution unexpectedly: {e}"));
        let verdict = match text(0) {
            "won" => Verdict::Won {
                at_ms: records::millis(text(2)).map_err(bad)?,
            },
            "lost" | "late" => Verdict::Lost(Box::new(
                records::resolution(text(1), text(2)).map_err(bad)?,
            )),
            "early" => Verdict::Early {
                left_ms: records::deadline(text(1)).map_err(bad)?.unwrap_or(u64::MAX),
            },
            "unknown" => Verdict::Unknown,
            other => return Err(bad(format!("{other:?}"))),
        };
        self.metrics.shared.script_outcome(text(0));
        Ok(verdict)
    }

    async fn forget(
        &self,
        session: &SessionId,
        id: &RequestId,
        acked: bool,
    ) -> Result<Verdict, StoreError> {
        let op = StoreOp::Delete {
            session: session.clone(),
            id: id.clone(),
            acked,
        };
        let entry = Note::of(&op, 0)
            .map(|note| Entry::of(&note))
            .unwrap_or_default();
        let reply: String = self
            .run(
                "forgetting",
                self.scripts
                    .forget
                    .key(self.keys.request(session, id))
                    .key(self.keys.ids(session))
                    .key(self.keys.seq(session))
                    .key(self.keys.trail(session))
                    .key(self.keys.trail_head(session))
                    .arg(id.as_str())
                    .arg(self.keys.channel(session))
                    .arg(self.publish)
                    .arg("")
                    .arg(&entry.tail)
                    .arg(&entry.digest)
                    .arg(self.audit_retention_ms),
            )
            .await?;
        Ok(match reply.as_str() {
            "done" | "kept" => Verdict::Done,
            "still_open" => Verdict::StillOpen,
            _ => Verdict::Unknown,
        })
    }

    async fn decide(&self, ops: Vec<StoreOp>) -> Result<Vec<Verdict>, StoreError> {
        let mut verdicts = Vec::with_capacity(ops.len());
        for op in ops {
            let verdict = match op {
                StoreOp::Put(request) => self.put(&request).await?,
                StoreOp::Resolve {
                    session,
                    id,
                    resolution,
                    if_late,
                } => {
                    self.resolve(&session, &id, &resolution, if_late.as_ref())
                        .await?
                }
                StoreOp::Delete { session, id, acked } => self.forget(&session, &id, acked).await?,
                StoreOp::Note(note) => self.note(&note).await?,
                StoreOp::DropStaleTrails { before_ms } => self.drop_stale_trails(before_ms).await?,
            };
            verdicts.push(verdict);
        }
        Ok(verdicts)
    }

    async fn load_session(&self, session: &SessionId) -> Result<SessionRecords, StoreError> {
        let reply: Vec<String> = self
            .run(
                "loading a session",
                self.scripts
                    .session
                    .key(self.keys.ids(session))
                    .key(self.keys.seq(session))
                    .arg(self.keys.request_prefix(session)),
            )
            .await?;
        let bad = |e: String| StoreError(format!("redis holds a session askgate cannot read: {e}"));
        let mut parts = reply.iter().map(String::as_str);
        let seq = records::millis(parts.next().unwrap_or("0")).map_err(bad)?;
        let rest: Vec<&str> = parts.collect();
        let mut requests = Vec::with_capacity(rest.len() / 7);
        for chunk in rest.chunks_exact(7) {
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
            };
            match records::request(session, &id, &fields) {
                Ok(request) => requests.push(request),
                // One damaged record must not keep the rest of the session from showing.
                Err(error) => {
                    tracing::error!(%session, request = %id, %error, "a request in redis could not be read; left there");
                }
            }
        }
        Ok(SessionRecords { seq, requests })
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
        let mut pipe = redis::pipe();
        for session in &sessions {
            pipe.get(self.keys.seq(session));
        }
        let started = std::time::Instant::now();
        let mut conn = self.conn.clone();
        let seqs: Vec<Option<u64>> = pipe
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_error("reading sequence numbers", &e))?;
        self.metrics.shared.round_trip(started.elapsed());
        Ok(seqs.into_iter().map(Option::unwrap_or_default).collect())
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
        let bad = |e: String| StoreError(format!("redis replied to a claim unexpectedly: {e}"));
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

    async fn presence(&self, session: &SessionId, here: Presence) -> Result<Presence, StoreError> {
        let ttl_ms = u64::try_from(PRESENCE_TTL.as_millis()).unwrap_or(u64::MAX);
        let (tabs, online): (usize, u8) = self
            .run(
                "writing presence",
                self.scripts
                    .presence
                    .key(self.keys.presence(session))
                    .arg(&self.node)
                    .arg(here.tabs)
                    .arg(u8::from(here.agent_online))
                    .arg(ttl_ms)
                    .arg(self.keys.channel(session))
                    .arg(self.publish),
            )
            .await?;
        Ok(Presence {
            tabs,
            agent_online: online == 1,
        })
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

impl Store for RedisStore {
    fn commit(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, ()> {
        let deciding = self.decide(ops);
        Box::pin(async move { deciding.await.map(drop) })
    }

    /// Nothing: a node loads sessions one at a time, as its peers come to watch them.
    fn load(&self) -> StoreFuture<'_, Vec<StoredRequest>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn decide(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, Vec<Verdict>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.decide(ops).await })
    }

    fn trails(&self) -> &dyn Trails {
        self
    }

    fn shared(&self) -> Option<Arc<dyn Shared>> {
        Some(Arc::new(SharedSide {
            inner: Arc::clone(&self.inner),
            subscriber: self.subscriber.clone(),
        }))
    }
}

impl Trails for RedisStore {
    fn audit(
        &self,
        session: &SessionId,
        after_seq: u64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<String>> {
        let (from, to) = trails::positions_after(after_seq, limit);
        let session = session.clone();
        Box::pin(async move { self.inner.trail_range(&session, from, to).await })
    }

    fn recent_audit(&self, session: &SessionId, count: usize) -> StoreFuture<'_, Vec<String>> {
        let from = -i64::try_from(count.max(1)).unwrap_or(i64::MAX);
        let session = session.clone();
        Box::pin(async move { self.inner.trail_range(&session, from, -1).await })
    }

    fn audit_sessions(&self) -> StoreFuture<'_, Vec<SessionId>> {
        Box::pin(self.inner.trail_sessions())
    }
}

/// The shared side of the Redis store.
struct SharedSide {
    inner: Arc<Inner>,
    subscriber: Subscriber,
}

impl Shared for SharedSide {
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

    fn claim_due(&self) -> StoreFuture<'static, Vec<DueClaim>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.claim_due().await })
    }

    fn settle_claim(&self, claim: DueClaim, next_ms: Option<u64>) -> StoreFuture<'static, ()> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.settle_claim(&claim, next_ms).await })
    }

    fn presence(&self, session: &SessionId, here: Presence) -> StoreFuture<'static, Presence> {
        let (inner, session) = (Arc::clone(&self.inner), session.clone());
        Box::pin(async move { inner.presence(&session, here).await })
    }

    fn ready(&self) -> Result<(), String> {
        self.subscriber.ready()
    }
}
