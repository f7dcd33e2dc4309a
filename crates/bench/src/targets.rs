//! The targets table: each scenario's goals, the median figure of each server's runs, and
//! askgate's ratio to the baseline.

use serde::Serialize;

use crate::churn::{self, ChurnReport};
use crate::fanout::FanoutReport;
use crate::idle::IdleReport;
use crate::report::Table;

/// What a scenario run reported.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Report {
    Idle(IdleReport),
    Fanout(Box<FanoutReport>),
    Churn(ChurnReport),
}

/// Each run's report, with the name of the server it ran against.
pub(crate) type Runs = Vec<(&'static str, Report)>;

/// One row of the targets table.
#[derive(Debug, Serialize)]
pub(crate) struct TargetRow {
    /// What is measured.
    target: String,
    /// The goal, in words.
    goal: String,
    /// askgate's figure (median over repeats).
    askgate: Option<f64>,
    /// The baseline's figure (median over repeats).
    node: Option<f64>,
    /// askgate ÷ node.
    ratio: Option<f64>,
    /// Whether askgate's median meets the goal (absent for information rows).
    pass: Option<bool>,
    /// Every run's figure, askgate's then node's.
    askgate_runs: Vec<f64>,
    /// Every run's figure for the baseline.
    node_runs: Vec<f64>,
}

fn values(runs: &Runs, name: &str, metric: &dyn Fn(&Report) -> Option<f64>) -> Vec<f64> {
    runs.iter()
        .filter(|(n, _)| *n == name)
        .filter_map(|(_, r)| metric(r))
        .collect()
}

fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    match v.len() {
        0 => None,
        n if n % 2 == 0 => Some((v[mid - 1] + v[mid]) / 2.0),
        _ => Some(v[mid]),
    }
}

fn row(
    runs: &Runs,
    target: &str,
    goal: &str,
    metric: &dyn Fn(&Report) -> Option<f64>,
    pass: Option<&dyn Fn(f64) -> bool>,
) -> TargetRow {
    let askgate_runs = values(runs, "askgate", metric);
    let node_runs = values(runs, "node", metric);
    let (askgate, node) = (median(&askgate_runs), median(&node_runs));
    TargetRow {
        target: target.to_owned(),
        goal: goal.to_owned(),
        askgate,
        node,
        ratio: match (askgate, node) {
            (Some(a), Some(n)) if n != 0.0 => Some(a / n),
            _ => None,
        },
        pass: pass.and_then(|p| askgate.map(p)),
        askgate_runs,
        node_runs,
    }
}

/// A scenario's report inside a [`Report`].
trait Scenario {
    fn within(report: &Report) -> Option<&Self>;
}

impl Scenario for IdleReport {
    fn within(report: &Report) -> Option<&Self> {
        if let Report::Idle(r) = report {
            Some(r)
        } else {
            None
        }
    }
}

impl Scenario for FanoutReport {
    fn within(report: &Report) -> Option<&Self> {
        if let Report::Fanout(r) = report {
            Some(r)
        } else {
            None
        }
    }
}

impl Scenario for ChurnReport {
    fn within(report: &Report) -> Option<&Self> {
        if let Report::Churn(r) = report {
            Some(r)
        } else {
            None
        }
    }
}

/// A figure of one scenario's reports (`None` for the other scenarios').
fn figure<R: Scenario>(f: fn(&R) -> f64) -> impl Fn(&Report) -> Option<f64> {
    move |report| R::within(report).map(f)
}

fn lost(r: &FanoutReport) -> f64 {
    r.audit.faults() as f64
}

/// The 10,000 idle tabs targets.
pub(crate) fn idle_rows(runs: &Runs) -> Vec<TargetRow> {
    let mut rows = Vec::new();
    let mb = figure::<IdleReport>(|r| r.rss_over_baseline_mib * 1.048_576);
    rows.push(row(
        runs,
        "10k idle tabs: RSS over baseline (MB)",
        "≤ 100 MB",
        &mb,
        Some(&|v| v <= 100.0),
    ));
    let per = figure::<IdleReport>(|r| r.bytes_per_tab);
    rows.push(row(
        runs,
        "10k idle tabs: bytes per tab",
        "< 10,240",
        &per,
        Some(&|v| v < 10_240.0),
    ));
    rows
}

/// The 1 session × 100 tabs targets.
pub(crate) fn fanout100_rows(runs: &Runs) -> Vec<TargetRow> {
    let mut rows = Vec::new();
    let p99 = figure::<FanoutReport>(|r| r.ask_to_all_tabs.p99_ms);
    rows.push(row(
        runs,
        "1×100: ask → all 100 tabs p99 (ms)",
        "≤ 5 ms",
        &p99,
        Some(&|v| v <= 5.0),
    ));
    let p50 = figure::<FanoutReport>(|r| r.ask_to_all_tabs.p50_ms);
    rows.push(row(
        runs,
        "1×100: ask → all 100 tabs p50 (ms)",
        "(info)",
        &p50,
        None,
    ));
    let answer = figure::<FanoutReport>(|r| r.answer_to_outcome.p99_ms);
    rows.push(row(
        runs,
        "1×100: answer → agent p99 (ms)",
        "(info)",
        &answer,
        None,
    ));
    rows.push(row(
        runs,
        "1×100: lost + doubled",
        "0",
        &figure::<FanoutReport>(lost),
        Some(&|v| v == 0.0),
    ));
    rows
}

