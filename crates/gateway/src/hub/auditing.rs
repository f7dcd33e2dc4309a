//! The audit trail beside the store's own entries: refusals, which change nothing else, are
//! recorded as notes (the first of each kind, then its count); and a tab reads the session's
//! recent history from the trail.

use std::collections::HashSet;
use std::sync::Arc;

use askgate_protocol::wire::ToTab;
use askgate_protocol::{ReplyCode, RequestId, SessionId, TabId};

use super::Hub;
use super::peers::frame::Frame;
use super::peers::links::TabHandle;
use super::refusals::{Counted, Tallies, Tally};
use super::request::EntryState;
use super::session::Session;
use super::shown::history_cache::HISTORY_CACHE_BYTES;
use crate::audit::history::{
    HISTORY_BYTES_READ, HISTORY_ENTRIES_READ, HISTORY_ENTRIES_SCANNED, HISTORY_LENGTH, history,
    is_ending, own_event,
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
/// [`HISTORY_LENGTH`] ended requests among them, up to [`HISTORY_ENTRIES_SCANNED`] entries
/// and about [`HISTORY_BYTES_READ`] bytes in all. Only the newest endings and their asks are
/// kept of what is read, and the frame leaves the oldest out to fit [`HISTORY_CACHE_BYTES`].
async fn read_history(trails: &dyn Trails, session: &SessionId) -> Result<Frame, Frame> {
    let unreadable = |error: StoreError| {
        Frame::encode(&ToTab::Error {
            code: ReplyCode::Unavailable.as_str().to_owned(),
            message: format!("the history could not be read ({error}); try again"),
        })
    };
    let mut window = HISTORY_ENTRIES_READ;
    let mut lines = trails
        .recent_audit(session, window)
        .await
        .map_err(unreadable)?;
    let mut scanned = lines.len();
    let mut bytes_read: usize = lines.iter().map(String::len).sum();
    let mut full = lines.len() == window;
    let mut oldest_seq = lines.first().and_then(|line| entry_seq(line));
    keep_shown(&mut lines);
    while full
        && scanned < HISTORY_ENTRIES_SCANNED
        && bytes_read < HISTORY_BYTES_READ
        && endings(&lines) < HISTORY_LENGTH
    {
        // Windows below the oldest read: seqs run 1, 2, 3... in a session's trail.
        let Some(before) = oldest_seq.filter(|seq| *seq > 1) else {
            break;
        };
        // As many entries as the byte budget has room for, at the size read so far.
        let average = bytes_read.div_ceil(scanned.max(1)).max(1);
        window = (window * 4)
            .min(HISTORY_ENTRIES_SCANNED - scanned)
            .min((HISTORY_BYTES_READ - bytes_read).div_ceil(average));
        let after = before.saturating_sub(1 + window as u64);
        let mut older = trails
            .audit(session, after, (before - 1 - after) as usize)
            .await
            .map_err(unreadable)?;
        scanned += older.len();
        bytes_read += older.iter().map(String::len).sum::<usize>();
        full = after > 0;
        oldest_seq = older
            .first()
            .and_then(|line| entry_seq(line))
            .or(Some(after + 1));
        older.append(&mut lines);
        lines = older;
        keep_shown(&mut lines);
    }
    let mut entries = history(&lines);
    fit_frame(&mut entries);
    Ok(Frame::encode(&ToTab::History { entries }))
}

/// Keeps of `lines` (oldest first) the newest [`HISTORY_LENGTH`] endings and the asks of
/// their requests: all the history shows of them.
fn keep_shown(lines: &mut Vec<String>) {
    let mut shown = HashSet::new();
    let mut keep = vec![false; lines.len()];
    for (at, line) in lines.iter().enumerate().rev() {
        let Some(event) = own_event(line) else {
            continue;
        };
        if is_ending(event) && shown.len() < HISTORY_LENGTH {
            keep[at] = entry_id(line).is_some_and(|id| shown.insert(id.to_owned()));
        }
    }
    for (at, line) in lines.iter().enumerate() {
        if own_event(line) == Some("asked") {
            keep[at] = entry_id(line).is_some_and(|id| shown.contains(id));
        }
    }
    let mut keep = keep.into_iter();
    lines.retain(|_| keep.next().unwrap_or(false));
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

/// How many of `lines` end a request.
fn endings(lines: &[String]) -> usize {
    lines
        .iter()
        .filter(|line| own_event(line).is_some_and(is_ending))
        .count()
}

/// An entry's request id, read as [`own_event`] reads its event (ids hold no quotes).
fn entry_id(line: &str) -> Option<&str> {
    const MEMBER: &str = r#""id":""#;
    let start = line.find(MEMBER)? + MEMBER.len();
    let rest = &line[start..];
    Some(&rest[..rest.find('"')?])
}

/// An entry's `seq`, its first member.
fn entry_seq(line: &str) -> Option<u64> {
    let digits = line.strip_prefix(r#"{"seq":"#)?;
    let end = digits.find(|c: char| !c.is_ascii_digit())?;
    digits[..end].parse().ok()
}
