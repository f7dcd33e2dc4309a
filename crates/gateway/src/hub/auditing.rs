//! The hub's side of the audit trail: refusals, which change nothing else, are counted by
//! each tab and recorded as notes (the first of each kind, then its count); and a tab's
//! `history` frame, built from the trail (see [`audit::history`](crate::audit::history)) once
//! for every tab that asks until a request of the session ends.

use std::sync::Arc;

use askgate_protocol::wire::ToTab;
use askgate_protocol::{ReplyCode, RequestId, SessionId};

use super::Hub;
use super::peers::frame::Frame;
use super::peers::links::TabHandle;
use super::refusals::{Counted, Tallies, Tally};
use super::request::EntryState;
use super::session::Session;
use super::shown::history_cache::HISTORY_CACHE_BYTES;
use crate::audit::history::read_history;
use crate::audit::{Note, Who};
use crate::people::NotAllowed;
use crate::store::{StoreOp, Trails};

impl TabHandle {
    /// Records that this tab's `action` (`answer` or `decline`) on request `id` was refused:
    /// the first of its kind now, repeats only counted (see [`refusals`](super::refusals)).
    /// A store that cannot take it is logged: the refusal itself stands either way.
    pub(super) async fn record_refusal(&self, id: &str, action: &'static str, why: &NotAllowed) {
        let Ok(id) = RequestId::parse(id) else {
            return;
        };
        let counted = {
            let mut sessions = self.hub.lock();
            sessions.get_mut(&self.session).and_then(|session| {
                let requests = &session.requests;
                let is_open = |request: &RequestId| {
                    requests.get(request).is_some_and(|entry| {
                        matches!(entry.state, EntryState::Committing | EntryState::Open)
                    })
                };
                let slot = session.tabs.get_mut(self.link_id)?;
                Some(slot.refusals.count(&id, action, why.reason(), is_open))
            })
        };
        let Some((counted, ended)) = counted else {
            return;
        };
        let who = Who::of(&self.tab, &self.person);
        let mut notes = Vec::new();
        if counted == Counted::First {
            let first = Tally {
                id,
                reason: why.reason(),
                action,
                count: 1,
            };
            notes.push(refusal_note(&self.session, &who, first, false));
        }
        notes.extend(
            ended
                .into_iter()
                .map(|tally| refusal_note(&self.session, &who, tally, true)),
        );
        self.hub.record_notes(notes).await;
    }

    /// Records the refusals this tab was counting, as it leaves.
    pub async fn record_counted_refusals(&self) {
        let Some(tallies) = self.with_tallies(Tallies::take_all) else {
            return;
        };
        let who = Who::of(&self.tab, &self.person);
        let notes = tallies
            .into_iter()
            .map(|tally| refusal_note(&self.session, &who, tally, true))
            .collect();
        self.hub.record_notes(notes).await;
    }

    /// Runs `change` on this tab's refusal counts, under the lock; `None` once it has left.
    fn with_tallies<T>(&self, change: impl FnOnce(&mut Tallies) -> T) -> Option<T> {
        let mut sessions = self.hub.lock();
        let slot = sessions
            .get_mut(&self.session)?
            .tabs
            .get_mut(self.link_id)?;
        Some(change(&mut slot.refusals))
    }

    /// The `history` frame: the session's recent ended requests, from its trail, built once
    /// for every tab that asks until a request of the session ends.
    pub async fn history(&self) -> Frame {
        let cache = self
            .hub
            .lock()
            .get_mut(&self.session)
            .map(|session| Arc::clone(session.history.get_or_insert_with(Arc::default)));
        let build = || history_frame(self.hub.store.trails(), &self.session);
        match cache {
            Some(cache) => cache.frame(&self.hub.history_bytes_total, build).await,
            None => build().await.unwrap_or_else(|error| error),
        }
    }
}

impl Hub {
    /// Records `notes` (refusals) in the audit trail; a store that cannot take them is
    /// logged.
    pub(super) async fn record_notes(&self, notes: Vec<Note<'static>>) {
        if notes.is_empty() {
            return;
        }
        let ops = notes.into_iter().map(StoreOp::Note).collect();
        if let Err(error) = self.store.commit(ops).await {
            tracing::warn!(%error, "could not record a refused answer in the audit trail");
        }
    }
}

/// The counts of request `id` the tabs of `session` kept (it ended), as entries to record.
pub(super) fn counted_refusals(session: &mut Session, id: &RequestId) -> Vec<Note<'static>> {
    let mut notes = Vec::new();
    for slot in session.tabs.values_mut() {
        let tallies = slot.refusals.take_request(id);
        if tallies.is_empty() {
            continue;
        }
        let who = Who::of(&slot.tab, &slot.person);
        notes.extend(
            tallies
                .into_iter()
                .map(|tally| refusal_note(&session.id, &who, tally, true)),
        );
    }
    notes
}

/// The entry of `tally`: the first refusal of its kind, or (`counted`) how many there were.
fn refusal_note(session: &SessionId, who: &Who, tally: Tally, counted: bool) -> Note<'static> {
    let count = counted.then_some(tally.count);
    Note::refused(session, who, tally.id, tally.action, tally.reason, count)
}

/// The `history` frame of `session` from its trail (`Err`: the frame saying it could not be
/// read), leaving the oldest requests out to fit [`HISTORY_CACHE_BYTES`].
async fn history_frame(trails: &dyn Trails, session: &SessionId) -> Result<Frame, Frame> {
    let mut entries = read_history(trails, session).await.map_err(|error| {
        Frame::encode(&ToTab::Error {
            code: ReplyCode::Unavailable.as_str().to_owned(),
            message: format!("the history could not be read ({error}); try again"),
        })
    })?;
    fit_frame(&mut entries);
    Ok(Frame::encode(&ToTab::History { entries }))
}

/// Leaves the oldest of `entries` (newest first) out until the frame fits in
/// [`HISTORY_CACHE_BYTES`].
fn fit_frame(entries: &mut Vec<serde_json::Value>) {
    // The frame's own members and the commas between entries, with room to spare.
    const FRAME_OVERHEAD: usize = 64;
    let mut size = FRAME_OVERHEAD;
    let fits = entries
        .iter()
        .take_while(|entry| {
            size += serde_json::to_vec(entry).map_or(0, |bytes| bytes.len()) + 1;
            size <= HISTORY_CACHE_BYTES
        })
        .count();
    entries.truncate(fits);
}
