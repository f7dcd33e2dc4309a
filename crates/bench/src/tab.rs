//! A simulated browser tab in the fan-out: records when each `request` arrives and, if it is
//! the tab that answers that request, answers after a think time.
//!
//! Think times are uniform in `[min, max]` ms; answers wait in a small heap ordered by when
//! they are due, so one task serves the socket and its timers. Frames already waiting are
//! read in a burst; answers due at once share one flush.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio_tungstenite::tungstenite::{self, Message};

use crate::cli::AnswerRule;
use crate::conn::{self, Ws};
use crate::frames::{self, Kind};
use crate::tracker::Tracker;

/// Frames read in one burst before answers are flushed.
const BURST: usize = 64;
/// Times a tab retries joining during setup before the run fails.
const SETUP_RETRIES: u32 = 5;
/// Pause before a tab closed during setup joins again.
const REJOIN_PAUSE: Duration = Duration::from_millis(100);

/// What the tab tasks share during setup.
#[derive(Default)]
pub(crate) struct Setup {
    /// Set when the measured phase begins: from then on a close is a failure, not a rejoin.
    pub(crate) measuring: AtomicBool,
    /// Tabs connected right now.
    pub(crate) connected: AtomicUsize,
    /// Why tabs were closed or refused during setup, and how often.
    pub(crate) kicks: std::sync::Mutex<BTreeMap<String, u64>>,
}

impl Setup {
    fn kicked(&self, why: &str) {
        if let Ok(mut kicks) = self.kicks.lock() {
            *kicks.entry(why.to_owned()).or_default() += 1;
        }
    }
}

/// What one tab does.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TabPlan {
    /// Its number within its session.
    pub(crate) index: usize,
    /// Tabs in its session.
    pub(crate) tabs: usize,
    /// Which tab answers.
    pub(crate) rule: AnswerRule,
    /// Think time bounds, ms.
    pub(crate) think_ms: (u64, u64),
    /// Seeds its think times.
    pub(crate) seed: u64,
}

impl TabPlan {
    /// Whether this tab answers ask `seq`.
    fn answers(&self, seq: u64) -> bool {
        match self.rule {
            AnswerRule::First => self.index == 0,
            AnswerRule::All => true,
            AnswerRule::Random => (mix(seq) % self.tabs as u64) as usize == self.index,
        }
    }
}

/// splitmix64: spreads sequential numbers evenly over the tabs.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

enum Event {
    Incoming(Option<Result<Message, tungstenite::Error>>),
    Due,
    Stop,
}

/// How a tab's run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Told to stop; it closed cleanly.
    Stopped,
    /// The server closed it with this code (1005: no code, 1006: no close frame).
    Closed(u16),
}

/// Where and as whom a tab joins.
#[derive(Clone, Debug)]
pub(crate) struct Join {
    /// The server.
    pub(crate) addr: SocketAddr,
    /// The session.
    pub(crate) session: String,
    /// Its viewer key.
    pub(crate) key: String,
    /// The tab id to ask for.
    pub(crate) tab: String,
}

/// One tab's life: joins (at most `gate` joining at once), reports on `ready` once, serves
/// its socket until `stop`. Closed by the server during setup (a join burst can overflow a
/// tab's queue with presence frames: 4408), it rejoins as a page does; once the measured
/// phase has begun, a close is booked in the tracker and the tab stays gone.
pub(crate) async fn live(
    join: Join,
    plan: TabPlan,
    tracker: Arc<Tracker>,
    setup: Arc<Setup>,
    mut stop: watch::Receiver<bool>,
    gate: Arc<Semaphore>,
    ready: mpsc::Sender<anyhow::Result<()>>,
) {
    let mut announced = false;
    let mut retries = 0;
    loop {
        let permit = gate.acquire().await;
        let joined = conn::join_tab(join.addr, &join.session, &join.key, &join.tab).await;
        drop(permit);
        let ws = match joined {
            Ok(ws) => ws,
            Err(e) if setup.measuring.load(Relaxed) || retries >= SETUP_RETRIES => {
                if !announced {
                    let _ = ready.send(Err(e)).await;
                }
                return;
            }
            Err(e) => {
                retries += 1;
                setup.kicked(&format!("{e:#}"));
                tokio::time::sleep(REJOIN_PAUSE).await;
                continue;
            }
        };
        setup.connected.fetch_add(1, Relaxed);
        if !announced {
            announced = true;
            let _ = ready.send(Ok(())).await;
        }
        let ended = run(ws, &plan, &tracker, &mut stop).await;
        setup.connected.fetch_sub(1, Relaxed);
        match ended {
            Ended::Stopped => return,
            Ended::Closed(code) if setup.measuring.load(Relaxed) => {
                return tracker.closed_by_server(code);
            }
            Ended::Closed(code) => {
                setup.kicked(&format!("closed with {code}"));
                tokio::time::sleep(REJOIN_PAUSE).await;
            }
        }
    }
}

