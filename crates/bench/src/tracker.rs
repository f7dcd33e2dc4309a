//! The fan-out run's bookkeeping: one slot per ask, written by the agent that sent it and by
//! every tab that saw it, all with atomics (no locks, no maps: the request id is the index).
//!
//! From the slots come the latencies (ask → first tab, ask → all tabs, answer → outcome) and
//! the audit: every ask must get exactly one `accepted` and one `outcome`, and every tab of
//! its session exactly one `request` and one `resolved`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use serde::Serialize;

use crate::histo::Hist;

/// Most tabs per session (the open-file limit stops a run well before it).
pub(crate) const MAX_TABS: usize = 100_000;
/// Unexpected frames kept verbatim for the report.
const KEPT_SAMPLES: usize = 10;

/// One ask.
#[derive(Default)]
struct Slot {
    /// When the agent wrote it (ns since the epoch; 0: not sent).
    sent_ns: AtomicU64,
    /// When the first answer to it was written (0: none yet).
    answered_ns: AtomicU64,
    /// Tabs that got its `request` (each counted once).
    deliveries: AtomicU32,
    /// `accepted` frames.
    accepted: AtomicU32,
    /// `outcome` frames.
    outcomes: AtomicU32,
}

/// Latencies of the run.
#[derive(Debug, Default)]
pub(crate) struct Latencies {
    /// ask written → the first tab of its session has the `request`.
    pub(crate) ask_to_first_tab: Hist,
    /// ask written → every tab of its session has it.
    pub(crate) ask_to_all_tabs: Hist,
    /// answer written → the agent has the `outcome`.
    pub(crate) answer_to_outcome: Hist,
    /// ask written → `accepted` back.
    pub(crate) ask_to_accepted: Hist,
    /// When an ask was written minus when it was due (the generator's own lateness).
    pub(crate) send_lag: Hist,
}

/// Counters of frames that should not happen, or that explain a loss.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Oddities {
    /// `rejected` frames to agents.
    pub(crate) rejected: u64,
    /// `error` frames.
    pub(crate) errors: u64,
    /// `answer_rejected` frames (expected with `--answer all`).
    pub(crate) answer_rejected: u64,
    /// Frames that could not be parsed or had an unknown id.
    pub(crate) unparsed: u64,
    /// Sockets the server closed or dropped during the run, by close code (1006: no close frame).
    pub(crate) closed_by_server: BTreeMap<u16, u64>,
    /// The first few odd frames, verbatim.
    pub(crate) samples: Vec<String>,
}

/// What the audit found; every field but `asks` must be zero.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Audit {
    /// Asks sent.
    pub(crate) asks: u64,
    /// Asks planned but never sent (the agent's socket closed, or the run gave up).
    pub(crate) unsent: u64,
    /// Asks with no `accepted`.
    pub(crate) accepted_lost: u64,
    /// Extra `accepted` frames.
    pub(crate) accepted_doubled: u64,
    /// Asks with no `outcome`.
    pub(crate) outcomes_lost: u64,
    /// Extra `outcome` frames.
    pub(crate) outcomes_doubled: u64,
    /// (ask, tab) pairs with no `request`.
    pub(crate) requests_lost: u64,
    /// Extra `request` frames to a tab.
    pub(crate) requests_doubled: u64,
    /// (ask, tab) pairs with no `resolved`, among asks that have an outcome.
    pub(crate) resolved_lost: u64,
    /// Extra `resolved` frames to a tab.
    pub(crate) resolved_doubled: u64,
    /// A few asks with no outcome, and how far each got, for diagnosis.
    pub(crate) missing_samples: Vec<Missing>,
}

/// How far an ask without an outcome got.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Missing {
    /// Its sequence number (request id `q<seq>`).
    pub(crate) seq: u64,
    /// When it was written, ms since the tracker's epoch.
    pub(crate) sent_ms: f64,
    /// `accepted` frames received.
    pub(crate) accepted: u32,
    /// Tabs that got its `request`.
    pub(crate) tabs_with_request: u32,
    /// When the answer was written, ms since the epoch (absent: never answered).
    pub(crate) answered_ms: Option<f64>,
    /// Tabs that received its `resolved`.
    pub(crate) resolved: u32,
}

