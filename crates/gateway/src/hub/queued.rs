//! A connection's queue, and the bytes queued to tabs and not yet taken by their connections,
//! counted per tab, per session and for the whole gateway, so that tabs that stop reading
//! cannot hold memory without bound.
//!
//! A frame counts from when it is queued until its connection takes it to write (a tab that
//! keeps up holds next to nothing; one that has stopped reading holds everything sent since).
//! Frames are shared, so the count can overstate what the tabs hold between them; it is still
//! what they keep alive. When a frame would take a session past its budget, the session's tab
//! holding the most is closed with 4408 (see `Session::send_to`); past the gateway's, the tab
//! in the session holding the most is too. A tab that has taken everything always gets its
//! next frame.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::sync::mpsc;

use super::frame::Frame;

/// What the budgets allow.
#[derive(Clone, Copy, Debug)]
pub(super) struct Budgets {
    pub(super) per_session: usize,
    pub(super) total: usize,
}

/// One tab's place in the counts: its own, its session's and the gateway's.
#[derive(Debug)]
pub(super) struct TabBudget {
    tab: AtomicUsize,
    session: Arc<AtomicUsize>,
    total: Arc<AtomicUsize>,
    budgets: Budgets,
}

impl TabBudget {
    pub(super) fn new(
        session: Arc<AtomicUsize>,
        total: Arc<AtomicUsize>,
        budgets: Budgets,
    ) -> Self {
        TabBudget {
            tab: AtomicUsize::new(0),
            session,
            total,
            budgets,
        }
    }

    /// Bytes queued to this tab and not yet taken.
    pub(super) fn waiting(&self) -> usize {
        self.tab.load(Ordering::Acquire)
    }

    /// Whether `bytes` more would take the session or the gateway past its budget.
    pub(super) fn over(&self, bytes: usize) -> bool {
        let past = |counter: &AtomicUsize, budget: usize| {
            counter.load(Ordering::Acquire).saturating_add(bytes) > budget
        };
        past(&self.session, self.budgets.per_session) || past(&self.total, self.budgets.total)
    }

    /// `bytes` are queued.
    pub(super) fn charge(&self, bytes: usize) {
        for counter in [&self.tab, &*self.session, &*self.total] {
            counter.fetch_add(bytes, Ordering::AcqRel);
        }
    }

    /// `bytes` are taken (or were never queued after all).
    pub(super) fn release(&self, bytes: usize) {
        for counter in [&self.tab, &*self.session, &*self.total] {
            counter.fetch_sub(bytes, Ordering::AcqRel);
        }
    }
}

/// Where a link's budget goes once its tab has joined a session (agents never get one). The
/// link and its queue share it, so that what one charges the other gives back.
pub(super) type BudgetSlot = Arc<OnceLock<TabBudget>>;

/// The receiving end of a connection's queue. A tab's frames are given back to the budgets as
/// they are taken, and those still queued when it is dropped.
#[derive(Debug)]
pub struct Queue {
    rx: mpsc::Receiver<Frame>,
    budget: BudgetSlot,
}

impl Queue {
    pub(super) fn new(rx: mpsc::Receiver<Frame>, budget: BudgetSlot) -> Self {
        Queue { rx, budget }
    }

    /// The next frame (`None`: the hub let go of the connection). Cancel-safe.
    pub async fn recv(&mut self) -> Option<Frame> {
        let frame = self.rx.recv().await?;
        self.taken(&frame);
        Some(frame)
    }

    /// The next frame if one is queued now.
    pub fn try_recv(&mut self) -> Option<Frame> {
        let frame = self.rx.try_recv().ok()?;
        self.taken(&frame);
        Some(frame)
    }

    fn taken(&self, frame: &Frame) {
        if let Some(budget) = self.budget.get() {
            budget.release(frame.len());
        }
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // Closed first, so nothing is queued after the last frame is counted out.
        self.rx.close();
        while self.try_recv().is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn frame(bytes: usize) -> Frame {
        Frame::from_json(Bytes::from(vec![b' '; bytes]))
    }

    #[test]
    fn counts_are_given_back_when_frames_are_taken_or_dropped_with_the_queue() {
        let session = Arc::new(AtomicUsize::new(0));
        let total = Arc::new(AtomicUsize::new(0));
        let budgets = Budgets {
            per_session: 100,
            total: 150,
        };
        let slot: BudgetSlot = Arc::default();
        let _ = slot.set(TabBudget::new(
            Arc::clone(&session),
            Arc::clone(&total),
            budgets,
        ));
        let (tx, rx) = mpsc::channel(8);
        let mut queue = Queue::new(rx, Arc::clone(&slot));
        let a = slot.get().unwrap();
        for bytes in [60, 20] {
            a.charge(bytes);
            tx.try_send(frame(bytes)).unwrap();
        }
        assert!(a.over(30), "past the session's budget");
        let other = TabBudget::new(Arc::new(AtomicUsize::new(0)), Arc::clone(&total), budgets);
        assert!(other.over(80), "past the gateway's budget");
        assert!(!other.over(60));
        assert_eq!(queue.try_recv().map(|f| f.len()), Some(60));
        assert_eq!((a.waiting(), session.load(Ordering::Relaxed)), (20, 20));
        drop(queue);
        assert_eq!(session.load(Ordering::Relaxed), 0);
        assert_eq!(total.load(Ordering::Relaxed), 0);
    }
}