/// The 1,000 sessions × 3 tabs targets, and the memory-store comparison.
pub(crate) fn fanout1000_rows(runs: &Runs) -> Vec<TargetRow> {
    let mut rows = Vec::new();
    let first50 = figure::<FanoutReport>(|r| r.ask_to_first_tab.p50_ms);
    rows.push(row(
        runs,
        "1000×3 @2000/s: ask → first tab p50 (ms)",
        "≤ 1 ms",
        &first50,
        Some(&|v| v <= 1.0),
    ));
    let first99 = figure::<FanoutReport>(|r| r.ask_to_first_tab.p99_ms);
    rows.push(row(
        runs,
        "1000×3 @2000/s: ask → first tab p99 (ms)",
        "≤ 10 ms",
        &first99,
        Some(&|v| v <= 10.0),
    ));
    let answer = figure::<FanoutReport>(|r| r.answer_to_outcome.p99_ms);
    rows.push(row(
        runs,
        "1000×3 @2000/s: answer → agent p99 (ms)",
        "≤ 10 ms",
        &answer,
        Some(&|v| v <= 10.0),
    ));
    let rate = figure::<FanoutReport>(|r| r.resolved_per_s);
    rows.push(row(
        runs,
        "1000×3 @2000/s: resolved/s",
        "≈ 2,000",
        &rate,
        Some(&|v| v >= 1_900.0),
    ));
    rows.push(row(
        runs,
        "1000×3 @2000/s: lost + doubled",
        "0",
        &figure::<FanoutReport>(lost),
        Some(&|v| v == 0.0),
    ));
    let cpu = figure::<FanoutReport>(|r| r.usage.server.as_ref().map_or(f64::NAN, |s| s.cpu_pct));
    rows.push(row(
        runs,
        "1000×3 @2000/s: server CPU (% of a core)",
        "(info)",
        &cpu,
        None,
    ));
    for (label, metric) in [("first tab p50", first50), ("first tab p99", first99)] {
        let values = values(runs, "askgate-memory", &metric);
        if let Some(m) = median(&values) {
            rows.push(TargetRow {
                target: format!("  same, askgate --store memory: {label} (ms)"),
                goal: "(info)".into(),
                askgate: Some(m),
                node: None,
                ratio: None,
                pass: None,
                askgate_runs: values,
                node_runs: Vec::new(),
            });
        }
    }
    rows
}

/// The churn targets.
pub(crate) fn churn_rows(runs: &Runs) -> Vec<TargetRow> {
    let mut rows = Vec::new();
    let rate = figure::<ChurnReport>(|r| r.cycles_per_s);
    rows.push(row(
        runs,
        "churn 500/s: cycles/s",
        "≈ 500",
        &rate,
        Some(&|v| v >= 475.0),
    ));
    let gauges = figure::<ChurnReport>(|r| {
        f64::from(u8::from(
            !r.live_start.is_empty() && r.live_end == r.live_start,
        ))
    });
    rows.push(row(
        runs,
        "churn 500/s: gauges back to baseline (1 = yes)",
        "1",
        &gauges,
        Some(&|v| v == 1.0),
    ));
    let rss = figure::<ChurnReport>(|r| {
        // An unreadable RSS (0) is no figure, not a pass.
        if r.rss_start_mib > 0.0 && r.rss_end_mib > 0.0 {
            r.rss_end_mib / r.rss_start_mib
        } else {
            f64::NAN
        }
    });
    rows.push(row(
        runs,
        "churn 500/s: RSS after ÷ before",
        "≤ 1.10",
        &rss,
        Some(&|v| v <= 1.0 + churn::RSS_TOLERANCE),
    ));
    let p99 = figure::<ChurnReport>(|r| r.connect_to_snapshot.p99_ms);
    rows.push(row(
        runs,
        "churn 500/s: connect → snapshot p99 (ms)",
        "(info)",
        &p99,
        None,
    ));
    rows
}

/// The targets askgate's median does not meet.
pub(crate) fn missed(rows: &[TargetRow]) -> Vec<&str> {
    rows.iter()
        .filter(|r| r.pass == Some(false))
        .map(|r| r.target.as_str())
        .collect()
}

/// Prints the targets table.
pub(crate) fn print(rows: &[TargetRow]) {
    let mut t = Table::new(&[
        "target",
        "goal",
        "askgate",
        "node",
        "askgate ÷ node",
        "askgate meets it",
    ]);
    let num = |v: Option<f64>| {
        v.map_or("-".to_owned(), |v| {
            if v.abs() >= 100.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.3}")
            }
        })
    };
    for r in rows {
        t.row(vec![
            r.target.clone(),
            r.goal.clone(),
            num(r.askgate),
            num(r.node),
            r.ratio.map_or("-".to_owned(), |v| format!("{v:.2}")),
            r.pass.map_or(
                "-".to_owned(),
                |p| if p { "yes".into() } else { "NO".into() },
            ),
        ]);
    }
    println!("\nTargets (median of each server's runs)");
    print!("{}", t.render());
}
