//! This node's copy of a shared session, when several nodes share one store (Redis); a hub
//! on a local store has no [`Replica`] and never comes in here.
//!
//! The doors in, in the hub's core, each one call that does nothing without a replica: the
//! verbs call [`Hub::synced`] before they look at a session, the ask calls
//! [`Hub::ask_finished`] once it is finished; and every notice from the other nodes enters through [`Hub::on_notice`] (from
//! the reader [`Hub::start_shared`] starts, with the upkeep and the deadline sweep); an ack
//! of a request this node does not hold is decided by the shared store.
//!
//! [`Hub::synced`]: super::Hub::synced
//! [`Hub::ask_finished`]: super::Hub::ask_finished
//! [`Hub::on_notice`]: super::Hub::on_notice
//! [`Hub::start_shared`]: super::Hub::start_shared

mod applying; // the store's records and changes, applied to this node's copy
mod loading; // a session loaded whole, then followed notice by notice
mod reporting; // this node's figures written for the others; every node's read back
mod sweep; // deadlines and retention, swept over the store's index by every node
mod upkeep; // every second: reloads, presence, sessions nobody here watches let go

use std::sync::Arc;
use std::sync::atomic::Ordering;

use askgate_protocol::{RequestId, SessionId};
use tokio::time::Instant;

use super::{AckReply, Hub};
use crate::metrics::Metrics;
use crate::store::shared::{Change, Presence, Shared};
use crate::store::{Store, StoreOp, Verdict};

impl Hub {
    /// The shared side of the store, if several nodes share it.
    pub(in crate::hub) fn shared(&self) -> Option<Arc<dyn Shared>> {
        self.replica
            .as_ref()
            .map(|replica| Arc::clone(&replica.shared))
    }

    /// An ack of a request this node does not hold: on a shared store, deleted there (only if
    /// it has ended); on a local one, already forgotten.
    pub(super) async fn forget_unseen(
        self: &Arc<Self>,
        session: &SessionId,
        id: &RequestId,
    ) -> AckReply {
        if self.replica.is_none() {
            return AckReply::Forgotten;
        }
        let op = StoreOp::Delete {
            session: session.clone(),
            id: id.clone(),
            acked: true,
        };
        match self.store_commit(vec![op]).await {
            Ok(verdicts) if verdicts.first() == Some(&Verdict::StillOpen) => AckReply::NotResolved,
            Ok(_) => AckReply::Forgotten,
            Err(error) => {
                // Kept for the next sweep, as a failed deletion of a held request is.
                tracing::warn!(%session, request = %id, %error, "could not delete an acknowledged outcome; tried again at the next sweep");
                self.undeleted().push((session.clone(), id.clone(), true));
                AckReply::Forgotten
            }
        }
    }
}

/// The shared side of the store, and what this node does with it.
pub(super) struct Replica {
    pub(super) shared: Arc<dyn Shared>,
}

impl Replica {
    /// The replica for `store`, if several nodes share it (counted as enabled in `metrics`).
    pub(super) fn of(store: &dyn Store, metrics: &Metrics) -> Option<Replica> {
        let shared = store.shared()?;
        metrics.shared.enabled.store(true, Ordering::Relaxed);
        Some(Replica { shared })
    }
}

/// How far a node's copy of a session has followed the shared store's.
#[derive(Debug, Default)]
pub(in crate::hub) struct SessionSync {
    /// The sequence number of the last change applied.
    pub(in crate::hub) seq: u64,
    /// Whether the session has been loaded at least once.
    pub(in crate::hub) loaded: bool,
    /// A load under way, which notices wait behind (`buffered`), and callers may wait on.
    pub(in crate::hub) loading: Option<Arc<tokio::sync::Notify>>,
    /// The subscription was made again while a load was under way: that load may have read
    /// the store before the new subscription was in place, and missed what came between, so
    /// the session is loaded once more after it.
    pub(in crate::hub) reload_again: bool,
    /// Notices that came while loading, applied after it if they are newer.
    pub(in crate::hub) buffered: Vec<(u64, Change)>,
    /// The store's sequence number when a poll last found this copy behind it: behind it
    /// still at the next poll, the copy has missed a notice.
    pub(in crate::hub) behind: Option<u64>,
    /// The other nodes' presence, as the store last said.
    pub(in crate::hub) others: Presence,
    /// This node's presence as last written to the store, and when it is due again.
    pub(in crate::hub) written: Option<(Presence, Instant)>,
    /// Another node's presence changed: read it again.
    pub(in crate::hub) presence_stale: bool,
    /// The requests whose agent waits on another node, as the store last said: sorted, for
    /// [`held_elsewhere`](Self::held_elsewhere) (a boxed slice, not a set: every session a
    /// node holds has one, most of them empty, and a set is 48 bytes to a slice's 16).
    pub(in crate::hub) others_held: Box<[RequestId]>,
    /// The requests held here as last written to the store.
    pub(in crate::hub) written_held: Vec<RequestId>,
    /// Changes to requests this node is still storing (their notice outran the store's
    /// reply to this node): applied once the ask is finished, so that the agent hears
    /// `accepted` before the outcome.
    pub(in crate::hub) held_back: Vec<Change>,
}

impl SessionSync {
    /// Whether request `id`'s agent waits on another node, as the store last said.
    pub(in crate::hub) fn held_elsewhere(&self, id: &RequestId) -> bool {
        self.others_held.binary_search(id).is_ok()
    }

    /// Takes the requests whose agent waits on another node, as the store now says.
    pub(in crate::hub) fn set_others_held(&mut self, mut held: Vec<RequestId>) {
        held.sort_unstable();
        held.dedup();
        self.others_held = held.into_boxed_slice();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> RequestId {
        RequestId::parse(text).unwrap()
    }

    #[test]
    fn requests_held_elsewhere_are_found_whatever_order_the_store_gave() {
        let mut sync = SessionSync::default();
        assert!(!sync.held_elsewhere(&id("a")));
        sync.set_others_held(vec![id("q3"), id("q1"), id("q20"), id("q1")]);
        for held in ["q1", "q3", "q20"] {
            assert!(sync.held_elsewhere(&id(held)), "{held}");
        }
        assert!(!sync.held_elsewhere(&id("q2")));
        sync.set_others_held(Vec::new());
        assert!(!sync.held_elsewhere(&id("q1")));
    }

    #[test]
    fn a_session_fits_its_allocation_class() {
        // Every session a node holds is one: 448 bytes before its snapshot cache was boxed,
        // 384 before its finished list and its lately forgotten ids were boxed.
        let bytes = size_of::<crate::hub::session::Session>();
        assert!(bytes <= 320, "{bytes} bytes");
    }

    #[test]
    fn a_sessions_sync_state_fits_a_small_allocation() {
        // Every session a node holds has one: 208 bytes took mimalloc's 224-byte class.
        assert!(
            size_of::<SessionSync>() <= 192,
            "{} bytes",
            size_of::<SessionSync>()
        );
    }
}
