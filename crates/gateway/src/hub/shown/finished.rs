//! A session's recent finished requests, for tabs that join late or reload, kept while the
//! outcome awaits the agent's ack and for [`KEPT_AFTER_FORGOTTEN`] after, at most
//! [`FINISHED_KEPT`] of them and [`FINISHED_BYTES`] in all (oldest go first). Each is the
//! request's view as tabs got it (the same bytes, not a copy) and its ending, encoded once.
//!
//! Listed in the order the endings were settled here, under the hub's lock once the store had
//! kept them (at a restart, the order of their `at_ms`): a total order, which `at_ms` is not,
//! since two requests can end in the same millisecond, and a page that lists them by time
//! keeps this order for those.

use std::collections::VecDeque;
use std::time::Duration;

use askgate_protocol::RequestId;
use bytes::Bytes;

use crate::store::StoredResolution;

/// How long a finished request stays listed once its outcome has been acknowledged (or
/// expired) and forgotten.
pub(in crate::hub) const KEPT_AFTER_FORGOTTEN: Duration = Duration::from_secs(10 * 60);
/// The most finished requests a session lists.
pub(in crate::hub) const FINISHED_KEPT: usize = 32;
/// The most bytes a session's finished list may hold (each entry carries its questions and
/// the response).
pub(in crate::hub) const FINISHED_BYTES: usize = 1024 * 1024;

/// One finished request.
#[derive(Debug)]
struct FinishedEntry {
    id: RequestId,
    /// [`fingerprint`] of `id`: compared first, so a lookup of an id not listed (every new
    /// ask makes one) does not compare it byte for byte with every entry.
    fingerprint: u64,
    /// When the hub forgot the request (acknowledged or expired); `None` while it is held.
    forgotten_at_ms: Option<u64>,
    /// The request's view without its closing `}`.
    view: Bytes,
    /// `,"outcome":...,"at_ms":...}`.
    ending: Bytes,
}

impl FinishedEntry {
    fn bytes(&self) -> usize {
        self.view.len() + self.ending.len()
    }
}

/// The list, oldest ending first, in the order they were pushed.
#[derive(Debug, Default)]
pub(in crate::hub) struct Finished {
    /// `None` while nothing is listed: boxed, so that a session that has never had a request
    /// end (an idle tab's) pays one pointer for it.
    listed: Option<Box<Listed>>,
    /// Changes whenever the list does, so a snapshot built from it can be reused until then.
    generation: u64,
}

#[derive(Debug, Default)]
struct Listed {
    entries: VecDeque<FinishedEntry>,
    bytes: usize,
}

impl Listed {
    /// Where request `id` is listed, if it is. Searched newest first: the id looked up is
    /// most often the one that ended last (its ack follows its ending), and an id is listed
    /// once.
    fn position(&self, id: &RequestId) -> Option<usize> {
        let fingerprint = fingerprint(id);
        self.entries
            .iter()
            .rposition(|e| e.fingerprint == fingerprint && e.id == *id)
    }

    /// Drops request `id`'s entry; whether it was listed.
    fn remove(&mut self, id: &RequestId) -> bool {
        let Some(entry) = self.position(id).and_then(|at| self.entries.remove(at)) else {
            return false;
        };
        self.bytes -= entry.bytes();
        true
    }
}

impl Finished {
    /// Adds request `id`, whose view (the `request` JSON tabs got) is `view`, as it ended: the
    /// newest ending, whatever its `at_ms` says.
    pub(in crate::hub) fn push(
        &mut self,
        id: &RequestId,
        view: &Bytes,
        resolution: &StoredResolution,
    ) {
        let entry = FinishedEntry {
            id: id.clone(),
            fingerprint: fingerprint(id),
            forgotten_at_ms: None,
            view: view.slice(..view.len().saturating_sub(1)),
            ending: ending_json(resolution),
        };
        let listed = self.listed.get_or_insert_default();
        // A re-asked id's earlier ending goes first; the box stays, about to hold this one.
        listed.remove(id);
        listed.bytes += entry.bytes();
        listed.entries.push_back(entry);
        while listed.entries.len() > FINISHED_KEPT
            || (listed.bytes > FINISHED_BYTES && listed.entries.len() > 1)
        {
            if let Some(oldest) = listed.entries.pop_front() {
                listed.bytes -= oldest.bytes();
            }
        }
        self.generation += 1;
    }

    /// Request `id` has been forgotten at `now_ms`: its listing runs out after the grace.
    pub(in crate::hub) fn forgotten(&mut self, id: &RequestId, now_ms: u64) {
        if let Some(listed) = self.listed.as_deref_mut()
            && let Some(at) = listed.position(id)
        {
            listed.entries[at].forgotten_at_ms = Some(now_ms);
        }
    }

    /// Drops request `id`'s entry (it is asked anew).
    pub(in crate::hub) fn remove(&mut self, id: &RequestId) {
        if self
            .listed
            .as_deref_mut()
            .is_some_and(|listed| listed.remove(id))
        {
            self.generation += 1;
            self.let_go_if_empty();
        }
    }

