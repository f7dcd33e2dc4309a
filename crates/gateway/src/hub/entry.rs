//! One request as the hub holds it, and the states it goes through.
//!
//! `Committing` → (store has it) → `Open` → (a winner is chosen) → `Resolving` → (store has
//! the resolution) → `Resolved` → (acked or expired) → gone. Only `Open` can be won; a rival
//! arriving in `Resolved` is told "already resolved", one arriving in `Resolving` waits to
//! learn whether the store kept the winner (`Resolved`) or not (`Open` again).

use std::sync::Arc;

use askgate_protocol::wire::RequestView;
use askgate_protocol::{QuestionSet, RequestId};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::links::{Frame, Link};
use crate::store::StoredResolution;

/// Where a request is in its life.
#[derive(Debug)]
pub(super) enum EntryState {
    /// Being written to the store; re-asks wait on the notify.
    Committing(Arc<Notify>),
    /// Shown to tabs; the first valid answer wins.
    Open,
    /// A winner was chosen; its resolution is being written to the store.
    Resolving,
    /// Ended; kept until the agent acks it or the retention runs out.
    Resolved(StoredResolution),
}

/// One request in a session.
#[derive(Debug)]
pub(super) struct Entry {
    /// The request id.
    pub(super) id: RequestId,
    /// Orders requests within a session (oldest first in snapshots).
    pub(super) seq: u64,
    /// The validated questions, for checking answers.
    pub(super) questions: Arc<QuestionSet>,
    /// The request as tabs see it.
    pub(super) view: RequestView,
    /// The `request` frame, encoded once for every tab.
    pub(super) request_frame: Frame,
    /// The agent connection waiting for the outcome, if one is connected.
    pub(super) asker: Option<Link>,
    pub(super) state: EntryState,
    /// The deadline timer, aborted when the request ends another way.
    pub(super) timer: Option<AbortHandle>,
    /// Woken when the request ends, is forgotten, or opens again after its resolution could
    /// not be stored: for long-polling lookups and rival endings.
    pub(super) resolved: Arc<Notify>,
}

impl Entry {
    /// Whether tabs can still answer it (or are about to learn it ended).
    pub(super) fn is_open(&self) -> bool {
        matches!(self.state, EntryState::Open | EntryState::Resolving)
    }
}
