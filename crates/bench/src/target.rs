//! The server under test: an askgate or Node.js process the generator spawns (and stops), or
//! one already running at an address.
//!
//! A spawned server listens on `127.0.0.1:0` and announces its address on stderr
//! (`... listening on http://ADDR`); a thread reads that line and then keeps draining stderr
//! into `server.log` in the run's temp directory, so a chatty server never blocks on a pipe.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{SocketAddr, ToSocketAddrs as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use crate::cli::TargetArgs;

/// How long a spawned server has to announce its address.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stopped server has to exit after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// What kind of server it is (decides which limits flags it understands).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    /// An askgate binary the generator spawned.
    Askgate,
    /// The Node.js baseline the generator spawned.
    Node,
    /// Something already running.
    External,
}

/// A server being driven.
#[derive(Debug)]
pub(crate) struct Target {
    /// What it is.
    pub(crate) kind: Kind,
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    /// Its process, for RSS and CPU sampling (unknown for an external server without `--pid`).
    pub(crate) pid: Option<u32>,
    /// The command line that started it (for the report).
    pub(crate) command: String,
    child: Option<Child>,
    dir: Option<PathBuf>,
}

impl Target {
    /// Starts (or attaches to) the server `args` describe. `extra` are askgate flags the
    /// scenario needs (limits it would otherwise hit); they are ignored for other servers.
    ///
    /// # Errors
    /// The server cannot be spawned, does not announce an address in time, or the address
    /// cannot be parsed.
    pub(crate) fn start(args: &TargetArgs, extra: &[String]) -> anyhow::Result<Target> {
        if let Some(binary) = &args.spawn {
            let mut extra = extra.to_vec();
            extra.extend(args.server_args.iter().cloned());
            return Target::spawn_askgate(binary, args.store.as_str(), &extra);
        }
        if let Some(script) = &args.spawn_node {
            return Target::spawn_node(&args.node, script, &[]);
        }
        let Some(addr) = &args.addr else {
            bail!(
                "say which server: --spawn <askgate>, --spawn-node <server.js> or --addr <host:port>"
            );
        };
        let trimmed = addr
            .trim_start_matches("ws://")
            .trim_start_matches("http://")
            .trim_end_matches('/');
        let addr = trimmed
            .to_socket_addrs()
            .with_context(|| format!("resolving {trimmed}"))?
            .next()
            .with_context(|| format!("{trimmed} resolves to no address"))?;
        Ok(Target {
            kind: Kind::External,
            addr,
            pid: args.pid,
            command: format!("(running at {addr})"),
            child: None,
            dir: None,
        })
    }

    /// The same server as one already running: for a second workload on a thread of its
    /// own, which must not stop it (this one does).
    pub(crate) fn view(&self) -> Target {
        Target {
            kind: Kind::External,
            addr: self.addr,
            pid: self.pid,
            command: self.command.clone(),
            child: None,
            dir: None,
        }
    }

    /// Spawns `binary serve` on `store` (`embedded`, `memory`, `redis://...`) with `extra`
    /// flags, in a temp data directory of its own.
    ///
    /// # Errors
    /// As [`Target::start`].
    pub(crate) fn spawn_askgate(
        binary: &Path,
        store: &str,
        extra: &[String],
    ) -> anyhow::Result<Target> {
        let dir = temp_dir("askgate")?;
        let mut command = serve(binary, store, extra);
        command.arg("--data-dir").arg(dir.join("data"));
        // Nodes on one Redis seal the audit chain with one key, which Redis does not hold.
        if store.starts_with("redis") && !extra.iter().any(|flag| flag == "--audit-key-file") {
            command
                .arg("--audit-key-file")
                .arg(shared_audit_key_file()?);
        }
        spawn(Kind::Askgate, command, dir)
    }

    /// Spawns `binary serve` on `store` with `extra` flags, which name its data directory:
    /// the caller keeps that directory (to start a server again on the same data); dropping
    /// the target stops the server and removes only the directory of its log.
    ///
    /// # Errors
    /// As [`Target::start`].
    pub(crate) fn spawn_askgate_owned(
        binary: &Path,
        store: &str,
        extra: &[String],
    ) -> anyhow::Result<Target> {
        spawn(
            Kind::Askgate,
            serve(binary, store, extra),
            temp_dir("askgate")?,
        )
    }

