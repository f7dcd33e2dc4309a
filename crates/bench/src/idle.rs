//! The idle scenario: N tabs, one per session, connected and doing nothing. The server's RSS
//! over its empty baseline, divided by N, is what one idle tab costs.
//!
//! The sessions are opened first (for their viewer keys) by agents that then disconnect, so
//! the server is back to empty when the baseline is read; each tab's session is created
//! again when the tab joins, and that session's cost is part of the tab's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures_util::StreamExt as _;
use serde::Serialize;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;

use crate::cli::IdleArgs;
use crate::conn;
use crate::histo::{Hist, Summary};
use crate::procstat::{self, mib};
use crate::report::{Conditions, ServerInfo, Table, gauges, load_average, thousands};
use crate::scrape::{self, Metrics};
use crate::target::Target;

/// What one idle run measured.
#[derive(Debug, Serialize)]
pub(crate) struct IdleReport {
    /// `"idle"`.
    pub(crate) scenario: &'static str,
    /// The server.
    pub(crate) server: ServerInfo,
    /// The workload.
    pub(crate) args: IdleArgs,
    /// Conditions.
    pub(crate) conditions: Conditions,
    /// Tabs connected.
    pub(crate) tabs: usize,
    /// Server RSS with no tabs, MiB.
    pub(crate) rss_empty_mib: f64,
    /// Server RSS with every tab connected and settled, MiB.
    pub(crate) rss_loaded_mib: f64,
    /// Server RSS after the tabs left and it settled, MiB.
    pub(crate) rss_after_mib: f64,
    /// (loaded − empty), MiB.
    pub(crate) rss_over_baseline_mib: f64,
    /// (loaded − empty) / tabs, bytes.
    pub(crate) bytes_per_tab: f64,
    /// The generator's own RSS with every tab connected, MiB.
    pub(crate) generator_rss_mib: f64,
    /// Connect + hello → snapshot.
    pub(crate) connect_to_snapshot: Summary,
    /// Tabs connected per second during setup.
    pub(crate) connects_per_s: f64,
    /// Server gauges with every tab connected.
    pub(crate) live_loaded: std::collections::BTreeMap<String, f64>,
    /// Tabs the server closed while they idled.
    pub(crate) dropped_while_idle: u64,
}