impl Audit {
    /// Everything lost, doubled or never sent.
    pub(crate) fn faults(&self) -> u64 {
        self.unsent
            + self.accepted_lost
            + self.accepted_doubled
            + self.outcomes_lost
            + self.outcomes_doubled
            + self.requests_lost
            + self.requests_doubled
            + self.resolved_lost
            + self.resolved_doubled
    }

    /// Whether nothing was lost, doubled or left unsent.
    pub(crate) fn clean(&self) -> bool {
        self.faults() == 0
    }
}

/// Shared by every agent and tab task of one run.
pub(crate) struct Tracker {
    epoch: Instant,
    tabs: u32,
    slots: Box<[Slot]>,
    /// Which tabs got each ask's `request`, one bit per tab: `words` words per ask.
    seen: Box<[AtomicU64]>,
    /// Which tabs got each ask's `resolved`, likewise.
    resolved: Box<[AtomicU64]>,
    words: usize,
    /// The latencies.
    pub(crate) latency: Latencies,
    /// First outcomes received (the run's progress counter).
    pub(crate) outcomes: std::sync::Arc<AtomicU64>,
    duplicates: AtomicU64,
    resolved_duplicates: AtomicU64,
    odd: Mutex<Oddities>,
}

impl Tracker {
    /// Room for `asks` asks in sessions of `tabs` tabs (at most [`MAX_TABS`]).
    pub(crate) fn new(asks: u64, tabs: usize) -> Tracker {
        assert!(tabs <= MAX_TABS, "at most {MAX_TABS} tabs per session");
        let words = tabs.div_ceil(64).max(1);
        let bits = || {
            (0..asks as usize * words)
                .map(|_| AtomicU64::new(0))
                .collect()
        };
        Tracker {
            epoch: Instant::now(),
            tabs: tabs as u32,
            slots: (0..asks).map(|_| Slot::default()).collect(),
            seen: bits(),
            resolved: bits(),
            words,
            latency: Latencies::default(),
            outcomes: std::sync::Arc::default(),
            duplicates: AtomicU64::new(0),
            resolved_duplicates: AtomicU64::new(0),
            odd: Mutex::new(Oddities::default()),
        }
    }

