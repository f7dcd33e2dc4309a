//! The gateway's configuration: where it listens, who may connect, and every limit.
//!
//! Each limit is a named default here, overridable from the command line or the environment
//! (`askgate serve --help`). The doc line says what happens when a peer reaches it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::keys::AgentKey;

/// Threads the async runtime runs sockets and the hub on. One by default: the hub decides
/// under one lock, so a second thread mostly adds cross-thread wake-ups and lock contention.
/// On the 2-core bench machine (1,000 sessions x 3 tabs, 2,000 asks/s, memory store) two took
/// 51-55 % of a core for the load one serves at 35-36 %, and one session of 10,000 tabs reached
/// all of them sooner on one (p99 193 ms against 328). The embedded store syncs on a thread of
/// its own either way. More threads can pay where parsing and validating large requests, not
/// deciding, is the load.
pub const DEFAULT_WORKER_THREADS: u16 = 1;
/// The most worker threads `--worker-threads` takes.
pub const MAX_WORKER_THREADS: u16 = 1024;
/// Largest WebSocket message accepted from a tab, in bytes. A larger one closes the socket
/// with 4413.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 64 * 1024;
/// Largest WebSocket message or HTTP body accepted from an agent, in bytes. A larger socket
/// message closes the socket with 4413; a larger body is refused with 413. The largest
/// question set pydantic-ai-harness accepts is 20,250 characters after trimming: about 81 KB
/// of UTF-8, and 243 KB when a host escapes every character outside ASCII as Python's
/// `json.dumps` does by default (12 bytes for one outside the Basic Multilingual Plane). This
/// takes it in any encoding, with room to spare.
pub const DEFAULT_MAX_AGENT_FRAME_BYTES: usize = 1024 * 1024;
/// tungstenite's read buffer per tab socket, in bytes, allocated up front for every tab and
/// read into at most this much at a time. Its 128 KiB default would cost that much per idle
/// tab; a tab sends a hello, answers and pongs, mostly under 256 bytes, and a larger message
/// still arrives whole (the buffer grows to fit it, up to the frame limit) in a few more
/// reads, so idle tabs stay cheap without capping anything.
pub const DEFAULT_READ_BUFFER_BYTES: usize = 256;
/// tungstenite's read buffer per agent socket, in bytes. Agents are few and each may carry a
/// session's load, so one read takes in many frames.
pub const AGENT_READ_BUFFER_BYTES: usize = 16 * 1024;
/// tungstenite's write buffer per connection, in bytes (flushed when exceeded).
pub const DEFAULT_WRITE_BUFFER_BYTES: usize = 4 * 1024;
/// Frames queued for one tab before it counts as too slow and is closed with 4408.
pub const DEFAULT_TAB_QUEUE: usize = 64;
/// Frames queued for one agent connection before it is closed with 4408 (its outcomes stay
/// stored and come back when it re-asks).
pub const DEFAULT_AGENT_QUEUE: usize = 4096;
/// Frames per second a tab may send (burst: twice as many). Beyond it: closed with 4429.
pub const DEFAULT_TAB_FRAMES_PER_SECOND: u32 = 20;
/// Frames per second an agent connection may send (burst: twice as many); beyond: 4429.
pub const DEFAULT_AGENT_FRAMES_PER_SECOND: u32 = 5_000;
/// Tabs watching one session. One more is closed with 1013 (try again later).
pub const DEFAULT_TABS_PER_SESSION: usize = 128;
/// Open (unresolved) requests in one session. One more ask is rejected.
pub const DEFAULT_OPEN_REQUESTS_PER_SESSION: usize = 256;
/// Bytes the open requests of one session may hold, as tabs receive them. While a session
/// holds more, a new ask is rejected (`unavailable`) until requests end. A joining tab's
/// snapshot carries every open request, so this bounds it too (to this, plus one request).
pub const DEFAULT_OPEN_BYTES_PER_SESSION: usize = 16 * 1024 * 1024;
/// `--max-open-bytes` by default is the machine's memory divided by this: a sixteenth. It is
/// counted as tabs receive the requests, and each such byte costs four to six of resident
/// memory (the ask as read, its validated form, its store record and the frame for tabs:
/// 16 MiB of one session's open requests measured 65 MB; 97 MB of 64 KiB approvals made of
/// short strings, 558 MB), so a sixteenth in open requests is a quarter to a third of the
/// memory, and the rest is left to sockets, queues, the store and the rest of the machine.
pub const MAX_OPEN_BYTES_MEMORY_DIVISOR: u64 = 16;
/// `--max-open-bytes` where the machine's memory cannot be read (not Linux): 1 GiB.
pub const FALLBACK_MAX_OPEN_BYTES: usize = 1024 * 1024 * 1024;
/// Outcomes a session keeps that its agent has not acknowledged yet. One more ask is rejected
/// until the agent acks some (or their retention runs out): memory stays bounded even for an
/// agent that never acks.
pub const DEFAULT_KEPT_OUTCOMES_PER_SESSION: usize = 4096;
/// Sessions held at once. A new one is refused (ask rejected, tab closed with 1013).
pub const DEFAULT_MAX_SESSIONS: usize = 100_000;
/// Longest `timeout_s` an agent may ask for: none by default, as the protocol sets none (a
/// request without a deadline may stay open for ever anyway); an operator may set one.
pub const DEFAULT_MAX_TIMEOUT_S: f64 = f64::INFINITY;
/// How long an unacknowledged outcome is kept for its agent.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// How long a session's audit trail is kept after its newest entry; then it is dropped whole.
pub const DEFAULT_AUDIT_RETENTION: Duration =
    Duration::from_secs(crate::audit::DEFAULT_AUDIT_RETENTION_DAYS * 24 * 3600);
