//! `askgate serve`: run the gateway.
//!
//! - [`limits`]: the limit flags, each defaulting to its named constant in `config`.
//! - [`people`]: the flags about people: identity header, anonymous tabs, links.
//! - [`notify`]: the flags about telling people of requests: the notify file, retries.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow, bail};
use clap::Args;

use self::limits::LimitArgs;
use self::notify::NotifyArgs;
use self::people::PeopleArgs;
use super::store_flags::StoreFlags;
use crate::config::{Config, RedisSettings, StoreKind, check_redis_prefix};
use crate::keys::AgentKey;
use crate::store::redis::{DEFAULT_PROBE_SILENCE, MIN_PROBE_SILENCE};
use crate::store::shared::{DEFAULT_PRESENCE_TTL, MIN_PRESENCE_TTL};

/// Flags of `askgate serve` (each also an environment variable).
// The doc comments here are `--help` text, where `<listen address>` means a placeholder.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A TOML file of these settings, each under its flag's long name with `-` as `_`
    /// (`askgate config example` prints one with every setting; `askgate config check FILE`
    /// checks one). A flag given here, or its environment variable, overrides the file; the
    /// file overrides the defaults.
    #[arg(
        long,
        hide_env_values = true,
        env = "ASKGATE_CONFIG",
        value_name = "FILE"
    )]
    pub config: Option<PathBuf>,

    /// What the config file gave beyond flag values (its `[groups]`), and where each of its
    /// settings is, to name the line of a value refused below.
    #[arg(skip)]
    pub from_file: super::config::FromFile,

    /// Address to listen on, as HOST:PORT: an IPv4 address, an IPv6 address in brackets
    /// (`[::]:8080`), or a host name, resolved at start and bound at every address it resolves
    /// to. Repeat for several; in the environment, separate them with commas. Without an
    /// agent key only loopback addresses are allowed.
    #[arg(
        long,
        hide_env_values = true,
        env = "ASKGATE_LISTEN",
        value_delimiter = ',',
        value_name = "HOST:PORT",
        default_value = "127.0.0.1:8080"
    )]
    pub listen: Vec<String>,

    /// Base URL people reach the gateway at, used in viewer links
    /// (default: http://<first listen address>).
    #[arg(long, hide_env_values = true, env = "ASKGATE_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// A key agents must present as `Authorization: Bearer <key>`. Repeat for several; in
    /// the environment, separate them with commas. None: local mode (loopback only).
    ///
    /// `KEY` acts on every session. `KEY:PREFIX` (split at the first `:`, so a key cannot
    /// hold one) acts only on the session PREFIX and those whose id continues it after a
    /// separator (- . _ :), so `team-a` covers `team-a` and `team-a-1` but not `team-ab-1`; a
    /// PREFIX ending with a separator covers every id starting with it. Any other session is
    /// refused with `forbidden` (HTTP 403), and an `open` without a session gets one made of
    /// PREFIX, a `-` unless PREFIX ends with a separator, and a generated id. PREFIX takes the
    /// characters of a session id (letters, digits, . _ : -), at most 109 of them.
    #[arg(
        long = "agent-key",
        hide_env_values = true,
        env = "ASKGATE_AGENT_KEYS",
        value_delimiter = ',',
        value_name = "KEY[:PREFIX]"
    )]
    pub agent_keys: Vec<String>,

    /// A key that may read every session (`GET /v1/requests`, `/v1/audit`, the rules) and
    /// withdraw any request, and nothing else an agent does: it cannot ask. Presented as
    /// `Authorization: Bearer KEY`. Repeat the flag, or separate keys with commas in the
    /// variable.
    #[arg(
        long = "operator-key",
        hide_env_values = true,
        env = "ASKGATE_OPERATOR_KEYS",
        value_delimiter = ',',
        value_name = "KEY"
    )]
    pub operator_keys: Vec<String>,

    /// File holding the secret viewer keys are derived from. Default: <data-dir>/secret,
    /// created (mode 0600) on first start so links survive restarts.
    #[arg(long, hide_env_values = true, env = "ASKGATE_SECRET_FILE")]
    pub secret_file: Option<PathBuf>,

    /// Where its state is kept.
    #[command(flatten)]
    pub stored: StoreFlags,

    /// File holding the key the audit chain is sealed with (HMAC-SHA256): exactly 64 hex
    /// digits, optionally followed by a newline; keep it away from the store. Default for the
    /// embedded store: <data-dir>/audit-key, created (mode 0600) on first start, with a
    /// warning at each start. Required with a Redis store (the same file on every node).
    #[arg(long, hide_env_values = true, env = "ASKGATE_AUDIT_KEY_FILE")]
    pub audit_key_file: Option<PathBuf>,

    /// Refuse to start on a Redis whose settings can lose what was accepted (eviction, no
    /// append-only file, or one not synced on every write).
    #[arg(long, hide_env_values = true, env = "ASKGATE_STRICT_DURABILITY")]
    pub strict_durability: bool,

    /// With a Redis store: how long, in seconds, a node's tabs and agents still count in a
    /// session's presence after the node last wrote them (it writes them every quarter of
    /// this): how soon a node that dies stops counting. At least 4.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = DEFAULT_PRESENCE_TTL.as_secs(),
        value_parser = clap::value_parser!(u64).range(MIN_PRESENCE_TTL.as_secs()..=3600),
        hide_env_values = true,
        env = "ASKGATE_PRESENCE_TTL_S"
    )]
    pub presence_ttl_s: u64,

    /// With a Redis store: how long, in seconds, the node's subscription may go without
    /// hearing its own probe (published three times in that while) before it is made again:
    /// how soon a subscription that went deaf is found. At least 1.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = DEFAULT_PROBE_SILENCE.as_secs(),
        value_parser = clap::value_parser!(u64).range(MIN_PROBE_SILENCE.as_secs()..=300),
        hide_env_values = true,
        env = "ASKGATE_PROBE_SILENCE_S"
    )]
    pub probe_silence_s: u64,

    /// Start even if the embedded store's log is damaged (not only torn by a crash): replay
    /// the records before the damage, move the damaged log files into
    /// <data-dir>/damaged-<time>/, and log (ERROR) what they held past it. Without it such a
    /// store does not start (see `askgate store check`).
    #[arg(long)]
    pub recover_damaged_log: bool,

    /// Serve the web UI from this directory instead of the embedded copy (development).
    #[arg(long, hide_env_values = true, env = "ASKGATE_WEB_DIR")]
    pub web_dir: Option<PathBuf>,

    /// Threads that run sockets and the hub (the embedded store syncs on its own thread).
    #[arg(
        long,
        hide_env_values = true,
        env = "ASKGATE_WORKER_THREADS",
        default_value_t = crate::config::DEFAULT_WORKER_THREADS,
        value_parser = clap::value_parser!(u16).range(1..=i64::from(crate::config::MAX_WORKER_THREADS))
    )]
    pub worker_threads: u16,

    /// How logs on stderr are written: `json` (one object a line: timestamp, level, target,
    /// `fields` with the message and the event's fields, and the spans) or `text`. Default:
    /// text on a terminal, json otherwise. The `askgate listening on` lines are plain either way.
    #[arg(
        long,
        hide_env_values = true,
        env = "ASKGATE_LOG_FORMAT",
        value_enum,
        value_name = "FORMAT"
    )]
    pub log_format: Option<LogFormat>,

    /// The limits.
    #[command(flatten)]
    pub limits: LimitArgs,

    /// Who tabs are, and who may answer.
    #[command(flatten)]
    pub people: PeopleArgs,

    /// Who is told of requests, and how.
    #[command(flatten)]
    pub notify: NotifyArgs,
}