    /// Kills a spawned server at once (SIGKILL), as a crash would, and waits for it to go.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Spawns `node script` on a free port with `env` set (a Node.js baseline).
    ///
    /// # Errors
    /// As [`Target::start`].
    pub(crate) fn spawn_node(
        node: &str,
        script: &Path,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Target> {
        let dir = temp_dir("node")?;
        let mut command = Command::new(node);
        command
            .arg(script)
            .env("PORT", "0")
            .envs(env.iter().copied());
        spawn(Kind::Node, command, dir)
    }

    /// Stops a spawned server (SIGTERM, then SIGKILL after [`STOP_TIMEOUT`]) and removes its
    /// temp directory. An external server is left alone.
    pub(crate) fn stop(self) {
        drop(self);
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        // Also when a scenario failed midway: its server must not stay running.
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + STOP_TIMEOUT;
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(dir) = self.dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The audit key file every node this run starts on Redis is given: a random key, written
/// once per run and left in the temp directory with the run's id.
fn shared_audit_key_file() -> anyhow::Result<PathBuf> {
    static WRITTEN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if let Some(path) = WRITTEN.get() {
        return Ok(path.clone());
    }
    let path = temp_dir("audit-key")?.join("audit-key");
    let key: [u8; 32] = rand::random();
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(&path, format!("{hex}\n"))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(WRITTEN.get_or_init(|| path).clone())
}

/// A fresh directory for one run's data and log.
fn temp_dir(kind: &str) -> anyhow::Result<PathBuf> {
    let n: u64 = rand::random();
    let dir = std::env::temp_dir().join(format!(
        "askgate-bench-{kind}-{}-{n:08x}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

fn spawn(kind: Kind, mut command: Command, dir: PathBuf) -> anyhow::Result<Target> {
    let line = format!("{command:?}").replace('"', "");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("spawning {line}"))?;
    let stderr = child.stderr.take();
    // From here on, dropping `target` (an early return) stops the server and removes `dir`.
    let mut target = Target {
        kind,
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        pid: Some(child.id()),
        command: line,
        child: Some(child),
        dir: Some(dir),
    };
    let stderr = stderr.context("the server's stderr")?;
    let (found, addr) = mpsc::channel();
    let log_path = target
        .dir
        .as_deref()
        .unwrap_or(Path::new("."))
        .join("server.log");
    let reader_log = log_path.clone();
    std::thread::Builder::new()
        .name("server-stderr".into())
        .spawn(move || drain(stderr, &reader_log, &found))
        .context("starting the stderr reader")?;
    let Ok(addr) = addr.recv_timeout(START_TIMEOUT) else {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        bail!(
            "{} did not announce its address within {START_TIMEOUT:?}:\n{log}",
            target.command
        );
    };
    target.addr = addr;
    Ok(target)
}

/// `binary serve` on a free loopback port on `store`, with `extra` flags.
fn serve(binary: &Path, store: &str, extra: &[String]) -> Command {
    let mut command = Command::new(binary);
    command
        .arg("serve")
        .args(["--listen", "127.0.0.1:0", "--store", store])
        .args(extra);
    command
}

/// Reads the server's stderr: the first `listening on http://ADDR` goes to `found`, every
/// line goes to the log.
fn drain(stderr: std::process::ChildStderr, log_path: &Path, found: &mpsc::Sender<SocketAddr>) {
    let mut log = std::fs::File::create(log_path).ok();
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        if let Some(rest) = line.split("listening on http://").nth(1) {
            let text = rest.split_whitespace().next().unwrap_or_default();
            if let Ok(addr) = text.trim_end_matches('/').parse() {
                let _ = found.send(addr);
            }
        }
        if let Some(log) = log.as_mut() {
            let _ = writeln!(log, "{line}");
        }
    }
}
