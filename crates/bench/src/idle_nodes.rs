//! `idle-nodes`: many idle tabs over several askgate nodes on one Redis, the generator split
//! over processes of its own (`idle-part`), since one process may hold no more sockets than
//! the open-file limit allows. Each session has a tab on every node (with as many tabs a
//! session as nodes), so one ask reaches tabs on all of them.
//!
//! Measured: each node's RSS empty, with its tabs (`--settle-s` after they connected) and
//! again at the end of the hold, summed and divided by the tabs; tabs the servers closed while
//! they idled for `--hold-s`; the CPU of the nodes and Redis and Redis's commands a second
//! meanwhile; then asks in some of the sessions, and how long each took to
//! reach every one of its tabs (sent and received times from the system clock, which the
//! processes share).

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use futures_util::{SinkExt as _, StreamExt as _};
use serde::Serialize;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;

use crate::cli::{IdleNodesCmd, IdlePartArgs};
use crate::conn;
use crate::frames::{self, Kind};
use crate::histo::{Hist, Summary};
use crate::nodes::{Redis, command_deltas};
use crate::procstat::{self, mib};
use crate::report::{load_average, thousands};
use crate::scrape;
use crate::target::Target;

/// How long the generator processes have to connect their tabs.
const SETUP_TIMEOUT: Duration = Duration::from_secs(900);
/// How long after the last ask its `request` frames are waited for.
const ASK_DRAIN: Duration = Duration::from_secs(5);

/// What a run measured.
#[derive(Debug, Serialize)]
pub(crate) struct IdleNodesReport {
    /// `"idle-nodes"`.
    pub(crate) scenario: &'static str,
    /// Nodes, tabs, tabs a session, generator processes.
    pub(crate) nodes: usize,
    /// Tabs connected.
    pub(crate) tabs: usize,
    /// Tabs each session has, one a node while there are no more than nodes.
    pub(crate) tabs_per_session: usize,
    /// Load average at the start and the end.
    pub(crate) load: (f64, f64),
    /// Each node's RSS empty and loaded, MiB.
    pub(crate) rss_empty_mib: Vec<f64>,
    /// The same with the tabs connected and settled.
    pub(crate) rss_loaded_mib: Vec<f64>,
    /// (loaded − empty) summed over the nodes, per tab.
    pub(crate) bytes_per_tab: f64,
    /// Each node's RSS again at the end of the idle hold, MiB: what the tabs cost once the
    /// memory their connecting freed has been given back (or not).
    pub(crate) rss_held_mib: Vec<f64>,
    /// (held − empty) summed over the nodes, per tab.
    pub(crate) bytes_per_tab_held: f64,
    /// Seconds the tabs took to connect.
    pub(crate) setup_s: f64,
    /// Seconds they then idled.
    pub(crate) hold_s: f64,
    /// Tabs a server closed while they idled.
    pub(crate) closed_while_idle: u64,
    /// CPU of the nodes and Redis while the tabs idled, % of one core.
    pub(crate) idle_cpu_pct: f64,
    /// Redis commands a second while the tabs idled, by command, and the share of Redis's
    /// core spent in them (%; a script's includes its inner calls').
    pub(crate) idle_redis_commands_per_s: Vec<(String, f64, f64)>,
    /// Sessions asked, one ask each.
    pub(crate) asks: usize,
    /// Ask sent → a tab's `request`, over every tab of the asked sessions.
    pub(crate) ask_to_tab: Summary,
    /// Tabs of the asked sessions that never got their `request`.
    pub(crate) missed: u64,
}