/// How often the gateway pings each socket; two pings without a pong close it.
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(25);
/// How long a tab has to send `hello` after its socket opens. One that does not is closed
/// with 4408, as a connection too slow to keep up: the page reconnects.
pub const DEFAULT_HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long shutdown waits for sockets to close before giving up on them.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Connections held from one client address (an IPv4 address, or an IPv6 /64). One more is
/// answered 503 and closed. Behind a reverse proxy every client shares the proxy's address:
/// raise it there, or lift it (`0`).
pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: usize = 256;
/// How long a request's headers may take to arrive, from their first byte. A request that
/// trickles in slower is cut off.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may go from accept without showing a key (an agent key on a request
/// or an upgrade, or a tab's accepted `hello`); it is closed then. Shorter than the idle and
/// header timeouts: sockets held open without a key are what crowds everyone else out.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an HTTP connection may wait for a request with nothing arriving: a new one that
/// sends nothing, or a keep-alive one between requests. It is closed after that.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// The most one HTTP request may take, reading its body and handling it; a long-poll lasts
/// up to 60 s, so this must be longer. Past it the client gets 408.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(90);
/// How long an accepted WebSocket upgrade may take to hand over its connection.
pub const DEFAULT_UPGRADE_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes queued to one session's tabs and not yet taken by them. A tab that is behind (it
/// still holds frames it was given) when more would pass this is closed with 4408.
pub const DEFAULT_QUEUED_BYTES_PER_SESSION: usize = 64 * 1024 * 1024;
/// Bytes queued to every tab of the gateway and not yet taken; as above, gateway-wide.
pub const DEFAULT_QUEUED_BYTES_TOTAL: usize = 512 * 1024 * 1024;
/// Tabs that may join one session per second (bursts of twice as many); one more is closed
/// with 1013 and comes back later.
pub const DEFAULT_JOINS_PER_SESSION_PER_SECOND: u32 = 10;
/// How long an open request may go without its agent (the socket that asked it gone, no
/// socket re-asking it, no long-poll waiting on it) before it is marked orphaned.
pub const DEFAULT_AGENT_GRACE: Duration = Duration::from_secs(60);
/// How long a request without a deadline stays orphaned before the gateway withdraws it.
pub const DEFAULT_ORPHAN_WITHDRAW_AFTER: Duration = Duration::from_secs(86_400);
/// How long a remembered approval lives: 30 days.
pub const DEFAULT_APPROVAL_RULE_TTL: Duration =
    Duration::from_millis(askgate_protocol::approval::rules::DEFAULT_RULE_TTL_MS);
