//! Frames as the hub hands them to connections: JSON text encoded once and shared by every
//! queue it is put on, and cut into fragments on the way out.

use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;

/// The largest fragment a frame is written in. A frame is copied into its socket's write
/// buffer as it goes out; written whole, a 16 MiB snapshot would be copied whole into the
/// buffer of every tab that joins, and stay there while a tab does not read.
pub const FRAGMENT_BYTES: usize = 16 * 1024;

/// One JSON text frame. Most are one piece; a snapshot is a head of its own (the tab's id,
/// the time) and a body shared by every tab that joins while it is unchanged. As small as one
/// `Bytes`: every tab's queue has room for dozens of them from the start.
#[derive(Clone, Debug)]
pub struct Frame(Pieces);

#[derive(Clone, Debug)]
enum Pieces {
    One(Bytes),
    /// A head and a body, behind one pointer.
    Joined(Arc<[Bytes; 2]>),
}

impl Frame {
    /// Encodes `message` as JSON.
    pub fn encode<T: Serialize>(message: &T) -> Frame {
        // Wire types are plain data: serialising them cannot fail.
        Frame::from_json(Bytes::from(serde_json::to_vec(message).unwrap_or_default()))
    }

    /// A frame from JSON text already encoded (by serde_json, or pieced together from its
    /// output).
    pub(in crate::hub) fn from_json(json: Bytes) -> Frame {
        Frame(Pieces::One(json))
    }

    /// A frame whose text is `head` followed by `body`.
    pub(in crate::hub) fn joined(head: Bytes, body: Bytes) -> Frame {
        Frame(Pieces::Joined(Arc::new([head, body])))
    }

    /// The same frame with `"session":…` as its first member: what an inbox is sent of a
    /// session's frame, since an inbox shows requests of many sessions.
    pub(in crate::hub) fn with_session(&self, session: &str) -> Frame {
        let mut out = Vec::with_capacity(self.len() + session.len() + 16);
        out.extend_from_slice(br#"{"session":"#);
        // A session id is plain data: serialising it cannot fail.
        let _ = serde_json::to_writer(&mut out, session);
        let mut rest = self.pieces().iter().flat_map(|piece| piece.iter().copied());
        // Past the frame's own `{`; an empty object keeps no comma.
        let _ = rest.next();
        let rest: Vec<u8> = rest.collect();
        if rest.first() != Some(&b'}') {
            out.push(b',');
        }
        out.extend_from_slice(&rest);
        Frame::from_json(Bytes::from(out))
    }

    fn pieces(&self) -> &[Bytes] {
        match &self.0 {
            Pieces::One(whole) => std::slice::from_ref(whole),
            Pieces::Joined(pieces) => &pieces[..],
        }
    }

    /// Whether `other`'s shared part is this one's, not a copy.
    #[cfg(test)]
    pub(in crate::hub) fn shares_body_with(&self, other: &Frame) -> bool {
        match (self.pieces(), other.pieces()) {
            ([_, body], [_, other]) => !body.is_empty() && body.as_ptr() == other.as_ptr(),
            _ => false,
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.pieces().iter().map(Bytes::len).sum()
    }

    /// The whole text, when it is one piece of at most `max` bytes: what goes out as one
    /// WebSocket frame, without being cut.
    pub fn whole(&self, max: usize) -> Option<&Bytes> {
        match &self.0 {
            Pieces::One(whole) if whole.len() <= max => Some(whole),
            _ => None,
        }
    }

    /// Whether it is empty (never, for an encoded message).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The JSON text, copied into one string (for tests and logs; connections write the
    /// pieces as they are).
    pub fn text(&self) -> String {
        String::from_utf8(self.pieces().concat()).unwrap_or_default()
    }

    /// The frame in fragments of at most `max` bytes (at least 4), each ending on a character
    /// boundary, sharing the frame's bytes. Together they are the whole text, in order.
    pub fn fragments(&self, max: usize) -> impl Iterator<Item = Bytes> + '_ {
        let max = max.max(4);
        self.pieces().iter().flat_map(move |piece| Fragments {
            rest: piece.clone(),
            max,
        })
    }
}

/// One piece cut at character boundaries.
struct Fragments {
    rest: Bytes,
    max: usize,
}

impl Iterator for Fragments {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        if self.rest.is_empty() {
            return None;
        }
        let mut cut = self.rest.len().min(self.max);
        // Back up over continuation bytes (10xxxxxx), so no character is split between two
        // fragments; a piece is valid UTF-8, so at most three are passed.
        while cut < self.rest.len() && cut > 0 && self.rest[cut] & 0xC0 == 0x80 {
            cut -= 1;
        }
        // Never an empty fragment, whatever the bytes (a piece starting mid-character).
        if cut == 0 {
            cut = self.rest.len().min(self.max);
        }
        Some(self.rest.split_to(cut))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_with_its_session_is_the_frame_with_one_member_more() {
        let frame = Frame::encode(&serde_json::json!({"type": "resolved", "id": "r\"1"}));
        let told: serde_json::Value =
            serde_json::from_str(&frame.with_session("s-\"x").text()).unwrap();
        assert_eq!(
            told,
            serde_json::json!({"session": "s-\"x", "type": "resolved", "id": "r\"1"})
        );
        let joined = Frame::joined(Bytes::from(r#"{"a":1,"#), Bytes::from(r#""b":2}"#));
        assert_eq!(
            joined.with_session("s").text(),
            r#"{"session":"s","a":1,"b":2}"#
        );
        assert_eq!(
            Frame::encode(&serde_json::json!({}))
                .with_session("s")
                .text(),
            r#"{"session":"s"}"#
        );
    }

    #[test]
    fn fragments_are_the_whole_text_cut_between_characters() {
        let head = Bytes::from("{\"a\":\"é€😀\",");
        let body = Bytes::from(format!("\"b\":\"{}\"}}", "x€".repeat(50)));
        let frame = Frame::joined(head, body);
        for max in [4, 5, 7, 16, 1000] {
            let fragments: Vec<Bytes> = frame.fragments(max).collect();
            assert!(fragments.iter().all(|f| !f.is_empty() && f.len() <= max));
            for fragment in &fragments {
                assert!(std::str::from_utf8(fragment).is_ok(), "max {max}");
            }
            let joined: Vec<u8> = fragments.concat();
            assert_eq!(String::from_utf8(joined).unwrap(), frame.text());
        }
        let small = Frame::from_json(Bytes::from_static(b"{}"));
        assert_eq!(small.fragments(FRAGMENT_BYTES).count(), 1);
        assert_eq!(small.whole(2).map(|b| &b[..]), Some(&b"{}"[..]));
        assert!(small.whole(1).is_none());
        assert!(frame.whole(1000).is_none());
    }

    #[test]
    fn a_frame_is_as_small_as_one_bytes() {
        // Every tab's queue holds a block of frames from the start: the size is memory per tab.
        assert_eq!(size_of::<Frame>(), size_of::<Bytes>());
    }
}
