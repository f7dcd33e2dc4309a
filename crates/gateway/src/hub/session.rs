//! One session: its tabs, its agent connections, its requests; fan-out and presence.

use std::collections::{HashMap, HashSet};

use askgate_protocol::wire::{RequestView, ToTab};
use askgate_protocol::{RequestId, SessionId, TabId};

use super::entry::{Entry, EntryState};
use super::links::{Frame, Link};
use crate::clock::now_ms;
use crate::metrics::Metrics;

/// A tab watching the session.
#[derive(Debug)]
pub(super) struct TabSlot {
    pub(super) tab: TabId,
    pub(super) link: Link,
}

/// One agent conversation and everyone attached to it.
#[derive(Debug)]
pub(super) struct Session {
    pub(super) id: SessionId,
    /// Tabs by connection id.
    pub(super) tabs: HashMap<u64, TabSlot>,
    /// Agent connections that opened or asked in this session.
    pub(super) agents: HashSet<u64>,
    /// Requests by id, in every state.
    pub(super) requests: HashMap<RequestId, Entry>,
    /// Requests not yet resolved (committing, open or resolving), for the per-session limit.
    pub(super) unresolved: usize,
    /// The next request's sequence number.
    pub(super) next_seq: u64,
}

impl Session {
    pub(super) fn new(id: SessionId) -> Self {
        Session {
            id,
            tabs: HashMap::new(),
            agents: HashSet::new(),
            requests: HashMap::new(),
            unresolved: 0,
            next_seq: 0,
        }
    }

    /// Nothing and no one left: the session can be dropped.
    pub(super) fn is_idle(&self) -> bool {
        self.tabs.is_empty() && self.agents.is_empty() && self.requests.is_empty()
    }

    pub(super) fn agent_online(&self) -> bool {
        !self.agents.is_empty()
    }

    /// Sends `frame` to every tab; a tab whose queue is full is closed with 4408.
    pub(super) fn broadcast(&self, frame: &Frame, metrics: &Metrics) {
        for slot in self.tabs.values() {
            slot.link.send(frame.clone(), metrics);
        }
    }

    /// Tells every tab who is here.
    pub(super) fn announce_presence(&self, metrics: &Metrics) {
        self.announce_presence_except(None, metrics);
    }

    /// Tells every tab but `skip` (a newcomer, whose snapshot already says it) who is here.
    pub(super) fn announce_presence_except(&self, skip: Option<u64>, metrics: &Metrics) {
        let frame = Frame::encode(&ToTab::Presence {
            tabs: self.tabs.len(),
            agent_online: self.agent_online(),
        });
        for (id, slot) in &self.tabs {
            if Some(*id) != skip {
                slot.link.set_presence(frame.clone(), metrics);
            }
        }
    }

    /// Every open request, oldest first.
    pub(super) fn open_views(&self) -> Vec<RequestView> {
        let mut open: Vec<&Entry> = self.requests.values().filter(|e| e.is_open()).collect();
        open.sort_by_key(|e| e.seq);
        open.into_iter().map(|e| e.view.clone()).collect()
    }

    /// The `snapshot` frame for `tab`, which may send frames of `max_frame_bytes`.
    pub(super) fn snapshot(&self, tab: &TabId, max_frame_bytes: usize) -> Frame {
        Frame::encode(&ToTab::Snapshot {
            session: self.id.to_string(),
            tab: tab.to_string(),
            now_ms: now_ms(),
            tabs: self.tabs.len(),
            agent_online: self.agent_online(),
            requests: self.open_views(),
            max_frame_bytes,
        })
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
        for entry in self.requests.values_mut() {
            if entry.asker.as_ref().is_some_and(|link| link.id == agent) {
                entry.asker = None;
            }
        }
    }

    /// Resolved requests whose retention ran out by `now_ms`.
    pub(super) fn expired(&self, now_ms: u64, retention_ms: u64) -> Vec<RequestId> {
        self.requests
            .values()
            .filter(|e| match &e.state {
                EntryState::Resolved(r) => r.at_ms.saturating_add(retention_ms) <= now_ms,
                _ => false,
            })
            .map(|e| e.id.clone())
            .collect()
    }
}

/// A fresh tab id: `t-` and 16 random hex digits.
fn generated_tab_id() -> TabId {
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
pub(super) fn generated_session_id() -> SessionId {
    let n: u64 = rand::random();
    SessionId::parse(format!("s-{n:016x}")).unwrap_or_else(|_| unreachable!("hex ids are valid"))
}