/// Most remembered approvals one session, or one agent key, holds at once.
pub const MAX_RULES_PER_SCOPE: usize = 100;
/// Most bytes of arguments (as JSON) a remembered approval of the same arguments keeps.
pub const MAX_RULE_ARGS_BYTES: usize = 16 * 1024;

/// Every limit, in one place.
#[derive(Clone, Debug)]
pub struct Limits {
    /// See [`DEFAULT_MAX_FRAME_BYTES`].
    pub max_frame_bytes: usize,
    /// See [`DEFAULT_MAX_AGENT_FRAME_BYTES`].
    pub max_agent_frame_bytes: usize,
    /// See [`DEFAULT_READ_BUFFER_BYTES`].
    pub read_buffer_bytes: usize,
    /// See [`DEFAULT_WRITE_BUFFER_BYTES`].
    pub write_buffer_bytes: usize,
    /// See [`DEFAULT_TAB_QUEUE`].
    pub tab_queue: usize,
    /// See [`DEFAULT_AGENT_QUEUE`].
    pub agent_queue: usize,
    /// See [`DEFAULT_TAB_FRAMES_PER_SECOND`].
    pub tab_frames_per_second: u32,
    /// See [`DEFAULT_AGENT_FRAMES_PER_SECOND`].
    pub agent_frames_per_second: u32,
    /// See [`DEFAULT_TABS_PER_SESSION`].
    pub tabs_per_session: usize,
    /// See [`DEFAULT_OPEN_REQUESTS_PER_SESSION`].
    pub open_requests_per_session: usize,
    /// See [`DEFAULT_OPEN_BYTES_PER_SESSION`].
    pub open_bytes_per_session: usize,
    /// Bytes the open requests of all sessions may hold, as tabs receive them; while they
    /// hold more, a new ask is rejected (`unavailable`) until requests end. See
    /// [`default_max_open_bytes`].
    pub max_open_bytes: usize,
    /// See [`DEFAULT_KEPT_OUTCOMES_PER_SESSION`].
    pub kept_outcomes_per_session: usize,
    /// See [`DEFAULT_MAX_SESSIONS`].
    pub max_sessions: usize,
    /// See [`DEFAULT_MAX_TIMEOUT_S`].
    pub max_timeout_s: f64,
    /// See [`DEFAULT_RETENTION`].
    pub retention: Duration,
    /// See [`DEFAULT_AUDIT_RETENTION`].
    pub audit_retention: Duration,
    /// See [`DEFAULT_PING_INTERVAL`].
    pub ping_interval: Duration,
    /// See [`DEFAULT_SHUTDOWN_GRACE`].
    pub shutdown_grace: Duration,
    /// See [`DEFAULT_HELLO_TIMEOUT`].
    pub hello_timeout: Duration,
    /// Connections held at once; `None`: as many as fit under the open-file limit, less a
    /// reserve. One more is answered 503 and closed.
    pub max_connections: Option<usize>,
    /// See [`DEFAULT_MAX_CONNECTIONS_PER_ADDRESS`]; `None`: no cap.
    pub max_connections_per_address: Option<usize>,
    /// See [`DEFAULT_HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// See [`DEFAULT_IDLE_TIMEOUT`].
    pub idle_timeout: Duration,
    /// See [`DEFAULT_HANDSHAKE_TIMEOUT`].
    pub handshake_timeout: Duration,
    /// See [`DEFAULT_REQUEST_TIMEOUT`].
    pub request_timeout: Duration,
    /// See [`DEFAULT_UPGRADE_TIMEOUT`].
    pub upgrade_timeout: Duration,
    /// See [`DEFAULT_QUEUED_BYTES_PER_SESSION`].
    pub queued_bytes_per_session: usize,
    /// See [`DEFAULT_QUEUED_BYTES_TOTAL`].
    pub queued_bytes_total: usize,
    /// See [`DEFAULT_JOINS_PER_SESSION_PER_SECOND`].
    pub joins_per_session_per_second: u32,
    /// See [`DEFAULT_AGENT_GRACE`].
    pub agent_grace: Duration,
    /// See [`DEFAULT_ORPHAN_WITHDRAW_AFTER`]; `None`: orphaned requests are kept.
    pub orphan_withdraw_after: Option<Duration>,
    /// Where an approval may be remembered (`--approval-rules`): none when off.
    pub approval_rules: Vec<askgate_protocol::approval::rules::RuleScope>,
    /// See [`DEFAULT_APPROVAL_RULE_TTL`].
    pub approval_rule_ttl: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_agent_frame_bytes: DEFAULT_MAX_AGENT_FRAME_BYTES,
            read_buffer_bytes: DEFAULT_READ_BUFFER_BYTES,
            write_buffer_bytes: DEFAULT_WRITE_BUFFER_BYTES,
            tab_queue: DEFAULT_TAB_QUEUE,
            agent_queue: DEFAULT_AGENT_QUEUE,
            tab_frames_per_second: DEFAULT_TAB_FRAMES_PER_SECOND,
            agent_frames_per_second: DEFAULT_AGENT_FRAMES_PER_SECOND,
            tabs_per_session: DEFAULT_TABS_PER_SESSION,
            open_requests_per_session: DEFAULT_OPEN_REQUESTS_PER_SESSION,
            open_bytes_per_session: DEFAULT_OPEN_BYTES_PER_SESSION,
            max_open_bytes: default_max_open_bytes(),
            kept_outcomes_per_session: DEFAULT_KEPT_OUTCOMES_PER_SESSION,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_timeout_s: DEFAULT_MAX_TIMEOUT_S,
            retention: DEFAULT_RETENTION,
            audit_retention: DEFAULT_AUDIT_RETENTION,
            ping_interval: DEFAULT_PING_INTERVAL,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            hello_timeout: DEFAULT_HELLO_TIMEOUT,
            max_connections: None,
            max_connections_per_address: Some(DEFAULT_MAX_CONNECTIONS_PER_ADDRESS),
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            upgrade_timeout: DEFAULT_UPGRADE_TIMEOUT,
            queued_bytes_per_session: DEFAULT_QUEUED_BYTES_PER_SESSION,
            queued_bytes_total: DEFAULT_QUEUED_BYTES_TOTAL,
            joins_per_session_per_second: DEFAULT_JOINS_PER_SESSION_PER_SECOND,
            agent_grace: DEFAULT_AGENT_GRACE,
            orphan_withdraw_after: Some(DEFAULT_ORPHAN_WITHDRAW_AFTER),
            approval_rules: vec![
                askgate_protocol::approval::rules::RuleScope::Session,
                askgate_protocol::approval::rules::RuleScope::Key,
            ],
            approval_rule_ttl: DEFAULT_APPROVAL_RULE_TTL,
        }
    }
}

