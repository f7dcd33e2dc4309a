//! `askgate serve`'s limit flags, each defaulting to the named constant in `config`, and
//! their checks.

use std::fmt::Display;
use std::time::Duration;

use anyhow::{anyhow, bail};
use clap::Args;

use crate::config::{self, Limits};

/// The limits, each defaulting to the named constant in `config`.
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// Largest WebSocket message accepted from a tab, in bytes; a larger one closes the
    /// socket (4413).
    #[arg(long, hide_env_values = true, env = "ASKGATE_MAX_FRAME_BYTES", default_value_t = config::DEFAULT_MAX_FRAME_BYTES)]
    pub max_frame_bytes: usize,
    /// Largest WebSocket message or HTTP body accepted from an agent, in bytes; a larger
    /// message closes the socket (4413), a larger body is refused (413).
    #[arg(long, hide_env_values = true, env = "ASKGATE_MAX_AGENT_FRAME_BYTES", default_value_t = config::DEFAULT_MAX_AGENT_FRAME_BYTES)]
    pub max_agent_frame_bytes: usize,
    /// Read buffer per tab socket, in bytes (an agent socket's is 16 KiB).
    #[arg(long, hide_env_values = true, env = "ASKGATE_READ_BUFFER_BYTES", default_value_t = config::DEFAULT_READ_BUFFER_BYTES)]
    pub read_buffer_bytes: usize,
    /// Write buffer per socket, in bytes.
    #[arg(long, hide_env_values = true, env = "ASKGATE_WRITE_BUFFER_BYTES", default_value_t = config::DEFAULT_WRITE_BUFFER_BYTES)]
    pub write_buffer_bytes: usize,
    /// Frames queued for a tab before it is closed as too slow (4408).
    #[arg(long, hide_env_values = true, env = "ASKGATE_TAB_QUEUE", default_value_t = config::DEFAULT_TAB_QUEUE)]
    pub tab_queue: usize,
    /// Frames queued for an agent connection before it is closed as too slow (4408).
    #[arg(long, hide_env_values = true, env = "ASKGATE_AGENT_QUEUE", default_value_t = config::DEFAULT_AGENT_QUEUE)]
    pub agent_queue: usize,
    /// Frames per second a tab may send (bursts of twice that); beyond it: closed (4429).
    #[arg(long, hide_env_values = true, env = "ASKGATE_TAB_FRAMES_PER_SECOND", default_value_t = config::DEFAULT_TAB_FRAMES_PER_SECOND)]
    pub tab_frames_per_second: u32,
    /// Frames per second an agent connection may send; beyond it: closed (4429).
    #[arg(long, hide_env_values = true, env = "ASKGATE_AGENT_FRAMES_PER_SECOND", default_value_t = config::DEFAULT_AGENT_FRAMES_PER_SECOND)]
    pub agent_frames_per_second: u32,
    /// Tabs watching one session; one more is closed with 1013 (try again later).
    #[arg(long, hide_env_values = true, env = "ASKGATE_TABS_PER_SESSION", default_value_t = config::DEFAULT_TABS_PER_SESSION)]
    pub tabs_per_session: usize,
    /// Unresolved requests per session; one more ask is rejected.
    #[arg(long, hide_env_values = true, env = "ASKGATE_OPEN_REQUESTS_PER_SESSION", default_value_t = config::DEFAULT_OPEN_REQUESTS_PER_SESSION)]
    pub open_requests_per_session: usize,
    /// Bytes a session's open requests may hold (what a joining tab's snapshot carries); past
    /// it a new ask is rejected until requests end.
    #[arg(long, hide_env_values = true, env = "ASKGATE_OPEN_BYTES_PER_SESSION", default_value_t = config::DEFAULT_OPEN_BYTES_PER_SESSION)]
    pub open_bytes_per_session: usize,
    /// Bytes the open requests of all sessions together may hold, as tabs receive them; past
    /// it a new ask is rejected (unavailable, HTTP 503) until requests end [default: a
    /// sixteenth of the machine's memory (MemTotal, or a smaller cgroup memory.max), as each
    /// open byte costs four to six of memory; 1 GiB where it cannot be read].
    #[arg(
        long,
        value_name = "BYTES",
        hide_env_values = true,
        env = "ASKGATE_MAX_OPEN_BYTES"
    )]
    pub max_open_bytes: Option<usize>,
    /// Outcomes per session not yet acknowledged by the agent; one more ask is rejected.
    #[arg(long, hide_env_values = true, env = "ASKGATE_KEPT_OUTCOMES_PER_SESSION", default_value_t = config::DEFAULT_KEPT_OUTCOMES_PER_SESSION)]
    pub kept_outcomes_per_session: usize,
    /// Sessions held at once; a new one is refused.
    #[arg(long, hide_env_values = true, env = "ASKGATE_MAX_SESSIONS", default_value_t = config::DEFAULT_MAX_SESSIONS)]
    pub max_sessions: usize,
    /// Longest timeout an agent may ask for, in seconds [default: no limit].
    #[arg(long, hide_env_values = true, env = "ASKGATE_MAX_TIMEOUT_S")]
    pub max_timeout_s: Option<f64>,
    /// Hours an unacknowledged outcome is kept for its agent.
    #[arg(
        long,
        hide_env_values = true,
        env = "ASKGATE_RETENTION_HOURS",
        default_value_t = 24.0
    )]
    pub retention_hours: f64,
    /// Days a session's audit trail is kept after its newest entry; then it is dropped whole.
    #[arg(long, hide_env_values = true, env = "ASKGATE_AUDIT_RETENTION_DAYS", default_value_t = crate::audit::DEFAULT_AUDIT_RETENTION_DAYS as f64)]
    pub audit_retention_days: f64,
    /// Seconds between keepalive pings; two unanswered pings close the socket.
    #[arg(long, hide_env_values = true, env = "ASKGATE_PING_INTERVAL_S", default_value_t = config::DEFAULT_PING_INTERVAL.as_secs_f64())]
    pub ping_interval_s: f64,
    /// Seconds shutdown waits for sockets to close.
    #[arg(long, hide_env_values = true, env = "ASKGATE_SHUTDOWN_GRACE_S", default_value_t = config::DEFAULT_SHUTDOWN_GRACE.as_secs_f64())]
    pub shutdown_grace_s: f64,
    /// Connections held at once; one more is answered 503 and closed [default: as many as
    /// the open-file limit allows, less 128 kept for the store and refusals; the limit is
    /// raised to its hard maximum at start]. A quarter is kept for connections that have shown
    /// a key: past the rest, a new connection cuts the oldest one that has shown none.
    #[arg(long, hide_env_values = true, env = "ASKGATE_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Connections held from one client address (IPv4, or an IPv6 /64); one more is answered
    /// 503 and closed. Behind a reverse proxy every client has the proxy's address: raise it,
    /// or set 0 for no per-address cap.
    #[arg(long, hide_env_values = true, env = "ASKGATE_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = config::DEFAULT_MAX_CONNECTIONS_PER_ADDRESS)]
    pub max_connections_per_address: usize,
    /// Seconds a request's headers may take to arrive, from their first byte; a slower one is
    /// cut off.
    #[arg(long, hide_env_values = true, env = "ASKGATE_HEADER_READ_TIMEOUT_S", default_value_t = config::DEFAULT_HEADER_READ_TIMEOUT.as_secs_f64())]
    pub header_read_timeout_s: f64,
    /// Seconds an HTTP connection may wait for a request with nothing arriving (a new one
    /// that sends nothing, a keep-alive one between requests) before it is closed.
    #[arg(long, hide_env_values = true, env = "ASKGATE_IDLE_TIMEOUT_S", default_value_t = config::DEFAULT_IDLE_TIMEOUT.as_secs_f64())]
    pub idle_timeout_s: f64,
    /// Seconds from accept until a connection must have shown a key (an agent key on a request
    /// or an upgrade, or a tab's accepted hello); one that has not is closed (a tab with 4408).
    #[arg(long, hide_env_values = true, env = "ASKGATE_HANDSHAKE_TIMEOUT_S", default_value_t = config::DEFAULT_HANDSHAKE_TIMEOUT.as_secs_f64())]
    pub handshake_timeout_s: f64,
    /// Seconds one HTTP request may take, body and handling; more than 60 (the longest
    /// long-poll). Past it: 408.
    #[arg(long, hide_env_values = true, env = "ASKGATE_REQUEST_TIMEOUT_S", default_value_t = config::DEFAULT_REQUEST_TIMEOUT.as_secs_f64())]
    pub request_timeout_s: f64,
    /// Seconds an open request may go without its agent (the socket that asked it closed, no
    /// socket re-asking its id, no long-poll waiting on it) before it is marked orphaned:
    /// still answerable, shown apart (1 to 86,400).
    #[arg(long, hide_env_values = true, env = "ASKGATE_AGENT_GRACE_S", default_value_t = config::DEFAULT_AGENT_GRACE.as_secs())]
    pub agent_grace_s: u64,
    /// Seconds a request without a deadline stays orphaned before the gateway withdraws it;
    /// 0 keeps it until its agent or an operator ends it.
    #[arg(long, hide_env_values = true, env = "ASKGATE_ORPHAN_WITHDRAW_AFTER_S", default_value_t = config::DEFAULT_ORPHAN_WITHDRAW_AFTER.as_secs())]
    pub orphan_withdraw_after_s: u64,
    /// Where a person may have an approval remembered: `session` (the rest of the session),
    /// `key` (always, for the agent key that asked), both comma-separated, or `off`.
    #[arg(
        long,
        hide_env_values = true,
        env = "ASKGATE_APPROVAL_RULES",
        default_value = "session,key"
    )]
    pub approval_rules: String,
    /// Seconds a remembered approval lives (1 to 31,536,000, a year).
    #[arg(long, hide_env_values = true, env = "ASKGATE_APPROVAL_RULE_TTL_S", default_value_t = config::DEFAULT_APPROVAL_RULE_TTL.as_secs())]
    pub approval_rule_ttl_s: u64,
    /// Seconds an accepted WebSocket upgrade may take to hand over its connection.
    #[arg(long, hide_env_values = true, env = "ASKGATE_UPGRADE_TIMEOUT_S", default_value_t = config::DEFAULT_UPGRADE_TIMEOUT.as_secs_f64())]
    pub upgrade_timeout_s: f64,
    /// Bytes queued to one session's tabs and not yet taken; a tab that is behind when more
    /// would pass it is closed (4408).
    #[arg(long, hide_env_values = true, env = "ASKGATE_QUEUED_BYTES_PER_SESSION", default_value_t = config::DEFAULT_QUEUED_BYTES_PER_SESSION)]
    pub queued_bytes_per_session: usize,
    /// Bytes queued to all tabs and not yet taken; a tab that is behind when more would pass
    /// it is closed (4408).
    #[arg(long, hide_env_values = true, env = "ASKGATE_QUEUED_BYTES_TOTAL", default_value_t = config::DEFAULT_QUEUED_BYTES_TOTAL)]
    pub queued_bytes_total: usize,
    /// Tabs that may join one session per second (bursts of twice that); one more is closed
    /// with 1013 and comes back later.
    #[arg(long, hide_env_values = true, env = "ASKGATE_JOINS_PER_SESSION_PER_SECOND", default_value_t = config::DEFAULT_JOINS_PER_SESSION_PER_SECOND)]
    pub joins_per_session_per_second: u32,
}

