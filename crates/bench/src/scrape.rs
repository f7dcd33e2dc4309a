//! `GET /metrics` over a plain TCP socket, parsed into `name{labels} → value`.
//!
//! Used for the leak checks: after the load, the gauges that count live things (tabs,
//! sessions, agents, socket tasks, open requests, kept outcomes) must be back where they
//! started.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// The gauges of live things, which must return to their baseline when the load is gone.
pub(crate) const LIVE_GAUGES: [&str; 6] = [
    "askgate_tabs",
    "askgate_sessions",
    "askgate_agents",
    "askgate_connection_tasks",
    "askgate_open_requests",
    "askgate_kept_outcomes",
];

/// Metric values by name (with labels, as written: `askgate_outcomes_total{outcome="answered"}`).
pub(crate) type Metrics = BTreeMap<String, f64>;

/// Fetches and parses `http://addr/metrics`.
///
/// # Errors
/// The connection fails, takes over 5 s, or the reply is not a 200.
pub(crate) async fn scrape(addr: SocketAddr) -> anyhow::Result<Metrics> {
    tokio::time::timeout(Duration::from_secs(5), fetch(addr))
        .await
        .context("GET /metrics timed out")?
}

async fn fetch(addr: SocketAddr) -> anyhow::Result<Metrics> {
    let mut stream = TcpStream::connect(addr).await?;
    stream
        .write_all(
            format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).await?;
    let reply = String::from_utf8_lossy(&reply);
    let (head, body) = reply
        .split_once("\r\n\r\n")
        .context("no blank line in the HTTP reply")?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        bail!("GET /metrics: {}", head.lines().next().unwrap_or_default());
    }
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return Ok(parse(&dechunk(body)));
    }
    Ok(parse(body))
}

/// Joins the chunks of a chunked body.
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

/// Parses the Prometheus text format (comments skipped).
fn parse(text: &str) -> Metrics {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

/// The live gauges now (empty when `GET /metrics` fails).
pub(crate) async fn live_gauges(addr: SocketAddr) -> BTreeMap<String, f64> {
    scrape(addr).await.map(|m| live(&m)).unwrap_or_default()
}

/// The live gauges out of a scrape (absent ones left out).
pub(crate) fn live(metrics: &Metrics) -> BTreeMap<String, f64> {
    LIVE_GAUGES
        .iter()
        .filter_map(|name| Some(((*name).to_owned(), *metrics.get(*name)?)))
        .collect()
}

/// Polls until `done` says the metrics are as wanted, or `within` passes; the last scrape.
pub(crate) async fn wait_until(
    addr: SocketAddr,
    within: Duration,
    done: impl Fn(&Metrics) -> bool,
) -> Option<Metrics> {
    let deadline = Instant::now() + within;
    loop {
        let metrics = scrape(addr).await.ok();
        let satisfied = metrics.as_ref().is_some_and(&done);
        if satisfied || Instant::now() >= deadline {
            return metrics;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Labels stay part of the name; comments are skipped.
    #[test]
    fn parses_gauges_and_labelled_counters() {
        let text = "# HELP askgate_tabs x\n# TYPE askgate_tabs gauge\naskgate_tabs 3\naskgate_outcomes_total{outcome=\"answered\"} 12\n";
        let metrics = parse(text);
        assert_eq!(metrics["askgate_tabs"], 3.0);
        assert_eq!(
            metrics["askgate_outcomes_total{outcome=\"answered\"}"],
            12.0
        );
    }

    /// A chunked body is reassembled.
    #[test]
    fn dechunks() {
        assert_eq!(dechunk("5\r\nhello\r\n3\r\n a\n\r\n0\r\n\r\n"), "hello a\n");
    }
}
