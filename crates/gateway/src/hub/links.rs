//! The hub's handles on peers: encoded frames, bounded queues, and close-with-a-code.

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

use askgate_protocol::{SessionId, TabId};
use bytes::Bytes;
use serde::Serialize;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::Hub;
use crate::metrics;
use crate::scope::SessionScope;

/// One JSON text frame, encoded once and shared by every queue it is put on.
#[derive(Clone, Debug)]
pub struct Frame(Bytes);

impl Frame {
    /// Encodes `message` as JSON.
    pub fn encode<T: Serialize>(message: &T) -> Frame {
        // Wire types are plain data: serialising them cannot fail.
        Frame(Bytes::from(serde_json::to_vec(message).unwrap_or_default()))
    }

    /// A frame from JSON text already encoded (by serde_json, or pieced together from its
    /// output).
    pub(super) fn from_json(json: Bytes) -> Frame {
        Frame(json)
    }

    /// The UTF-8 JSON bytes.
    pub fn into_bytes(self) -> Bytes {
        self.0
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

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
    tx: mpsc::Sender<Frame>,
    /// The latest `presence` for a tab. Presence is state, not an event: a burst of joins
    /// replaces it rather than queueing one frame per join (which would overflow the queue
    /// of every tab already there). Agents have none.
    presence: Option<Arc<watch::Sender<Option<Frame>>>>,
    /// Closes the connection; its task watches it.
    kick: Arc<Kick>,
    /// The sessions an agent connection may act on, from the key that admitted it. (A tab
    /// acts only on the session its viewer key opened, so it keeps the default.)
    pub(super) scope: SessionScope,
}

impl Link {
    /// A link and the receiving end of its queue (`capacity` frames).
    pub fn new(capacity: usize) -> (Link, mpsc::Receiver<Frame>, Arc<Kick>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let kick = Arc::new(Kick::default());
        (
            Link {
                id: 0,
                tx,
                presence: None,
                kick: Arc::clone(&kick),
                scope: SessionScope::everywhere(),
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
        mpsc::Receiver<Frame>,
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

    /// Queues `frame`. A full queue closes the peer with 4408 (too slow); `false` if the frame
    /// was not queued.
    pub(super) fn send(&self, frame: Frame, metrics: &metrics::Metrics) -> bool {
        match self.tx.try_send(frame) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                metrics::count(&metrics.closed_too_slow);
                self.kick.kick(askgate_protocol::close::TOO_SLOW);
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Closes the peer with `code`.
    pub(super) fn close(&self, code: u16) {
        self.kick.kick(code);
    }

    /// This link, acting on the sessions of `scope` only.
    pub(super) fn within(mut self, scope: SessionScope) -> Link {
        self.scope = scope;
        self
    }
}

/// One agent connection, attached to the hub until dropped.
#[derive(Debug)]
pub struct AgentHandle {
    pub(super) hub: Arc<Hub>,
    pub(super) link: Link,
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
        let slot = sessions
            .get(&self.session)
            .and_then(|session| session.tabs.get(&self.link_id));
        if let Some(slot) = slot {
            slot.link.send(frame, &self.hub.metrics);
        }
    }
}

impl Drop for TabHandle {
    fn drop(&mut self) {
        self.hub.leave_tab(&self.session, self.link_id);
    }
}
