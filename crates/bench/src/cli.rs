//! The command line: one subcommand per scenario, plus `suite`, which runs every target
//! scenario against askgate and the Node.js baseline and compares them.
//!
//! Every scenario is bounded in count and time: a duration, a drain deadline after it, and a
//! connect timeout on every socket.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// askgate-bench: drives a gateway over real loopback sockets and measures it.
#[derive(Debug, Parser)]
#[command(name = "askgate-bench", version, about, long_about = None)]
pub(crate) struct Cli {
    /// The scenario.
    #[command(subcommand)]
    pub(crate) command: Command,
    /// Write the JSON summary to this file (default: print it to stdout after the table).
    #[arg(long, global = true)]
    pub(crate) json: Option<PathBuf>,
    /// Worker threads for the generator's runtime; 1 leaves the other core to the server.
    #[arg(long, global = true, default_value_t = 1)]
    pub(crate) client_threads: usize,
}

/// The scenarios.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// S sessions × T tabs; A agents ask at R asks/s for D seconds; one tab answers each.
    Fanout(FanoutCmd),
    /// N idle tabs, one per session: server RSS over its empty baseline, per tab.
    Idle(IdleCmd),
    /// C tab connects and disconnects per second for D seconds; checks nothing leaks.
    Churn(ChurnCmd),
    /// Every target scenario, against askgate and the Node.js baseline, with ratios.
    Suite(SuiteArgs),
    /// The fan-out over N askgate nodes on one Redis (started here), every tab on another
    /// node than its agent; then the same on one node on the embedded store, to compare.
    Nodes(NodesCmd),
    /// The fan-out quiet, then while N tabs of another session flood it with `history`
    /// frames: ask → first tab p99 side by side, and whether the flooded one is within 2×.
    HistoryFlood(FloodCmd),
    /// One session of 10,000 tabs asked twice a second beside the fan-out in sessions of
    /// their own: whether the big room slows the small sessions.
    Mixed(MixedCmd),
    /// Asks at a steady rate, each notifying one webhook served here on loopback: ask ->
    /// webhook delivered; then the same with the server killed (SIGKILL) partway and started
    /// again on its data: every accepted ask's notification must still come.
    Webhook(WebhookCmd),
    /// Idle tabs over several nodes on one Redis (started here), the generator in several
    /// processes: RSS per tab, closes while idle, and one ask reaching tabs on every node.
    IdleNodes(IdleNodesCmd),
    /// One generator process of `idle-nodes` (started by it).
    #[command(hide = true)]
    IdlePart(IdlePartArgs),
}

/// `mixed`: a target, the big room, and the small sessions' workload.
#[derive(Debug, Args)]
pub(crate) struct MixedCmd {
    /// Which server.
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// Tabs in the big room.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) room_tabs: usize,
    /// Asks a second in the big room (its first tab answers each).
    #[arg(long, default_value_t = 2.0)]
    pub(crate) room_rate: f64,
    /// The small sessions' workload (the figure: `--rate 500`).
    #[command(flatten)]
    pub(crate) load: FanoutArgs,
}

/// `history-flood`: a target, the flood and the measured workload.
#[derive(Debug, Args)]
pub(crate) struct FloodCmd {
    /// Which server.
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// Tabs flooding one session with `history` frames.
    #[arg(long, default_value_t = 100)]
    pub(crate) flood_tabs: usize,
    /// `history` frames a second each flooding tab sends (19: just under the default
    /// `--tab-frames-per-second`).
    #[arg(long, default_value_t = 19.0)]
    pub(crate) flood_rate: f64,
    /// Requests asked and answered in the flooded session first, for its history to show.
    #[arg(long, default_value_t = 50)]
    pub(crate) history: u64,
    /// The measured workload, in sessions of its own.
    #[command(flatten)]
    pub(crate) load: FanoutArgs,
}

