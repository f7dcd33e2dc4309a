//! A session's recent finished requests, for tabs that join late or reload: each encoded once
//! as it ends, kept while its outcome awaits the agent's ack and for [`KEPT_AFTER_FORGOTTEN`]
//! after, at most [`FINISHED_KEPT`] of them and [`FINISHED_BYTES`] in all (oldest go first).

use std::collections::VecDeque;
use std::time::Duration;

use askgate_protocol::RequestId;
use bytes::Bytes;

use crate::store::StoredResolution;

/// How long a finished request stays listed once its outcome has been acknowledged (or
/// expired) and forgotten.
pub(super) const KEPT_AFTER_FORGOTTEN: Duration = Duration::from_secs(15 * 60);
/// The most finished requests a session lists.
pub(super) const FINISHED_KEPT: usize = 64;
/// The most bytes a session's finished list may hold (each entry carries its questions and
/// the response).
pub(super) const FINISHED_BYTES: usize = 4 * 1024 * 1024;

/// One finished request.
#[derive(Debug)]
struct FinishedEntry {
    id: RequestId,
    at_ms: u64,
    /// When the hub forgot the request (acknowledged or expired); `None` while it is held.
    forgotten_at_ms: Option<u64>,
    json: Bytes,
}

/// The list, oldest ending first.
#[derive(Debug, Default)]
pub(super) struct Finished {
    entries: VecDeque<FinishedEntry>,
    bytes: usize,
    /// Changes whenever the list does, so a snapshot built from it can be reused until then.
    generation: u64,
}

impl Finished {
    /// Adds request `id`, whose view (the `request` JSON tabs got) is `view`, as it ended.
    pub(super) fn push(&mut self, id: &RequestId, view: &[u8], resolution: &StoredResolution) {
        let json = finished_json(view, resolution);
        self.remove(id);
        // Usually the newest; restored ones may come in another order.
        let at = self
            .entries
            .iter()
            .rposition(|e| e.at_ms <= resolution.at_ms)
            .map_or(0, |i| i + 1);
        let at = at.min(self.entries.len());
        self.bytes += json.len();
        self.entries.insert(
            at,
            FinishedEntry {
                id: id.clone(),
                at_ms: resolution.at_ms,
                forgotten_at_ms: None,
                json,
            },
        );
        while self.entries.len() > FINISHED_KEPT
            || (self.bytes > FINISHED_BYTES && self.entries.len() > 1)
        {
            if let Some(oldest) = self.entries.pop_front() {
                self.bytes -= oldest.json.len();
            }
        }
        self.generation += 1;
    }

    /// Request `id` has been forgotten at `now_ms`: its listing runs out after the grace.
    pub(super) fn forgotten(&mut self, id: &RequestId, now_ms: u64) {
        if let Some(entry) = self.entries.iter_mut().find(|e| e.id == *id) {
            entry.forgotten_at_ms = Some(now_ms);
        }
    }

    /// Drops request `id`'s entry (it is asked anew).
    pub(super) fn remove(&mut self, id: &RequestId) {
        if let Some(at) = self.entries.iter().position(|e| e.id == *id) {
            if let Some(entry) = self.entries.remove(at) {
                self.bytes -= entry.json.len();
            }
            self.generation += 1;
        }
    }

    /// Drops the entries forgotten longer ago than the grace.
    pub(super) fn prune(&mut self, now_ms: u64) {
        let grace_ms = KEPT_AFTER_FORGOTTEN.as_millis() as u64;
        let before = self.entries.len();
        self.entries
            .retain(|e| e.forgotten_at_ms.is_none_or(|at| at + grace_ms > now_ms));
        if self.entries.len() != before {
            self.bytes = self.entries.iter().map(|e| e.json.len()).sum();
            self.generation += 1;
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn generation(&self) -> u64 {
        self.generation
    }

    /// The entries' JSON, oldest first.
    pub(super) fn views(&self) -> impl Iterator<Item = &Bytes> {
        self.entries.iter().map(|e| &e.json)
    }
}

/// `view` with the ending added: `{...view fields, "outcome", "response", "by", "at_ms"}`,
/// byte for byte what serde_json writes for a [`FinishedView`](askgate_protocol::wire::FinishedView).
fn finished_json(view: &[u8], resolution: &StoredResolution) -> Bytes {
    let open = view.strip_suffix(b"}").unwrap_or(view);
    let mut out = Vec::with_capacity(view.len() + 128);
    out.extend_from_slice(open);
    // Writing into a `Vec` cannot fail.
    out.extend_from_slice(br#","outcome":"#);
    let _ = serde_json::to_writer(&mut out, &resolution.settlement.outcome);
    out.extend_from_slice(br#","response":"#);
    let _ = serde_json::to_writer(&mut out, &resolution.settlement.response);
    out.extend_from_slice(br#","by":"#);
    let _ = serde_json::to_writer(&mut out, &resolution.by);
    out.extend_from_slice(br#","at_ms":"#);
    let _ = serde_json::to_writer(&mut out, &resolution.at_ms);
    out.push(b'}');
    Bytes::from(out)
}
