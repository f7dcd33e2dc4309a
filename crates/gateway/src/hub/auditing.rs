//! The audit trail beside the store's own entries: refusals, which change nothing else, are
//! recorded as notes (the first of each kind, then its count); and a tab reads the session's
//! recent history from the trail.

use std::sync::Arc;

use askgate_protocol::wire::ToTab;
use askgate_protocol::{RequestId, SessionId, TabId};

use super::Hub;
use super::entry::EntryState;
use super::frame::Frame;
use super::links::TabHandle;
use super::refusals::{Counted, Tallies, Tally};
use super::session::Session;
use crate::audit::history::{
    HISTORY_ENTRIES_READ, HISTORY_ENTRIES_SCANNED, HISTORY_LENGTH, history, is_ending, is_shown,
    own_event,
};
use crate::audit::{Event, Note, Who};
use crate::clock::now_ms;
use crate::people::{NotAllowed, Person};
use crate::store::{StoreError, StoreOp, Trails};

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
        let who = who_of(&self.tab, &self.person);
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
        let who = who_of(&self.tab, &self.person);
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
            .get(&self.session)
            .map(|session| Arc::clone(&session.history));
        let build = || read_history(self.hub.store.trails(), &self.session);
        match cache {
            Some(cache) => cache.frame(build).await,
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
        let who = who_of(&slot.tab, &slot.person);
        notes.extend(
            tallies
                .into_iter()
                .map(|tally| refusal_note(&session.id, &who, tally, true)),
        );
    }
    notes
}

fn who_of(tab: &TabId, person: &Person) -> Who {
    Who {
        user: person.name().map(str::to_owned),
        tab: Some(tab.to_string()),
        via: Some(person.via),
    }
}

/// The entry of `tally`: the first refusal of its kind, or (`counted`) how many there were.
fn refusal_note(session: &SessionId, who: &Who, tally: Tally, counted: bool) -> Note<'static> {
    Note {
        session: session.clone(),
        id: Some(tally.id),
        at_ms: now_ms(),
        event: Event::Refused {
            who: who.clone(),
            action: tally.action,
            reason: tally.reason.to_owned(),
            count: counted.then_some(tally.count),
        },
    }
}

/// The `history` frame of `session` from its trail (`Err`: the frame saying it could not be
/// read). The newest entries first; older ones too while refusals and links leave fewer than
/// [`HISTORY_LENGTH`] ended requests among them, up to [`HISTORY_ENTRIES_SCANNED`] in all.
/// Only the asks and endings are kept of what is read.
async fn read_history(trails: &dyn Trails, session: &SessionId) -> Result<Frame, Frame> {
    let unreadable = |error: StoreError| {
        Frame::encode(&ToTab::Error {
            code: "unavailable".to_owned(),
            message: format!("the history could not be read ({error}); try again"),
        })
    };
    let mut window = HISTORY_ENTRIES_READ;
    let mut lines = trails
        .recent_audit(session, window)
        .await
        .map_err(unreadable)?;
    let mut scanned = lines.len();
    let mut full = lines.len() == window;
    let mut oldest_seq = lines.first().and_then(|line| entry_seq(line));
    lines.retain(|line| own_event(line).is_some_and(is_shown));
    while full && scanned < HISTORY_ENTRIES_SCANNED && endings(&lines) < HISTORY_LENGTH {
        // Windows below the oldest read: seqs run 1, 2, 3... in a session's trail.
        let Some(before) = oldest_seq.filter(|seq| *seq > 1) else {
            break;
        };
        window = (window * 4).min(HISTORY_ENTRIES_SCANNED - scanned);
        let after = before.saturating_sub(1 + window as u64);
        let older = trails
            .audit(session, after, (before - 1 - after) as usize)
            .await
            .map_err(unreadable)?;
        scanned += older.len();
        full = after > 0;
        oldest_seq = older
            .first()
            .and_then(|line| entry_seq(line))
            .or(Some(after + 1));
        let mut older: Vec<String> = older
            .into_iter()
            .filter(|line| own_event(line).is_some_and(is_shown))
            .collect();
        older.append(&mut lines);
        lines = older;
    }
    Ok(Frame::encode(&ToTab::History {
        entries: history(&lines),
    }))
}

/// How many of `lines` end a request.
fn endings(lines: &[String]) -> usize {
    lines
        .iter()
        .filter(|line| own_event(line).is_some_and(is_ending))
        .count()
}

/// An entry's `seq`, its first member.
fn entry_seq(line: &str) -> Option<u64> {
    let digits = line.strip_prefix(r#"{"seq":"#)?;
    let end = digits.find(|c: char| !c.is_ascii_digit())?;
    digits[..end].parse().ok()
}
