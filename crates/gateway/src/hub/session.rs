//! One session: its tabs, its agent connections, its requests; fan-out and presence.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use askgate_protocol::wire::{ToTab, You};
use askgate_protocol::{RequestId, SessionId, TabId};
use tokio::time::Instant;

use super::peers::frame::Frame;
use super::peers::tab_slots::{TabSlot, TabSlots};
use super::peers::wakes::Wakes;
use super::replica::SessionSync;
use super::request::{Entry, EntryState, LatelyForgotten, Ledger, OpenCounts};
use super::shown::finished::Finished;
use super::shown::history_cache::HistoryCache;
use super::shown::snapshot::{SnapshotBody, SnapshotHead};
use crate::clock::now_ms;
use crate::metrics::Metrics;
use crate::pacer::Pacer;
use crate::store::shared::Presence;

/// How long after an HTTP long-poll ends its agent still counts as waiting: a host polls
/// again right away, and tabs should not see it leave and come back between two polls.
pub(super) const POLL_GRACE: Duration = Duration::from_secs(5);

/// One agent conversation and everyone attached to it.
#[derive(Debug)]
pub(super) struct Session {
    pub(super) id: SessionId,
    /// Tabs by connection id.
    pub(super) tabs: TabSlots,
    /// Agent connections that opened or asked in this session.
    pub(super) agents: HashSet<u64>,
    /// Requests by id, in every state.
    pub(super) requests: HashMap<RequestId, Entry>,
    /// How many requests are unresolved and their bytes (changed only by the transitions in
    /// [`request`](super::request)), and the gateway-wide counts they go into.
    pub(super) open: OpenCounts,
    /// The next request's sequence number.
    pub(super) next_seq: u64,
    /// Requests forgotten lately.
    pub(super) forgotten: LatelyForgotten,
    /// Recent finished requests, for tabs that join later.
    pub(super) finished: Finished,
    /// The `history` frame, kept until a request ends; made when a tab first asks for it
    /// (most sessions never are) and dropped when the last tab leaves.
    pub(super) history: Option<Arc<HistoryCache>>,
    /// Bytes queued to this session's tabs and not yet written out.
    pub(super) queued_bytes: Arc<AtomicUsize>,
    /// Paces tabs joining.
    pub(super) joins: Pacer,
    /// The shared part of the last snapshot, reused while the session shows the same.
    pub(super) snapshot_body: SnapshotBody,
    /// How many times an open request's view was encoded anew (see `request`): part of what
    /// says the last snapshot body still shows the same.
    pub(super) reencoded: u64,
    /// HTTP long-polls waiting on this session's requests now. (This and `inbox_holds` are
    /// `u32`s so that, with the flags, they share eight bytes: an idle tab pays for its
    /// session in mimalloc's 320-byte class, see `replica`'s `a_session_fits_its_allocation_class`.)
    pollers: u32,
    /// Until when the last long-poll to end still counts its agent as waiting.
    poll_grace_until: Option<Instant>,
    /// Whether tabs were last told an agent is waiting.
    announced_online: bool,
    /// How many tabs they were last told of.
    announced_tabs: usize,
    /// Whether a timer will tell the tabs when the last long-poll's grace is over.
    grace_timer_set: bool,
    /// On a shared store: how far this node's copy has followed the store's.
    /// (Boxed: a session of a local store pays one pointer for it.)
    pub(super) sync: Option<Box<SessionSync>>,
    /// How many of this node's inboxes hold the session for requests of theirs in it: it is
    /// kept, and in step with the store, while any does.
    pub(super) inbox_holds: u32,
}

impl Session {
    /// A session that lets `joins_per_second` tabs join a second, and counts its requests
    /// into `ledger` too.
    pub(super) fn new(id: SessionId, joins_per_second: u32, ledger: Arc<Ledger>) -> Self {
        Session {
            id,
            tabs: TabSlots::default(),
            agents: HashSet::new(),
            requests: HashMap::new(),
            open: OpenCounts::new(ledger),
            next_seq: 0,
            forgotten: LatelyForgotten::default(),
            finished: Finished::default(),
            history: None,
            queued_bytes: Arc::new(AtomicUsize::new(0)),
            joins: Pacer::new(joins_per_second),
            snapshot_body: SnapshotBody::default(),
            reencoded: 0,
            pollers: 0,
            poll_grace_until: None,
            announced_online: false,
            announced_tabs: 0,
            grace_timer_set: false,
            sync: None,
            inbox_holds: 0,
        }
    }

    /// A request of the session ended: the `history` frame kept, if any, is built again.
    pub(super) fn history_ended(&self) {
        if let Some(history) = &self.history {
            history.ended();
        }
    }

