//! The Redis store: several nodes, one truth. Every transition is one Lua script (the files in
//! `scripts/`, each saying what it guarantees), decided by Redis against its own clock; a node
//! announces only what a script returned. The design, with its failure table:
//! `docs/SCALE-OUT.md`.
//!
//! - [`conn`]: the command connection, standalone or Cluster (found out at start).
//! - [`lua`]: the scripts, loaded once, timed, and sent with the index entries they rely on.
//! - [`decisions`]: asking, resolving and forgetting, and the verdicts read from the replies.
//! - [`shared_side`]: what nodes coordinate besides decisions: sessions loaded on demand,
//!   sequence numbers, deadline claims, presence.
//! - [`outbox`]: notifications kept with the changes they tell of, claimed by any node.
//! - [`kept`]: the kept tables (Slack messages, push subscriptions), a hash per key.
//! - [`keys`]: key and channel names, hash-tagged by session.
//! - [`node_reports`]: each node's figures for the operator endpoints, and who wrote when.
//! - [`inbox_index`]: where inboxes find requests for their person in sessions their node
//!   does not hold, and the channel that tells every node.
//! - [`records`]: requests as hash fields, and the notices scripts publish.
//! - [`subscriber`]: the pub/sub connection, its probe and its reconnects.
//! - [`settings`]: the start-up check of Redis's durability settings, and the shared secret.
//! - [`trails`]: the audit trails: the entries scripts seal, reading them back, their index.
//! - [`seals`]: the hashes a node proposes for the entries its scripts seal, from the trail
//!   heads the notices carry, so that Redis need not hash them in Lua.

mod conn;
mod decisions;
mod inbox_index;
mod kept;
mod keys;
mod lua;
mod node_reports;
mod outbox;
mod records;
mod seals;
mod settings;
mod shared_side;
mod subscriber;
mod trails;

use std::sync::Arc;
use std::time::Duration;

use askgate_protocol::SessionId;

use self::conn::Conn;
use self::keys::Keys;
use self::lua::Scripts;
use self::seals::Seals;
use self::shared_side::SharedSide;
use self::subscriber::Subscriber;
use super::shared::Shared;
use super::{Store, StoreError, StoreFuture, StoreOp, StoredRequest, Trails, Verdict};
use crate::audit::chain::AuditKey;
use crate::metrics::Metrics;

pub use settings::{Durability, check_durability};

/// The mark of a deployment whose audit chains are keyed (`sha256` marked unkeyed ones,
/// before audit keys).
const KEYED_CHAIN: &str = "hmac-sha256";

/// How long one command may take before the node counts Redis as unreachable for it.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(3);

/// How long the node's subscription may go without hearing its own probe before it is made
/// again, unless `--probe-silence-s` says otherwise. The probe goes out three times in that
/// while.
pub const DEFAULT_PROBE_SILENCE: Duration = Duration::from_secs(3);