/// `webhook`: the server and the workload.
#[derive(Debug, Args)]
pub(crate) struct WebhookCmd {
    /// The askgate binary.
    #[arg(long, default_value = "target/release/askgate")]
    pub(crate) askgate: PathBuf,
    /// Its store (`embedded` or `memory`; a SIGKILL loses a memory store's notifications).
    #[arg(long, default_value = "embedded")]
    pub(crate) store: String,
    /// Asks per second.
    #[arg(long, default_value_t = 1000.0)]
    pub(crate) rate: f64,
    /// Seconds of asking in the steady phase.
    #[arg(long, default_value_t = 20.0)]
    pub(crate) duration_s: f64,
    /// Sessions the asks go round.
    #[arg(long, default_value_t = 100)]
    pub(crate) sessions: usize,
    /// Seconds of asking before the SIGKILL in the second phase.
    #[arg(long, default_value_t = 5.0)]
    pub(crate) kill_after_s: f64,
    /// Skip the phase with the SIGKILL.
    #[arg(long)]
    pub(crate) no_kill: bool,
    /// Seconds to wait, after the asking, for notifications still to come.
    #[arg(long, default_value_t = 60.0)]
    pub(crate) drain_s: f64,
}

/// `idle-nodes`: the servers and the workload.
#[derive(Debug, Args)]
pub(crate) struct IdleNodesCmd {
    /// The askgate binary.
    #[arg(long, default_value = "target/release/askgate")]
    pub(crate) askgate: PathBuf,
    /// The redis-server binary.
    #[arg(long, default_value = "redis-server")]
    pub(crate) redis_server: String,
    /// Gateway nodes.
    #[arg(long, default_value_t = 5)]
    pub(crate) nodes: usize,
    /// Idle tabs in all (rounded up to whole sessions).
    #[arg(long, default_value_t = 95_000)]
    pub(crate) tabs: usize,
    /// Tabs a session, each on the next node.
    #[arg(long, default_value_t = 5)]
    pub(crate) tabs_per_session: usize,
    /// Generator processes (each holds its share of the sockets).
    #[arg(long, default_value_t = 5)]
    pub(crate) parts: usize,
    /// Seconds the tabs idle before the asks.
    #[arg(long, default_value_t = 300.0)]
    pub(crate) hold_s: f64,
    /// Sessions asked afterwards, one ask each.
    #[arg(long, default_value_t = 200)]
    pub(crate) asks: usize,
    /// Asks a second.
    #[arg(long, default_value_t = 20.0)]
    pub(crate) ask_rate: f64,
    /// Seconds to let RSS settle before reading it.
    #[arg(long, default_value_t = 3.0)]
    pub(crate) settle_s: f64,
    /// Tab connections in flight at once, in each generator process.
    #[arg(long, default_value_t = 64)]
    pub(crate) connect_concurrency: usize,
}

/// `idle-part`: which share of the plan this process connects.
#[derive(Debug, Args)]
pub(crate) struct IdlePartArgs {
    /// The plan `idle-nodes` wrote.
    #[arg(long)]
    pub(crate) plan: PathBuf,
    /// This process's number.
    #[arg(long)]
    pub(crate) part: usize,
    /// Processes in all.
    #[arg(long)]
    pub(crate) parts: usize,
    /// Tab connections in flight at once.
    #[arg(long, default_value_t = 64)]
    pub(crate) connect_concurrency: usize,
}

/// `nodes`: the binaries and the workload.
#[derive(Debug, Args)]
pub(crate) struct NodesCmd {
    /// The askgate binary.
    #[arg(long, default_value = "target/release/askgate")]
    pub(crate) askgate: PathBuf,
    /// Gateway nodes.
    #[arg(long, default_value_t = 3)]
    pub(crate) nodes: usize,
    /// The redis-server binary (started on a free port, append-only file synced on every write).
    #[arg(long, default_value = "redis-server")]
    pub(crate) redis_server: String,
    /// Skip the single-node run on the embedded store.
    #[arg(long)]
    pub(crate) skip_single: bool,
    /// Also run the workload on this many processes of the Node.js cluster baseline
    /// (`bench/node-baseline/cluster.js`) on a Redis of their own, and print the two side by
    /// side.
    #[arg(long)]
    pub(crate) node_cluster: Option<PathBuf>,
    /// The node executable for `--node-cluster`.
    #[arg(long, default_value = "node")]
    pub(crate) node: String,
    /// The workload (defaults for this scenario: 1,000 × 3 at 1,000 asks/s, the first tab
    /// answers, so every answer crosses to the agent's node too).
    #[command(flatten)]
    pub(crate) load: FanoutArgs,
}