/// The agent keys as configured (`KEY` or `KEY:PREFIX`), trimmed and without empty ones:
/// `ASKGATE_AGENT_KEYS="k1, k2"` splits into "k1" and " k2", while a presented key is
/// trimmed before it is compared.
///
/// # Errors
/// A key has whitespace inside it, an empty key or a prefix no session id can start with, or
/// is given again with another scope (which of the two would it act as?). The error gives
/// its position, never the key, which is a secret and would end up in logs.
fn agent_keys(configured: &[String]) -> anyhow::Result<Vec<AgentKey>> {
    let mut keys: Vec<(usize, AgentKey)> = Vec::with_capacity(configured.len());
    for (position, text) in (1..).zip(configured.iter().map(|key| key.trim())) {
        if text.contains(char::is_whitespace) {
            bail!(
                "--agent-key number {position} contains whitespace; a bearer key must be one \
                 word (separate several keys with commas)"
            );
        }
        if text.is_empty() {
            continue;
        }
        let key =
            AgentKey::parse(text).map_err(|why| anyhow!("--agent-key number {position}: {why}"))?;
        let earlier = keys
            .iter()
            .find(|(_, earlier)| earlier.secret() == key.secret());
        if let Some((first, earlier)) = earlier
            && earlier.scope() != key.scope()
        {
            bail!(
                "--agent-key number {position} is the key of number {first} again, with \
                     another session prefix; give each key one scope"
            );
        }
        // Said at start: a key that held a `:` before scopes existed is now split, and an
        // operator should see it (by position and length only: both parts may be secret).
        if let Some(chars) = key.scope().prefix_chars() {
            tracing::info!(
                "--agent-key number {position} acts only on the sessions within its \
                 {chars}-character prefix (the part after its first `:`; the scope ends at a \
                 separator)"
            );
        }
        keys.push((position, key));
    }
    Ok(keys.into_iter().map(|(_, key)| key).collect())
}

