//! The mixed scenario: does a big room slow the small sessions beside it?
//!
//! One session with `--room-tabs` tabs (10,000 by default) is asked `--room-rate` times a
//! second by its agent, its first tab answering; beside it, on the same gateway, the fan-out
//! workload runs in sessions of its own (1,000 × 3 at 500 asks/s in the figure). The
//! room runs on a thread and runtime of its own, so reading its tabs does not delay the small
//! sessions' tabs in the generator. The small run starts once the room's tabs have joined and
//! it has asked for a few seconds, and the room keeps asking until the small run is over.
//! Both runs are reported; the small sessions' first tab p99 and answer → agent p99 are the
//! figures a big room must not move.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context as _;
use serde::Serialize;

use crate::cli::{AnswerRule, MixedCmd};
use crate::fanout::{self, FanoutReport};
use crate::report::Table;
use crate::scrape;
use crate::target::Target;

/// How long the room asks, after its tabs have joined, before the small run starts.
const WARM_UP: Duration = Duration::from_secs(3);
/// The longest the room's tabs get to join.
const JOIN_DEADLINE: Duration = Duration::from_secs(120);
/// How much longer than the small run the room asks: the small run's own setup (its tabs
/// joining) and drain fit within it.
const ROOM_MARGIN_S: f64 = 30.0;

/// The small sessions' p99 targets (issue 46): first tab, and answer → agent, in ms.
pub(crate) const SMALL_FIRST_TAB_P99_MS: f64 = 5.0;
/// See [`SMALL_FIRST_TAB_P99_MS`].
pub(crate) const SMALL_ANSWER_P99_MS: f64 = 10.0;

/// Both runs.
#[derive(Debug, Serialize)]
pub(crate) struct MixedReport {
    /// `"mixed"`.
    pub(crate) scenario: &'static str,
    /// The small sessions, measured while the room asked.
    pub(crate) small: FanoutReport,
    /// The big room (over its whole run, which spans the small one).
    pub(crate) room: FanoutReport,
    /// Whether the small sessions met both targets.
    pub(crate) small_within_targets: bool,
    /// The server's own account over the small run (room included, a few asks in hundreds):
    /// the upper bound, ms, of the bucket holding the p99 of its hand-over histograms, from
    /// an ask accepted to its frame queued to the first tab, and from a deciding answer to the
    /// outcome queued to the agent. Set beside the generator's figures, they tell the
    /// server's delays from the generator's own (on two cores the room's reading competes with
    /// the small sessions' for a core).
    pub(crate) server_ask_to_tab_p99_bucket_ms: Option<f64>,
    /// See [`MixedReport::server_ask_to_tab_p99_bucket_ms`].
    pub(crate) server_answer_to_agent_p99_bucket_ms: Option<f64>,
    /// Whether both runs were clean (nothing lost or doubled).
    pub(crate) clean: bool,
}

/// The server flags both workloads need: for each flag, the larger value either asks for.
pub(crate) fn server_flags(cmd: &MixedCmd) -> Vec<String> {
    let mut flags: BTreeMap<String, f64> = BTreeMap::new();
    for flag in fanout::server_flags(&cmd.load)
        .into_iter()
        .chain(fanout::server_flags(&room_args(cmd)))
    {
        let Some((name, value)) = flag.split_once('=') else {
            continue;
        };
        let value: f64 = value.parse().unwrap_or(0.0);
        let kept = flags.entry(name.to_owned()).or_insert(value);
        *kept = kept.max(value);
    }
    let mut out: Vec<String> = flags
        .into_iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    out.push("--max-connections-per-address=0".into());
    out.push("--joins-per-session-per-second=1000000".into());
    out
}

/// The room's workload: one session, its first tab answering, one agent.
fn room_args(cmd: &MixedCmd) -> crate::cli::FanoutArgs {
    let mut room = cmd.load.clone();
    room.sessions = 1;
    room.tabs = cmd.room_tabs;
    room.agents = 1;
    room.rate = cmd.room_rate;
    room.answer = AnswerRule::First;
    room.duration_s = cmd.load.duration_s + ROOM_MARGIN_S;
    room
}

