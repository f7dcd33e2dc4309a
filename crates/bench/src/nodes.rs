//! `nodes`: the fan-out spread over several askgate nodes on one Redis, and the same workload
//! on one node on its embedded store, in one run, so that what a node of several costs is read
//! side by side. The Redis server is started here (a free port, a temp directory, the
//! settings askgate's docs ask for: append-only file synced on every write, no eviction) and
//! its CPU and memory are counted with the nodes'. Redis commands per resolved request come
//! from `INFO commandstats` before and after.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use crate::cli::NodesCmd;
use crate::fanout::{self, FanoutReport};
use crate::target::{Kind, Target};

/// How long Redis has to come up.
const REDIS_START: Duration = Duration::from_secs(20);

/// A Redis server of the run's own.
pub(crate) struct Redis {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Redis {
    pub(crate) fn start(binary: &str) -> anyhow::Result<Redis> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let dir =
            std::env::temp_dir().join(format!("askgate-bench-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let child = Command::new(binary)
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--maxmemory-policy",
                "noeviction",
            ])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {binary}"))?;
        let redis = Redis { child, port, dir };
        let deadline = Instant::now() + REDIS_START;
        while redis
            .command("PING")
            .map_or(true, |reply| !reply.starts_with("+PONG"))
        {
            if Instant::now() > deadline {
                bail!("redis-server did not answer on port {port}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(redis)
    }

    /// One inline command, its raw reply.
    fn command(&self, line: &str) -> anyhow::Result<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(format!("{line}\r\n").as_bytes())?;
        let mut reply = Vec::new();
        let mut buffer = [0u8; 65536];
        // A bulk reply's length comes first; read until it is all there.
        loop {
            let n = stream.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            reply.extend_from_slice(&buffer[..n]);
            let text = String::from_utf8_lossy(&reply);
            let complete = match text.strip_prefix('$') {
                Some(rest) => rest.split_once("\r\n").is_some_and(|(length, body)| {
                    body.len() >= length.parse::<usize>().unwrap_or(0)
                }),
                None => text.ends_with("\r\n"),
            };
            if complete {
                break;
            }
        }
        Ok(String::from_utf8_lossy(&reply).into_owned())
    }

    /// How many times Redis has run each command so far, and the microseconds it spent in
    /// them (a script's inner calls included, as `INFO commandstats` counts them: an
    /// `evalsha`'s time includes its inner calls).
    pub(crate) fn commands_run(&self) -> anyhow::Result<BTreeMap<String, (u64, u64)>> {
        let stats = self.command("INFO commandstats")?;
        Ok(stats.lines().filter_map(parse_commandstat).collect())
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

/// Runs `nodes`: askgate's nodes on a Redis of their own, then (`--node-cluster`) the Node.js
/// cluster baseline on another, then (unless skipped) one askgate node on its embedded store.
///
/// # Errors
/// A server does not start, or the run fails.
pub(crate) async fn run(
    cmd: &NodesCmd,
    client_threads: usize,
) -> anyhow::Result<Vec<FanoutReport>> {
    if cmd.nodes < 2 {
        bail!("--nodes must be at least 2");
    }
    let mut flags = fanout::server_flags(&cmd.load);
    flags.push("--max-connections-per-address=0".into());
    flags.push("--joins-per-session-per-second=1000000".into());
    let mut reports = Vec::new();
    {
        let redis = Redis::start(&cmd.redis_server)?;
        let nodes: Vec<Target> = (0..cmd.nodes)
            .map(|_| Target::spawn_askgate(&cmd.askgate, &redis.url(), &flags))
            .collect::<anyhow::Result<_>>()?;
        reports.push(on_redis(cmd, &redis, &nodes, client_threads).await?);
    }
    if let Some(script) = &cmd.node_cluster {
        let redis = Redis::start(&cmd.redis_server)?;
        let url = redis.url();
        let nodes: Vec<Target> = (0..cmd.nodes)
            .map(|_| Target::spawn_node(&cmd.node, script, &[("REDIS_URL", &url)]))
            .collect::<anyhow::Result<_>>()?;
        let cluster = on_redis(cmd, &redis, &nodes, client_threads).await?;
        print_side_by_side(&reports[0], &cluster);
        reports.push(cluster);
    }
    if !cmd.skip_single {
        let single = Target::spawn_askgate(&cmd.askgate, "embedded", &flags)?;
        let report = fanout::run(&cmd.load, &single, client_threads).await?;
        println!("\none node, embedded store, the same workload:");
        report.print();
        reports.push(report);
    }
    Ok(reports)
}

/// The workload spread over `nodes` (askgate or the Node.js cluster) on `redis`, with Redis's
/// commands per resolved request and, for askgate, each node's own counters of what crossed.
async fn on_redis(
    cmd: &NodesCmd,
    redis: &Redis,
    nodes: &[Target],
    client_threads: usize,
) -> anyhow::Result<FanoutReport> {
    let kind = nodes.first().map_or(Kind::External, |node| node.kind);
    eprintln!("{} {kind:?} nodes on {}", nodes.len(), redis.url());
    let before = redis.commands_run()?;
    let spread: Vec<&Target> = nodes.iter().collect();
    let report = fanout::run_spread(&cmd.load, &spread, &[redis.pid()], client_threads).await?;
    let after = redis.commands_run()?;
    for node in nodes.iter().filter(|node| node.kind == Kind::Askgate) {
        if let Ok(metrics) = crate::scrape::scrape(node.addr).await {
            let read = |name: &str| metrics.get(name).copied().unwrap_or(f64::NAN);
            eprintln!(
                "  node {}: resnapshots gap {} / resubscribed {} / behind {}, subscription reconnects {}, sweeps {}",
                node.addr,
                read("askgate_redis_resnapshots_total{cause=\"gap\"}"),
                read("askgate_redis_resnapshots_total{cause=\"resubscribed\"}"),
                read("askgate_redis_resnapshots_total{cause=\"behind\"}"),
                read("askgate_redis_subscription_reconnects_total"),
                read("askgate_redis_sweeps_total"),
            );
        }
    }
    let resolved = report.audit.asks.max(1) as f64;
    println!(
        "\n{} {} nodes on one Redis, commands per resolved request and Redis's time in them ({} requests):",
        cmd.nodes,
        match kind {
            Kind::Node => "Node.js cluster",
            _ => "askgate",
        },
        report.audit.asks
    );
    let deltas = command_deltas(&before, &after);
    println!("  {:<16} {:>8} {:>8}", "command", "calls", "µs");
    for (name, calls, usec) in &deltas {
        println!(
            "  {name:<16} {:>8.2} {:>8.2}",
            *calls as f64 / resolved,
            *usec as f64 / resolved
        );
    }
    report.print();
    Ok(report)
}

/// The comparison: cross-node first tab p99 and the CPU of every process (the nodes
/// and their Redis), askgate's beside the Node.js cluster's.
fn print_side_by_side(askgate: &FanoutReport, cluster: &FanoutReport) {
    let cpu = |report: &FanoutReport| {
        report
            .usage
            .server
            .as_ref()
            .map_or(f64::NAN, |usage| usage.cpu_pct)
    };
    println!("\nside by side (askgate nodes | Node.js cluster | ratio):");
    for (what, ours, theirs) in [
        (
            "ask -> first tab p99, ms",
            askgate.ask_to_first_tab.p99_ms,
            cluster.ask_to_first_tab.p99_ms,
        ),
        (
            "answer -> agent p99, ms",
            askgate.answer_to_outcome.p99_ms,
            cluster.answer_to_outcome.p99_ms,
        ),
        ("CPU of every process, %", cpu(askgate), cpu(cluster)),
    ] {
        println!(
            "  {what:<26} {ours:>8.2} | {theirs:>8.2} | {:>5.2} x",
            ours / theirs
        );
    }
    println!(
        "  clean (0 lost, 0 doubled)  {:>8} | {:>8}",
        askgate.clean, cluster.clean
    );
}

/// What Redis ran between two [`Redis::commands_run`] readings: each command's calls and
/// microseconds, those it ran at all, the most time first.
pub(crate) fn command_deltas(
    before: &BTreeMap<String, (u64, u64)>,
    after: &BTreeMap<String, (u64, u64)>,
) -> Vec<(String, u64, u64)> {
    let mut deltas: Vec<(String, u64, u64)> = after
        .iter()
        .map(|(name, (calls, usec))| {
            let (calls_before, usec_before) = before.get(name).copied().unwrap_or((0, 0));
            (
                name.clone(),
                calls.saturating_sub(calls_before),
                usec.saturating_sub(usec_before),
            )
        })
        .filter(|(_, calls, _)| *calls > 0)
        .collect();
    deltas.sort_by_key(|(_, _, usec)| std::cmp::Reverse(*usec));
    deltas
}

/// One `cmdstat_NAME:calls=N,usec=N,...` line of `INFO commandstats`: the name, calls and
/// microseconds.
fn parse_commandstat(line: &str) -> Option<(String, (u64, u64))> {
    let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
    let field = |key: &str| -> Option<u64> {
        rest.split(',')
            .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))?
            .trim()
            .parse()
            .ok()
    };
    Some((name.to_owned(), (field("calls")?, field("usec")?)))
}

#[cfg(test)]
mod tests {
    use super::parse_commandstat;

    #[test]
    fn a_commandstat_line_gives_its_calls_and_microseconds() {
        let line = "cmdstat_evalsha:calls=1200,usec=34567,usec_per_call=28.81,rejected_calls=0,failed_calls=0";
        assert_eq!(
            parse_commandstat(line),
            Some(("evalsha".to_owned(), (1200, 34567)))
        );
        assert_eq!(parse_commandstat("# Commandstats"), None);
        assert_eq!(parse_commandstat("cmdstat_get:calls=3"), None);
    }
}
