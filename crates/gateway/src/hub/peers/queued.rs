//! The bytes queued to tabs and not yet taken by their connections, counted per tab, per
//! session and for the whole gateway, so that tabs that stop reading cannot hold memory
//! without bound.
//!
//! A frame counts from when it is queued until its connection takes it to write (a tab that
//! keeps up holds next to nothing; one that has stopped reading holds everything sent since).
//! Frames are shared, so the count can overstate what the tabs hold between them; it is still
//! what they keep alive. When a frame would take a session past its budget, the session's tab
//! holding the most is closed with 4408 (see `Session::send_to`); past the gateway's, the tab
//! in the session holding the most is too. A tab that has taken everything always gets its
//! next frame.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What the budgets allow.
#[derive(Clone, Copy, Debug)]
pub(in crate::hub) struct Budgets {
    pub(in crate::hub) per_session: usize,
    pub(in crate::hub) total: usize,
}

/// One tab's place in the counts: its own, its session's and the gateway's.
#[derive(Debug)]
pub(in crate::hub) struct TabBudget {
    tab: AtomicUsize,
    session: Arc<AtomicUsize>,
    total: Arc<AtomicUsize>,
    budgets: Budgets,
}

impl TabBudget {
    pub(in crate::hub) fn new(
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
    pub(in crate::hub) fn waiting(&self) -> usize {
        self.tab.load(Ordering::Acquire)
    }

    /// Whether `bytes` more would take the session or the gateway past its budget.
    pub(in crate::hub) fn over(&self, bytes: usize) -> bool {
        let past = |counter: &AtomicUsize, budget: usize| {
            counter.load(Ordering::Acquire).saturating_add(bytes) > budget
        };
        past(&self.session, self.budgets.per_session) || past(&self.total, self.budgets.total)
    }

    /// `bytes` are queued.
    pub(in crate::hub) fn charge(&self, bytes: usize) {
        for counter in [&self.tab, &*self.session, &*self.total] {
            counter.fetch_add(bytes, Ordering::AcqRel);
        }
    }

    /// `bytes` are taken (or were never queued after all).
    pub(in crate::hub) fn release(&self, bytes: usize) {
        for counter in [&self.tab, &*self.session, &*self.total] {
            counter.fetch_sub(bytes, Ordering::AcqRel);
        }
    }
}
