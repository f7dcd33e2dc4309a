//! `webhook`: asks at a steady rate, each notifying one webhook that the generator serves on
//! loopback, and measures ask → webhook delivered. Then the same again, but the server is
//! killed (SIGKILL) while notifications are under way and started again on the same data:
//! every ask it accepted must still reach the webhook.
//!
//! The receiver is a minimal HTTP/1.1 server (keep-alive, `Content-Length` bodies, 200 to
//! every POST): it reads the `webhook-id` header and the body's `data.id`, and does not check
//! signatures (the notify tests do, with the `standardwebhooks` package).

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::bail;
use futures_util::{SinkExt as _, StreamExt as _};
use serde::Serialize;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;

use crate::cli::WebhookCmd;
use crate::conn::{self, Ws};
use crate::frames;
use crate::histo::{Hist, Summary};
use crate::procstat;
use crate::report::load_average;
use crate::target::Target;

/// The largest request head the receiver reads.
const MAX_HEAD: usize = 16 * 1024;
/// The largest body it reads.
const MAX_BODY: usize = 1024 * 1024;
/// A fixed signing secret (32 bytes of base64): the receiver does not check signatures.
const SECRET: &str = "whsec_YXNrZ2F0ZS1iZW5jaC13ZWJob29rLXNlY3JldDAwMDA=";

/// How long the receiver holds each reply in the phase with the kill: at 5 ms one sender
/// takes at most 200 notifications a second, so at 1,000 asks a second most are still queued
/// when the server is killed.
const SLOW_RECEIVER: Duration = Duration::from_millis(5);
/// How long the agent's replies to the last asks are waited for (a killed server sends none).
const REPLIES_WAIT: Duration = Duration::from_secs(5);

/// What the receiver has seen.
#[derive(Default)]
struct Received {
    /// How long to hold each reply.
    delay: Duration,
    /// Request sequence number (its id is `q<seq>`) → when its first notification came.
    first: HashMap<u64, Instant>,
    /// Notification ids seen, to count repeats (at least once: a repeat is allowed).
    ids: HashSet<String>,
    posts: u64,
    repeats: u64,
}

/// One phase's figures.
#[derive(Debug, Serialize)]
pub(crate) struct Phase {
    /// Asks sent.
    pub(crate) asked: u64,
    /// Asks the server accepted (said `accepted` for).
    pub(crate) accepted: u64,
    /// Accepted asks whose notification never came within the drain.
    pub(crate) lost: u64,
    /// Accepted asks whose notification had not come when the server was killed.
    pub(crate) pending_at_kill: Option<u64>,
    /// Ask sent → its first notification received.
    pub(crate) ask_to_webhook: Summary,
    /// POSTs received, and repeats of a notification id already seen.
    pub(crate) posts: u64,
    /// Repeats.
    pub(crate) repeats: u64,
    /// Server CPU, % of one core, over the asking.
    pub(crate) server_cpu_pct: f64,
}

/// Both phases.
#[derive(Debug, Serialize)]
pub(crate) struct WebhookReport {
    /// `"webhook"`.
    pub(crate) scenario: &'static str,
    /// Load average at the start and the end.
    pub(crate) load: (f64, f64),
    /// The steady phase.
    pub(crate) steady: Phase,
    /// The phase with a SIGKILL, if run.
    pub(crate) killed: Option<Phase>,
}