    /// Nothing and no one left: the session can be dropped. A copy of a shared store's
    /// session may be dropped with requests in it (the store has them), once no peer of this
    /// node watches it and no change of this node's is in flight.
    pub(super) fn is_idle(&self) -> bool {
        let unwatched = self.tabs.is_empty()
            && self.agents.is_empty()
            && self.inbox_holds == 0
            && self.pollers == 0
            && self
                .poll_grace_until
                .is_none_or(|until| Instant::now() >= until);
        match &self.sync {
            None => unwatched && self.requests.is_empty() && self.finished.is_empty(),
            Some(sync) => {
                unwatched
                    && sync.loading.is_none()
                    && self.requests.values().all(|entry| {
                        !matches!(entry.state, EntryState::Committing | EntryState::Resolving)
                    })
            }
        }
    }

    /// Whether an agent is waiting on the session: a socket that opened or asked in it, or an
    /// HTTP long-poll on one of its requests (or one that ended within [`POLL_GRACE`]).
    pub(super) fn agent_online(&self) -> bool {
        !self.agents.is_empty()
            || self.pollers > 0
            || self
                .poll_grace_until
                .is_some_and(|until| Instant::now() < until)
    }

    /// What this node has of the session's presence: its tabs, and whether an agent waits.
    pub(super) fn presence_here(&self) -> Presence {
        Presence {
            tabs: self.tabs.len(),
            agent_online: self.agent_online(),
        }
    }

    /// The open requests whose agent waits here (its asking socket, or a long-poll), sorted:
    /// what this node tells the other nodes of a shared store it holds.
    pub(super) fn held_here(&self) -> Vec<RequestId> {
        let mut held: Vec<RequestId> = self
            .requests
            .values()
            .filter(|entry| entry.is_open() && (entry.asker.is_some() || entry.polls > 0))
            .map(|entry| entry.id.clone())
            .collect();
        held.sort();
        held
    }

    /// What tabs are shown: this node's tabs and agents, and on a shared store the other
    /// nodes' as they last reported them.
    pub(super) fn shown_presence(&self) -> (usize, bool) {
        let others = self
            .sync
            .as_ref()
            .map(|sync| sync.others)
            .unwrap_or_default();
        (
            self.tabs.len() + others.tabs,
            self.agent_online() || others.agent_online,
        )
    }

    /// A long-poll starts waiting.
    pub(super) fn begin_poll(&mut self) {
        self.pollers += 1;
        self.refresh_presence();
    }

    /// A long-poll stops waiting; tabs hear of it only once the grace has passed. `true` if a
    /// timer must be set to tell them then (none is set yet).
    pub(super) fn end_poll(&mut self) -> bool {
        self.pollers -= 1;
        if self.pollers > 0 {
            return false;
        }
        self.poll_grace_until = Some(Instant::now() + POLL_GRACE);
        !std::mem::replace(&mut self.grace_timer_set, true)
    }

    /// How much of the last long-poll's grace is left, if any, with no poll waiting; `None`
    /// ends the timer (it is set again by the next poll to end).
    pub(super) fn poll_grace_left(&mut self) -> Option<Duration> {
        let left = self
            .poll_grace_until
            .map(|until| until.saturating_duration_since(Instant::now()))
            .filter(|left| !left.is_zero() && self.pollers == 0);
        if left.is_none() {
            self.grace_timer_set = false;
        }
        left
    }

    /// Tells the tabs if whether an agent is waiting has changed since they were last told.
    pub(super) fn refresh_presence(&mut self) {
        if self.shown_presence() != (self.announced_tabs, self.announced_online) {
            self.announce_presence();
        }
    }

    /// Sends `frame` to every tab; a tab whose queue is full is closed with 4408, and so is
    /// one holding the most when the session goes past its queued-bytes budget.
    ///
    /// A big session's tabs are woken a few at a time once every frame is queued
    /// ([`Wakes`]), so that what other threads wake meanwhile is not kept behind them all.
    pub(super) fn broadcast(&self, frame: &Frame, metrics: &Metrics) {
        let mut wakes = Wakes::for_fan_out(self.tabs.len(), &self.open.ledger.fan_out_wakes);
        for (link_id, slot) in self.tabs.iter() {
            self.send_to_slot(link_id, slot, frame.clone(), metrics, &mut wakes);
        }
    }

    /// Sends `frame` to tab `link_id`; `false` if it was not queued. When the frame would take
    /// the session or the gateway past its queued-bytes budget, the session's tab holding the
    /// most (and not already closing) is closed with 4408: it is the one not reading. A tab
    /// that holds nothing gets the frame either way.
    pub(super) fn send_to(&self, link_id: u64, frame: Frame, metrics: &Metrics) -> bool {
        match self.tabs.get(link_id) {
            Some(slot) => self.send_to_slot(link_id, slot, frame, metrics, &mut Wakes::Now),
            None => false,
        }
    }

