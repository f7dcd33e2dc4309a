//! The history-flood scenario: does one session's flood of `history` frames slow the others?
//!
//! One session (the flooded one) is given a history first: an agent asks `--history`
//! requests there and a tab answers each, so every `history` frame has ended requests to
//! show. Then the fan-out workload runs twice on the same gateway, in sessions of its own:
//! quiet, then while `--flood-tabs` tabs of the flooded session each send `history` at
//! `--flood-rate` a second (a tab the gateway closes joins again after a pause, as a
//! flooding script would). The ask → first tab p99 of the two runs is printed side by side,
//! with whether the flooded one stayed within twice the quiet one.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use anyhow::{Context as _, bail};
use futures_util::{SinkExt as _, StreamExt as _};
use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;

use crate::cli::FloodCmd;
use crate::conn::{self, CONNECT_TIMEOUT};
use crate::fanout::{self, FanoutReport};
use crate::frames::{self, Kind};
use crate::report::Table;
use crate::target::Target;

/// Pause before a flooding tab the gateway closed (or refused) joins again.
const REJOIN_PAUSE: Duration = Duration::from_secs(1);
/// How long the flood runs, once every flooding tab has joined (or [`JOIN_DEADLINE`] has
/// passed), before the measured run starts: the join storm is over and the flood steady.
const WARM_UP: Duration = Duration::from_secs(3);
/// The longest the flooding tabs get to join (the gateway paces joins to a session).
const JOIN_DEADLINE: Duration = Duration::from_secs(60);

/// What the flood did while the flooded run was measured, and the two runs.
#[derive(Debug, Serialize)]
pub(crate) struct FloodReport {
    /// `"history-flood"`.
    pub(crate) scenario: &'static str,
    /// Tabs flooding, and the rate each sent at.
    pub(crate) flood_tabs: usize,
    /// `history` frames a second each flooding tab sent (while connected).
    pub(crate) flood_rate: f64,
    /// `history` frames sent, and `history` replies received, over the whole flood.
    pub(crate) history_sent: u64,
    /// Replies received.
    pub(crate) history_received: u64,
    /// Closes of flooding tabs by the gateway, by code (1006: no close frame; "join": a
    /// join that failed).
    pub(crate) flood_closes: BTreeMap<String, u64>,
    /// The ask → first tab p99 of the quiet run, ms.
    pub(crate) quiet_p99_ms: f64,
    /// The same under the flood, ms.
    pub(crate) flooded_p99_ms: f64,
    /// Whether flooded ≤ 2 × quiet.
    pub(crate) within_2x: bool,
    /// The quiet run.
    pub(crate) quiet: FanoutReport,
    /// The flooded run.
    pub(crate) flooded: FanoutReport,
}

/// The flood's counters, shared by its tabs.
#[derive(Default)]
struct Counts {
    sent: AtomicU64,
    received: AtomicU64,
    /// Flooding tabs that have joined at least once.
    joined: AtomicU64,
    closes: std::sync::Mutex<BTreeMap<String, u64>>,
}

impl Counts {
    fn closed(&self, why: String) {
        if let Ok(mut closes) = self.closes.lock() {
            *closes.entry(why).or_default() += 1;
        }
    }
}

