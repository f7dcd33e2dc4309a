//! `suite`: the four target scenarios, each against a fresh askgate (durable store) and a
//! fresh Node.js baseline, alternating, on the same machine; `--repeat N` runs each pair N
//! times and reports the median (the machine may be shared: one run can be unlucky). Then one
//! table of targets with both servers' figures and their ratio, and `results.json`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::churn;
use crate::cli::{AnswerRule, ChurnArgs, FanoutArgs, IdleArgs, StoreArg, SuiteArgs, TargetArgs};
use crate::fanout;
use crate::idle;
use crate::report::{Machine, emit_json};
use crate::target::Target;
use crate::targets::{self, Report, Runs};

/// Pause between runs, so one run's closing sockets do not weigh on the next.
const BETWEEN_RUNS: Duration = Duration::from_secs(3);

/// A scenario with its workload.
pub(crate) enum Load {
    Idle(IdleArgs),
    Fanout(FanoutArgs),
    Churn(ChurnArgs),
}

impl Load {
    /// Runs the scenario against `target`.
    pub(crate) async fn run(&self, target: &Target, threads: usize) -> anyhow::Result<Report> {
        Ok(match self {
            Load::Idle(a) => Report::Idle(idle::run(a, target, threads).await?),
            Load::Fanout(a) => Report::Fanout(Box::new(fanout::run(a, target, threads).await?)),
            Load::Churn(a) => Report::Churn(churn::run(a, target, threads).await?),
        })
    }

    /// Flags the scenario needs the server started with.
    pub(crate) fn server_flags(&self) -> Vec<String> {
        let mut flags = match self {
            Load::Fanout(a) => fanout::server_flags(a),
            _ => Vec::new(),
        };
        // Every tab of the generator comes from this one address, and joins in a crowd: the
        // limits that protect a gateway from one client would stop the workload itself.
        flags.push("--max-connections-per-address=0".into());
        flags.push("--joins-per-session-per-second=1000000".into());
        flags
    }
}

impl Report {
    /// What went wrong in the run, if anything: lost or doubled frames, a leak, dropped tabs.
    pub(crate) fn fault(&self) -> Option<String> {
        match self {
            Report::Idle(r) if r.dropped_while_idle > 0 => {
                Some(format!("{} tabs dropped while idle", r.dropped_while_idle))
            }
            Report::Fanout(r) if !r.clean => Some(format!(
                "{} asks lost, doubled or unsent; drained: {}",
                r.audit.faults(),
                r.drained
            )),
            Report::Churn(r) if !r.leak_free => Some("something leaked".into()),
            _ => None,
        }
    }

    /// Prints the report's tables.
    pub(crate) fn print(&self) {
        match self {
            Report::Idle(r) => r.print(),
            Report::Fanout(r) => r.print(),
            Report::Churn(r) => r.print(),
        }
    }
}