    /// Drops the entries forgotten longer ago than the grace.
    pub(in crate::hub) fn prune(&mut self, now_ms: u64) {
        let Some(listed) = self.listed.as_deref_mut() else {
            return;
        };
        let grace_ms = KEPT_AFTER_FORGOTTEN.as_millis() as u64;
        let before = listed.entries.len();
        listed
            .entries
            .retain(|e| e.forgotten_at_ms.is_none_or(|at| at + grace_ms > now_ms));
        if listed.entries.len() != before {
            listed.bytes = listed.entries.iter().map(FinishedEntry::bytes).sum();
            self.generation += 1;
            self.let_go_if_empty();
        }
    }

    /// An emptied list gives its room back: the session is as small as before its first
    /// request ended.
    fn let_go_if_empty(&mut self) {
        if self.is_empty() {
            self.listed = None;
        }
    }

    pub(in crate::hub) fn is_empty(&self) -> bool {
        self.listed
            .as_ref()
            .is_none_or(|listed| listed.entries.is_empty())
    }

    pub(in crate::hub) fn generation(&self) -> u64 {
        self.generation
    }

    /// Each entry's JSON, in its two pieces (the view, then the ending), oldest first.
    pub(in crate::hub) fn views(&self) -> impl Iterator<Item = [&Bytes; 2]> {
        self.listed
            .iter()
            .flat_map(|listed| listed.entries.iter())
            .map(|e| [&e.view, &e.ending])
    }
}

/// A request id's hash, to tell most other ids apart by one comparison.
fn fingerprint(id: &RequestId) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::hash::DefaultHasher::new();
    id.as_str().hash(&mut hasher);
    hasher.finish()
}

/// How a request ended, as the rest of its finished view: `,"outcome":...,"by":...,"user":...,"at_ms":...}`,
/// so that the view without its `}` and this are what serde_json writes for a
/// [`FinishedView`](askgate_protocol::wire::FinishedView).
fn ending_json(resolution: &StoredResolution) -> Bytes {
    let mut out = Vec::with_capacity(96);
    // Writing into a `Vec` cannot fail.
    out.extend_from_slice(br#","outcome":"#);
    let _ = serde_json::to_writer(&mut out, &resolution.settlement.outcome);
    out.extend_from_slice(br#","response":"#);
    let _ = serde_json::to_writer(&mut out, &resolution.settlement.response);
    out.extend_from_slice(br#","by":"#);
    let _ = serde_json::to_writer(&mut out, &resolution.by);
    out.extend_from_slice(br#","user":"#);
    let _ = serde_json::to_writer(&mut out, &resolution.user);
    if let Some(via) = resolution.via {
        out.extend_from_slice(br#","via":"#);
        let _ = serde_json::to_writer(&mut out, &via);
    }
    out.extend_from_slice(br#","at_ms":"#);
    let _ = serde_json::to_writer(&mut out, &resolution.at_ms);
    out.push(b'}');
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use askgate_protocol::Settlement;

    use super::*;

    fn listed(finished: &Finished) -> Vec<String> {
        finished
            .views()
            .map(|[view, _]| String::from_utf8(view.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn endings_are_listed_in_the_order_they_were_settled_whatever_their_clocks_say() {
        let mut finished = Finished::default();
        // The same millisecond, then one a clock put earlier (another node's, a retimed one).
        for (id, at_ms) in [("r1", 10), ("r2", 10), ("r3", 9)] {
            let view = Bytes::from(format!(r#"{{"id":"{id}"}}"#));
            let id = RequestId::parse(id).unwrap();
            finished.push(
                &id,
                &view,
                &StoredResolution::untouched(Settlement::withdrawn(), at_ms),
            );
        }
        assert_eq!(
            listed(&finished),
            [r#"{"id":"r1""#, r#"{"id":"r2""#, r#"{"id":"r3""#]
        );
    }

    #[test]
    fn an_emptied_list_gives_its_room_back() {
        let mut finished = Finished::default();
        let ended = StoredResolution::untouched(Settlement::withdrawn(), 10);
        let view = Bytes::from_static(br#"{"id":"r1"}"#);
        let (r1, r2) = (
            RequestId::parse("r1").unwrap(),
            RequestId::parse("r2").unwrap(),
        );
        assert!(finished.listed.is_none());
        finished.push(&r1, &view, &ended);
        finished.push(&r2, &view, &ended);
        finished.remove(&r1);
        assert!(!finished.is_empty());
        finished.remove(&r2);
        assert!(finished.is_empty() && finished.listed.is_none(), "removed");
        // Forgotten, then pruned once the grace is over.
        finished.push(&r1, &view, &ended);
        finished.forgotten(&r1, 1_000);
        let grace_ms = KEPT_AFTER_FORGOTTEN.as_millis() as u64;
        finished.prune(1_000 + grace_ms - 1);
        assert_eq!(listed(&finished).len(), 1, "within the grace");
        let generation = finished.generation();
        finished.prune(1_000 + grace_ms);
        assert!(finished.is_empty() && finished.listed.is_none(), "pruned");
        assert!(finished.generation() > generation);
    }
}
