//! The second half of every ending: what the store decided, applied under the hub's lock.
//!
//! A local store always keeps the winner the hub chose. A shared store may say otherwise:
//! another node's ending won first (`Lost`: that one is announced, and this one refused as
//! "already resolved"), the deadline has not come by its clock (`Early`: the request opens
//! again and its timer is set for what is left), or the request is gone (acknowledged
//! elsewhere). A notice of another node's ending may also have been applied while this one was
//! in flight; then the request is already `Resolved`, and nothing is announced twice.

use std::sync::Arc;

use askgate_protocol::{Outcome, RequestId};

use super::Hub;
use super::request::EntryState;
use super::resolving::{Refusal, Resolution, STORE_RETRY};
use super::session::Session;
use crate::clock::now_ms;
use crate::store::{StoreError, StoredResolution, Verdict};

impl Hub {
    /// After the store took (or refused) a resolution: announces what it decided, or reopens
    /// the request.
    pub(super) fn finish_resolve(
        self: &Arc<Self>,
        ending: Resolution,
        committed: Result<Vec<Verdict>, StoreError>,
    ) -> Result<Option<StoredResolution>, Refusal> {
        let Resolution {
            session,
            id,
            mut resolution,
            asked_at_ms,
            deadline_ms,
        } = ending;
        let (session, id) = (&session, &id);
        let verdict =
            committed.map(|verdicts| verdicts.into_iter().next().unwrap_or(Verdict::Done));
        let mut sessions = self.lock();
        let entry = sessions
            .get_mut(session)
            .and_then(|state| state.requests.get_mut(id));
        if entry.is_none() {
            // Gone while its ending was stored: on a shared store, the ending's own notice and
            // then the agent's acknowledgement came back before the store's reply did.
            return match verdict {
                Ok(Verdict::Won { at_ms }) => {
                    resolution.at_ms = at_ms;
                    let outcome = resolution.settlement.outcome;
                    self.metrics.resolved(outcome, None);
                    Ok((outcome == Outcome::Withdrawn).then_some(resolution))
                }
                _ => Err(Refusal::Unknown),
            };
        }
        let Some(state) = sessions.get_mut(session) else {
            return Err(Refusal::Unknown);
        };
        let Some(entry) = state.requests.get_mut(id) else {
            return Err(Refusal::Unknown);
        };
        // Another node's ending reached this node first, as a notice: it has been announced.
        if let EntryState::Resolved(announced) = &entry.state {
            let announced = StoredResolution::clone(announced);
            return match verdict {
                Ok(Verdict::Won { .. } | Verdict::Done) => {
                    Ok((announced.settlement.outcome == Outcome::Withdrawn).then_some(announced))
                }
                _ => Err(Refusal::AlreadyResolved),
            };
        }
        match verdict {
            Ok(Verdict::Done) => {}
            Ok(Verdict::Won { at_ms }) => resolution.at_ms = at_ms,
            Ok(Verdict::Lost(winner)) => {
                tracing::debug!(%session, request = %id, "another node's ending won");
                state.settle(id, *winner);
                return Err(Refusal::AlreadyResolved);
            }
            Ok(Verdict::Early { left_ms }) => {
                let timer_at =
                    (left_ms != u64::MAX).then(|| now_ms().saturating_add(left_ms.max(1)));
                state.reopen(id, timer_at);
                return Err(Refusal::Unknown);
            }
            Ok(Verdict::Unknown) => {
                state.vanished(id);
                return Err(Refusal::Unknown);
            }
            Ok(other) => {
                let error = StoreError(format!("the store answered a resolution with {other:?}"));
                return Err(reopen(state, id, deadline_ms, &error));
            }
            Err(error) => return Err(reopen(state, id, deadline_ms, &error)),
        }
        let outcome = resolution.settlement.outcome;
        let latency = matches!(outcome, Outcome::Answered | Outcome::Declined)
            .then(|| resolution.at_ms.saturating_sub(asked_at_ms));
        self.metrics.resolved(outcome, latency);
        tracing::debug!(%session, request = %id, outcome = outcome.as_str(), "resolved");
        let withdrawn = (outcome == Outcome::Withdrawn).then(|| resolution.clone());
        state.settle(id, resolution);
        Ok(withdrawn)
    }
}

/// The store did not keep the ending: the request is open again, its timer set again.
fn reopen(
    state: &mut Session,
    id: &RequestId,
    deadline_ms: Option<u64>,
    error: &StoreError,
) -> Refusal {
    let session = &state.id;
    tracing::error!(%session, request = %id, %error, "could not store a resolution; the request stays open");
    // A deadline already past (its timing out is what failed) is tried again after a pause,
    // not at once: the store would fail it again in a loop.
    let retry_at =
        deadline_ms.map(|deadline| deadline.max(now_ms() + STORE_RETRY.as_millis() as u64));
    state.reopen(id, retry_at);
    Refusal::Store(error.to_string())
}