/// `fanout`: a target and the workload.
#[derive(Debug, Args)]
pub(crate) struct FanoutCmd {
    /// Which server.
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// The workload.
    #[command(flatten)]
    pub(crate) load: FanoutArgs,
}

/// `idle`: a target and the workload.
#[derive(Debug, Args)]
pub(crate) struct IdleCmd {
    /// Which server.
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// The workload.
    #[command(flatten)]
    pub(crate) load: IdleArgs,
}

/// `churn`: a target and the workload.
#[derive(Debug, Args)]
pub(crate) struct ChurnCmd {
    /// Which server.
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// The workload.
    #[command(flatten)]
    pub(crate) load: ChurnArgs,
}

/// Which server to drive: spawn askgate, spawn the Node.js baseline, or attach to one.
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct TargetArgs {
    /// Spawn this askgate binary: `serve --listen 127.0.0.1:0 --data-dir <temp> --store <store>`.
    #[arg(long, conflicts_with_all = ["spawn_node", "addr"])]
    pub(crate) spawn: Option<PathBuf>,
    /// The spawned askgate's store.
    #[arg(long, value_enum, default_value_t = StoreArg::Embedded)]
    pub(crate) store: StoreArg,
    /// One more argument for the spawned askgate (repeat; e.g. `--server-arg=--tab-queue=128`).
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    pub(crate) server_args: Vec<String>,
    /// Spawn the Node.js baseline: `node <this file>` (bench/node-baseline/server.js).
    #[arg(long, conflicts_with = "addr")]
    pub(crate) spawn_node: Option<PathBuf>,
    /// The node executable.
    #[arg(long, default_value = "node")]
    pub(crate) node: String,
    /// A server already running at this address (`127.0.0.1:8080` or `ws://127.0.0.1:8080`).
    #[arg(long)]
    pub(crate) addr: Option<String>,
    /// That server's PID, to sample its RSS and CPU.
    #[arg(long, requires = "addr")]
    pub(crate) pid: Option<u32>,
}

/// The spawned askgate's `--store`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum StoreArg {
    /// Durable (redb in the temp data directory).
    #[default]
    Embedded,
    /// In memory.
    Memory,
}

impl StoreArg {
    /// The flag value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StoreArg::Embedded => "embedded",
            StoreArg::Memory => "memory",
        }
    }
}

/// Which tab answers each ask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AnswerRule {
    /// The session's first tab answers everything.
    First,
    /// One tab of the session, picked by hashing the request (spreads the answers).
    #[default]
    Random,
    /// Every tab answers: a race; all but one get `answer_rejected`.
    All,
}

/// The fan-out workload.
#[derive(Clone, Debug, Args, serde::Serialize)]
pub(crate) struct FanoutArgs {
    /// Sessions.
    #[arg(long, default_value_t = 1000)]
    pub(crate) sessions: usize,
    /// Tabs per session (at most 128).
    #[arg(long, default_value_t = 3)]
    pub(crate) tabs: usize,
    /// Agent connections (at most one per session); sessions are dealt round-robin.
    #[arg(long, default_value_t = 4)]
    pub(crate) agents: usize,
    /// Asks per second, all agents together, on a fixed schedule (no coordinated omission:
    /// a late ask is sent at once and its lateness is reported as `send lag`).
    #[arg(long, default_value_t = 2000.0)]
    pub(crate) rate: f64,
    /// Seconds of asking.
    #[arg(long, default_value_t = 60.0)]
    pub(crate) duration_s: f64,
    /// Shortest think time before a tab answers, in ms.
    #[arg(long, default_value_t = 0)]
    pub(crate) think_min_ms: u64,
    /// Longest think time (uniformly distributed), in ms.
    #[arg(long, default_value_t = 50)]
    pub(crate) think_max_ms: u64,
    /// Which tab answers.
    #[arg(long, value_enum, default_value_t = AnswerRule::Random)]
    pub(crate) answer: AnswerRule,
    /// `timeout_s` on every ask (none by default: no deadline timer per request).
    #[arg(long)]
    pub(crate) timeout_s: Option<f64>,
    /// Seconds to wait for outstanding outcomes after the last ask.
    #[arg(long, default_value_t = 15.0)]
    pub(crate) drain_s: f64,
    /// Sockets connecting at once during setup.
    #[arg(long, default_value_t = 128)]
    pub(crate) connect_concurrency: usize,
}