/// The operator keys as configured, trimmed and without empty ones.
///
/// # Errors
/// A key has whitespace inside it, or is also an agent key (it would be two things at once).
/// Positions only, never the key.
fn operator_keys(configured: &[String], agents: &[AgentKey]) -> anyhow::Result<Vec<AgentKey>> {
    let mut keys = Vec::new();
    for (position, text) in (1..).zip(configured.iter().map(|key| key.trim())) {
        if text.contains(char::is_whitespace) {
            bail!(
                "--operator-key number {position} contains whitespace; a bearer key must be one word (separate several keys with commas)"
            );
        }
        if text.is_empty() {
            continue;
        }
        if agents.iter().any(|agent| agent.secret() == text) {
            bail!(
                "--operator-key number {position} is also an agent key; give operators keys of their own"
            );
        }
        keys.push(AgentKey::unscoped(text));
    }
    Ok(keys)
}

/// The settings judged from the flags alone, before anything is read from or made in the
/// data directory.
struct Judged {
    limits: crate::config::Limits,
    people: crate::config::PeopleSettings,
    notify: Option<crate::notify::NotifyConfig>,
    callback_hosts: crate::notify::CallbackHosts,
    agent_keys: Vec<AgentKey>,
    operator_keys: Vec<AgentKey>,
}

impl ServeArgs {
    /// The settings the flags describe, judged; files they name (groups, notify) are read,
    /// nothing is created.
    fn judged(&self) -> anyhow::Result<Judged> {
        let limits = self.limits.to_limits()?;
        let mut people = self.people.to_settings()?;
        for (name, members) in &self.from_file.groups {
            people
                .groups
                .add_group(name, members.clone())
                .map_err(anyhow::Error::msg)?;
        }
        let notify = self
            .notify
            .to_config(&mut people.groups, self.public_url.as_deref())?;
        let callback_hosts = self.notify.callback_hosts()?;
        let agent_keys = agent_keys(&self.agent_keys)?;
        let operator_keys = operator_keys(&self.operator_keys, &agent_keys)?;
        check_redis_prefix(&self.stored.redis_prefix).map_err(anyhow::Error::msg)?;
        Ok(Judged {
            limits,
            people,
            notify,
            callback_hosts,
            agent_keys,
            operator_keys,
        })
    }

    /// What `askgate config check` runs: every check `serve` makes before it binds or opens
    /// the store, creating nothing (the generated secret and audit key are left to `serve`).
    ///
    /// # Errors
    /// As [`ServeArgs::to_config`]'s, and a `--listen` address that does not resolve or is
    /// not loopback while no agent key is given.
    pub(in crate::cli) async fn check(&self) -> anyhow::Result<()> {
        let judged = self.judged()?;
        // Only reads: a key file given, or the refusal of a Redis store without one. The
        // embedded store's generated key is made, so it is left to `serve`.
        if self.audit_key_file.is_some() || !matches!(self.stored.store, StoreKind::Embedded) {
            super::audit_key::for_serve(
                self.audit_key_file.as_deref(),
                &self.stored.store,
                &self.stored.data_dir,
            )?;
        }
        // A configuration without its secrets, enough to judge the addresses as `bind` does.
        let shared = matches!(self.stored.store, StoreKind::Redis(_));
        let without_secrets = self.config_of(judged, Vec::new(), None, shared);
        for listen::ListenAddr { given, addr } in listen::resolve(&self.listen).await? {
            without_secrets
                .check_bind(&addr)
                .map_err(|why| anyhow!("--listen {given}: {why}"))?;
        }
        Ok(())
    }

    /// The configuration these flags describe (reads or creates the secret).
    ///
    /// # Errors
    /// A limit is out of range, an agent key is malformed, or the secret cannot be read or
    /// created.
    pub fn to_config(&self) -> anyhow::Result<Config> {
        // Flags first, so a typo does not leave a fresh data directory and secret behind.
        let judged = self.judged().map_err(|e| self.from_file.locate(e))?;
        let shared = matches!(self.stored.store, StoreKind::Redis(_));
        // Nodes on one Redis must derive the same links: without a secret file given, the
        // secret is Redis's (the first node creates it), read once the store is open.
        let secret_from_store = shared && self.secret_file.is_none();
        let audit_key = super::audit_key::for_serve(
            self.audit_key_file.as_deref(),
            &self.stored.store,
            &self.stored.data_dir,
        )?;
        let secret = match (&self.secret_file, secret_from_store) {
            (_, true) => Vec::new(),
            (Some(file), false) => load_or_create_secret(file)?,
            (None, false) => load_or_create_secret(&self.stored.data_dir.join("secret"))?,
        };
        Ok(self.config_of(judged, secret, audit_key, secret_from_store))
    }