/// Which store keeps requests and outcomes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum StoreKind {
    /// Embedded and durable (redb in the data directory): nothing accepted is lost.
    #[default]
    Embedded,
    /// In memory: lost on restart. For tests and throwaway runs.
    Memory,
    /// Redis at this URL (`redis://` or `rediss://`), shared by every node that uses it.
    Redis(String),
}

impl std::str::FromStr for StoreKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "embedded" => Ok(StoreKind::Embedded),
            "memory" => Ok(StoreKind::Memory),
            url if url.starts_with("redis://") || url.starts_with("rediss://") => {
                Ok(StoreKind::Redis(url.to_owned()))
            }
            other => Err(format!(
                "{:?} is not a store: use embedded, memory, redis://HOST:PORT[/DB] or rediss://HOST:PORT[/DB]",
                crate::store::redis::redact(other)
            )),
        }
    }
}

impl std::fmt::Display for StoreKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreKind::Embedded => f.write_str("embedded"),
            StoreKind::Memory => f.write_str("memory"),
            StoreKind::Redis(url) => f.write_str(&crate::store::redis::redact(url)),
        }
    }
}

/// How a node uses a Redis store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisSettings {
    /// What every key starts with, so several deployments can share one Redis.
    pub prefix: String,
    /// Refuse to start when Redis's settings allow losing what was accepted.
    pub strict_durability: bool,
    /// Take the viewer-link secret from Redis (created there by the first node): no secret
    /// file was given, and every node must derive the same links.
    pub secret_from_store: bool,
    /// How long a node's presence entry counts after it was written (`--presence-ttl-s`).
    pub presence_ttl: Duration,
    /// How long the node's subscription may go without hearing its own probe before it is
    /// made again (`--probe-silence-s`).
    pub probe_silence: Duration,
}