    /// Nanoseconds since the tracker was made (never 0).
    pub(crate) fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64 + 1
    }

    /// Nanoseconds since the epoch at `at`.
    pub(crate) fn ns_at(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_nanos() as u64 + 1
    }

    fn slot(&self, seq: u64) -> Option<&Slot> {
        self.slots.get(usize::try_from(seq).ok()?)
    }

    /// Ask `seq`'s bits in `bits` (`seq` has a slot).
    fn bits_of<'a>(&self, bits: &'a [AtomicU64], seq: u64) -> &'a [AtomicU64] {
        let at = seq as usize * self.words;
        &bits[at..at + self.words]
    }

    /// The agent is writing ask `seq` at `now`.
    pub(crate) fn ask_sent(&self, seq: u64, now: u64) {
        if let Some(slot) = self.slot(seq) {
            slot.sent_ns.store(now, Relaxed);
        }
    }

    /// Tab `tab` received the `request` of ask `seq` at `now`.
    pub(crate) fn request_seen(&self, seq: u64, tab: usize, now: u64) {
        let Some(slot) = self.slot(seq) else {
            return self.odd("request with an unknown id");
        };
        if !first_for_tab(self.bits_of(&self.seen, seq), tab) {
            self.duplicates.fetch_add(1, Relaxed);
            return;
        }
        let n = slot.deliveries.fetch_add(1, Relaxed) + 1;
        let sent = slot.sent_ns.load(Relaxed);
        if sent == 0 {
            return;
        }
        if n == 1 {
            self.latency
                .ask_to_first_tab
                .record_ns(now.saturating_sub(sent));
        }
        if n == self.tabs {
            self.latency
                .ask_to_all_tabs
                .record_ns(now.saturating_sub(sent));
        }
    }

    /// A tab is writing an answer to ask `seq` at `now` (the first one counts).
    pub(crate) fn answer_sent(&self, seq: u64, now: u64) {
        if let Some(slot) = self.slot(seq) {
            let _ = slot.answered_ns.compare_exchange(0, now, Relaxed, Relaxed);
        }
    }

    /// Tab `tab` received `resolved` for ask `seq`.
    pub(crate) fn resolved_seen(&self, seq: u64, tab: usize) {
        if self.slot(seq).is_some() && !first_for_tab(self.bits_of(&self.resolved, seq), tab) {
            self.resolved_duplicates.fetch_add(1, Relaxed);
        }
    }

    /// The agent received `accepted` for ask `seq` at `now`.
    pub(crate) fn accepted(&self, seq: u64, now: u64) {
        let Some(slot) = self.slot(seq) else {
            return self.odd("accepted with an unknown id");
        };
        if slot.accepted.fetch_add(1, Relaxed) == 0 {
            let sent = slot.sent_ns.load(Relaxed);
            self.latency
                .ask_to_accepted
                .record_ns(now.saturating_sub(sent));
        }
    }

    /// The agent received the `outcome` of ask `seq` at `now`; whether it is the first.
    pub(crate) fn outcome(&self, seq: u64, now: u64) -> bool {
        let Some(slot) = self.slot(seq) else {
            self.odd("outcome with an unknown id");
            return false;
        };
        if slot.outcomes.fetch_add(1, Relaxed) != 0 {
            return false;
        }
        self.outcomes.fetch_add(1, Relaxed);
        let answered = slot.answered_ns.load(Relaxed);
        if answered != 0 {
            self.latency
                .answer_to_outcome
                .record_ns(now.saturating_sub(answered));
        }
        true
    }

    /// Counts an odd frame and keeps the first few.
    pub(crate) fn odd_frame(&self, kind: &str, text: &str) {
        let mut odd = self.lock_odd();
        match kind {
            "rejected" => odd.rejected += 1,
            "error" => odd.errors += 1,
            "answer_rejected" => odd.answer_rejected += 1,
            _ => odd.unparsed += 1,
        }
        if odd.samples.len() < KEPT_SAMPLES {
            odd.samples.push(crate::conn::truncate(text));
        }
    }

    fn odd(&self, what: &str) {
        self.odd_frame("unparsed", what);
    }

    /// A socket was closed by the server with `code`.
    pub(crate) fn closed_by_server(&self, code: u16) {
        *self.lock_odd().closed_by_server.entry(code).or_default() += 1;
    }

    fn lock_odd(&self) -> std::sync::MutexGuard<'_, Oddities> {
        self.odd
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The odd frames seen so far.
    pub(crate) fn oddities(&self) -> Oddities {
        self.lock_odd().clone()
    }

    /// Checks the first `asks` slots.
    pub(crate) fn audit(&self, asks: u64) -> Audit {
        let mut audit = Audit {
            requests_doubled: self.duplicates.load(Relaxed),
            resolved_doubled: self.resolved_duplicates.load(Relaxed),
            ..Audit::default()
        };
        let tabs = u64::from(self.tabs);
        let asks = usize::try_from(asks).unwrap_or(usize::MAX);
        for (seq, slot) in self.slots.iter().enumerate().take(asks) {
            if slot.sent_ns.load(Relaxed) == 0 {
                audit.unsent += 1;
                continue;
            }
            audit.asks += 1;
            let count = |c: &AtomicU32| u64::from(c.load(Relaxed));
            let (accepted, outcomes) = (count(&slot.accepted), count(&slot.outcomes));
            audit.accepted_lost += u64::from(accepted == 0);
            audit.accepted_doubled += accepted.saturating_sub(1);
            audit.outcomes_lost += u64::from(outcomes == 0);
            if outcomes == 0 && audit.missing_samples.len() < 10 {
                let answered = slot.answered_ns.load(Relaxed);
                audit.missing_samples.push(Missing {
                    seq: seq as u64,
                    sent_ms: slot.sent_ns.load(Relaxed) as f64 / 1e6,
                    accepted: slot.accepted.load(Relaxed),
                    tabs_with_request: slot.deliveries.load(Relaxed),
                    answered_ms: (answered != 0).then(|| answered as f64 / 1e6),
                    resolved: tabs_in(self.bits_of(&self.resolved, seq as u64)) as u32,
                });
            }
            audit.outcomes_doubled += outcomes.saturating_sub(1);
            let seq = seq as u64;
            audit.requests_lost += tabs.saturating_sub(tabs_in(self.bits_of(&self.seen, seq)));
            if outcomes > 0 {
                let resolved = tabs_in(self.bits_of(&self.resolved, seq));
                audit.resolved_lost += tabs.saturating_sub(resolved);
            }
        }
        audit
    }
}

