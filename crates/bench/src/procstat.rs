//! Resource sampling from `/proc`: a process's RSS (`/proc/<pid>/status` VmRSS) and CPU time
//! (`/proc/<pid>/stat` utime + stime), for the server and for the generator itself.
//!
//! [`Sampler`] samples both every [`PERIOD`] during a measured phase and keeps a per-second
//! timeline (CPU %, RSS, and how far a progress counter moved), so a reader can see whether
//! the server or the generator ran out of CPU.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often the sampler reads `/proc`.
pub(crate) const PERIOD: Duration = Duration::from_secs(1);

/// One reading of a process.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reading {
    /// Resident set size, bytes.
    pub(crate) rss: u64,
    /// User + system CPU time, clock ticks.
    pub(crate) ticks: u64,
    /// When it was read.
    pub(crate) at: Instant,
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 if that fails).
fn ticks_per_second() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// Reads `pid` (`None`: this process). `None` if it is gone.
pub(crate) fn read(pid: Option<u32>) -> Option<Reading> {
    let base = match pid {
        Some(pid) => format!("/proc/{pid}"),
        None => "/proc/self".to_owned(),
    };
    let status = std::fs::read_to_string(format!("{base}/status")).ok()?;
    let rss_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    let stat = std::fs::read_to_string(format!("{base}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start at `state`, field 3;
    // utime and stime are fields 14 and 15.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Reading {
        rss: rss_kib * 1024,
        ticks: utime + stime,
        at: Instant::now(),
    })
}

/// The sum over `pids` (several servers counted as one: nodes and their Redis); `None` if
/// there are none or one is gone.
pub(crate) fn read_sum(pids: &[u32]) -> Option<Reading> {
    let mut sum: Option<Reading> = None;
    for pid in pids {
        let reading = read(Some(*pid))?;
        sum = Some(match sum {
            None => reading,
            Some(total) => Reading {
                rss: total.rss + reading.rss,
                ticks: total.ticks + reading.ticks,
                at: reading.at,
            },
        });
    }
    sum
}

/// CPU use between two readings, in percent of one core.
pub(crate) fn cpu_percent(from: &Reading, to: &Reading) -> f64 {
    let seconds = to.at.duration_since(from.at).as_secs_f64();
    if seconds <= 0.0 {
        return 0.0;
    }
    (to.ticks.saturating_sub(from.ticks)) as f64 / ticks_per_second() / seconds * 100.0
}

/// The RSS of `pid` once it is quiet: the median of five readings 200 ms apart.
pub(crate) async fn settled_rss(pid: Option<u32>) -> Option<u64> {
    let mut values = Vec::new();
    for _ in 0..5 {
        values.push(read(pid)?.rss);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    values.sort_unstable();
    Some(values[2])
}

/// One second of a measured phase.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Tick {
    /// Seconds since the phase began.
    pub(crate) t_s: f64,
    /// Server CPU over the second, % of one core.
    pub(crate) server_cpu_pct: Option<f64>,
    /// Server RSS, MiB.
    pub(crate) server_rss_mib: Option<f64>,
    /// Generator CPU over the second, % of one core.
    pub(crate) generator_cpu_pct: f64,
    /// How fast the progress counter moved over the tick (outcomes, connections...), per
    /// second of the tick's real length (a late tick is not a fast second).
    pub(crate) progress_per_s: f64,
}

/// CPU and memory of one process over a phase.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Usage {
    /// Average CPU, % of one core.
    pub(crate) cpu_pct: f64,
    /// The busiest second, % of one core.
    pub(crate) cpu_peak_pct: f64,
    /// RSS at the start, MiB.
    pub(crate) rss_start_mib: f64,
    /// Highest RSS seen, MiB.
    pub(crate) rss_peak_mib: f64,
    /// RSS at the end, MiB.
    pub(crate) rss_end_mib: f64,
}

/// What a sampler saw.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Sampled {
    /// Seconds sampled.
    pub(crate) seconds: f64,
    /// The server (absent when its PID is unknown).
    pub(crate) server: Option<Usage>,
    /// The generator.
    pub(crate) generator: Usage,
    /// Second by second.
    pub(crate) timeline: Vec<Tick>,
}

