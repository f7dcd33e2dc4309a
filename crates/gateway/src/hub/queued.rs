//! Bytes queued to tabs and not yet taken by their connections, counted per tab, per session
//! and for the whole gateway, so that tabs that stop reading cannot hold memory without
//! bound.
//!
//! A frame counts from when it is queued until its connection takes it to write (a tab that
//! keeps up holds next to nothing; one that has stopped reading holds everything sent since).
//! Frames are shared, so the count can overstate what the tabs hold between them; it is still
//! what they keep alive. When a frame would take a session past its budget, the session's tab
//! holding the most is closed with 4408 (see `Session::send_to`); past the gateway's budget,
//! the tab the frame is for is closed if it holds any. A tab that has taken everything always
//! gets its next frame.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::frame::Frame;

/// A queued frame and what it is counted as; the count is given back when the connection
/// takes the frame (or drops the queue, closing).
#[derive(Debug)]
pub struct Queued {
    frame: Frame,
    _charge: Option<Charge>,
}

impl Queued {
    /// A frame counted against nothing (agents' frames, which their queue bounds).
    pub(super) fn uncounted(frame: Frame) -> Self {
        Queued {
            frame,
            _charge: None,
        }
    }

    /// The frame, to write out: it no longer counts as queued.
    pub fn take(self) -> Frame {
        self.frame
    }
}

/// What the budgets allow.
#[derive(Clone, Copy, Debug)]
pub(super) struct Budgets {
    pub(super) per_session: usize,
    pub(super) total: usize,
}

/// Which budget a frame would break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OverBudget {
    /// The session's.
    Session,
    /// The gateway's.
    Total,
}

/// One tab's place in the counts: its own, its session's and the gateway's.
#[derive(Clone, Debug)]
pub(super) struct TabBudget {
    tab: Arc<AtomicUsize>,
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
            tab: Arc::new(AtomicUsize::new(0)),
            session,
            total,
            budgets,
        }
    }

    /// Bytes queued to this tab and not yet taken.
    pub(super) fn waiting(&self) -> usize {
        self.tab.load(Ordering::Acquire)
    }

    /// Which budget `bytes` more would break, if any.
    pub(super) fn over(&self, bytes: usize) -> Option<OverBudget> {
        let past = |counter: &AtomicUsize, budget: usize| {
            counter.load(Ordering::Acquire).saturating_add(bytes) > budget
        };
        if past(&self.session, self.budgets.per_session) {
            Some(OverBudget::Session)
        } else if past(&self.total, self.budgets.total) {
            Some(OverBudget::Total)
        } else {
            None
        }
    }

    /// `frame`, counted while it waits.
    pub(super) fn charge(&self, frame: Frame) -> Queued {
        let bytes = frame.len();
        for counter in [&self.tab, &self.session, &self.total] {
            counter.fetch_add(bytes, Ordering::AcqRel);
        }
        Queued {
            frame,
            _charge: Some(Charge {
                bytes,
                budget: self.clone(),
            }),
        }
    }
}

/// Bytes counted while a frame waits.
#[derive(Debug)]
struct Charge {
    bytes: usize,
    budget: TabBudget,
}

impl Drop for Charge {
    fn drop(&mut self) {
        for counter in [&self.budget.tab, &self.budget.session, &self.budget.total] {
            counter.fetch_sub(self.bytes, Ordering::AcqRel);
        }
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
    fn counts_are_given_back_when_the_frame_is_taken() {
        let session = Arc::new(AtomicUsize::new(0));
        let total = Arc::new(AtomicUsize::new(0));
        let budgets = Budgets {
            per_session: 100,
            total: 150,
        };
        let a = TabBudget::new(Arc::clone(&session), Arc::clone(&total), budgets);
        let b = TabBudget::new(Arc::clone(&session), Arc::clone(&total), budgets);
        let first = a.charge(frame(80));
        assert_eq!(a.over(30), Some(OverBudget::Session));
        assert_eq!(b.over(20), None);
        let other_session =
            TabBudget::new(Arc::new(AtomicUsize::new(0)), Arc::clone(&total), budgets);
        assert_eq!(other_session.over(80), Some(OverBudget::Total));
        assert_eq!((a.waiting(), b.waiting()), (80, 0));
        let _ = first.take();
        assert_eq!(session.load(Ordering::Relaxed), 0);
        assert_eq!(total.load(Ordering::Relaxed), 0);
        assert_eq!(a.waiting(), 0);
    }
}
