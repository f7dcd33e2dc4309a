//! Reporting: the machine and its load, plain-text tables, and the JSON summary.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;
use serde::Serialize;

use crate::histo::Summary;
use crate::target::{Kind, Target};

/// The machine a run happened on.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Machine {
    /// Logical CPUs (`nproc`).
    pub(crate) cpus: usize,
    /// `/proc/cpuinfo` model name.
    pub(crate) cpu_model: String,
    /// `uname -r`.
    pub(crate) kernel: String,
    /// Total memory, GiB.
    pub(crate) memory_gib: f64,
}

impl Machine {
    /// Reads `/proc`.
    pub(crate) fn read() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|l| l.trim_start_matches([' ', '\t', ':']).trim().to_owned())
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_kib: f64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|l| l.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0.0);
        Machine {
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            cpu_model,
            kernel,
            memory_gib: memory_kib / (1024.0 * 1024.0),
        }
    }
}

/// The 1-minute load average (other work on the machine skews every figure).
pub(crate) fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Which server a report is about.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ServerInfo {
    /// askgate, node, or external.
    pub(crate) kind: Kind,
    /// The command that started it.
    pub(crate) command: String,
}

impl From<&Target> for ServerInfo {
    fn from(target: &Target) -> Self {
        ServerInfo {
            kind: target.kind,
            command: target.command.clone(),
        }
    }
}

/// The conditions a measurement ran under.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Conditions {
    /// Load average when it began.
    pub(crate) load_start: f64,
    /// Load average when it ended.
    pub(crate) load_end: f64,
    /// Generator runtime worker threads.
    pub(crate) client_threads: usize,
}

/// A plain-text table with aligned columns.
#[derive(Debug, Default)]
pub(crate) struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with this header row.
    pub(crate) fn new(header: &[&str]) -> Table {
        Table {
            rows: vec![header.iter().map(|s| (*s).to_owned()).collect()],
        }
    }

    /// Adds a row.
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Adds a latency row: p50, p90, p99, p99.9, max (ms) and the count.
    pub(crate) fn latency(&mut self, name: &str, s: &Summary) {
        self.row(vec![
            name.to_owned(),
            format!("{:.3}", s.p50_ms),
            format!("{:.3}", s.p90_ms),
            format!("{:.3}", s.p99_ms),
            format!("{:.3}", s.p999_ms),
            format!("{:.3}", s.max_ms),
            s.count.to_string(),
        ]);
    }

    /// A table for [`Table::latency`] rows.
    pub(crate) fn latencies() -> Table {
        Table::new(&["latency (ms)", "p50", "p90", "p99", "p99.9", "max", "count"])
    }

    /// The table as text; the first column left-aligned, the others right-aligned.
    pub(crate) fn render(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for (i, row) in self.rows.iter().enumerate() {
            for (c, cell) in row.iter().enumerate() {
                let pad = widths[c].saturating_sub(cell.chars().count());
                if c == 0 {
                    let _ = write!(out, "{cell}{}", " ".repeat(pad));
                } else {
                    let _ = write!(out, "  {}{cell}", " ".repeat(pad));
                }
            }
            out.push('\n');
            if i == 0 {
                let total: usize = widths.iter().sum::<usize>() + 2 * columns.saturating_sub(1);
                out.push_str(&"-".repeat(total));
                out.push('\n');
            }
        }
        out
    }
}

/// Writes `value` as pretty JSON to `path`, or to stdout when there is none.
///
/// # Errors
/// The file cannot be written.
pub(crate) fn emit_json(path: Option<&Path>, value: &impl Serialize) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    match path {
        Some(path) => std::fs::write(path, text + "\n")
            .with_context(|| format!("writing {}", path.display()))?,
        None => println!("{text}"),
    }
    Ok(())
}

/// Live gauges on one line: `tabs=3 sessions=1 ...` (the `askgate_` prefix dropped).
pub(crate) fn gauges(values: &std::collections::BTreeMap<String, f64>) -> String {
    if values.is_empty() {
        return "(no metrics)".into();
    }
    values
        .iter()
        .map(|(k, v)| format!("{}={v}", k.trim_start_matches("askgate_")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A number with thousands separators (`12,345`).
pub(crate) fn thousands(n: f64) -> String {
    let whole = format!("{:.0}", n.abs());
    let mut out = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0.0 { format!("-{out}") } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns line up under their header.
    #[test]
    fn renders_aligned() {
        let mut t = Table::new(&["name", "value"]);
        t.row(vec!["a".into(), "1234".into()]);
        assert_eq!(t.render(), "name  value\n-----------\na      1234\n");
        assert_eq!(thousands(1234567.0), "1,234,567");
        assert_eq!(thousands(12.0), "12");
    }
}
