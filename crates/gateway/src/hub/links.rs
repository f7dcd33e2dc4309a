//! The hub's handles on peers: encoded frames, bounded queues, and close-with-a-code.

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

use askgate_protocol::{SessionId, TabId};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::Hub;
use super::frame::Frame;
use super::queued::{BudgetSlot, Queue, TabBudget};
use crate::metrics;
use crate::people::Person;
use crate::scope::SessionScope;

/// Closes one connection with a WebSocket close code, from outside its task.
#[derive(Debug, Default)]
pub struct Kick {
    token: CancellationToken,
    code: AtomicU16,
}

impl Kick {
    /// Asks the connection to close with `code`; the first code asked for wins. `true` if
    /// this was the first ask.
    pub fn kick(&self, code: u16) -> bool {
        let first = self
            .code
            .compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        self.token.cancel();
        first
    }

    /// Whether the connection has been asked to close.
    pub fn is_kicked(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Resolves when the connection has been asked to close.
    pub async fn kicked(&self) -> u16 {
        self.token.cancelled().await;
        self.code.load(Ordering::Relaxed)
    }
}

/// The hub's side of one connection.
#[derive(Clone, Debug)]
pub struct Link {
    pub(super) id: u64,
    /// Frames for the peer; the connection task drains it. Bounded: a peer that cannot keep
    /// up is closed with 4408 rather than allowed to grow memory.
    tx: mpsc::Sender<Frame>,
    /// A tab's share of the queued-bytes budgets, set when it joins a session (agents and
    /// tabs not yet joined: none). Shared with the queue, which gives back what this charges.
    pub(super) budget: BudgetSlot,
    /// The latest `presence` for a tab. Presence is state, not an event: a burst of joins
    /// replaces it rather than queueing one frame per join (which would overflow the queue
    /// of every tab already there). Agents have none.
    presence: Option<Arc<watch::Sender<Option<Frame>>>>,
    /// Closes the connection; its task watches it.
    kick: Arc<Kick>,
}

impl Link {
    /// A link and the receiving end of its queue (`capacity` frames).
    pub fn new(capacity: usize) -> (Link, Queue, Arc<Kick>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let kick = Arc::new(Kick::default());
        let budget = BudgetSlot::default();
        (
            Link {
                id: 0,
                tx,
                budget: Arc::clone(&budget),
                presence: None,
                kick: Arc::clone(&kick),
            },
            Queue::new(rx, budget),
            kick,
        )
    }

    /// A tab's link: a queue, and a slot holding the latest `presence` frame.
    pub fn new_tab(capacity: usize) -> (Link, Queue, watch::Receiver<Option<Frame>>, Arc<Kick>) {
        let (mut link, rx, kick) = Link::new(capacity);
        let (presence, presence_rx) = watch::channel(None);
        link.presence = Some(Arc::new(presence));
        (link, rx, presence_rx, kick)
    }

    /// Replaces the peer's pending `presence` (queued like any frame if it has no slot).
    pub(super) fn set_presence(&self, frame: Frame, metrics: &metrics::Metrics) {
        match &self.presence {
            Some(slot) => {
                slot.send_replace(Some(frame));
            }
            None => {
                self.send(frame, metrics);
            }
        }
    }

    /// Queues `frame` (counted, for a tab). A full queue closes the peer with 4408 (too
    /// slow); `false` if the frame was not queued.
    pub(super) fn send(&self, frame: Frame, metrics: &metrics::Metrics) -> bool {
        let budget = self.budget.get();
        let bytes = frame.len();
        if let Some(budget) = budget {
            budget.charge(bytes);
        }
        match self.tx.try_send(frame) {
            Ok(()) => return true,
            Err(mpsc::error::TrySendError::Full(_)) => self.close_too_slow(metrics),
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
        // Not queued: it counts for nothing.
        if let Some(budget) = budget {
            budget.release(bytes);
        }
        false
    }

    /// Queues `frame` as [`Link::send`] does, unless it would take the tab's session or the
    /// gateway past its queued-bytes budget: then it comes back.
    pub(super) fn send_within_budget(
        &self,
        frame: Frame,
        metrics: &metrics::Metrics,
    ) -> Result<bool, Frame> {
        if self.budget.get().is_some_and(|b| b.over(frame.len())) {
            return Err(frame);
        }
        Ok(self.send(frame, metrics))
    }

    /// Bytes queued to this tab and not yet taken (agents: 0).
    pub(super) fn waiting(&self) -> usize {
        self.budget.get().map_or(0, TabBudget::waiting)
    }

    /// Closes the peer as too slow (4408), counting it once.
    pub(super) fn close_too_slow(&self, metrics: &metrics::Metrics) {
        if self.kick.kick(askgate_protocol::close::TOO_SLOW) {
            metrics::count(&metrics.closed_too_slow);
        }
    }

    /// Whether the peer has been asked to close.
    pub(super) fn is_closing(&self) -> bool {
        self.kick.is_kicked()
    }

    /// Closes the peer with `code`.
    pub(super) fn close(&self, code: u16) {
        let _ = self.kick.kick(code);
    }
}

/// One agent connection, attached to the hub until dropped.
#[derive(Debug)]
pub struct AgentHandle {
    pub(super) hub: Arc<Hub>,
    pub(super) link: Link,
    /// The sessions its key may act on.
    pub(super) scope: SessionScope,
}

impl Drop for AgentHandle {
    fn drop(&mut self) {
        self.hub.detach_agent(&self.link);
    }
}

/// One tab, watching one session until dropped.
#[derive(Debug)]
pub struct TabHandle {
    pub(super) hub: Arc<Hub>,
    pub(super) session: SessionId,
    pub(super) tab: TabId,
    /// Who the tab's person is.
    pub(super) person: Person,
    pub(super) link_id: u64,
}

impl TabHandle {
    /// This tab's id.
    pub fn tab(&self) -> &TabId {
        &self.tab
    }

    /// The session it watches.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// Who its person is.
    pub fn person(&self) -> &Person {
        &self.person
    }

    /// Queues a reply to this tab, behind what the hub queued for it: a tab that sends but
    /// does not read fills its queue and is closed with 4408, like any slow tab.
    pub fn reply(&self, frame: Frame) {
        let sessions = self.hub.lock();
        if let Some(session) = sessions.get(&self.session) {
            session.send_to(self.link_id, frame, &self.hub.metrics);
        }
    }
}

impl Drop for TabHandle {
    fn drop(&mut self) {
        self.hub.leave_tab(&self.session, self.link_id);
    }
}