/// Bytes the processes `pids` caused to be written to storage so far (`write_bytes` of
/// `/proc/PID/io`, summed: counted as pages are dirtied, whichever thread writes them back);
/// `None` if any cannot be read.
pub(crate) fn disk_write_bytes(pids: &[u32]) -> Option<u64> {
    pids.iter()
        .map(|pid| {
            let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
            io.lines()
                .find_map(|line| line.strip_prefix("write_bytes:"))?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// Samples the server and the generator until finished.
pub(crate) struct Sampler {
    stop: watch::Sender<bool>,
    task: JoinHandle<Sampled>,
}

impl Sampler {
    /// Starts sampling the server processes `servers`, summed (and this process); `progress`
    /// is a counter whose per-second increase goes into the timeline.
    pub(crate) fn start(servers: Vec<u32>, progress: Arc<AtomicU64>) -> Sampler {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut sampled = Sampled::default();
            let first_server = read_sum(&servers);
            let first_self = read(None);
            let (mut last_server, mut last_self) = (first_server, first_self);
            let mut last_progress = progress.load(Ordering::Relaxed);
            let began = Instant::now();
            let mut server_usage = first_server.map(|r| start_usage(&r));
            let mut self_usage = first_self.map(|r| start_usage(&r)).unwrap_or_default();
            let mut interval = tokio::time::interval(PERIOD);
            // After a late tick the next comes a period later, not at once to catch up.
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            interval.tick().await;
            let mut last_tick = Instant::now();
            loop {
                tokio::select! {
                    _ = interval.tick() => {}
                    _ = stopped.changed() => break,
                }
                let now_server = read_sum(&servers);
                let now_self = read(None);
                let now_progress = progress.load(Ordering::Relaxed);
                let tick_s = last_tick.elapsed().as_secs_f64().max(1e-9);
                last_tick = Instant::now();
                let server_cpu = match (&last_server, &now_server) {
                    (Some(a), Some(b)) => Some(cpu_percent(a, b)),
                    _ => None,
                };
                let self_cpu = match (&last_self, &now_self) {
                    (Some(a), Some(b)) => cpu_percent(a, b),
                    _ => 0.0,
                };
                if let (Some(usage), Some(r), Some(cpu)) =
                    (&mut server_usage, &now_server, server_cpu)
                {
                    observe(usage, r, cpu);
                }
                if let Some(r) = &now_self {
                    observe(&mut self_usage, r, self_cpu);
                }
                sampled.timeline.push(Tick {
                    t_s: began.elapsed().as_secs_f64(),
                    server_cpu_pct: server_cpu,
                    server_rss_mib: now_server.map(|r| mib(r.rss)),
                    generator_cpu_pct: self_cpu,
                    progress_per_s: now_progress.saturating_sub(last_progress) as f64 / tick_s,
                });
                (last_server, last_self, last_progress) = (now_server, now_self, now_progress);
            }
            let end_server = read_sum(&servers);
            let end_self = read(None);
            sampled.seconds = began.elapsed().as_secs_f64();
            if let (Some(usage), Some(first), Some(end)) =
                (&mut server_usage, &first_server, &end_server)
            {
                finish_usage(usage, first, end);
            }
            if let (Some(first), Some(end)) = (&first_self, &end_self) {
                finish_usage(&mut self_usage, first, end);
            }
            sampled.server = server_usage;
            sampled.generator = self_usage;
            sampled
        });
        Sampler { stop, task }
    }

    /// Stops sampling and returns what was seen.
    pub(crate) async fn finish(self) -> Sampled {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or_default()
    }
}

fn start_usage(r: &Reading) -> Usage {
    Usage {
        rss_start_mib: mib(r.rss),
        rss_peak_mib: mib(r.rss),
        ..Usage::default()
    }
}

fn observe(usage: &mut Usage, r: &Reading, cpu: f64) {
    usage.rss_peak_mib = usage.rss_peak_mib.max(mib(r.rss));
    usage.cpu_peak_pct = usage.cpu_peak_pct.max(cpu);
}

fn finish_usage(usage: &mut Usage, first: &Reading, end: &Reading) {
    usage.cpu_pct = cpu_percent(first, end);
    usage.rss_end_mib = mib(end.rss);
    usage.rss_peak_mib = usage.rss_peak_mib.max(mib(end.rss));
}

/// Bytes as MiB.
pub(crate) fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