impl WebhookReport {
    pub(crate) fn print(&self) {
        println!(
            "\nwebhook: one webhook on loopback, every ask notifies it (load average {:.1} -> {:.1})",
            self.load.0, self.load.1
        );
        let row = |name: &str, phase: &Phase| {
            let s = &phase.ask_to_webhook;
            println!(
                "{name:<10} asked {:>6} accepted {:>6} lost {:>3} | ask -> webhook p50 {:.2} p99 {:.2} p99.9 {:.2} max {:.2} ms | posts {} repeats {} | server CPU {:.0} %{}",
                phase.asked,
                phase.accepted,
                phase.lost,
                s.p50_ms,
                s.p99_ms,
                s.p999_ms,
                s.max_ms,
                phase.posts,
                phase.repeats,
                phase.server_cpu_pct,
                phase
                    .pending_at_kill
                    .map(|n| format!(" | undelivered when killed {n}"))
                    .unwrap_or_default()
            );
        };
        row("steady", &self.steady);
        if let Some(killed) = &self.killed {
            row("SIGKILL", killed);
        }
        println!(
            "target: ask -> webhook p99 <= 50 ms: {}; nothing lost over a SIGKILL: {}",
            if self.steady.ask_to_webhook.p99_ms <= 50.0 {
                "met"
            } else {
                "not met"
            },
            match &self.killed {
                Some(k) if k.lost == 0 => "met",
                Some(_) => "not met",
                None => "not run",
            }
        );
    }

    pub(crate) fn clean(&self) -> bool {
        self.steady.lost == 0 && self.killed.as_ref().is_none_or(|k| k.lost == 0)
    }
}

