//! One request as the hub holds it, and the states it goes through.
//!
//! `Committing` → (store has taken it) → `Open` → (a winner is chosen) → `Resolving` → (store
//! has the resolution) → `Resolved` → (acked or expired) → gone. Only `Open` can be won; a
//! rival arriving in `Resolved` is told "already resolved", one arriving in `Resolving` waits
//! to learn whether the store kept the winner (`Resolved`) or not (`Open` again).
//!
//! Alongside, [`Entry::storing`] says whether its agent is still to hear `accepted`: a request
//! is open to tabs once the store has taken it, but promised to its agent only once it is
//! durable, which the embedded store says later (the syncer's `fdatasync`).

use std::sync::Arc;

use askgate_protocol::wire::RequestView;
use askgate_protocol::{QuestionSet, RequestId};
use bytes::Bytes;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::frame::Frame;
use super::links::Link;
use crate::store::StoredResolution;

/// Where a request is in its life.
#[derive(Debug)]
pub(super) enum EntryState {
    /// Being written to the store.
    Committing,
    /// Shown to tabs; the first valid answer wins.
    Open,
    /// A winner was chosen; its resolution is being written to the store.
    Resolving,
    /// Ended; kept until the agent acks it or the retention runs out. Boxed: an open request
    /// should not carry room for an ending.
    Resolved(Box<StoredResolution>),
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
    /// When it was asked (Unix ms).
    pub(super) asked_at_ms: u64,
    /// When it times out (Unix ms), if it does.
    pub(super) deadline_ms: Option<u64>,
    /// Who alone may answer, when the ask said so.
    pub(super) answerers: Option<Arc<[String]>>,
    /// The request as tabs see it, encoded once.
    pub(super) encoded: EncodedRequest,
    /// The agent connection waiting for the outcome, if one is connected.
    pub(super) asker: Option<Link>,
    pub(super) state: EntryState,
    /// Until its agent has been told `accepted` (the store made it durable, or it failed to):
    /// what the agent's repeats and withdrawals wait on meanwhile.
    pub(super) storing: Option<Arc<Notify>>,
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

/// A request as tabs see it, encoded once: the `request` frame every tab gets when it is asked,
/// and the view inside that frame (the same bytes), which snapshots copy in as they are. A
/// joining tab then costs a copy of each open request, not a clone and a re-encoding of its
/// questions under the hub's lock.
#[derive(Debug)]
pub(super) struct EncodedRequest {
    pub(super) frame: Frame,
    /// The `RequestView` as JSON: a slice of `frame`.
    pub(super) view: Bytes,
}

impl EncodedRequest {
    /// What the `request` frame starts with; the view follows, then `}`.
    const FRAME_HEAD: &[u8] = br#"{"type":"request","request":"#;

    pub(super) fn new(view: &RequestView) -> EncodedRequest {
        let mut bytes = Self::FRAME_HEAD.to_vec();
        // Wire types are plain data: serialising them cannot fail.
        let _ = serde_json::to_writer(&mut bytes, view);
        bytes.push(b'}');
        let bytes = Bytes::from(bytes);
        EncodedRequest {
            view: bytes.slice(Self::FRAME_HEAD.len()..bytes.len() - 1),
            frame: Frame::from_json(bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use askgate_protocol::Dialect;
    use askgate_protocol::wire::ToTab;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_shown_request_is_the_request_frame_and_its_view() {
        let view = RequestView {
            id: "r-1".into(),
            dialect: Dialect::HARNESS,
            title: Some("a \"title\" ✓".into()),
            questions: json!([{"header": "H", "question": "Q?\nnext", "options": []}]),
            asked_at_ms: 5,
            deadline_ms: Some(7),
            answerers: None,
        };
        let encoded = EncodedRequest::new(&view);
        let frame = Frame::encode(&ToTab::Request {
            request: view.clone(),
        });
        assert_eq!(encoded.frame.text(), frame.text());
        let decoded: RequestView = serde_json::from_slice(&encoded.view).unwrap();
        assert_eq!(decoded, view);
    }
}