impl IdleNodesReport {
    pub(crate) fn print(&self) {
        println!(
            "\nidle-nodes: {} tabs over {} nodes on one Redis, {} a session (load average {:.1} -> {:.1})",
            thousands(self.tabs as f64),
            self.nodes,
            self.tabs_per_session,
            self.load.0,
            self.load.1
        );
        let list = |values: &[f64]| {
            values
                .iter()
                .map(|v| format!("{v:.1}"))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        println!("  node RSS empty, MiB       {}", list(&self.rss_empty_mib));
        println!("  node RSS with tabs, MiB   {}", list(&self.rss_loaded_mib));
        println!(
            "  RSS per tab over the empty nodes: {} B (target <= 4,096)",
            thousands(self.bytes_per_tab)
        );
        println!(
            "  node RSS after the idle hold, MiB {}; per tab {} B",
            list(&self.rss_held_mib),
            thousands(self.bytes_per_tab_held)
        );
        println!(
            "  setup {:.0} s; idled {:.0} s; closed by a server meanwhile: {} (target 0)",
            self.setup_s, self.hold_s, self.closed_while_idle
        );
        println!(
            "  while idle: nodes + Redis {:.0} % of a core; Redis commands a second, and % of its core in them:",
            self.idle_cpu_pct
        );
        for (name, per_s, core_pct) in self.idle_redis_commands_per_s.iter().take(8) {
            println!("    {name:<16} {per_s:>9.0} {core_pct:>6.1} %");
        }
        let s = &self.ask_to_tab;
        println!(
            "  {} asks, each to a session's {} tabs on {} nodes: ask -> tab p50 {:.2} p99 {:.2} max {:.2} ms over {} tabs (target p99 <= 50); missed {}",
            self.asks,
            self.tabs_per_session,
            self.nodes.min(self.tabs_per_session),
            s.p50_ms,
            s.p99_ms,
            s.max_ms,
            s.count,
            self.missed
        );
    }

    pub(crate) fn clean(&self) -> bool {
        self.closed_while_idle == 0 && self.missed == 0
    }
}

/// The node and generator process of tab `index` of session `session`.
fn placement(
    session: usize,
    index: usize,
    tabs_per_session: usize,
    (nodes, parts): (usize, usize),
) -> (usize, usize) {
    let node = (session + index) % nodes;
    let part = (session * tabs_per_session + index) % parts;
    (node, part)
}

/// Runs `idle-nodes`.
///
/// # Errors
/// A server or a generator process does not start, or the tabs cannot connect.
pub(crate) async fn run(cmd: &IdleNodesCmd) -> anyhow::Result<IdleNodesReport> {
    if cmd.nodes == 0 || cmd.parts == 0 || cmd.tabs_per_session == 0 {
        bail!("--nodes, --parts and --tabs-per-session must be at least 1");
    }
    let load_start = load_average();
    let sessions = cmd.tabs.div_ceil(cmd.tabs_per_session);
    let tabs = sessions * cmd.tabs_per_session;
    let redis = Redis::start(&cmd.redis_server)?;
    let flags: Vec<String> = vec![
        "--max-connections-per-address=0".into(),
        "--joins-per-session-per-second=1000000".into(),
    ];
    let nodes: Vec<Target> = (0..cmd.nodes)
        .map(|_| Target::spawn_askgate(&cmd.askgate, &redis.url(), &flags))
        .collect::<anyhow::Result<_>>()?;
    eprintln!("{} nodes on {}", nodes.len(), redis.url());

    let names: Vec<String> = (0..sessions).map(|i| format!("n{i}")).collect();
    let keys = conn::open_sessions(nodes[0].addr, &names).await?;
    let _ = scrape::wait_until(nodes[0].addr, Duration::from_secs(30), |m| {
        m.get("askgate_sessions").is_none_or(|v| *v == 0.0)
    })
    .await;
    let settle = Duration::from_secs_f64(cmd.settle_s);
    tokio::time::sleep(settle).await;
    let rss_empty = nodes_rss(&nodes).await?;

    // The plan every generator process reads: the nodes, then a session and its key a line.
    let plan = std::env::temp_dir().join(format!(
        "askgate-bench-idle-nodes-{}.plan",
        std::process::id()
    ));
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&plan)?);
        let addrs: Vec<String> = nodes.iter().map(|n| n.addr.to_string()).collect();
        writeln!(file, "{} {}", cmd.tabs_per_session, addrs.join(" "))?;
        for name in &names {
            let key = keys
                .get(name)
                .with_context(|| format!("no key for {name}"))?;
            writeln!(file, "{name} {key}")?;
        }
    }
    let began = Instant::now();
    let mut parts = Vec::new();
    for part in 0..cmd.parts {
        parts.push(Part::spawn(
            &plan,
            part,
            cmd.parts,
            cmd.connect_concurrency,
        )?);
    }
    let result = measure(
        cmd, &nodes, &redis, &names, &mut parts, began, &rss_empty, tabs,
    )
    .await;
    for part in &mut parts {
        part.kill();
    }
    let _ = std::fs::remove_file(&plan);
    let mut report = result?;
    report.load = (load_start, load_average());
    Ok(report)
}