/// Runs the tab until `stop` flips (then closes cleanly) or the server closes it.
pub(crate) async fn run(
    mut ws: Ws,
    plan: &TabPlan,
    tracker: &Tracker,
    stop: &mut watch::Receiver<bool>,
) -> Ended {
    let mut rng = SmallRng::seed_from_u64(plan.seed);
    let mut later: BinaryHeap<Reverse<(Instant, u64)>> = BinaryHeap::new();
    let mut now_list: Vec<u64> = Vec::new();
    loop {
        let next_due = later.peek().map(|Reverse((at, _))| *at);
        let event = tokio::select! {
            biased;
            _ = stop.changed() => Event::Stop,
            message = ws.next() => Event::Incoming(message),
            () = sleep_until(next_due), if next_due.is_some() => Event::Due,
        };
        match event {
            Event::Stop => break,
            Event::Due => {
                let now = Instant::now();
                while let Some(Reverse((at, seq))) = later.peek().copied() {
                    if at > now {
                        break;
                    }
                    later.pop();
                    now_list.push(seq);
                }
            }
            Event::Incoming(message) => {
                let handled = conn::texts_ready(&mut ws, message, BURST, |text| {
                    if let Some(seq) = on_text(text, plan, tracker) {
                        let think = rng.random_range(plan.think_ms.0..=plan.think_ms.1);
                        if think == 0 {
                            now_list.push(seq);
                        } else {
                            let at = Instant::now() + Duration::from_millis(think);
                            later.push(Reverse((at, seq)));
                        }
                    }
                });
                if let Err(code) = handled {
                    return Ended::Closed(code);
                }
            }
        }
        if !now_list.is_empty() {
            let now = tracker.now_ns();
            let answers = async {
                for seq in now_list.drain(..) {
                    tracker.answer_sent(seq, now);
                    ws.feed(Message::text(frames::answer(seq))).await?;
                }
                ws.flush().await
            };
            // A server that stops reading must not keep the tab from stopping.
            tokio::select! {
                written = answers => {
                    if written.is_err() {
                        return Ended::Closed(1006);
                    }
                }
                _ = stop.changed() => return Ended::Stopped,
            }
        }
    }
    conn::close(ws).await;
    Ended::Stopped
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at.into()).await;
    }
}

/// Books a frame; `Some(seq)` for a request this tab should answer.
fn on_text(text: &str, plan: &TabPlan, tracker: &Tracker) -> Option<u64> {
    let now = tracker.now_ns();
    let Some(frame) = frames::parse(text) else {
        tracker.odd_frame("unparsed", text);
        return None;
    };
    match frame.kind {
        Kind::Request => {
            let seq = frame.request.as_ref().and_then(|r| frames::seq_of(&r.id))?;
            tracker.request_seen(seq, plan.index, now);
            plan.answers(seq).then_some(seq)
        }
        Kind::Resolved => {
            if let Some(seq) = frame.id.as_deref().and_then(frames::seq_of) {
                tracker.resolved_seen(seq, plan.index);
            }
            None
        }
        Kind::AnswerRejected => {
            tracker.odd_frame("answer_rejected", text);
            None
        }
        Kind::Error => {
            tracker.odd_frame("error", text);
            None
        }
        Kind::Presence | Kind::Snapshot | Kind::Other => None,
        _ => {
            tracker.odd_frame("unparsed", text);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With `random`, exactly one tab of the session answers each ask, and all tabs get some.
    #[test]
    fn random_rule_picks_one_tab_per_ask() {
        let plans: Vec<TabPlan> = (0..3)
            .map(|index| TabPlan {
                index,
                tabs: 3,
                rule: AnswerRule::Random,
                think_ms: (0, 0),
                seed: 0,
            })
            .collect();
        let mut per_tab = [0u32; 3];
        for seq in 0..3000 {
            let answering: Vec<usize> = plans
                .iter()
                .filter(|p| p.answers(seq))
                .map(|p| p.index)
                .collect();
            assert_eq!(answering.len(), 1);
            per_tab[answering[0]] += 1;
        }
        assert!(per_tab.iter().all(|n| *n > 800), "{per_tab:?}");
    }
}