impl Default for RedisSettings {
    fn default() -> Self {
        RedisSettings {
            prefix: DEFAULT_REDIS_PREFIX.to_owned(),
            strict_durability: false,
            secret_from_store: false,
            presence_ttl: crate::store::shared::DEFAULT_PRESENCE_TTL,
            probe_silence: crate::store::redis::DEFAULT_PROBE_SILENCE,
        }
    }
}

/// What every key in Redis starts with, unless `--redis-prefix` says otherwise.
pub const DEFAULT_REDIS_PREFIX: &str = "askgate:";

/// Checks a key prefix: it may not hold a brace (that would move the hash tag).
///
/// # Errors
/// The prefix holds `{` or `}`, or is longer than 64 bytes.
pub fn check_redis_prefix(prefix: &str) -> Result<(), String> {
    if prefix.contains(['{', '}']) {
        return Err(format!(
            "--redis-prefix {prefix:?}: a prefix may not hold a brace, which would change which Redis Cluster slot each session's keys share"
        ));
    }
    if prefix.len() > 64 {
        return Err(format!(
            "--redis-prefix: at most 64 bytes, got {}",
            prefix.len()
        ));
    }
    Ok(())
}

/// The whole configuration of one gateway.
#[derive(Clone, Debug)]
pub struct Config {
    /// The base URL people reach the gateway at, for viewer links (`http://127.0.0.1:8080`).
    /// `None`: derived from the bound address.
    pub public_url: Option<String>,
    /// Who is told of requests, and how (`--notify FILE`); `None`: nobody.
    pub notify: Option<crate::notify::NotifyConfig>,
    /// Which URLs an ask's `callback` may name (`--callback-hosts`,
    /// `--notify-allow-private`).
    pub callback_hosts: crate::notify::CallbackHosts,
    /// How long a failing callback is tried (`--notify-retry-for-s`), without a notify file.
    pub callback_retry_for: Duration,
    /// Keys agents present as `Authorization: Bearer <key>`, each acting on every session or
    /// on those of its scope. Empty: local mode (loopback only, no key needed).
    pub agent_keys: Vec<AgentKey>,
    /// Keys that read every session and withdraw any request, and cannot ask
    /// (`--operator-key`); unscoped, and shown redacted as agent keys are.
    pub operator_keys: Vec<AgentKey>,
    /// The secret viewer keys are derived from.
    pub secret: Vec<u8>,
    /// Where durable state lives.
    pub data_dir: PathBuf,
    /// Which store.
    pub store: StoreKind,
    /// Start the embedded store even on a damaged log, moving the damaged files aside
    /// (`--recover-damaged-log`).
    pub recover_damaged_log: bool,
    /// The key audit chains are sealed with (none: unkeyed SHA-256).
    pub audit_key: Option<std::sync::Arc<crate::audit::chain::AuditKey>>,
    /// How a Redis store is used (ignored by the others).
    pub redis: RedisSettings,
    /// Serve the web UI from this directory instead of the embedded copy (development).
    pub web_dir: Option<PathBuf>,
    /// Every limit.
    pub limits: Limits,
    /// Who tabs are, and who may answer.
    pub people: PeopleSettings,
}