/// Runs the suite; writes the JSON summary to `json_path` (or stdout).
///
/// # Errors
/// A server cannot be started or a scenario's setup fails.
pub(crate) async fn run(
    args: &SuiteArgs,
    json_path: Option<&Path>,
    threads: usize,
) -> anyhow::Result<()> {
    let scale = args.time_scale.max(0.01);
    let machine = Machine::read();
    println!(
        "askgate-bench suite on {} × {} ({:.0} GiB), kernel {}; time scale {scale}, {} repeat(s)",
        machine.cpus, machine.cpu_model, machine.memory_gib, machine.kernel, args.repeat
    );
    let mut all = serde_json::Map::new();
    let mut rows = Vec::new();
    let wanted = |name: &str| args.only.is_empty() || args.only.iter().any(|o| o == name);

    if wanted("idle") {
        let load = Load::Idle(IdleArgs {
            tabs: 10_000,
            settle_s: 3.0,
            connect_concurrency: 128,
        });
        let runs = repeat(args, &load, threads, false).await?;
        rows.extend(targets::idle_rows(&runs));
        all.insert("idle_10k".into(), to_json(runs));
    }

    if wanted("fanout100") {
        let load = Load::Fanout(FanoutArgs {
            sessions: 1,
            tabs: 100,
            agents: 1,
            rate: 100.0,
            duration_s: 30.0 * scale,
            ..answered_fanout()
        });
        let runs = repeat(args, &load, threads, false).await?;
        rows.extend(targets::fanout100_rows(&runs));
        all.insert("fanout_1x100".into(), to_json(runs));
    }

    if wanted("fanout1000") {
        let load = Load::Fanout(FanoutArgs {
            sessions: 1000,
            tabs: 3,
            agents: 4,
            rate: 2000.0,
            duration_s: 60.0 * scale,
            ..answered_fanout()
        });
        let runs = repeat(args, &load, threads, args.memory_store_too).await?;
        rows.extend(targets::fanout1000_rows(&runs));
        all.insert("fanout_1000x3".into(), to_json(runs));
    }

    if wanted("churn") {
        let load = Load::Churn(ChurnArgs {
            rate: 500.0,
            duration_s: 60.0 * scale,
            sessions: 100,
            abrupt_percent: 20,
            hold_ms: 0,
            settle_s: 5.0,
            warmup_s: 5.0 * scale,
            max_in_flight: 2000,
        });
        let runs = repeat(args, &load, threads, false).await?;
        rows.extend(targets::churn_rows(&runs));
        all.insert("churn".into(), to_json(runs));
    }

    targets::print(&rows);
    let summary = json!({
        "machine": machine,
        "askgate_version": args.askgate_version,
        "node_version": node_version(&args.node),
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "finished_unix_s": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        "targets": rows,
        "runs": all,
    });
    emit_json(json_path, &summary)?;
    let missed = targets::missed(&rows);
    if !missed.is_empty() {
        anyhow::bail!("targets not met: {}", missed.join("; "));
    }
    Ok(())
}

/// The fan-out workload both fan-out scenarios share: one tab answers each request after a
/// think time of 0–50 ms, no deadline, 15 s to drain. Each scenario sets its own size, agents,
/// rate and duration over these.
fn answered_fanout() -> FanoutArgs {
    FanoutArgs {
        sessions: 1,
        tabs: 1,
        agents: 1,
        rate: 1.0,
        duration_s: 1.0,
        think_min_ms: 0,
        think_max_ms: 50,
        answer: AnswerRule::Random,
        timeout_s: None,
        drain_s: 15.0,
        connect_concurrency: 128,
    }
}

/// `node --version`, if node runs.
fn node_version(node: &str) -> Option<String> {
    let out = std::process::Command::new(node)
        .arg("--version")
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The servers to compare: askgate (durable), the baseline, and optionally askgate in memory.
fn servers(args: &SuiteArgs, memory_too: bool) -> Vec<(&'static str, TargetArgs)> {
    let mut list = vec![(
        "askgate",
        TargetArgs {
            spawn: Some(args.askgate.clone()),
            store: StoreArg::Embedded,
            ..TargetArgs::default()
        },
    )];
    if !args.skip_node {
        list.push((
            "node",
            TargetArgs {
                spawn_node: Some(args.node_server.clone()),
                node: args.node.clone(),
                ..TargetArgs::default()
            },
        ));
    }
    if memory_too {
        list.push((
            "askgate-memory",
            TargetArgs {
                spawn: Some(args.askgate.clone()),
                store: StoreArg::Memory,
                ..TargetArgs::default()
            },
        ));
    }
    list
}

/// Runs `load` against every server, `args.repeat` rounds, a fresh server each time.
async fn repeat(
    args: &SuiteArgs,
    load: &Load,
    threads: usize,
    memory_too: bool,
) -> anyhow::Result<Runs> {
    let mut runs = Vec::new();
    for _ in 0..args.repeat.max(1) {
        for (name, target) in servers(args, memory_too) {
            let server = Target::start(&target, &load.server_flags())?;
            let report = load.run(&server, threads).await;
            server.stop();
            let report = report?;
            report.print();
            runs.push((name, report));
            tokio::time::sleep(BETWEEN_RUNS).await;
        }
    }
    Ok(runs)
}

fn to_json(runs: Runs) -> Value {
    let mut by_server = serde_json::Map::new();
    for (name, report) in runs {
        let entry = by_server
            .entry(name)
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = entry {
            list.push(json!(report));
        }
    }
    Value::Object(by_server)
}