/// Runs `webhook`.
///
/// # Errors
/// The server or the receiver cannot start, or a connection fails.
pub(crate) async fn run(cmd: &WebhookCmd) -> anyhow::Result<WebhookReport> {
    if cmd.rate <= 0.0 || cmd.duration_s <= 0.0 || cmd.sessions == 0 {
        bail!("--rate, --duration-s and --sessions must be positive");
    }
    let load_start = load_average();
    let received = Arc::new(Mutex::new(Received::default()));
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let hook = listener.local_addr()?;
    tokio::spawn(serve(listener, Arc::clone(&received)));

    let dir = std::env::temp_dir().join(format!(
        "askgate-bench-webhook-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    std::fs::create_dir_all(&dir)?;
    let result = phases(cmd, &dir, hook, &received).await;
    let _ = std::fs::remove_dir_all(&dir);
    let (steady, killed) = result?;
    Ok(WebhookReport {
        scenario: "webhook",
        load: (load_start, load_average()),
        steady,
        killed,
    })
}

async fn phases(
    cmd: &WebhookCmd,
    dir: &Path,
    hook: SocketAddr,
    received: &Arc<Mutex<Received>>,
) -> anyhow::Result<(Phase, Option<Phase>)> {
    let notify = dir.join("notify.toml");
    std::fs::write(
        &notify,
        format!(
            "[webhooks.bench]\nurl = \"http://{hook}/hook\"\nsecret = \"{SECRET}\"\nevents = [\"request.opened\"]\n"
        ),
    )?;
    let flags = |data: &Path| -> Vec<String> {
        vec![
            "--notify".into(),
            notify.display().to_string(),
            "--public-url".into(),
            "http://127.0.0.1:9".into(),
            "--notify-allow-private".into(),
            format!(
                "--agent-frames-per-second={}",
                (cmd.rate * 2.0).ceil().max(100.0)
            ),
            "--data-dir".into(),
            data.display().to_string(),
        ]
    };
    let data = dir.join("data");
    let mut server = Target::spawn_askgate_owned(&cmd.askgate, &cmd.store, &flags(&data))?;
    eprintln!("server: {}", server.command);
    let names: Vec<String> = (0..cmd.sessions).map(|i| format!("w{i}")).collect();
    conn::open_sessions(server.addr, &names).await?;

    let asks = (cmd.rate * cmd.duration_s).ceil() as u64;
    let mut run = Run::new(0, asks);
    let agent = conn::connect(server.addr, "/v1/agent").await?;
    let cpu_from = procstat::read(server.pid);
    let replies = run.ask(agent, &names, cmd.rate, asks).await;
    let _ = tokio::time::timeout(REPLIES_WAIT, replies).await;
    let cpu_pct = cpu_since(&server, cpu_from);
    let steady = run.finish(received, cmd.drain_s, None, cpu_pct).await;

    if cmd.no_kill {
        return Ok((steady, None));
    }
    // The same again on the same server, killed partway through its asks.
    let kill_after = (cmd.rate * cmd.kill_after_s).ceil() as u64;
    let mut run = Run::new(asks, kill_after);
    let agent = conn::connect(server.addr, "/v1/agent").await?;
    // The receiver answers slowly meanwhile, so that notifications queue up behind it and
    // the kill finds many accepted and not yet delivered.
    received.lock().unwrap().delay = SLOW_RECEIVER;
    let cpu_from = procstat::read(server.pid);
    let replies = run.ask(agent, &names, cmd.rate, kill_after).await;
    let cpu_pct = cpu_since(&server, cpu_from);
    server.kill();
    let _ = tokio::time::timeout(REPLIES_WAIT, replies).await;
    received.lock().unwrap().delay = Duration::ZERO;
    let pending = run.undelivered(received);
    eprintln!("killed with {pending} accepted asks not yet notified; starting again");
    let restarted = Target::spawn_askgate_owned(&cmd.askgate, &cmd.store, &flags(&data))?;
    let killed = run
        .finish(received, cmd.drain_s, Some(pending), cpu_pct)
        .await;
    drop(restarted);
    Ok((steady, Some(killed)))
}

/// One phase's asks: sequence numbers `first..first + count`.
struct Run {
    first: u64,
    sent: Vec<Option<Instant>>,
    accepted: Arc<Mutex<Vec<bool>>>,
}

impl Run {
    fn new(first: u64, count: u64) -> Run {
        Run {
            first,
            sent: vec![None; count as usize],
            accepted: Arc::new(Mutex::new(vec![false; count as usize])),
        }
    }

    /// Sends `count` asks at `rate` over `agent`, round the sessions; what comes back is read
    /// meanwhile by the task returned, which ends once every ask has its reply or the
    /// connection ends.
    async fn ask(
        &mut self,
        agent: Ws,
        names: &[String],
        rate: f64,
        count: u64,
    ) -> tokio::task::JoinHandle<()> {
        let (mut writer, mut reader) = agent.split();
        let accepted = Arc::clone(&self.accepted);
        let first = self.first;
        let reading = tokio::spawn(async move {
            let mut replies = 0;
            while replies < count {
                let Ok(Some(Ok(message))) =
                    tokio::time::timeout(Duration::from_secs(30), reader.next()).await
                else {
                    break;
                };
                let Message::Text(text) = message else {
                    continue;
                };
                let Some(frame) = frames::parse(&text) else {
                    continue;
                };
                let Some(seq) = frame.id.as_deref().and_then(frames::seq_of) else {
                    continue;
                };
                replies += 1;
                if frame.kind == frames::Kind::Accepted
                    && let Some(i) = seq.checked_sub(first)
                    && let Some(slot) = accepted.lock().unwrap().get_mut(i as usize)
                {
                    *slot = true;
                }
            }
        });
        let start = tokio::time::Instant::now();
        for i in 0..count {
            let due = start + Duration::from_secs_f64(i as f64 / rate);
            tokio::time::sleep_until(due).await;
            let seq = self.first + i;
            let session = &names[(seq % names.len() as u64) as usize];
            self.sent[i as usize] = Some(Instant::now());
            if writer
                .send(Message::text(frames::ask(session, seq, None)))
                .await
                .is_err()
            {
                break;
            }
        }
        reading
    }

    /// Accepted asks with no notification yet.
    fn undelivered(&self, received: &Mutex<Received>) -> u64 {
        let received = received.lock().unwrap();
        let accepted = self.accepted.lock().unwrap();
        (0..accepted.len())
            .filter(|&i| accepted[i] && !received.first.contains_key(&(self.first + i as u64)))
            .count() as u64
    }

    /// Waits (up to `drain_s`) until every accepted ask has been notified, then sums up.
    async fn finish(
        &self,
        received: &Mutex<Received>,
        drain_s: f64,
        pending_at_kill: Option<u64>,
        server_cpu_pct: f64,
    ) -> Phase {
        let deadline = Instant::now() + Duration::from_secs_f64(drain_s);
        while self.undelivered(received) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let lost = self.undelivered(received);
        let received = received.lock().unwrap();
        let accepted = self.accepted.lock().unwrap();
        let histo = Hist::new();
        for (i, sent) in self.sent.iter().enumerate() {
            if let (Some(sent), Some(came)) = (sent, received.first.get(&(self.first + i as u64))) {
                histo.record_ns(came.saturating_duration_since(*sent).as_nanos() as u64);
            }
        }
        Phase {
            asked: self.sent.iter().filter(|s| s.is_some()).count() as u64,
            accepted: accepted.iter().filter(|a| **a).count() as u64,
            lost,
            pending_at_kill,
            ask_to_webhook: histo.summary(),
            posts: received.posts,
            repeats: received.repeats,
            server_cpu_pct,
        }
    }
}

/// The server's CPU between `from` (a reading at the phase's start) and now, % of a core.
fn cpu_since(server: &Target, from: Option<procstat::Reading>) -> f64 {
    match (from, procstat::read(server.pid)) {
        (Some(from), Some(to)) => procstat::cpu_percent(&from, &to),
        _ => f64::NAN,
    }
}

/// Serves the webhook until the process ends.
async fn serve(listener: TcpListener, received: Arc<Mutex<Received>>) {
    while let Ok((stream, _)) = listener.accept().await {
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(stream, Arc::clone(&received)));
    }
}

/// One keep-alive connection: POSTs, each answered 200 with no body.
async fn connection(mut stream: TcpStream, received: Arc<Mutex<Received>>) {
    let mut buffer = Vec::with_capacity(8192);
    loop {
        let Some(head_end) = read_until_head(&mut stream, &mut buffer).await else {
            return;
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
        let header = |name: &str| {
            head.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                key.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| value.trim().to_owned())
            })
        };
        let length: usize = header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if length > MAX_BODY {
            return;
        }
        let body_start = head_end + 4;
        while buffer.len() < body_start + length {
            let mut chunk = [0u8; 8192];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        let came = Instant::now();
        let body = &buffer[body_start..body_start + length];
        let request = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v["data"]["id"].as_str().and_then(frames::seq_of));
        {
            let mut seen = received.lock().unwrap();
            seen.posts += 1;
            if let Some(id) = header("webhook-id")
                && !seen.ids.insert(id)
            {
                seen.repeats += 1;
            }
            if let Some(request) = request {
                seen.first.entry(request).or_insert(came);
            }
        }
        buffer.drain(..body_start + length);
        let delay = received.lock().unwrap().delay;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .await
            .is_err()
        {
            return;
        }
    }
}