/// Runs the scenario against `target`.
///
/// # Errors
/// Setup fails (the flooded session's history cannot be made), or a fan-out run fails.
pub(crate) async fn run(
    cmd: &FloodCmd,
    target: &Target,
    client_threads: usize,
) -> anyhow::Result<FloodReport> {
    if cmd.flood_rate <= 0.0 {
        bail!("--flood-rate must be positive");
    }
    let session = format!("h{:08x}", rand::random::<u32>());
    let key = make_history(target.addr, &session, cmd.history).await?;
    eprintln!("history-flood: quiet run");
    let quiet = fanout::run(&cmd.load, target, client_threads).await?;

    eprintln!(
        "history-flood: {} tabs flooding {session} with history at {}/s each",
        cmd.flood_tabs, cmd.flood_rate
    );
    let counts = Arc::new(Counts::default());
    let (stop, stopped) = watch::channel(false);
    // On a thread and runtime of their own: the flooding tabs' work in the generator (their
    // connects, their frames) must not delay the measured tabs' reads, or the generator
    // would measure itself.
    let flood = {
        let (addr, rate, tabs) = (target.addr, cmd.flood_rate, cmd.flood_tabs);
        let counts = Arc::clone(&counts);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let mut flooders = JoinSet::new();
                for index in 0..tabs {
                    flooders.spawn(flood_tab(
                        addr,
                        session.clone(),
                        key.clone(),
                        format!("flood-{index}"),
                        rate,
                        Arc::clone(&counts),
                        stopped.clone(),
                    ));
                }
                while flooders.join_next().await.is_some() {}
            });
            anyhow::Ok(())
        })
    };
    let joined_by = tokio::time::Instant::now() + JOIN_DEADLINE;
    while counts.joined.load(Relaxed) < cmd.flood_tabs as u64
        && tokio::time::Instant::now() < joined_by
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(WARM_UP).await;
    eprintln!(
        "history-flood: flooded run ({} of {} flooding tabs joined)",
        counts.joined.load(Relaxed),
        cmd.flood_tabs
    );
    let flooded = fanout::run(&cmd.load, target, client_threads).await;
    let _ = stop.send(true);
    tokio::task::spawn_blocking(move || flood.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the flood's thread panicked"))??;
    let flooded = flooded?;

    let quiet_p99_ms = quiet.ask_to_first_tab.p99_ms;
    let flooded_p99_ms = flooded.ask_to_first_tab.p99_ms;
    Ok(FloodReport {
        scenario: "history-flood",
        flood_tabs: cmd.flood_tabs,
        flood_rate: cmd.flood_rate,
        history_sent: counts.sent.load(Relaxed),
        history_received: counts.received.load(Relaxed),
        flood_closes: counts.closes.lock().map(|c| c.clone()).unwrap_or_default(),
        quiet_p99_ms,
        flooded_p99_ms,
        within_2x: flooded_p99_ms <= 2.0 * quiet_p99_ms,
        quiet,
        flooded,
    })
}

impl FloodReport {
    /// Prints both runs, then the comparison.
    pub(crate) fn print(&self) {
        println!("\n== quiet ==");
        self.quiet.print();
        println!("\n== flooded ==");
        self.flooded.print();
        let cpu = |report: &FanoutReport| {
            report
                .usage
                .server
                .as_ref()
                .map_or_else(|| "?".to_owned(), |u| format!("{:.0}", u.cpu_pct))
        };
        let mut t = Table::new(&["history flood", "quiet", "flooded"]);
        t.row(vec![
            "ask → first tab p99 (ms)".into(),
            format!("{:.2}", self.quiet_p99_ms),
            format!("{:.2}", self.flooded_p99_ms),
        ]);
        t.row(vec![
            "ask → first tab p50 (ms)".into(),
            format!("{:.2}", self.quiet.ask_to_first_tab.p50_ms),
            format!("{:.2}", self.flooded.ask_to_first_tab.p50_ms),
        ]);
        t.row(vec![
            "server CPU % (avg)".into(),
            cpu(&self.quiet),
            cpu(&self.flooded),
        ]);
        println!();
        print!("{}", t.render());
        println!(
            "flood: {} tabs at {}/s: {} history sent, {} answered, closes {:?}",
            self.flood_tabs,
            self.flood_rate,
            self.history_sent,
            self.history_received,
            self.flood_closes
        );
        println!(
            "flooded p99 {:.2} ms vs quiet {:.2} ms: {} 2× ({:.2}×)",
            self.flooded_p99_ms,
            self.quiet_p99_ms,
            if self.within_2x {
                "within"
            } else {
                "NOT within"
            },
            self.flooded_p99_ms / self.quiet_p99_ms.max(f64::MIN_POSITIVE)
        );
    }
}