/// The shortest probe silence `--probe-silence-s` takes: a probe every third of a second
/// still costs Redis nothing worth counting, and a subscription must be given some while.
pub const MIN_PROBE_SILENCE: Duration = Duration::from_secs(1);

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
    /// How long a node's presence entry counts after it was written (`--presence-ttl-s`);
    /// nodes write theirs every [`presence_refresh`](crate::store::shared::presence_refresh)
    /// of it.
    pub presence_ttl: Duration,
    /// How long the subscription may go without hearing its own probe before it is made
    /// again (`--probe-silence-s`).
    pub probe_silence: Duration,
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
    presence_ttl: Duration,
    metrics: Arc<Metrics>,
    publish: &'static str,
    /// This node, in presence entries and its probe channel.
    node: String,
    /// The audit key and the trail heads heard of: what goes with every script that seals an
    /// entry (the key's HMAC states, [`AuditKey::hmac_states_hex`], never stored in Redis, and
    /// the entry's hash worked out here when the node can).
    seals: Arc<Seals>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").finish_non_exhaustive()
    }
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
        // The id the operator endpoints show for this node, too.
        let node = metrics.node_id().to_owned();
        let seals = Arc::new(Seals::default());
        let inner = Arc::new(Inner {
            conn: conn.clone(),
            keys: keys.clone(),
            scripts: Scripts::new(),
            retention_ms: u64::try_from(options.retention.as_millis()).unwrap_or(u64::MAX),
            audit_retention_ms: u64::try_from(options.audit_retention.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
            presence_ttl: options.presence_ttl,
            metrics: Arc::clone(&metrics),
            publish,
            node: node.clone(),
            seals: Arc::clone(&seals),
        });
        let subscriber = Subscriber::start(
            subscribing,
            conn,
            keys,
            &node,
            metrics,
            options.probe_silence,
            seals,
        );
        Ok(Arc::new(RedisStore { inner, subscriber }))
    }

    /// The viewer-link secret every node of this deployment uses: created by the first.
    ///
    /// # Errors
    /// Redis cannot be reached.
    pub async fn shared_secret(&self) -> Result<Vec<u8>, StoreError> {
        settings::shared_secret(&mut self.inner.conn.clone(), &self.inner.keys.secret()).await
    }

    /// Whether this deployment's audit chains are keyed: marked in Redis by the first node
    /// given an audit key (`{prefix}{audit}:chain`).
    ///
    /// # Errors
    /// Redis cannot be reached.
    pub async fn chain_is_keyed(&self) -> Result<bool, StoreError> {
        Ok(self.chain_mode().await?.as_deref() == Some(KEYED_CHAIN))
    }

    async fn chain_mode(&self) -> Result<Option<String>, StoreError> {
        let mut conn = self.inner.conn.clone();
        redis::cmd("GET")
            .arg(self.inner.keys.chain_mode())
            .query_async(&mut conn)
            .await
            .map_err(|e| StoreError::unavailable(format!("reading the audit chain's mode: {e}")))
    }

    /// Refuses trails this deployment does not mark keyed, for a node or command given a key:
    /// the mark is in Redis, and whoever can write Redis could otherwise undo the key (mark the
    /// chains `sha256`, or delete the mark, and re-hash every entry with plain SHA-256).
    ///
    /// # Errors
    /// Trails exist and the mark is not `hmac-sha256`; Redis cannot be reached.
    pub async fn refuse_unkeyed_trails(&self) -> Result<(), StoreError> {
        let mode = self.chain_mode().await?;
        if mode.as_deref() == Some(KEYED_CHAIN) {
            return Ok(());
        }
        let mut conn = self.inner.conn.clone();
        let trails: bool = redis::cmd("EXISTS")
            .arg(self.inner.keys.trails())
            .query_async(&mut conn)
            .await
            .map_err(|e| {
                StoreError::unavailable(format!("reading the audit trails' index: {e}"))
            })?;
        if !trails {
            return Ok(());
        }
        let marked = match mode {
            Some(mode) => format!("marks its audit chains `{mode}`, not `{KEYED_CHAIN}`"),
            None => "holds no mark of how its audit chains are hashed".to_owned(),
        };
        Err(StoreError::refused(format!(
            "this Redis deployment ({}) {marked}, and holds audit trails: they are not taken as \
             unkeyed while an audit key is given. Trails sealed before audit keys stay so: start \
             keyed trails under a new --redis-prefix (the old ones can still be exported and \
             verified without a key). Otherwise someone who can write Redis has changed the \
             mark and may have re-hashed the trails: check them against an export's checkpoint \
             kept elsewhere (`askgate audit verify --checkpoint FILE`, without the key)",
            self.inner.keys.chain_mode()
        )))
    }

    /// Seals audit entries with `key` (HMAC-SHA256): marks the deployment keyed in Redis
    /// (`{prefix}{audit}:chain`, `hmac-sha256`) while it holds no trail, and refuses trails
    /// not marked so ([`refuse_unkeyed_trails`](Self::refuse_unkeyed_trails)) or sealed with
    /// another key. The key itself is never written to Redis: it goes with each script call.
    ///
    /// # Errors
    /// Trails not marked keyed, or sealed with another key; Redis cannot be reached.
    pub async fn use_audit_key(&self, key: &AuditKey) -> Result<(), StoreError> {
        self.refuse_unkeyed_trails().await?;
        if !self.chain_is_keyed().await? {
            let mut conn = self.inner.conn.clone();
            let _: () = redis::cmd("SET")
                .arg(self.inner.keys.chain_mode())
                .arg(KEYED_CHAIN)
                .query_async(&mut conn)
                .await
                .map_err(|e| {
                    StoreError::unavailable(format!("marking the audit chain's mode: {e}"))
                })?;
        }
        self.check_key(key).await?;
        self.inner.seals.set_key(key);
        Ok(())
    }

    /// Refuses a key other than the one the trails were sealed with: one session's newest
    /// entry must hash under it.
    async fn check_key(&self, key: &AuditKey) -> Result<(), StoreError> {
        let mut conn = self.inner.conn.clone();
        let failed =
            |e: redis::RedisError| StoreError::unavailable(format!("reading an audit entry: {e}"));
        let sessions: Vec<String> = redis::cmd("ZRANGE")
            .arg(self.inner.keys.trails())
            .arg(-1)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .map_err(failed)?;
        let Some(session) = sessions.first().and_then(|s| SessionId::parse(s).ok()) else {
            return Ok(());
        };
        let newest: Option<String> = redis::cmd("LINDEX")
            .arg(self.inner.keys.trail(&session))
            .arg(-1)
            .query_async(&mut conn)
            .await
            .map_err(failed)?;
        let chain = crate::audit::chain::ChainKey::Keyed(Arc::new(key.clone()));
        match newest.as_deref().map(crate::audit::read_line) {
            Some(Ok(read)) if !read.hash_holds_with(&chain) => Err(StoreError::refused(format!(
                "this deployment's audit trails were sealed with another audit key than the \
                 one given (session {session}'s newest entry does not hold under it): give \
                 every node the same --audit-key-file"
            ))),
            _ => Ok(()),
        }
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

impl Store for RedisStore {
    fn commit(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, ()> {
        let deciding = self.decide(ops);
        Box::pin(async move { deciding.await.map(drop) })
    }

    /// Nothing: a node loads sessions one at a time, as its peers come to watch them.
    fn load(&self) -> StoreFuture<'_, Vec<StoredRequest>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn followers(&self) -> StoreFuture<'_, Vec<(SessionId, String)>> {
        // Loaded with each session, as its requests are.
        Box::pin(async { Ok(Vec::new()) })
    }

    fn decide(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, Vec<Verdict>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.decide(ops).await })
    }

    fn deliveries(&self) -> StoreFuture<'_, Vec<crate::store::StoredDelivery>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// Nothing: read key by key ([`Shared::kept`]).
    fn kept(&self) -> StoreFuture<'_, Vec<crate::store::KeptField>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
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