#[allow(clippy::too_many_arguments)]
async fn measure(
    cmd: &IdleNodesCmd,
    nodes: &[Target],
    redis: &Redis,
    names: &[String],
    parts: &mut [Part],
    began: Instant,
    rss_empty: &[u64],
    tabs: usize,
) -> anyhow::Result<IdleNodesReport> {
    let mut connected = 0;
    for part in parts.iter_mut() {
        connected += part.ready()?;
    }
    if connected != tabs {
        bail!("{connected} of {tabs} tabs connected");
    }
    let setup_s = began.elapsed().as_secs_f64();
    eprintln!(
        "{tabs} tabs connected in {setup_s:.0} s; idling {} s",
        cmd.hold_s
    );
    tokio::time::sleep(Duration::from_secs_f64(cmd.settle_s)).await;
    let rss_loaded = nodes_rss(nodes).await?;

    let mut pids: Vec<u32> = nodes.iter().filter_map(|n| n.pid).collect();
    pids.push(redis.pid());
    let cpu_from = procstat::read_sum(&pids);
    let commands_before = redis.commands_run()?;
    let hold = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(cmd.hold_s)).await;
    let hold_s = hold.elapsed().as_secs_f64();
    let idle_cpu_pct = match (cpu_from, procstat::read_sum(&pids)) {
        (Some(from), Some(to)) => procstat::cpu_percent(&from, &to),
        _ => f64::NAN,
    };
    let commands_after = redis.commands_run()?;
    let rss_held = nodes_rss(nodes).await?;
    // Calls a second, and microseconds a second as a percentage of a core.
    let idle_redis_commands_per_s: Vec<(String, f64, f64)> =
        command_deltas(&commands_before, &commands_after)
            .into_iter()
            .map(|(name, calls, usec)| {
                (name, calls as f64 / hold_s, usec as f64 / hold_s / 10_000.0)
            })
            .collect();

    // One ask in each of the first sessions, from an agent on the first node.
    let asks = cmd.asks.min(names.len());
    let mut agent = conn::connect(nodes[0].addr, "/v1/agent").await?;
    let mut sent_ns = HashMap::new();
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / cmd.ask_rate));
    for (seq, name) in names.iter().take(asks).enumerate() {
        ticker.tick().await;
        sent_ns.insert(format!("q{seq}"), epoch_ns());
        agent
            .send(Message::text(frames::ask(name, seq as u64, None)))
            .await?;
    }
    tokio::time::sleep(ASK_DRAIN).await;

    let mut closed_while_idle = 0;
    let latency = Hist::new();
    let mut reached = 0u64;
    for part in parts.iter_mut() {
        let (closed, arrivals) = part.stop()?;
        closed_while_idle += closed;
        for (id, at_ns) in arrivals {
            if let Some(sent) = sent_ns.get(&id) {
                reached += 1;
                latency.record_ns(at_ns.saturating_sub(*sent));
            }
        }
    }
    let expected = (asks * cmd.tabs_per_session) as u64;
    Ok(IdleNodesReport {
        scenario: "idle-nodes",
        nodes: nodes.len(),
        tabs,
        tabs_per_session: cmd.tabs_per_session,
        load: (0.0, 0.0),
        rss_empty_mib: rss_empty.iter().map(|b| mib(*b)).collect(),
        rss_loaded_mib: rss_loaded.iter().map(|b| mib(*b)).collect(),
        bytes_per_tab: growth(&rss_loaded, rss_empty) as f64 / tabs.max(1) as f64,
        rss_held_mib: rss_held.iter().map(|b| mib(*b)).collect(),
        bytes_per_tab_held: growth(&rss_held, rss_empty) as f64 / tabs.max(1) as f64,
        setup_s,
        hold_s,
        closed_while_idle,
        idle_cpu_pct,
        idle_redis_commands_per_s,
        asks,
        ask_to_tab: latency.summary(),
        missed: expected.saturating_sub(reached),
    })
}