/// Opens `session`, asks `count` requests there and has a tab answer each: the session's
/// trail then holds that many ended requests. Its viewer key.
async fn make_history(addr: SocketAddr, session: &str, count: u64) -> anyhow::Result<String> {
    let keys = conn::open_sessions(addr, &[session.to_owned()]).await?;
    let key = keys
        .get(session)
        .context("no key for the flooded session")?
        .clone();
    let mut tab = conn::join_tab(addr, session, &key, "history-maker").await?;
    let mut agent = conn::connect(addr, "/v1/agent").await?;
    for seq in 0..count {
        agent
            .send(Message::text(frames::ask(session, seq, None)))
            .await?;
    }
    // Answers paced under the default 20 frames a second a tab may send.
    let mut pace = tokio::time::interval(Duration::from_millis(60));
    let mut answered = 0;
    while answered < count {
        let text = next_text(&mut tab).await?;
        if let Some(frame) = frames::parse(&text)
            && frame.kind == Kind::Request
            && let Some(seq) = frame.request.and_then(|r| frames::seq_of(&r.id))
        {
            pace.tick().await;
            tab.send(Message::text(frames::answer(seq))).await?;
            answered += 1;
        }
    }
    let mut outcomes = 0;
    while outcomes < count {
        let text = next_text(&mut agent).await?;
        if frames::parse(&text).is_some_and(|f| f.kind == Kind::Outcome) {
            outcomes += 1;
        }
    }
    conn::close(tab).await;
    conn::close(agent).await;
    Ok(key)
}

/// The next text frame, within [`CONNECT_TIMEOUT`].
async fn next_text(ws: &mut conn::Ws) -> anyhow::Result<String> {
    loop {
        match tokio::time::timeout(CONNECT_TIMEOUT, ws.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => return Ok(text.to_string()),
            Ok(Some(Ok(Message::Close(frame)))) => bail!("closed while making history: {frame:?}"),
            Ok(Some(Ok(_))) => {}
            Ok(Some(Err(e))) => return Err(e).context("reading while making history"),
            Ok(None) => bail!("the server hung up while making history"),
            Err(_) => bail!("no frame in time while making history"),
        }
    }
}

/// One flooding tab: joins, sends `history` at `rate` a second and reads what comes, until
/// told to stop; joins again after a pause whenever the gateway closes or refuses it.
async fn flood_tab(
    addr: SocketAddr,
    session: String,
    key: String,
    tab: String,
    rate: f64,
    counts: Arc<Counts>,
    mut stopped: watch::Receiver<bool>,
) {
    let history = r#"{"type":"history"}"#;
    let mut joined_once = false;
    while !*stopped.borrow() {
        let Ok(mut ws) = conn::join_tab(addr, &session, &key, &tab).await else {
            counts.closed("join".to_owned());
            tokio::time::sleep(REJOIN_PAUSE).await;
            continue;
        };
        if !std::mem::replace(&mut joined_once, true) {
            counts.joined.fetch_add(1, Relaxed);
        }
        let mut every = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
        let closed = loop {
            tokio::select! {
                _ = stopped.changed() => break None,
                _ = every.tick() => {
                    if ws.send(Message::text(history)).await.is_err() {
                        break Some(1006);
                    }
                    counts.sent.fetch_add(1, Relaxed);
                }
                message = ws.next() => match message {
                    Some(Ok(Message::Text(text))) => {
                        if text.starts_with(r#"{"type":"history""#) {
                            counts.received.fetch_add(1, Relaxed);
                        }
                    }
                    Some(Ok(Message::Close(frame))) => {
                        break Some(frame.map_or(1005, |f| f.code.into()));
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break Some(1006),
                },
            }
        };
        match closed {
            None => {
                conn::close(ws).await;
                return;
            }
            Some(code) => {
                counts.closed(code.to_string());
                tokio::time::sleep(REJOIN_PAUSE).await;
            }
        }
    }
}
