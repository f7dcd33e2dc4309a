//! askgate-bench: a load generator for askgate (and the Node.js baseline), over real sockets
//! on loopback, measuring with HDR histograms.
//!
//! # Layout
//! - `cli`: the command line. `target`: the server under test (spawned or attached).
//! - `conn`: sockets and setup (`open` for viewer keys, `hello`). `frames`: the wire frames.
//! - `agent`, `tab`: the simulated peers of the fan-out. `tracker`: per-ask bookkeeping and
//!   the lost/doubled audit. `histo`: latency histograms.
//! - `fanout`, `idle`, `churn`: the scenarios. `nodes`: the fan-out over several nodes on one
//!   Redis, beside one node. `flood`: the fan-out quiet and beside a flood of `history`
//!   frames in another session. `mixed`: a big room beside the fan-out's small sessions.
//!   `webhook`: asks notifying a webhook served here, and a SIGKILL among them.
//!   `idle_nodes`: idle tabs over several nodes, the generator in processes of its own.
//!   `suite`: all of them, both servers;
//!   `targets`: the goals table and the ratios.
//! - `procstat`: RSS and CPU from `/proc`. `scrape`: `GET /metrics`. `report`: tables, JSON.

mod agent;
mod churn;
mod cli;
mod conn;
mod fanout;
mod flood;
mod frames;
mod histo;
mod idle;
mod idle_nodes;
mod mixed;
mod nodes;
mod procstat;
mod report;
mod scrape;
mod suite;
mod tab;
mod target;
mod targets;
mod tracker;
mod webhook;

use clap::Parser as _;

use crate::cli::{Cli, Command};
use crate::report::emit_json;
use crate::suite::Load;
use crate::target::Target;

/// Open files the generator asks for (10,000 tabs need as many sockets; the hard limit caps it).
const WANTED_OPEN_FILES: u64 = 1 << 20;

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // Raised before any server is spawned, so spawned servers inherit it too.
    let limit = rlimit::increase_nofile_limit(WANTED_OPEN_FILES)?;
    if limit < 25_000 {
        eprintln!("note: open-file limit is {limit}; large scenarios may run out of sockets");
    }
    let runtime = if cli.client_threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cli.client_threads)
            .enable_all()
            .build()?
    };
    runtime.block_on(run(cli))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let json = cli.json.as_deref();
    let threads = cli.client_threads.max(1);
    let (target_args, load) = match cli.command {
        Command::Fanout(cmd) => (cmd.target, Load::Fanout(cmd.load)),
        Command::Idle(cmd) => (cmd.target, Load::Idle(cmd.load)),
        Command::Churn(cmd) => (cmd.target, Load::Churn(cmd.load)),
        Command::Suite(args) => return suite::run(&args, json, threads).await,
        Command::HistoryFlood(cmd) => {
            // The measured workload's flags and one address for every tab, but the flooding
            // tabs face the gateway's default join rate, as a flooding script would (the
            // measured sessions' tabs join within it unless there are many per session).
            let mut flags = fanout::server_flags(&cmd.load);
            flags.push("--max-connections-per-address=0".into());
            if cmd.load.tabs > 20 {
                flags.push("--joins-per-session-per-second=1000000".into());
            }
            let target = Target::start(&cmd.target, &flags)?;
            eprintln!("server: {}", target.command);
            let report = flood::run(&cmd, &target, threads).await;
            target.stop();
            let report = report?;
            report.print();
            emit_json(json, &report)?;
            return Ok(());
        }
        Command::Mixed(cmd) => {
            let target = Target::start(&cmd.target, &mixed::server_flags(&cmd))?;
            eprintln!("server: {}", target.command);
            let report = mixed::run(&cmd, &target).await;
            target.stop();
            let report = report?;
            report.print();
            emit_json(json, &report)?;
            if !report.clean {
                anyhow::bail!("a run was not clean (lost or doubled frames: see above)");
            }
            return Ok(());
        }
        Command::IdleNodes(cmd) => {
            let report = idle_nodes::run(&cmd).await?;
            report.print();
            emit_json(json, &report)?;
            if !report.clean() {
                anyhow::bail!("a tab was closed, or an ask missed a tab (see above)");
            }
            return Ok(());
        }
        Command::IdlePart(args) => return idle_nodes::part(&args).await,
        Command::Webhook(cmd) => {
            let report = webhook::run(&cmd).await?;
            report.print();
            emit_json(json, &report)?;
            if !report.clean() {
                anyhow::bail!("a notification was lost (see above)");
            }
            return Ok(());
        }
        Command::Nodes(cmd) => {
            let reports = nodes::run(&cmd, threads).await?;
            emit_json(json, &reports)?;
            if reports.iter().any(|report| !report.clean) {
                anyhow::bail!("a run was not clean (lost, doubled or refused frames: see above)");
            }
            return Ok(());
        }
    };
    let target = Target::start(&target_args, &load.server_flags())?;
    eprintln!("server: {}", target.command);
    let report = load.run(&target, threads).await;
    target.stop();
    let report = report?;
    report.print();
    emit_json(json, &report)?;
    // A run that lost something fails, so scripts and CI notice.
    match report.fault() {
        Some(fault) => anyhow::bail!("the run was not clean: {fault}"),
        None => Ok(()),
    }
}
