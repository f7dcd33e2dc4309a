//! Bytes queued to tabs and not yet written out, counted per tab, per session and for the
//! whole gateway, so that tabs that stop reading cannot hold memory without bound.
//!
//! Frames are shared, so a count of queued bytes overstates what a tab alone holds; it is
//! still what the tab keeps alive. A tab that is behind (it holds frames it has not taken)
//! is closed with 4408 when one more frame would take its session or the gateway past the
//! budget. A tab that has taken everything always gets its next frame, so a tab that keeps
//! up is never closed for the others.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::frame::Frame;

/// A queued frame and what it is counted as; the count is given back when it is dropped,
/// that is once it has been written out, or with the queue of a connection that closed.
#[derive(Debug)]
pub struct Queued {
    /// The frame.
    pub frame: Frame,
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
}

/// What the budgets allow.
#[derive(Clone, Copy, Debug)]
pub(super) struct Budgets {
    pub(super) per_session: usize,
    pub(super) total: usize,
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

    /// `frame` counted, or `None` when the tab is behind and the frame would take its session
    /// or the gateway past the budget.
    pub(super) fn charge(&self, frame: Frame) -> Option<Queued> {
        let bytes = frame.len();
        let behind = self.tab.load(Ordering::Acquire) > 0;
        let over = |counter: &AtomicUsize, budget: usize| {
            counter.load(Ordering::Acquire).saturating_add(bytes) > budget
        };
        if behind
            && (over(&self.session, self.budgets.per_session)
                || over(&self.total, self.budgets.total))
        {
            return None;
        }
        for counter in [&self.tab, &self.session, &self.total] {
            counter.fetch_add(bytes, Ordering::AcqRel);
        }
        Some(Queued {
            frame,
            _charge: Some(Charge {
                bytes,
                budget: self.clone(),
            }),
        })
    }
}

/// Bytes counted while a frame is queued.
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
    fn a_tab_that_is_behind_is_refused_past_the_budget_and_one_up_to_date_is_not() {
        let session = Arc::new(AtomicUsize::new(0));
        let total = Arc::new(AtomicUsize::new(0));
        let budgets = Budgets {
            per_session: 100,
            total: 1000,
        };
        let slow = TabBudget::new(Arc::clone(&session), Arc::clone(&total), budgets);
        let fresh = TabBudget::new(Arc::clone(&session), Arc::clone(&total), budgets);
        let first = slow
            .charge(frame(80))
            .expect("a tab with nothing queued gets it");
        assert!(
            slow.charge(frame(30)).is_none(),
            "behind, and past the session's budget"
        );
        let other = fresh
            .charge(frame(80))
            .expect("up to date: never refused for others");
        assert_eq!(session.load(Ordering::Relaxed), 160);
        drop(first);
        drop(other);
        assert_eq!(session.load(Ordering::Relaxed), 0);
        assert_eq!(total.load(Ordering::Relaxed), 0);
        assert_eq!(slow.tab.load(Ordering::Relaxed), 0);
    }
}