/// Who tabs are and who may answer: `--user-header`, `--trusted-proxy`, `--require-identity`,
/// `--groups`; and who, named by the proxy, is an operator: `--operators`.
#[derive(Clone, Debug, Default)]
pub struct PeopleSettings {
    /// The header an identity-aware proxy names the person in.
    pub user_header: Option<axum::http::HeaderName>,
    /// The addresses that proxy connects from: the header counts only from these.
    pub trusted_proxies: Vec<crate::people::proxy::Network>,
    /// Anonymous tabs watch only.
    pub require_identity: bool,
    /// The operator's groups.
    pub groups: crate::people::Groups,
    /// The people (by name) whom the identity header admits to the operator endpoints, as an
    /// operator key would (`--operators`; the notify file may list more).
    pub operators: Vec<String>,
}

impl Config {
    /// A configuration for local use and tests: memory store, no agent keys, a fixed secret.
    pub fn local(secret: impl Into<Vec<u8>>) -> Self {
        Config {
            public_url: None,
            notify: None,
            callback_hosts: crate::notify::CallbackHosts::default(),
            callback_retry_for: crate::notify::DEFAULT_RETRY_FOR,
            agent_keys: Vec::new(),
            operator_keys: Vec::new(),
            secret: secret.into(),
            data_dir: PathBuf::from("askgate-data"),
            store: StoreKind::Memory,
            recover_damaged_log: false,
            audit_key: None,
            redis: RedisSettings::default(),
            web_dir: None,
            limits: Limits::default(),
            people: PeopleSettings::default(),
        }
    }

    /// Refuses to expose an unauthenticated agent endpoint beyond this machine.
    ///
    /// # Errors
    /// No agent key is configured and `addr` is not a loopback address.
    pub fn check_bind(&self, addr: &SocketAddr) -> Result<(), String> {
        if self.agent_keys.is_empty() && !addr.ip().is_loopback() {
            return Err(format!(
                "refusing to listen on {addr} without an agent key: anyone who can reach it could \
                 ask questions. Set --agent-key (ASKGATE_AGENT_KEYS), or listen on 127.0.0.1"
            ));
        }
        Ok(())
    }
}

/// `--max-open-bytes` by default: the memory this process may use (the machine's `MemTotal`,
/// or a smaller cgroup v2 `memory.max`) divided by [`MAX_OPEN_BYTES_MEMORY_DIVISOR`];
/// [`FALLBACK_MAX_OPEN_BYTES`] where neither can be read.
pub fn default_max_open_bytes() -> usize {
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_total_bytes(&text));
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok());
    let memory = match (machine, cgroup) {
        (Some(machine), Some(cgroup)) => machine.min(cgroup),
        (one, other) => match one.or(other) {
            Some(memory) => memory,
            None => return FALLBACK_MAX_OPEN_BYTES,
        },
    };
    usize::try_from(memory / MAX_OPEN_BYTES_MEMORY_DIVISOR).unwrap_or(usize::MAX)
}

/// `MemTotal` from the text of `/proc/meminfo`, in bytes.
fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let amount: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => amount.checked_mul(1024),
        None => Some(amount),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_an_agent_key_only_loopback_is_allowed() {
        let mut config = Config::local(b"s".to_vec());
        assert!(
            config
                .check_bind(&"127.0.0.1:8080".parse().unwrap())
                .is_ok()
        );
        assert!(config.check_bind(&"[::1]:8080".parse().unwrap()).is_ok());
        let error = config
            .check_bind(&"0.0.0.0:8080".parse().unwrap())
            .unwrap_err();
        assert!(error.contains("--agent-key"), "{error}");
        config.agent_keys = vec![AgentKey::unscoped("k")];
        assert!(config.check_bind(&"0.0.0.0:8080".parse().unwrap()).is_ok());
    }

    #[test]
    fn mem_total_is_read_in_bytes() {
        let meminfo = "MemTotal:       24684544 kB\nMemFree:         2650000 kB\n";
        assert_eq!(mem_total_bytes(meminfo), Some(24_684_544 * 1024));
        assert_eq!(mem_total_bytes("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total_bytes("MemTotal: lots kB\n"), None);
    }
}