/// The smallest `--max-frame-bytes`: a tab's `hello` (viewer key, tab id and the JSON around
/// them) must fit with room to spare, or every tab is closed as soon as it says hello.
const MIN_FRAME_BYTES: usize = 1024;

/// The longest `--ping-interval-s` and `--shutdown-grace-s`: sockets add these to
/// `Instant::now()`, which panics past its range, and neither has a use beyond a day.
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

impl LimitArgs {
    pub(super) fn to_limits(&self) -> anyhow::Result<Limits> {
        let within_a_day = |flag: &str, value: f64| -> anyhow::Result<Duration> {
            let seconds = positive(flag, value, "seconds")?;
            if seconds > MAX_WAIT.as_secs_f64() {
                bail!(
                    "--{flag} must be at most {} seconds (one day), got {value}",
                    MAX_WAIT.as_secs()
                );
            }
            Ok(positive_duration(seconds))
        };
        Ok(Limits {
            max_frame_bytes: at_least("max-frame-bytes", self.max_frame_bytes, MIN_FRAME_BYTES)
                .map_err(|e| anyhow!("{e}: a smaller frame cannot carry a tab's hello"))?,
            max_agent_frame_bytes: at_least(
                "max-agent-frame-bytes",
                self.max_agent_frame_bytes,
                MIN_FRAME_BYTES,
            )?,
            read_buffer_bytes: at_least("read-buffer-bytes", self.read_buffer_bytes, 1)?,
            write_buffer_bytes: at_least("write-buffer-bytes", self.write_buffer_bytes, 1)?,
            tab_queue: at_least("tab-queue", self.tab_queue, 1)?,
            agent_queue: at_least("agent-queue", self.agent_queue, 1)?,
            tab_frames_per_second: at_least(
                "tab-frames-per-second",
                self.tab_frames_per_second,
                1,
            )?,
            agent_frames_per_second: at_least(
                "agent-frames-per-second",
                self.agent_frames_per_second,
                1,
            )?,
            tabs_per_session: at_least("tabs-per-session", self.tabs_per_session, 1)?,
            open_requests_per_session: at_least(
                "open-requests-per-session",
                self.open_requests_per_session,
                1,
            )?,
            open_bytes_per_session: at_least(
                "open-bytes-per-session",
                self.open_bytes_per_session,
                1,
            )?,
            max_open_bytes: match self.max_open_bytes {
                Some(bytes) => at_least("max-open-bytes", bytes, 1)?,
                None => config::default_max_open_bytes(),
            },
            kept_outcomes_per_session: at_least(
                "kept-outcomes-per-session",
                self.kept_outcomes_per_session,
                1,
            )?,
            max_sessions: at_least("max-sessions", self.max_sessions, 1)?,
            max_timeout_s: match self.max_timeout_s {
                Some(seconds) => positive("max-timeout-s", seconds, "seconds")?,
                None => config::DEFAULT_MAX_TIMEOUT_S,
            },
            retention: positive_duration(
                positive("retention-hours", self.retention_hours, "hours")? * 3600.0,
            ),
            audit_retention: positive_duration(
                positive("audit-retention-days", self.audit_retention_days, "days")? * 86_400.0,
            ),
            ping_interval: within_a_day("ping-interval-s", self.ping_interval_s)?,
            shutdown_grace: within_a_day("shutdown-grace-s", self.shutdown_grace_s)?,
            hello_timeout: config::DEFAULT_HELLO_TIMEOUT,
            max_connections: match self.max_connections {
                Some(cap) => Some(at_least("max-connections", cap, 1)?),
                None => None,
            },
            max_connections_per_address: Some(self.max_connections_per_address)
                .filter(|cap| *cap > 0),
            header_read_timeout: within_a_day("header-read-timeout-s", self.header_read_timeout_s)?,
            idle_timeout: within_a_day("idle-timeout-s", self.idle_timeout_s)?,
            handshake_timeout: within_a_day("handshake-timeout-s", self.handshake_timeout_s)?,
            request_timeout: {
                let timeout = within_a_day("request-timeout-s", self.request_timeout_s)?;
                if timeout.as_secs_f64() <= crate::transport::MAX_WAIT_S {
                    bail!(
                        "--request-timeout-s must be more than {} seconds (the longest long-poll), got {}",
                        crate::transport::MAX_WAIT_S,
                        self.request_timeout_s
                    );
                }
                timeout
            },
            upgrade_timeout: within_a_day("upgrade-timeout-s", self.upgrade_timeout_s)?,
            queued_bytes_per_session: at_least(
                "queued-bytes-per-session",
                self.queued_bytes_per_session,
                1,
            )?,
            queued_bytes_total: at_least("queued-bytes-total", self.queued_bytes_total, 1)?,
            joins_per_session_per_second: at_least(
                "joins-per-session-per-second",
                self.joins_per_session_per_second,
                1,
            )?,
            agent_grace: {
                if !(1..=86_400).contains(&self.agent_grace_s) {
                    bail!(
                        "--agent-grace-s must be 1 to 86400 seconds, got {}",
                        self.agent_grace_s
                    );
                }
                Duration::from_secs(self.agent_grace_s)
            },
            orphan_withdraw_after: {
                // A timer sleeps at most about two years (tokio's wheel).
                const A_YEAR_S: u64 = 365 * 86_400;
                if self.orphan_withdraw_after_s > A_YEAR_S {
                    bail!(
                        "--orphan-withdraw-after-s must be at most {A_YEAR_S} seconds, a year (0 \
                         keeps orphaned requests), got {}",
                        self.orphan_withdraw_after_s
                    );
                }
                (self.orphan_withdraw_after_s > 0)
                    .then(|| Duration::from_secs(self.orphan_withdraw_after_s))
            },
            approval_rules: rule_scopes(&self.approval_rules)?,
            approval_rule_ttl: {
                if !(1..=365 * 86_400).contains(&self.approval_rule_ttl_s) {
                    bail!(
                        "--approval-rule-ttl-s must be 1 to 31536000 seconds (a year), got {}",
                        self.approval_rule_ttl_s
                    );
                }
                Duration::from_secs(self.approval_rule_ttl_s)
            },
        })
    }
}

