//! Applying what the shared store holds to this node's copy of a session: records from a
//! load (a diff: new requests shown, endings announced, vanished ones dropped) and single
//! changes from notices; changes to a request this node is still storing wait for its ask.

use std::collections::HashSet;
use std::sync::Arc;

use askgate_protocol::{QuestionSet, RequestId};

use super::super::Hub;
use super::super::request::{Arrival, EntryState};
use super::super::session::Session;
use crate::store::shared::{Change, SessionRecords};
use crate::store::{FollowUp, StoredRequest};

impl Hub {
    /// Makes `state` what the store holds: requests new here are added (and shown), ones
    /// resolved there are announced, ones gone there are dropped.
    pub(super) fn apply_records(&self, state: &mut Session, records: SessionRecords) {
        self.ledger.followers.replace(&state.id, records.followers);
        let mut kept = HashSet::with_capacity(records.requests.len());
        for record in records.requests {
            kept.insert(record.id.clone());
            match state.requests.get(&record.id).map(|entry| &entry.state) {
                None => self.add_record(state, record),
                Some(EntryState::Open | EntryState::Resolving) => {
                    // Follow-ups made elsewhere and not heard of here.
                    if record.follow_ups.reminded {
                        state.remind(&record.id);
                    }
                    if record.follow_ups.escalated {
                        state.escalate(&record.id);
                    }
                    // Votes kept elsewhere and not heard of here.
                    if state
                        .requests
                        .get(&record.id)
                        .is_some_and(|entry| entry.votes != record.votes)
                    {
                        state.votes_changed(&record.id, "", record.votes.clone());
                    }
                    if let Some(resolution) = record.resolution {
                        state.settle(&record.id, resolution);
                    }
                }
                // Asked anew after a forgetting this node did not hear of.
                Some(EntryState::Resolved(_)) if record.resolution.is_none() => {
                    let id = record.id.clone();
                    state.discard(&id);
                    self.add_record(state, record);
                }
                Some(EntryState::Committing | EntryState::Resolved(_)) => {}
            }
        }
        let gone: Vec<_> = state
            .requests
            .values()
            .filter(|entry| !kept.contains(&entry.id))
            .filter(|entry| matches!(entry.state, EntryState::Open | EntryState::Resolved(_)))
            .map(|entry| (entry.id.clone(), matches!(entry.state, EntryState::Open)))
            .collect();
        let mut vanished_open = false;
        for (id, open) in gone {
            vanished_open |= open;
            state.discard(&id);
        }
        if vanished_open {
            // Ended and forgotten elsewhere, both unheard: only a snapshot can tell the tabs.
            let max = self.limits.max_frame_bytes;
            let tabs: Vec<_> = state
                .tabs
                .iter()
                .map(|(link, slot)| (link, slot.tab.clone(), self.people.you(&slot.person)))
                .collect();
            for (link, tab, you) in tabs {
                let snapshot = state.snapshot(&tab, &you, max);
                state.send_to(link, snapshot, &self.metrics);
            }
        }
    }

    /// A request another node asked (or this node missed): held and shown to the tabs here.
    pub(super) fn add_record(&self, state: &mut Session, record: StoredRequest) {
        let questions = match QuestionSet::read_back(record.dialect, &record.questions) {
            Ok(questions) => Arc::new(questions),
            Err(errors) => {
                tracing::error!(session = %record.session, request = %record.id, %errors, "a shared request does not validate here; not shown");
                return;
            }
        };
        state.admit_record(record, questions, Arrival::Shared);
    }

    /// Applies a change to a request this node is not storing.
    pub(super) fn apply_change(&self, state: &mut Session, change: Change) {
        match change {
            Change::Resolved { id, resolution } => {
                state.settle(&id, *resolution);
            }
            Change::Forgot { id } => {
                state.forget(&id);
            }
            Change::Voted { id, user, votes } => {
                state.votes_changed(&id, &user, votes);
            }
            Change::FollowedUp { id, follow_up } => match follow_up {
                FollowUp::Remind => {
                    state.remind(&id);
                }
                FollowUp::Escalate => {
                    state.escalate(&id);
                }
            },
            Change::Put(_) | Change::Presence | Change::Followers { .. } => {}
        }
    }

    /// The ask of `id` is finished here (stored or not): the changes to it that arrived
    /// meanwhile are applied now (`keep`), or dropped with it.
    pub(in crate::hub) fn release_held_back_changes(
        &self,
        state: &mut Session,
        id: &RequestId,
        keep: bool,
    ) {
        let Some(sync) = state.sync.as_mut() else {
            return;
        };
        if sync.held_back.is_empty() {
            return;
        }
        let (mine, others): (Vec<Change>, Vec<Change>) = std::mem::take(&mut sync.held_back)
            .into_iter()
            .partition(|change| match change {
                Change::Resolved { id: of, .. }
                | Change::Voted { id: of, .. }
                | Change::Forgot { id: of }
                | Change::FollowedUp { id: of, .. } => of == id,
                _ => false,
            });
        sync.held_back = others;
        if keep {
            for change in mine {
                self.apply_change(state, change);
            }
        }
    }
}
