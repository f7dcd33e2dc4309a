//! One session: its tabs, its agent connections, its requests; fan-out and presence.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write as _;

use askgate_protocol::wire::ToTab;
use askgate_protocol::{RequestId, SessionId, TabId};
use bytes::Bytes;

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
    /// The bytes of those requests as tabs receive them, for the per-session limit that bounds
    /// a snapshot.
    pub(super) open_bytes: usize,
    /// The next request's sequence number.
    pub(super) next_seq: u64,
    /// Requests forgotten lately (acked, or kept past their retention), newest last: a tab's
    /// late answer to one is told "already resolved", as the design says, rather than that
    /// there is no such request. At most [`FORGOTTEN_REMEMBERED`].
    forgotten: VecDeque<RequestId>,
}

/// How many forgotten request ids a session remembers. A tab learns a request ended the
/// moment it does; this covers answers already on their way, not days-old ones.
const FORGOTTEN_REMEMBERED: usize = 64;

impl Session {
    pub(super) fn new(id: SessionId) -> Self {
        Session {
            id,
            tabs: HashMap::new(),
            agents: HashSet::new(),
            requests: HashMap::new(),
            unresolved: 0,
            open_bytes: 0,
            next_seq: 0,
            forgotten: VecDeque::new(),
        }
    }

    /// A request of `bytes` (as tabs receive it) is now unresolved.
    pub(super) fn count_open(&mut self, bytes: usize) {
        self.unresolved += 1;
        self.open_bytes += bytes;
    }

    /// A request of `bytes` is no longer unresolved: it ended, or was never stored.
    pub(super) fn uncount_open(&mut self, bytes: usize) {
        self.unresolved -= 1;
        self.open_bytes = self.open_bytes.saturating_sub(bytes);
    }

    /// Forgets request `id`, which has ended; notes it among the lately forgotten.
    pub(super) fn forget(&mut self, id: &RequestId) -> Option<Entry> {
        let entry = self.requests.remove(id)?;
        if self.forgotten.len() == FORGOTTEN_REMEMBERED {
            self.forgotten.pop_front();
        }
        self.forgotten.push_back(id.clone());
        Some(entry)
    }

    /// Whether request `id` ended and was forgotten lately.
    pub(super) fn forgot_lately(&self, id: &RequestId) -> bool {
        self.forgotten.contains(id)
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

    /// The `snapshot` frame for `tab`, which may send frames of `max_frame_bytes`: every open
    /// request, oldest first, its view copied in as it was encoded when it was asked.
    pub(super) fn snapshot(&self, tab: &TabId, max_frame_bytes: usize) -> Frame {
        let mut open: Vec<&Entry> = self.requests.values().filter(|e| e.is_open()).collect();
        open.sort_by_key(|e| e.seq);
        let head = SnapshotHead {
            session: self.id.as_str(),
            tab: tab.as_str(),
            now_ms: now_ms(),
            tabs: self.tabs.len(),
            agent_online: self.agent_online(),
            max_frame_bytes,
        };
        snapshot_frame(&head, open.iter().map(|e| &e.encoded.view))
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

/// A snapshot's fields but its requests.
struct SnapshotHead<'a> {
    session: &'a str,
    tab: &'a str,
    now_ms: u64,
    tabs: usize,
    agent_online: bool,
    max_frame_bytes: usize,
}

/// The `snapshot` frame, byte for byte what serde_json writes for [`ToTab::Snapshot`] with
/// these views as its requests (the views are serde_json's output too).
fn snapshot_frame<'v>(head: &SnapshotHead<'_>, views: impl Iterator<Item = &'v Bytes>) -> Frame {
    let views: Vec<&Bytes> = views.collect();
    let views_bytes: usize = views.iter().map(|view| view.len() + 1).sum();
    let mut out = Vec::with_capacity(256 + views_bytes);
    // Writing into a `Vec` cannot fail.
    out.extend_from_slice(br#"{"type":"snapshot","session":"#);
    let _ = serde_json::to_writer(&mut out, head.session);
    out.extend_from_slice(br#","tab":"#);
    let _ = serde_json::to_writer(&mut out, head.tab);
    let _ = write!(
        out,
        r#","now_ms":{},"tabs":{},"agent_online":{},"requests":["#,
        head.now_ms, head.tabs, head.agent_online
    );
    for (i, view) in views.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(view);
    }
    let _ = write!(out, r#"],"max_frame_bytes":{}}}"#, head.max_frame_bytes);
    Frame::from_json(Bytes::from(out))
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

#[cfg(test)]
mod tests {
    use askgate_protocol::Dialect;
    use askgate_protocol::wire::RequestView;
    use serde_json::json;

    use super::super::entry::EncodedRequest;
    use super::*;

    fn view(id: &str, deadline_ms: Option<u64>) -> RequestView {
        RequestView {
            id: id.into(),
            dialect: Dialect::Deepagents,
            title: None,
            questions: json!([{"question": "Why \"so\"?\u{1}", "type": "text"}]),
            asked_at_ms: 3,
            deadline_ms,
        }
    }

    #[test]
    fn a_pieced_snapshot_is_what_serde_json_writes() {
        let head = SnapshotHead {
            session: "s-1",
            tab: "t-\"x\"",
            now_ms: 1_700_000_000_123,
            tabs: 2,
            agent_online: true,
            max_frame_bytes: 65_536,
        };
        for views in [
            vec![],
            vec![view("r-1", None)],
            vec![view("r-1", Some(9)), view("r-2", None)],
        ] {
            let encoded: Vec<EncodedRequest> = views.iter().map(EncodedRequest::new).collect();
            let pieced = snapshot_frame(&head, encoded.iter().map(|e| &e.view));
            let encoded = Frame::encode(&ToTab::Snapshot {
                session: head.session.into(),
                tab: head.tab.into(),
                now_ms: head.now_ms,
                tabs: head.tabs,
                agent_online: head.agent_online,
                requests: views,
                max_frame_bytes: head.max_frame_bytes,
            });
            assert_eq!(pieced.as_str(), encoded.as_str());
        }
    }
}