/// Reads until `buffer` holds a whole request head; its length (up to the blank line).
async fn read_until_head(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<usize> {
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(end);
        }
        if buffer.len() > MAX_HEAD {
            return None;
        }
        let mut chunk = [0u8; 8192];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_receiver_takes_posts_on_one_connection_and_counts_repeats() {
        let received = Arc::new(Mutex::new(Received::default()));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, Arc::clone(&received)));
        let post = |id: &str, request: &str| {
            let body = format!(r#"{{"type":"request.opened","data":{{"id":"{request}"}}}}"#);
            format!(
                "POST /hook HTTP/1.1\r\nHost: x\r\nWebhook-Id: {id}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
        };
        let mut stream = TcpStream::connect(addr).await.unwrap();
        // Two in one write, then a repeat of the first notification.
        let two = format!("{}{}", post("msg_1", "q1"), post("msg_2", "q2"));
        stream.write_all(two.as_bytes()).await.unwrap();
        stream
            .write_all(post("msg_1", "q1").as_bytes())
            .await
            .unwrap();
        let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        let mut replies = vec![0u8; reply.len() * 3];
        tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut replies))
            .await
            .expect("three replies in time")
            .unwrap();
        assert_eq!(replies, reply.repeat(3));
        let seen = received.lock().unwrap();
        assert_eq!((seen.posts, seen.repeats), (3, 1));
        assert!(seen.first.contains_key(&1) && seen.first.contains_key(&2));
        assert_eq!(seen.first.len(), 2);
    }
}