    /// The configuration of `judged` settings, with these secrets.
    fn config_of(
        &self,
        judged: Judged,
        secret: Vec<u8>,
        audit_key: Option<std::sync::Arc<crate::audit::chain::AuditKey>>,
        secret_from_store: bool,
    ) -> Config {
        let Judged {
            limits,
            people,
            notify,
            callback_hosts,
            agent_keys,
            operator_keys,
        } = judged;
        Config {
            public_url: self.public_url.clone(),
            notify,
            callback_hosts,
            callback_retry_for: std::time::Duration::from_secs(self.notify.notify_retry_for_s),
            agent_keys,
            operator_keys,
            secret,
            data_dir: self.stored.data_dir.clone(),
            store: self.stored.store.clone(),
            recover_damaged_log: self.recover_damaged_log,
            audit_key,
            redis: RedisSettings {
                prefix: self.stored.redis_prefix.clone(),
                strict_durability: self.strict_durability,
                secret_from_store,
                presence_ttl: std::time::Duration::from_secs(self.presence_ttl_s),
                probe_silence: std::time::Duration::from_secs(self.probe_silence_s),
            },
            web_dir: self.web_dir.clone(),
            limits,
            people,
        }
    }
}

/// How logs are written (`--log-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One JSON object a line.
    Json,
    /// Lines for a person to read.
    Text,
}

/// Reads the secret, or creates a random one (mode 0600) if the file does not exist.
///
/// # Errors
/// The file cannot be read, is empty, or cannot be created.
pub fn load_or_create_secret(path: &Path) -> anyhow::Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(secret) if secret.trim_ascii().is_empty() => {
            bail!("the secret file {} is empty", path.display())
        }
        Ok(secret) => Ok(secret.trim_ascii().to_vec()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating the data directory {}", dir.display()))?;
            }
            let bytes: [u8; 32] = rand::random();
            let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            write_private(path, secret.as_bytes())
                .with_context(|| format!("creating the secret file {}", path.display()))?;
            Ok(secret.into_bytes())
        }
        Err(e) => Err(e).with_context(|| format!("reading the secret file {}", path.display())),
    }
}

pub(super) fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path)?.write_all(contents)
}

/// Runs `askgate serve` until SIGINT or SIGTERM.
///
/// # Errors
/// The configuration is invalid or the server fails to start.
pub(super) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    // Resolved before the configuration is read, which makes the data directory: a typo in
    // `--listen` leaves nothing behind.
    let addrs = listen::resolve(&args.listen)
        .await
        .map_err(|e| args.from_file.locate(e))?;
    let config = args.to_config()?;
    raise_open_file_limit();
    let listeners = listen::bind(&addrs, &config)
        .await
        .map_err(|e| args.from_file.locate(e))?;
    let state = crate::server::prepare(&listeners[0], &config).await?;
    let stopping = shutdown_signal();
    // Only now, with the store open and restored, is the gateway ready to serve: a line per
    // address, the first given first (tests and clients read the first).
    for listener in &listeners {
        let addr = listener.local_addr()?;
        tracing::info!(%addr, "askgate listening");
        eprintln!("askgate listening on http://{addr}");
    }
    crate::server::serve_all(listeners, state, &config, stopping).await?;
    eprintln!("askgate stopped");
    Ok(())
}

/// Raises the open-file limit as far as it goes: every connection is a descriptor.
pub(super) fn raise_open_file_limit() {
    if let Some(limit) = crate::connections::fd_limit::raise_open_file_limit() {
        tracing::debug!(limit, "open-file limit");
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM, saying which. The handlers are in place when
/// this returns, not when the future is first polled: a signal that comes right after the
/// gateway says it is listening must not find the default action (which ends the process
/// without a word).
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let waiting = {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            match (interrupt, terminate) {
                (Ok(mut interrupt), Ok(mut terminate)) => tokio::select! {
                    _ = interrupt.recv() => "interrupt (Ctrl-C)",
                    _ = terminate.recv() => "SIGTERM",
                },
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                    "interrupt (Ctrl-C)"
                }
            }
        }
    };
    #[cfg(not(unix))]
    let waiting = async {
        let _ = tokio::signal::ctrl_c().await;
        "interrupt (Ctrl-C)"
    };
    async move {
        let signal = waiting.await;
        tracing::info!(signal, "shutting down");
        eprintln!(
            "askgate: {signal}: stopping; open requests stay stored, sockets are closed with 1001"
        );
    }
}

mod limits;
pub(super) mod listen;
mod notify;
mod people;
#[cfg(test)]
mod tests;