/// The idle-tab workload.
#[derive(Clone, Debug, Args, serde::Serialize)]
pub(crate) struct IdleArgs {
    /// Idle tabs, each in its own session.
    #[arg(long = "tabs", default_value_t = 10_000)]
    pub(crate) tabs: usize,
    /// Seconds to let the server settle before each RSS reading.
    #[arg(long, default_value_t = 3.0)]
    pub(crate) settle_s: f64,
    /// Sockets connecting at once.
    #[arg(long, default_value_t = 128)]
    pub(crate) connect_concurrency: usize,
}

/// The churn workload.
#[derive(Clone, Debug, Args, serde::Serialize)]
pub(crate) struct ChurnArgs {
    /// Tab connects (and as many disconnects) per second.
    #[arg(long, default_value_t = 500.0)]
    pub(crate) rate: f64,
    /// Seconds of churn.
    #[arg(long, default_value_t = 60.0)]
    pub(crate) duration_s: f64,
    /// Sessions the tabs are spread over.
    #[arg(long, default_value_t = 100)]
    pub(crate) sessions: usize,
    /// Percent of tabs that drop the TCP connection instead of closing cleanly.
    #[arg(long, default_value_t = 20)]
    pub(crate) abrupt_percent: u32,
    /// How long each tab stays after its snapshot, in ms.
    #[arg(long, default_value_t = 0)]
    pub(crate) hold_ms: u64,
    /// Seconds to settle after the churn before the final RSS and metrics.
    #[arg(long, default_value_t = 5.0)]
    pub(crate) settle_s: f64,
    /// Seconds of churn run first and not measured, so allocator warm-up is not read as a leak.
    #[arg(long, default_value_t = 5.0)]
    pub(crate) warmup_s: f64,
    /// Most connections in flight; a cycle due beyond it is skipped and counted.
    #[arg(long, default_value_t = 2000)]
    pub(crate) max_in_flight: usize,
}

/// `suite`: the four targets, askgate against the Node.js baseline.
#[derive(Debug, Args)]
pub(crate) struct SuiteArgs {
    /// The askgate binary.
    #[arg(long, default_value = "target/release/askgate")]
    pub(crate) askgate: PathBuf,
    /// The Node.js baseline server.
    #[arg(long, default_value = "bench/node-baseline/server.js")]
    pub(crate) node_server: PathBuf,
    /// The node executable.
    #[arg(long, default_value = "node")]
    pub(crate) node: String,
    /// What the askgate binary was built from (a commit), recorded in the JSON summary.
    #[arg(long)]
    pub(crate) askgate_version: Option<String>,
    /// Skip the Node.js baseline.
    #[arg(long)]
    pub(crate) skip_node: bool,
    /// Also run the 1,000 × 3 fan-out against askgate with `--store memory` (isolates the
    /// durable store's share of the latency).
    #[arg(long)]
    pub(crate) memory_store_too: bool,
    /// Run each scenario against each server this many times (alternating) and report the
    /// median: on a shared machine one run can be unlucky.
    #[arg(long, default_value_t = 1)]
    pub(crate) repeat: usize,
    /// Scale every duration by this factor (0.1 for a quick check).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) time_scale: f64,
    /// Run only these scenarios (comma-separated: idle, fanout100, fanout1000, churn).
    #[arg(long, value_delimiter = ',')]
    pub(crate) only: Vec<String>,
}