/// `--approval-rules`: `off`, or scopes comma-separated.
fn rule_scopes(text: &str) -> anyhow::Result<Vec<askgate_protocol::approval::rules::RuleScope>> {
    use askgate_protocol::approval::rules::RuleScope;
    if text.trim() == "off" {
        return Ok(Vec::new());
    }
    let mut scopes = Vec::new();
    for part in text.split(',').map(str::trim) {
        let scope = match part {
            "session" => RuleScope::Session,
            "key" => RuleScope::Key,
            other => bail!(
                "--approval-rules takes `session`, `key`, both comma-separated, or `off`; got {other:?}"
            ),
        };
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    Ok(scopes)
}

fn at_least<T: PartialOrd + Display + Copy>(flag: &str, value: T, min: T) -> anyhow::Result<T> {
    if value < min {
        bail!("--{flag} must be at least {min}, got {value}");
    }
    Ok(value)
}

/// `value` if it is a finite number above zero (NaN and infinity are refused too).
fn positive(flag: &str, value: f64, unit: &str) -> anyhow::Result<f64> {
    if !(value.is_finite() && value > 0.0) {
        bail!("--{flag} must be a positive number of {unit}, got {value}");
    }
    Ok(value)
}

/// `seconds` (finite and above zero) as a duration. Less than a nanosecond rounds up to
/// one, since a zero keepalive period panics tokio; more than `Duration` holds saturates,
/// which for retention means "keep until acknowledged", as the sweeper reads it anyway.
fn positive_duration(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds)
        .unwrap_or(Duration::MAX)
        .max(Duration::from_nanos(1))
}
