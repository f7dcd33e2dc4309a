//! A simulated agent connection: asks on a fixed schedule, acks every outcome.
//!
//! Agent `a` of `A` sends asks number `a, a + A, a + 2A, ...`; ask `seq` is due at
//! `start + seq / rate`, so together the agents ask at exactly `rate` asks a second. An ask
//! that is late (the generator was busy) is sent at once and its lateness recorded as
//! `send lag`: the schedule never slips, so a slow server cannot slow the load down and hide
//! its own latency (no coordinated omission).
//!
//! One task owns the socket. Replies that are already waiting are read in a burst and their
//! acks written with one flush.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use tokio_tungstenite::tungstenite::{self, Message};

use crate::conn::{self, Ws};
use crate::frames::{self, Kind};
use crate::tracker::Tracker;

/// Frames read in one burst before the acks are flushed.
const BURST: usize = 64;

/// What one agent connection does.
#[derive(Clone, Debug)]
pub(crate) struct AgentPlan {
    /// This agent's number, `a`.
    pub(crate) index: u64,
    /// How many agents share the schedule, `A`.
    pub(crate) agents: u64,
    /// The sessions this agent asks in, in turn.
    pub(crate) sessions: Vec<String>,
    /// Asks across all agents.
    pub(crate) total: u64,
    /// Asks per second across all agents.
    pub(crate) rate: f64,
    /// `timeout_s` on each ask.
    pub(crate) timeout_s: Option<f64>,
    /// When ask 0 is due.
    pub(crate) start: Instant,
    /// When to stop waiting for outstanding outcomes.
    pub(crate) give_up: Instant,
}

/// How an agent's run went.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AgentResult {
    /// Asks written.
    pub(crate) asked: u64,
    /// Acks written.
    pub(crate) acked: u64,
    /// Outcomes still missing when it stopped.
    pub(crate) outstanding: u64,
    /// When its last outcome arrived.
    pub(crate) last_outcome: Option<Instant>,
}

enum Event {
    Incoming(Option<Result<Message, tungstenite::Error>>),
    Due,
    GiveUp,
}

/// Runs the agent until every ask it made has its outcome, or `plan.give_up`.
pub(crate) async fn run(mut ws: Ws, plan: AgentPlan, tracker: Arc<Tracker>) -> AgentResult {
    let mut result = AgentResult::default();
    let mut next = plan.index;
    let due_at = |seq: u64| plan.start + Duration::from_secs_f64(seq as f64 / plan.rate);
    let mut acks: Vec<String> = Vec::with_capacity(BURST);
    loop {
        let sending = next < plan.total;
        if !sending && result.outstanding == 0 {
            break;
        }
        let wake = if sending { due_at(next) } else { plan.give_up };
        let event = tokio::select! {
            biased;
            message = ws.next() => Event::Incoming(message),
            () = tokio::time::sleep_until(wake.into()), if sending => Event::Due,
            () = tokio::time::sleep_until(plan.give_up.into()) => Event::GiveUp,
        };
        match event {
            Event::GiveUp => break,
            Event::Due => {
                let now = Instant::now();
                let now_ns = tracker.ns_at(now);
                let mut k = next / plan.agents;
                while next < plan.total && due_at(next) <= now {
                    tracker
                        .latency
                        .send_lag
                        .record_ns(now.saturating_duration_since(due_at(next)).as_nanos() as u64);
                    let session = &plan.sessions[(k as usize) % plan.sessions.len()];
                    tracker.ask_sent(next, now_ns);
                    let ask = Message::text(frames::ask(session, next, plan.timeout_s));
                    if !conn::wrote(plan.give_up, ws.feed(ask)).await {
                        tracker.closed_by_server(1006);
                        return result;
                    }
                    result.asked += 1;
                    result.outstanding += 1;
                    next += plan.agents;
                    k += 1;
                }
                if !conn::wrote(plan.give_up, ws.flush()).await {
                    tracker.closed_by_server(1006);
                    return result;
                }
            }
            Event::Incoming(message) => {
                let handled = conn::texts_ready(&mut ws, message, BURST, |text| {
                    on_text(text, &tracker, &mut result, &mut acks);
                });
                if let Err(code) = handled {
                    tracker.closed_by_server(code);
                    return result;
                }
                if !acks.is_empty() {
                    for ack in acks.drain(..) {
                        if !conn::wrote(plan.give_up, ws.feed(Message::text(ack))).await {
                            tracker.closed_by_server(1006);
                            return result;
                        }
                        result.acked += 1;
                    }
                    if !conn::wrote(plan.give_up, ws.flush()).await {
                        tracker.closed_by_server(1006);
                        return result;
                    }
                }
            }
        }
    }
    conn::close(ws).await;
    result
}

fn on_text(text: &str, tracker: &Tracker, result: &mut AgentResult, acks: &mut Vec<String>) {
    let now = tracker.now_ns();
    let Some(frame) = frames::parse(text) else {
        return tracker.odd_frame("unparsed", text);
    };
    let seq = frame.id.as_deref().and_then(frames::seq_of);
    match (frame.kind, seq) {
        (Kind::Accepted, Some(seq)) => tracker.accepted(seq, now),
        (Kind::Outcome, Some(seq)) => {
            if tracker.outcome(seq, now) {
                result.outstanding = result.outstanding.saturating_sub(1);
                result.last_outcome = Some(Instant::now());
            }
            if let (Some(session), Some(id)) = (&frame.session, &frame.id) {
                acks.push(frames::ack(session, id));
            }
        }
        (Kind::Rejected, seq) => {
            // It will never have an outcome: stop waiting for it (the audit counts it lost).
            if seq.is_some() {
                result.outstanding = result.outstanding.saturating_sub(1);
            }
            tracker.odd_frame("rejected", text);
        }
        (Kind::Error, _) => tracker.odd_frame("error", text),
        (Kind::Opened | Kind::Other, _) => {}
        _ => tracker.odd_frame("unparsed", text),
    }
}
