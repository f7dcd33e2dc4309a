//! The hub's handles on peers: encoded frames, bounded queues, and close-with-a-code.

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

use askgate_protocol::{SessionId, TabId};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::Hub;
use super::frame::Frame;
use super::queued::{OverBudget, Queued, TabBudget};
use crate::metrics;
use crate::scope::SessionScope;

/// Closes one connection with a WebSocket close code, from outside its task.
#[derive(Debug, Default)]
pub struct Kick {
    token: CancellationToken,
    code: AtomicU16,
}

impl Kick {
    /// Asks the connection to close with `code`; the first code asked for wins.
    pub fn kick(&self, code: u16) {
        let _ = self
            .code
            .compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed);
        self.token.cancel();
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
    tx: mpsc::Sender<Queued>,
    /// A tab's share of the queued-bytes budgets, set when it joins a session (agents and
    /// tabs not yet joined: none).
    pub(super) budget: Option<TabBudget>,
    /// The latest `presence` for a tab. Presence is state, not an event: a burst of joins
    /// replaces it rather than queueing one frame per join (which would overflow the queue
    /// of every tab already there). Agents have none.
    presence: Option<Arc<watch::Sender<Option<Frame>>>>,
    /// Closes the connection; its task watches it.
    kick: Arc<Kick>,
}

impl Link {
    /// A link and the receiving end of its queue (`capacity` frames).
    pub fn new(capacity: usize) -> (Link, mpsc::Receiver<Queued>, Arc<Kick>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let kick = Arc::new(Kick::default());
        (
            Link {
                id: 0,
                tx,
                budget: None,
                presence: None,
                kick: Arc::clone(&kick),
            },
            rx,
            kick,
        )
    }

    /// A tab's link: a queue, and a slot holding the latest `presence` frame.
    pub fn new_tab(
        capacity: usize,
    ) -> (
        Link,
        mpsc::Receiver<Queued>,
        watch::Receiver<Option<Frame>>,
        Arc<Kick>,
    ) {
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
        let queued = match &self.budget {
            None => Queued::uncounted(frame),
            Some(budget) => budget.charge(frame),
        };
        match self.tx.try_send(queued) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.close_too_slow(metrics);
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Queues `frame` as [`Link::send`] does, unless it would take the tab's session or the
    /// gateway past its queued-bytes budget: then it comes back, with the budget it breaks.
    pub(super) fn send_within_budget(
        &self,
        frame: Frame,
        metrics: &metrics::Metrics,
    ) -> Result<bool, (Frame, OverBudget)> {
        if let Some(over) = self.budget.as_ref().and_then(|b| b.over(frame.len())) {
            return Err((frame, over));
        }
        Ok(self.send(frame, metrics))
    }

    /// Bytes queued to this tab and not yet taken (agents: 0).
    pub(super) fn waiting(&self) -> usize {
        self.budget.as_ref().map_or(0, TabBudget::waiting)
    }

    /// Closes the peer as too slow (4408), counting it.
    pub(super) fn close_too_slow(&self, metrics: &metrics::Metrics) {
        metrics::count(&metrics.closed_too_slow);
        self.kick.kick(askgate_protocol::close::TOO_SLOW);
    }

    /// Closes the peer with `code`.
    pub(super) fn close(&self, code: u16) {
        self.kick.kick(code);
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