/// Runs the scenario against `target`.
///
/// # Errors
/// The room's tabs do not join in time, or either run fails.
pub(crate) async fn run(cmd: &MixedCmd, target: &Target) -> anyhow::Result<MixedReport> {
    let room = room_args(cmd);
    let tabs_before = scrape::scrape(target.addr)
        .await
        .ok()
        .and_then(|m| m.get("askgate_tabs").copied())
        .unwrap_or(0.0);
    eprintln!(
        "mixed: the room, {} tabs at {}/s, on a thread of its own",
        room.tabs, room.rate
    );
    let room_thread = {
        let view = target.view();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(fanout::run(&room, &view, 1))
        })
    };
    let wanted = tabs_before + cmd.room_tabs as f64;
    let joined = scrape::wait_until(target.addr, JOIN_DEADLINE, |metrics| {
        metrics.get("askgate_tabs").copied().unwrap_or(0.0) >= wanted
    })
    .await
    .and_then(|m| m.get("askgate_tabs").copied())
    .unwrap_or(0.0);
    if joined < wanted {
        eprintln!("mixed: only {joined} of {wanted} tabs joined within {JOIN_DEADLINE:?}");
    }
    tokio::time::sleep(WARM_UP).await;
    eprintln!("mixed: the small sessions, beside the room");
    let before = scrape::scrape(target.addr).await.ok();
    let small = fanout::run(&cmd.load, target, 1).await;
    let after = scrape::scrape(target.addr).await.ok();
    let server_p99 = |name: &str| p99_bucket_ms(before.as_ref()?, after.as_ref()?, name);
    eprintln!("mixed: waiting for the room to finish");
    let room = tokio::task::spawn_blocking(move || room_thread.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the room's thread panicked"))?
        .context("the room's run")?;
    let small = small.context("the small sessions' run")?;
    let small_within_targets = small.ask_to_first_tab.p99_ms <= SMALL_FIRST_TAB_P99_MS
        && small.answer_to_outcome.p99_ms <= SMALL_ANSWER_P99_MS;
    let clean = small.clean && room.clean;
    Ok(MixedReport {
        scenario: "mixed",
        small,
        room,
        small_within_targets,
        server_ask_to_tab_p99_bucket_ms: server_p99("askgate_ask_to_tab_seconds"),
        server_answer_to_agent_p99_bucket_ms: server_p99("askgate_answer_to_agent_seconds"),
        clean,
    })
}

