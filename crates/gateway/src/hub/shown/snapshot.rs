//! A joining tab's `snapshot`: its own fields, and the rest (the open requests, the finished
//! ones) built once and shared by every tab that joins while the session shows the same. Both
//! are pieced together from serde_json's output, byte for byte what it writes for
//! [`ToTab::Snapshot`].
//!
//! [`ToTab::Snapshot`]: askgate_protocol::wire::ToTab::Snapshot

use std::io::Write as _;

use askgate_protocol::wire::You;
use bytes::Bytes;

use super::super::request::Entry;
use super::finished::Finished;

/// What a snapshot's shared part is made of: the open requests (a request's view never
/// changes, so its sequence number names it) and the finished list's generation.
#[derive(Debug, PartialEq, Eq)]
struct SnapshotKey {
    open: Vec<u64>,
    finished: u64,
    /// How many times an open request's view was encoded anew (escalated, orphaned...):
    /// the same requests may show otherwise.
    reencoded: u64,
}

/// The shared part of a session's last snapshot and what it was built from. Boxed: only a
/// session with requests keeps one, and inline it was 72 of every session's bytes.
#[derive(Debug, Default)]
pub(in crate::hub) struct SnapshotBody {
    last: Option<Box<(SnapshotKey, Bytes)>>,
}

impl SnapshotBody {
    /// The shared part for `open` (oldest first) and `finished`: the last one built, if they
    /// are what it was built from.
    pub(in crate::hub) fn body(
        &mut self,
        open: &[&Entry],
        finished: &Finished,
        reencoded: u64,
        max_frame_bytes: usize,
    ) -> Bytes {
        let key = SnapshotKey {
            open: open.iter().map(|e| e.seq).collect(),
            finished: finished.generation(),
            reencoded,
        };
        match self.last.as_deref() {
            Some((built_from, body)) if *built_from == key => body.clone(),
            _ => {
                let body = snapshot_body(
                    open.iter().map(|e| &e.encoded.view),
                    max_frame_bytes,
                    finished.views(),
                );
                // An empty session's body is a few dozen bytes, built in no time: not kept,
                // as every idle session would keep it (88 bytes of the heap each).
                let empty = open.is_empty() && finished.is_empty();
                self.last = (!empty).then(|| Box::new((key, body.clone())));
                body
            }
        }
    }
}

/// A snapshot's own fields, which differ from tab to tab.
pub(in crate::hub) struct SnapshotHead<'a> {
    pub(in crate::hub) session: &'a str,
    pub(in crate::hub) tab: &'a str,
    pub(in crate::hub) now_ms: u64,
    pub(in crate::hub) tabs: usize,
    pub(in crate::hub) agent_online: bool,
    pub(in crate::hub) you: Option<&'a You>,
}

impl SnapshotHead<'_> {
    /// The `snapshot` frame up to its requests, as serde_json writes
    /// [`ToTab::Snapshot`](askgate_protocol::wire::ToTab::Snapshot).
    pub(in crate::hub) fn encode(&self) -> Bytes {
        snapshot_head(self)
    }
}

