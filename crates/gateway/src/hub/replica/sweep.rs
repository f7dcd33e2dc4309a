//! The deadline sweep every node of a shared store runs: requests whose deadline passed time
//! out, and outcomes kept past their retention are forgotten, whichever node took them and
//! whether or not it still runs. The local timer of the asking node is only the fast path.
//!
//! Each second the node claims the due entries of the store's index (each claimed for a lease,
//! so a sweeper that dies leaves them to another), looks at each request (loading its session
//! if this node does not hold it), ends or forgets it through the hub's own paths (the store's
//! compare-and-set makes it happen once, however many nodes try), and settles the claim with
//! when the entry is next due, if ever.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::super::Hub;
use super::super::ending::{Ending, Refusal};
use super::super::request::EntryState;
use crate::store::StoreOp;
use crate::store::shared::DueClaim;

/// How often the sweep runs: a deadline fires at most this late when its node is gone.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// What is next for a claimed entry.
enum Next {
    /// Due again then.
    At(u64),
    /// Not due ever again: removed from the index.
    Never,
    /// Time it out now.
    TimeOut,
    /// Forget its outcome now.
    Forget,
}

/// Runs the sweep every second, for as long as the hub lives.
pub(super) async fn sweep_deadlines(hub: Weak<Hub>) {
    let mut every = tokio::time::interval(SWEEP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let Some(hub) = hub.upgrade() else { return };
        hub.sweep_due().await;
    }
}

impl Hub {
    /// One sweep of the store's due entries.
    async fn sweep_due(self: &Arc<Self>) {
        let Some(shared) = self.shared() else {
            return;
        };
        let Ok(claims) = shared.claim_due().await else {
            return;
        };
        self.metrics.shared.count(&self.metrics.shared.sweeps);
        for claim in claims {
            let next = self.handle_due(&claim).await;
            if let Some(next) = next {
                let _ = shared.settle_claim(claim, next).await;
            }
        }
        // Follow-ups whose asking node did not make them (it died, or is slow): made here,
        // once, by the store's compare-and-set. One whose session cannot be loaded now is
        // left to its claim's end.
        let Ok(follow_ups) = shared.claim_follow_ups().await else {
            return;
        };
        for claim in follow_ups {
            if self.load_shared(&claim.session).await.is_err() {
                continue;
            }
            self.follow_up(&claim.session, &claim.id, claim.follow_up)
                .await;
            let _ = shared.settle_follow_up(claim).await;
        }
    }

    /// Ends or forgets what `claim` names if due; returns when it is next due (`None` inside:
    /// never), or `None` to leave the claim to run out (the store could not be reached).
    async fn handle_due(self: &Arc<Self>, claim: &DueClaim) -> Option<Option<u64>> {
        let retention_ms = u64::try_from(self.limits.retention.as_millis()).unwrap_or(u64::MAX);
        if self.load_shared(&claim.session).await.is_err() {
            return None;
        }
        let next = {
            let sessions = self.lock();
            // Not held (this node is at its session limit) or not loaded: not this node's to
            // judge; the claim runs out and another node (or this one, later) takes it.
            let loaded = sessions
                .get(&claim.session)
                .and_then(|s| s.sync.as_ref())
                .is_some_and(|sync| sync.loaded);
            if !loaded {
                return None;
            }
            let entry = sessions
                .get(&claim.session)
                .and_then(|s| s.requests.get(&claim.id));
            match entry.map(|e| (&e.state, e.deadline_ms)) {
                None => Next::Never,
                Some((EntryState::Open, Some(deadline))) if deadline <= claim.now_ms => {
                    Next::TimeOut
                }
                Some((EntryState::Open, Some(deadline))) => Next::At(deadline),
                Some((EntryState::Open, None)) => Next::Never,
                Some((EntryState::Resolved(resolution), _)) => {
                    let until = resolution.at_ms.saturating_add(retention_ms);
                    if until <= claim.now_ms {
                        Next::Forget
                    } else {
                        Next::At(until)
                    }
                }
                // This node is changing it right now: look again shortly.
                Some((EntryState::Committing | EntryState::Resolving, _)) => {
                    Next::At(claim.now_ms + 1_000)
                }
            }
        };
        match next {
            Next::At(at) => Some(Some(at)),
            Next::Never => Some(None),
            Next::TimeOut => match self
                .resolve(&claim.session, &claim.id, Ending::TimedOut)
                .await
            {
                Ok(_) => {
                    self.metrics
                        .shared
                        .count(&self.metrics.shared.sweep_timed_out);
                    Some(Some(claim.now_ms.saturating_add(retention_ms)))
                }
                // Another ending won: its outcome is kept for the retention.
                Err(Refusal::AlreadyResolved) => {
                    Some(Some(claim.now_ms.saturating_add(retention_ms)))
                }
                // Not stored, or not due by the store's clock: looked at again when the claim
                // runs out.
                Err(_) => None,
            },
            Next::Forget => {
                // Deleted from the store first: forgotten here only once it is gone there, so
                // a failed deletion leaves the entry to be found again.
                let op = StoreOp::Delete {
                    session: claim.session.clone(),
                    id: claim.id.clone(),
                    acked: false,
                };
                self.store_commit(vec![op]).await.ok()?;
                let mut sessions = self.lock();
                if let Some(state) = sessions.get_mut(&claim.session) {
                    // A long-poll waiting on it learns it is gone.
                    state.forget(&claim.id);
                }
                self.metrics.shared.count(&self.metrics.shared.sweep_forgot);
                Some(None)
            }
        }
    }
}