/// The upper bound, in ms, of the bucket of Prometheus histogram `name` that holds the p99 of
/// what it observed between the scrapes `before` and `after`; `None` without observations.
fn p99_bucket_ms(before: &scrape::Metrics, after: &scrape::Metrics, name: &str) -> Option<f64> {
    let prefix = format!("{name}_bucket{{le=\"");
    let mut buckets: Vec<(f64, f64)> = after
        .iter()
        .filter_map(|(key, count)| {
            let bound = key.strip_prefix(&prefix)?.strip_suffix("\"}")?;
            let bound = if bound == "+Inf" {
                f64::INFINITY
            } else {
                bound.parse().ok()?
            };
            Some((bound, count - before.get(key).copied().unwrap_or(0.0)))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    buckets
        .iter()
        .find(|(_, cumulative)| *cumulative >= 0.99 * total)
        .map(|(bound, _)| bound * 1000.0)
}

impl MixedReport {
    /// Prints both runs, then the small sessions' figures against their targets.
    pub(crate) fn print(&self) {
        println!("\n== the big room ==");
        self.room.print();
        println!("\n== the small sessions, beside it ==");
        self.small.print();
        let mut t = Table::new(&["mixed: small sessions", "p50 ms", "p99 ms", "target p99"]);
        t.row(vec![
            "ask → first tab".into(),
            format!("{:.3}", self.small.ask_to_first_tab.p50_ms),
            format!("{:.3}", self.small.ask_to_first_tab.p99_ms),
            format!("<= {SMALL_FIRST_TAB_P99_MS}"),
        ]);
        t.row(vec![
            "answer → agent".into(),
            format!("{:.3}", self.small.answer_to_outcome.p50_ms),
            format!("{:.3}", self.small.answer_to_outcome.p99_ms),
            format!("<= {SMALL_ANSWER_P99_MS}"),
        ]);
        t.row(vec![
            "room: ask → every tab".into(),
            format!("{:.3}", self.room.ask_to_all_tabs.p50_ms),
            format!("{:.3}", self.room.ask_to_all_tabs.p99_ms),
            "<= 80".into(),
        ]);
        t.row(vec![
            "room: answer → agent".into(),
            format!("{:.3}", self.room.answer_to_outcome.p50_ms),
            format!("{:.3}", self.room.answer_to_outcome.p99_ms),
            "<= 10".into(),
        ]);
        println!();
        print!("{}", t.render());
        let bucket =
            |ms: Option<f64>| ms.map_or_else(|| "?".to_owned(), |ms| format!("<= {ms} ms"));
        println!(
            "the server's own p99 over the small run (histogram bucket): ask → first tab queued {}, \
             answer → agent queued {}",
            bucket(self.server_ask_to_tab_p99_bucket_ms),
            bucket(self.server_answer_to_agent_p99_bucket_ms)
        );
        println!(
            "small sessions {} their targets; both runs {}",
            if self.small_within_targets {
                "within"
            } else {
                "NOT within"
            },
            if self.clean { "clean" } else { "NOT clean" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    /// The room's flags and the small sessions' are merged, the larger value kept.
    #[test]
    fn the_room_raises_the_tab_limit_and_the_small_sessions_keep_theirs() {
        let cli = crate::cli::Cli::parse_from([
            "askgate-bench",
            "mixed",
            "--spawn",
            "askgate",
            "--rate",
            "500",
        ]);
        let crate::cli::Command::Mixed(cmd) = cli.command else {
            panic!("not mixed");
        };
        let flags = server_flags(&cmd);
        assert!(
            flags.contains(&"--tabs-per-session=10000".to_owned()),
            "{flags:?}"
        );
        assert_eq!(
            flags
                .iter()
                .filter(|f| f.starts_with("--tabs-per-session"))
                .count(),
            1
        );
        assert!(flags.contains(&"--max-connections-per-address=0".to_owned()));
        let room = room_args(&cmd);
        assert_eq!((room.sessions, room.tabs, room.agents), (1, 10_000, 1));
        assert!(room.duration_s > cmd.load.duration_s);
    }

    /// The p99's bucket is read from the difference of two scrapes.
    #[test]
    fn the_p99_bucket_counts_only_what_came_between_the_scrapes() {
        let scrape = |counts: [f64; 3]| -> scrape::Metrics {
            ["0.001", "0.01", "+Inf"]
                .iter()
                .zip(counts)
                .map(|(le, count)| (format!("h_bucket{{le=\"{le}\"}}"), count))
                .collect()
        };
        // Before: 100 slow ones. Between: 1,000 within 1 ms, 5 within 10 ms.
        let before = scrape([0.0, 0.0, 100.0]);
        let after = scrape([1000.0, 1005.0, 1105.0]);
        assert_eq!(p99_bucket_ms(&before, &after, "h"), Some(1.0));
        // 20 of 1,020 within 10 ms but over 1 ms: the p99 is in that bucket.
        let after = scrape([1000.0, 1020.0, 1120.0]);
        assert_eq!(p99_bucket_ms(&before, &after, "h"), Some(10.0));
        assert_eq!(p99_bucket_ms(&after, &after, "h"), None);
    }
}