fn snapshot_head(head: &SnapshotHead<'_>) -> Bytes {
    let mut out = Vec::with_capacity(160 + head.session.len() + head.tab.len());
    // Writing into a `Vec` cannot fail.
    out.extend_from_slice(br#"{"type":"snapshot","session":"#);
    let _ = serde_json::to_writer(&mut out, head.session);
    out.extend_from_slice(br#","tab":"#);
    let _ = serde_json::to_writer(&mut out, head.tab);
    let _ = write!(
        out,
        r#","now_ms":{},"tabs":{},"agent_online":{},"#,
        head.now_ms, head.tabs, head.agent_online
    );
    if let Some(you) = head.you {
        out.extend_from_slice(br#""you":"#);
        let _ = serde_json::to_writer(&mut out, you);
        out.push(b',');
    }
    Bytes::from(out)
}

/// The rest of the `snapshot` frame, from its requests to the end: byte for byte what
/// serde_json writes, given views that are serde_json's output too.
fn snapshot_body<'v>(
    views: impl Iterator<Item = &'v Bytes>,
    max_frame_bytes: usize,
    finished: impl Iterator<Item = [&'v Bytes; 2]>,
) -> Bytes {
    let views: Vec<[&Bytes; 1]> = views.map(|view| [view]).collect();
    let finished: Vec<[&Bytes; 2]> = finished.collect();
    let pieces = |items: &[&Bytes]| items.iter().map(|piece| piece.len()).sum::<usize>() + 1;
    let bytes: usize = views.iter().map(|v| pieces(v)).sum::<usize>()
        + finished.iter().map(|f| pieces(f)).sum::<usize>();
    let mut out = Vec::with_capacity(64 + bytes);
    // Each item is its pieces one after the other.
    fn list<const N: usize>(out: &mut Vec<u8>, items: &[[&Bytes; N]]) {
        out.push(b'[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            for piece in item {
                out.extend_from_slice(piece);
            }
        }
        out.push(b']');
    }
    out.extend_from_slice(br#""requests":"#);
    list(&mut out, &views);
    let _ = write!(out, r#","max_frame_bytes":{max_frame_bytes},"finished":"#);
    list(&mut out, &finished);
    out.push(b'}');
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use askgate_protocol::wire::{FinishedView, RequestView, Via};
    use askgate_protocol::{Dialect, Outcome, Settlement};
    use serde_json::json;

    use askgate_protocol::wire::ToTab;
    use askgate_protocol::{RequestId, SessionId, TabId};

    use super::super::super::peers::frame::Frame;
    use super::super::super::request::EncodedRequest;
    use super::super::super::request::Ledger;
    use super::super::super::session::Session;
    use super::*;
    use crate::store::StoredResolution;

    fn view(id: &str, deadline_ms: Option<u64>) -> RequestView {
        RequestView {
            quorum: None,
            ruled: None,
            remember: Vec::new(),
            orphaned: false,
            default: None,
            id: id.into(),
            dialect: Dialect::parse("deepagents").unwrap(),
            title: None,
            questions: json!([{"question": "Why \"so\"?\u{1}", "type": "text"}]),
            asked_at_ms: 3,
            deadline_ms,
            answerers: deadline_ms.map(|_| vec!["alice@example.com".into()]),
            escalated_to: None,
        }
    }

    #[test]
    fn a_pieced_snapshot_is_what_serde_json_writes() {
        let head = SnapshotHead {
            session: "s-1",
            tab: "t-\"x\"",
            now_ms: 1_700_000_000_123,
            tabs: 2,
            agent_online: true,
            you: Some(&You {
                user: Some("bob \"b\"".into()),
                via: Via::Proxy,
                may_answer: true,
                groups: vec!["ops".into()],
                following: true,
            }),
        };
        let finished = FinishedView {
            request: view("r-0", Some(4)),
            outcome: Outcome::Answered,
            response: json!({"answers": ["ok"]}),
            by: Some("t-1".into()),
            user: Some("alice@example.com".into()),
            via: Some(Via::PersonalLink),
            at_ms: 8,
        };
        let resolution = StoredResolution {
            settlement: Settlement {
                outcome: Outcome::Answered,
                response: finished.response.clone(),
                result: json!("Q: a\nA: ok"),
                model_text: Some("Q: a\nA: ok".into()),
            },
            by: finished.by.clone(),
            user: finished.user.clone(),
            via: finished.via,
            voters: None,
            at_ms: finished.at_ms,
        };
        let mut ended = Finished::default();
        ended.push(
            &RequestId::parse("r-0").unwrap(),
            &EncodedRequest::new(&finished.request).view,
            &resolution,
        );
        for (views, finished) in [
            (vec![], vec![]),
            (vec![view("r-1", None)], vec![finished.clone()]),
            (
                vec![view("r-1", Some(9)), view("r-2", None)],
                vec![finished],
            ),
        ] {
            let encoded: Vec<EncodedRequest> = views.iter().map(EncodedRequest::new).collect();
            let no_finished = Finished::default();
            let listed = if finished.is_empty() {
                &no_finished
            } else {
                &ended
            };
            let pieced = Frame::joined(
                snapshot_head(&head),
                snapshot_body(encoded.iter().map(|e| &e.view), 65_536, listed.views()),
            );
            let encoded = Frame::encode(&ToTab::Snapshot {
                session: head.session.into(),
                tab: head.tab.into(),
                now_ms: head.now_ms,
                tabs: head.tabs,
                agent_online: head.agent_online,
                you: head.you.cloned(),
                requests: views,
                max_frame_bytes: 65_536,
                finished,
            });
            assert_eq!(pieced.text(), encoded.text());
        }
    }

    fn you() -> You {
        You {
            user: None,
            via: Via::SessionLink,
            may_answer: true,
            groups: Vec::new(),
            following: false,
        }
    }

    #[test]
    fn a_snapshot_shares_its_body_until_the_session_changes() {
        let mut session = Session::new(SessionId::parse("s").unwrap(), 10, Ledger::detached());
        let tab = TabId::parse("t-1").unwrap();
        // An empty session's body is built for each tab, not kept.
        let first = session.snapshot(&tab, &you(), 1024);
        let second = session.snapshot(&TabId::parse("t-2").unwrap(), &you(), 1024);
        assert!(!first.shares_body_with(&second));
        assert!(session.snapshot_body.last.is_none());
        let resolution = StoredResolution::untouched(Settlement::withdrawn(), 1);
        let id = RequestId::parse("r").unwrap();
        session.finished.push(
            &id,
            &EncodedRequest::new(&view("r", None)).view,
            &resolution,
        );
        let third = session.snapshot(&tab, &you(), 1024);
        assert!(!third.shares_body_with(&second));
        assert!(
            third.text().contains(r#""finished":[{"id":"r""#),
            "{}",
            third.text()
        );
        let fourth = session.snapshot(&TabId::parse("t-2").unwrap(), &you(), 1024);
        assert!(fourth.shares_body_with(&third));
        session.finished.remove(&id);
        let fifth = session.snapshot(&tab, &you(), 1024);
        assert!(!fifth.shares_body_with(&fourth));
        assert!(session.snapshot_body.last.is_none());
    }
}