/// Runs the scenario against `target`.
///
/// # Errors
/// The server's PID is unknown (nothing to measure), or a tab cannot connect.
pub(crate) async fn run(
    args: &IdleArgs,
    target: &Target,
    client_threads: usize,
) -> anyhow::Result<IdleReport> {
    let Some(pid) = target.pid else {
        bail!("the idle scenario measures the server's RSS: spawn it, or give --pid");
    };
    let load_start = load_average();
    let addr = target.addr;
    let settle = Duration::from_secs_f64(args.settle_s);
    let run_id: u32 = rand::random();
    let names: Vec<String> = (0..args.tabs)
        .map(|i| format!("i{run_id:08x}-{i}"))
        .collect();
    let keys = conn::open_sessions(addr, &names).await?;
    // The setup agents are gone: wait for their sessions to be dropped.
    let _ = scrape::wait_until(addr, Duration::from_secs(10), |m: &Metrics| {
        m.get("askgate_sessions").is_none_or(|v| *v == 0.0)
    })
    .await;
    tokio::time::sleep(settle).await;
    let rss_empty = procstat::settled_rss(Some(pid))
        .await
        .context("reading the server's RSS")?;

    let began = Instant::now();
    let connect = Arc::new(Hist::new());
    let dropped = Arc::new(AtomicU64::new(0));
    let (stop, stopped) = watch::channel(false);
    let (ready_tx, mut ready) = mpsc::channel::<anyhow::Result<()>>(1024);
    let gate = Arc::new(Semaphore::new(args.connect_concurrency.max(1)));
    let mut tabs = JoinSet::new();
    for (i, name) in names.iter().enumerate() {
        let key = keys
            .get(name)
            .with_context(|| format!("no key for {name}"))?
            .clone();
        let (name, gate, ready, connect) = (
            name.clone(),
            Arc::clone(&gate),
            ready_tx.clone(),
            Arc::clone(&connect),
        );
        let (dropped, stopped) = (Arc::clone(&dropped), stopped.clone());
        tabs.spawn(async move {
            let permit = gate.acquire_owned().await;
            let t0 = Instant::now();
            let joined = conn::join_tab(addr, &name, &key, &format!("t{i}")).await;
            drop(permit);
            match joined {
                Ok(ws) => {
                    connect.record_ns(t0.elapsed().as_nanos() as u64);
                    let _ = ready.send(Ok(())).await;
                    idle(ws, stopped, &dropped).await;
                }
                Err(e) => {
                    let _ = ready.send(Err(e)).await;
                }
            }
        });
    }
    drop(ready_tx);
    for _ in 0..args.tabs {
        match ready.recv().await {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                let _ = stop.send(true);
                return Err(e.context("connecting an idle tab"));
            }
            None => bail!("tab tasks ended during setup"),
        }
    }
    let connects_per_s = args.tabs as f64 / began.elapsed().as_secs_f64();
    tokio::time::sleep(settle).await;
    let rss_loaded = procstat::settled_rss(Some(pid))
        .await
        .context("reading the server's RSS")?;
    let generator_rss = procstat::read(None).map_or(0, |r| r.rss);
    let live_loaded = scrape::live_gauges(addr).await;

    let _ = stop.send(true);
    while tabs.join_next().await.is_some() {}
    let _ = scrape::wait_until(addr, Duration::from_secs(10), |m: &Metrics| {
        m.get("askgate_tabs").is_none_or(|v| *v == 0.0)
    })
    .await;
    tokio::time::sleep(settle).await;
    let rss_after = procstat::settled_rss(Some(pid)).await.unwrap_or(0);
    let over = rss_loaded.saturating_sub(rss_empty);
    Ok(IdleReport {
        scenario: "idle",
        server: ServerInfo::from(target),
        args: args.clone(),
        conditions: Conditions {
            load_start,
            load_end: load_average(),
            client_threads,
        },
        tabs: args.tabs,
        rss_empty_mib: mib(rss_empty),
        rss_loaded_mib: mib(rss_loaded),
        rss_after_mib: mib(rss_after),
        rss_over_baseline_mib: mib(over),
        bytes_per_tab: over as f64 / args.tabs.max(1) as f64,
        generator_rss_mib: mib(generator_rss),
        connect_to_snapshot: connect.summary(),
        connects_per_s,
        live_loaded,
        dropped_while_idle: dropped.load(Ordering::Relaxed),
    })
}

/// Holds a tab open (reading, so pings are answered) until `stop` flips, then closes it.
async fn idle(mut ws: conn::Ws, mut stop: watch::Receiver<bool>, dropped: &AtomicU64) {
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            message = ws.next() => match message {
                Some(Ok(Message::Close(_)) | Err(_)) | None => {
                    dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Some(Ok(_)) => {}
            },
        }
    }
    conn::close(ws).await;
}

impl IdleReport {
    /// Prints the table.
    pub(crate) fn print(&self) {
        println!(
            "\nidle: {} tabs, one per session — {:?}",
            thousands(self.tabs as f64),
            self.server.kind
        );
        let mut t = Table::new(&["memory", "value"]);
        t.row(vec![
            "server RSS empty / loaded / after, MiB".into(),
            format!(
                "{:.1} / {:.1} / {:.1}",
                self.rss_empty_mib, self.rss_loaded_mib, self.rss_after_mib
            ),
        ]);
        t.row(vec![
            "server RSS over baseline, MiB".into(),
            format!("{:.1}", self.rss_over_baseline_mib),
        ]);
        t.row(vec![
            "bytes per idle tab".into(),
            thousands(self.bytes_per_tab),
        ]);
        t.row(vec![
            "generator RSS, MiB".into(),
            format!("{:.1}", self.generator_rss_mib),
        ]);
        t.row(vec![
            "connects/s during setup".into(),
            format!("{:.0}", self.connects_per_s),
        ]);
        t.row(vec![
            "server gauges loaded".into(),
            gauges(&self.live_loaded),
        ]);
        t.row(vec![
            "dropped while idle".into(),
            self.dropped_while_idle.to_string(),
        ]);
        t.row(vec![
            "load average (start, end)".into(),
            format!(
                "{:.1}, {:.1}",
                self.conditions.load_start, self.conditions.load_end
            ),
        ]);
        print!("{}", t.render());
        let mut t = Table::latencies();
        t.latency("connect → snapshot", &self.connect_to_snapshot);
        print!("{}", t.render());
    }
}