/// Sets `tab`'s bit; whether it was clear (the tab's first such frame).
fn first_for_tab(bits: &[AtomicU64], tab: usize) -> bool {
    let bit = 1u64 << (tab % 64);
    bits[tab / 64].fetch_or(bit, Relaxed) & bit == 0
}

/// How many tabs' bits are set.
fn tabs_in(bits: &[AtomicU64]) -> u64 {
    bits.iter()
        .map(|w| u64::from(w.load(Relaxed).count_ones()))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full round trip audits clean; a missing tab, a second outcome and a lost outcome
    /// are each counted.
    #[test]
    fn audit_counts_losses_and_doubles() {
        let t = Tracker::new(4, 2);
        for seq in 0..3 {
            t.ask_sent(seq, 10);
            t.accepted(seq, 11);
        }
        t.request_seen(0, 0, 20);
        t.request_seen(0, 1, 30);
        t.resolved_seen(0, 0);
        t.resolved_seen(0, 1);
        assert!(t.outcome(0, 40));
        t.request_seen(1, 0, 20);
        assert!(t.outcome(1, 40));
        assert!(!t.outcome(1, 41));
        t.request_seen(2, 0, 20);
        t.request_seen(2, 1, 20);
        t.request_seen(2, 1, 21);
        // Tab 0 gets ask 1's `resolved` twice, tab 1 never: a loss and a double, not a wash.
        t.resolved_seen(1, 0);
        t.resolved_seen(1, 0);
        let audit = t.audit(4);
        assert_eq!(audit.asks, 3);
        assert_eq!(audit.unsent, 1);
        assert_eq!(audit.requests_lost, 1);
        assert_eq!(audit.requests_doubled, 1);
        assert_eq!(audit.outcomes_doubled, 1);
        assert_eq!(audit.outcomes_lost, 1);
        assert_eq!(audit.resolved_lost, 1);
        assert_eq!(audit.resolved_doubled, 1);
        assert!(!audit.clean());
    }

    /// Sessions of thousands of tabs are told apart tab by tab.
    #[test]
    fn every_tab_of_a_large_session_counts() {
        let t = Tracker::new(2, 10_000);
        for seq in 0..2 {
            t.ask_sent(seq, 10);
            t.accepted(seq, 11);
            assert!(t.outcome(seq, 40));
        }
        for tab in 0..10_000 {
            t.request_seen(0, tab, 20);
            t.resolved_seen(0, tab);
        }
        for tab in 0..9_999 {
            t.request_seen(1, tab, 20);
            t.resolved_seen(1, tab);
        }
        t.request_seen(1, 0, 21);
        let audit = t.audit(2);
        assert_eq!(audit.requests_lost, 1, "the last tab of ask 1");
        assert_eq!(audit.resolved_lost, 1);
        assert_eq!(audit.requests_doubled, 1);
        assert_eq!(
            t.latency.ask_to_all_tabs.summary().count,
            1,
            "only ask 0 reached all"
        );
    }
}