    /// [`Session::send_to`] for the tab `slot` of `link_id`, already looked up.
    fn send_to_slot(
        &self,
        link_id: u64,
        slot: &TabSlot,
        frame: Frame,
        metrics: &Metrics,
        wakes: &mut Wakes,
    ) -> bool {
        let frame = match slot.link.send_within_budget(frame, metrics, wakes) {
            Ok(sent) => return sent,
            Err(refused) => refused,
        };
        // A tab already closing still holds its bytes until its task lets go of its queue:
        // the next in line is the one to close.
        let worst = self
            .tabs
            .iter()
            .filter(|(_, slot)| !slot.link.is_closing())
            .max_by_key(|(_, slot)| slot.link.waiting());
        match worst {
            Some((worst_id, worst)) if worst.link.waiting() > 0 => {
                worst.link.close_too_slow(metrics);
                worst_id != link_id && slot.link.send(frame, metrics)
            }
            _ => slot.link.send(frame, metrics),
        }
    }

    /// Tells every tab who is here.
    pub(super) fn announce_presence(&mut self) {
        self.announce_presence_except(None);
    }

    /// Tells every tab but `skip` (a newcomer, whose snapshot already says it) who is here.
    pub(super) fn announce_presence_except(&mut self, skip: Option<u64>) {
        (self.announced_tabs, self.announced_online) = self.shown_presence();
        let frame = Frame::encode(&ToTab::Presence {
            tabs: self.announced_tabs,
            agent_online: self.announced_online,
        });
        let mut wakes = Wakes::for_fan_out(self.tabs.len(), &self.open.ledger.fan_out_wakes);
        for (id, slot) in self.tabs.iter() {
            if Some(id) != skip {
                slot.link.set_presence(frame.clone(), &mut wakes);
            }
        }
    }

    /// The `snapshot` frame for `tab`, which may send frames of `max_frame_bytes`: every open
    /// request, oldest first, and the recent finished ones. Everything after the tab's own
    /// fields is shared by every tab that joins while the session shows the same (a joining
    /// tab costs its head, not a copy of every open request).
    pub(super) fn snapshot(&mut self, tab: &TabId, you: &You, max_frame_bytes: usize) -> Frame {
        self.finished.prune(now_ms());
        let mut open: Vec<&Entry> = self.requests.values().filter(|e| e.is_open()).collect();
        open.sort_by_key(|e| e.seq);
        let body = self
            .snapshot_body
            .body(&open, &self.finished, self.reencoded, max_frame_bytes);
        let head = SnapshotHead {
            session: self.id.as_str(),
            tab: tab.as_str(),
            now_ms: now_ms(),
            tabs: self.shown_presence().0,
            agent_online: self.shown_presence().1,
            you: Some(you),
        };
        Frame::joined(head.encode(), body)
    }

    /// A tab id for a joining tab: the one it asked for unless another live tab has it
    /// (a duplicated browser tab copies `sessionStorage`).
    pub(super) fn tab_id_for(&self, requested: Option<TabId>) -> TabId {
        match requested {
            Some(tab) if !self.tabs.values().any(|slot| slot.tab == tab) => tab,
            _ => generated_tab_id(),
        }
    }

    /// Forgets which agent connection waits on each request of `agent`.
    pub(super) fn forget_asker(&mut self, agent: u64) {
        let mut left = Vec::new();
        for entry in self.requests.values_mut() {
            if entry.asker.as_ref().is_some_and(|link| link.id == agent) {
                entry.asker = None;
                left.push(entry.id.clone());
            }
        }
        for id in left {
            self.unattended(&id);
        }
    }
}

/// A fresh tab id: `t-` and 16 random hex digits.
pub(super) fn generated_tab_id() -> TabId {
    let n: u64 = rand::random();
    TabId::parse(format!("t-{n:016x}")).unwrap_or_else(|_| unreachable!("hex ids are valid"))
}

/// A fresh request id: uuid4-style 32 lowercase hex digits, as the harness makes them.
pub(super) fn generated_request_id() -> RequestId {
    let mut bytes: [u8; 16] = rand::random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    RequestId::parse(hex).unwrap_or_else(|_| unreachable!("hex ids are valid"))
}

/// A fresh session id: `s-` and 16 random hex digits.
pub fn generated_session_id() -> SessionId {
    let n: u64 = rand::random();
    SessionId::parse(format!("s-{n:016x}")).unwrap_or_else(|_| unreachable!("hex ids are valid"))
}