/// Each node's settled RSS, in bytes.
async fn nodes_rss(nodes: &[Target]) -> anyhow::Result<Vec<u64>> {
    let mut rss = Vec::new();
    for node in nodes {
        rss.push(
            procstat::settled_rss(node.pid)
                .await
                .context("a node's RSS")?,
        );
    }
    Ok(rss)
}

/// How much the nodes grew from `empty` to `now`, summed.
fn growth(now: &[u64], empty: &[u64]) -> u64 {
    now.iter()
        .zip(empty)
        .map(|(now, empty)| now.saturating_sub(*empty))
        .sum()
}

fn epoch_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A generator process of the run.
struct Part {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Part {
    fn spawn(plan: &Path, part: usize, parts: usize, concurrency: usize) -> anyhow::Result<Part> {
        let exe = std::env::current_exe().context("the generator's own path")?;
        let mut child = Command::new(exe)
            .args(["idle-part", "--plan"])
            .arg(plan)
            .args([
                "--part",
                &part.to_string(),
                "--parts",
                &parts.to_string(),
                "--connect-concurrency",
                &concurrency.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting a generator process")?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .context("a generator process's stdout")?;
        Ok(Part {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        })
    }

    fn line(&mut self) -> anyhow::Result<String> {
        self.lines
            .next()
            .context("a generator process ended early")?
            .context("reading a generator process")
    }

    /// Waits for `ready N` (blocking: the parent has nothing else to do meanwhile).
    fn ready(&mut self) -> anyhow::Result<usize> {
        let deadline = Instant::now() + SETUP_TIMEOUT;
        loop {
            let line = self.line()?;
            if let Some(n) = line.strip_prefix("ready ") {
                return n.trim().parse().context("a ready line");
            }
            if let Some(why) = line.strip_prefix("failed ") {
                bail!("a generator process failed: {why}");
            }
            if Instant::now() > deadline {
                bail!("a generator process was not ready in time");
            }
        }
    }

    /// Tells it to stop; what it saw: tabs closed by a server, and `request` arrivals.
    fn stop(&mut self) -> anyhow::Result<(u64, Vec<(String, u64)>)> {
        drop(self.stdin.take());
        let mut closed = 0;
        let mut arrivals = Vec::new();
        loop {
            let line = self.line()?;
            if let Some(n) = line.strip_prefix("closed ") {
                closed = n.trim().parse()?;
            } else if let Some(rest) = line.strip_prefix("arrival ") {
                let (id, at) = rest.split_once(' ').context("an arrival line")?;
                arrivals.push((id.to_owned(), at.trim().parse()?));
            } else if line == "done" {
                return Ok((closed, arrivals));
            }
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `idle-part`: one generator process's share of the tabs. Prints `ready N` once they are all
/// connected, idles (reading, so pings are answered, and noting when each `request` comes)
/// until its stdin closes, then prints `closed N`, an `arrival ID EPOCH_NS` line a `request`
/// and `done`.
///
/// # Errors
/// The plan cannot be read.
pub(crate) async fn part(args: &IdlePartArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.plan)
        .with_context(|| format!("reading {}", args.plan.display()))?;
    let mut lines = text.lines();
    let header = lines.next().context("an empty plan")?;
    let mut fields = header.split_whitespace();
    let tabs_per_session: usize = fields.next().context("no tabs a session")?.parse()?;
    let addrs: Vec<std::net::SocketAddr> = fields.map(str::parse).collect::<Result<_, _>>()?;
    let closed = Arc::new(AtomicU64::new(0));
    let arrivals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (stop, stopped) = watch::channel(false);
    let (ready_tx, mut ready) = mpsc::channel::<anyhow::Result<()>>(1024);
    let gate = Arc::new(Semaphore::new(args.connect_concurrency.max(1)));
    let mut tabs = JoinSet::new();
    let mut mine = 0;
    for (s, line) in lines.enumerate() {
        let (name, key) = line.split_once(' ').context("a plan line")?;
        for index in 0..tabs_per_session {
            let (node, part) = placement(s, index, tabs_per_session, (addrs.len(), args.parts));
            if part != args.part {
                continue;
            }
            mine += 1;
            let (addr, name, key) = (addrs[node], name.to_owned(), key.to_owned());
            let (gate, ready, stopped) = (Arc::clone(&gate), ready_tx.clone(), stopped.clone());
            let (closed, arrivals) = (Arc::clone(&closed), Arc::clone(&arrivals));
            tabs.spawn(async move {
                let permit = gate.acquire_owned().await;
                let joined = conn::join_tab(addr, &name, &key, &format!("t{s}-{index}")).await;
                drop(permit);
                match joined {
                    Ok(ws) => {
                        let _ = ready.send(Ok(())).await;
                        idle(ws, stopped, &closed, &arrivals).await;
                    }
                    Err(e) => {
                        let _ = ready.send(Err(e)).await;
                    }
                }
            });
        }
    }
    drop(ready_tx);
    for _ in 0..mine {
        match ready.recv().await {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                println!("failed {e:#}");
                return Ok(());
            }
            None => break,
        }
    }
    println!("ready {mine}");
    // Until the parent closes stdin.
    tokio::task::spawn_blocking(|| {
        let mut sink = String::new();
        while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    })
    .await?;
    let closed_while_idle = closed.load(Ordering::Relaxed);
    let _ = stop.send(true);
    while tabs.join_next().await.is_some() {}
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    writeln!(out, "closed {closed_while_idle}")?;
    for (id, at) in arrivals
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
    {
        writeln!(out, "arrival {id} {at}")?;
    }
    writeln!(out, "done")?;
    out.flush()?;
    Ok(())
}

/// Holds a tab open until `stop` flips, noting each `request`'s arrival; a close by the
/// server is counted.
async fn idle(
    mut ws: conn::Ws,
    mut stop: watch::Receiver<bool>,
    closed: &AtomicU64,
    arrivals: &std::sync::Mutex<Vec<(String, u64)>>,
) {
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            message = ws.next() => match message {
                Some(Ok(Message::Close(_)) | Err(_)) | None => {
                    closed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Some(Ok(Message::Text(text))) => {
                    let at = epoch_ns();
                    if let Some(frame) = frames::parse(&text)
                        && frame.kind == Kind::Request
                        && let Some(request) = frame.request
                    {
                        arrivals
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .push((request.id.into_owned(), at));
                    }
                }
                Some(Ok(_)) => {}
            },
        }
    }
    conn::close(ws).await;
}

#[cfg(test)]
mod tests {
    use super::placement;

    #[test]
    fn a_session_has_a_tab_on_every_node_and_the_processes_share_the_tabs_evenly() {
        let (nodes, parts, per_session) = (5, 5, 5);
        let mut per_part = vec![0; parts];
        for session in 0..1000 {
            let mut on = vec![false; nodes];
            for index in 0..per_session {
                let (node, part) = placement(session, index, per_session, (nodes, parts));
                on[node] = true;
                per_part[part] += 1;
            }
            assert!(on.iter().all(|o| *o), "session {session}");
        }
        assert!(per_part.iter().all(|n| *n == 1000), "{per_part:?}");
    }
}
