//! The hub's handles on peers: a link to each connection's inbox, and the handles a
//! connection holds while it is attached.

use std::sync::Arc;

use askgate_protocol::{SessionId, TabId};

use super::super::Hub;
use super::frame::Frame;
use super::inbox::{Inbox, Queue, Refused};
use super::queued::TabBudget;
use super::wakes::Wakes;
use crate::metrics;
use crate::people::Person;
use crate::scope::SessionScope;

/// The hub's side of one connection: a handle on its inbox.
#[derive(Debug)]
pub struct Link {
    pub(in crate::hub) id: u64,
    inbox: Arc<Inbox>,
}

impl Clone for Link {
    fn clone(&self) -> Self {
        self.inbox.link_added();
        Link {
            id: self.id,
            inbox: Arc::clone(&self.inbox),
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.inbox.link_dropped();
    }
}

impl Link {
    /// A link and the connection's end of its inbox (`capacity` frames).
    pub fn new(capacity: usize) -> (Link, Queue) {
        let inbox = Inbox::new(capacity);
        let queue = Queue::new(Arc::clone(&inbox));
        (Link { id: 0, inbox }, queue)
    }

    /// Gives a joining tab its share of the queued-bytes budgets.
    pub(in crate::hub) fn set_budget(&self, budget: TabBudget) {
        self.inbox.set_budget(budget);
    }

    /// Replaces the tab's pending `presence`, waking its task as `wakes` says.
    pub(in crate::hub) fn set_presence(&self, frame: Frame, wakes: &mut Wakes) {
        self.inbox.set_presence(frame, wakes);
    }

    /// Queues `frame` (counted, for a tab). A full queue closes the peer with 4408 (too
    /// slow); `false` if the frame was not queued.
    pub(in crate::hub) fn send(&self, frame: Frame, metrics: &metrics::Metrics) -> bool {
        self.send_waking(frame, metrics, &mut Wakes::Now)
    }

    /// [`Link::send`], waking the peer's task as `wakes` says.
    pub(in crate::hub) fn send_waking(
        &self,
        frame: Frame,
        metrics: &metrics::Metrics,
        wakes: &mut Wakes,
    ) -> bool {
        let budget = self.inbox.budget();
        let bytes = frame.len();
        if let Some(budget) = budget {
            budget.charge(bytes);
        }
        match self.inbox.push(frame, wakes) {
            Ok(()) => return true,
            Err(Refused::Full) => self.close_too_slow(metrics),
            Err(Refused::Gone) => {}
        }
        // Not queued: it counts for nothing.
        if let Some(budget) = budget {
            budget.release(bytes);
        }
        false
    }

    /// Queues `frame` as [`Link::send_waking`] does, unless it would take the tab's session or
    /// the gateway past its queued-bytes budget: then it comes back.
    pub(in crate::hub) fn send_within_budget(
        &self,
        frame: Frame,
        metrics: &metrics::Metrics,
        wakes: &mut Wakes,
    ) -> Result<bool, Frame> {
        if self.inbox.budget().is_some_and(|b| b.over(frame.len())) {
            return Err(frame);
        }
        Ok(self.send_waking(frame, metrics, wakes))
    }

    /// Bytes queued to this tab and not yet taken (agents: 0).
    pub(in crate::hub) fn waiting(&self) -> usize {
        self.inbox.budget().map_or(0, TabBudget::waiting)
    }

    /// Closes the peer as too slow (4408), counting it once.
    pub(in crate::hub) fn close_too_slow(&self, metrics: &metrics::Metrics) {
        if self.inbox.close(askgate_protocol::close::TOO_SLOW) {
            metrics::count(&metrics.closed_too_slow);
        }
    }

    /// Whether the peer has been asked to close.
    pub(in crate::hub) fn is_closing(&self) -> bool {
        self.inbox.is_closing()
    }

    /// Closes the peer with `code`.
    pub(in crate::hub) fn close(&self, code: u16) {
        let _ = self.inbox.close(code);
    }
}

/// One agent connection, attached to the hub until dropped.
#[derive(Debug)]
pub struct AgentHandle {
    pub(in crate::hub) hub: Arc<Hub>,
    pub(in crate::hub) link: Link,
    /// The sessions its key may act on.
    pub(in crate::hub) scope: SessionScope,
    /// Its key's id ([`crate::keys::AgentKey::id`]).
    pub(in crate::hub) key_id: String,
}

impl Drop for AgentHandle {
    fn drop(&mut self) {
        self.hub.detach_agent(&self.link);
    }
}

/// One tab, watching one session until dropped.
#[derive(Debug)]
pub struct TabHandle {
    pub(in crate::hub) hub: Arc<Hub>,
    pub(in crate::hub) session: SessionId,
    pub(in crate::hub) tab: TabId,
    /// Who the tab's person is.
    pub(in crate::hub) person: Person,
    pub(in crate::hub) link_id: u64,
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
