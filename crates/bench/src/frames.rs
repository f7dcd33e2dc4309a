//! The frames the generator sends, written straight into strings, and the few fields it reads
//! from what it receives, borrowed from the text (no `serde_json::Value` trees).
//!
//! Request ids carry the ask's sequence number (`q<seq>`), so any tab or agent can find the
//! ask's bookkeeping slot without a shared map.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::Deserialize;

/// The question set every ask carries (harness dialect): one header, three options.
pub(crate) const QUESTIONS: &str = r#"[{"header":"Color","question":"Which colour should the button be?","options":[{"label":"Red"},{"label":"Blue"},{"label":"Green","description":"A calm colour"}]}]"#;

/// The sequence number in a request id (`q<seq>`, as [`ask`] writes it).
pub(crate) fn seq_of(id: &str) -> Option<u64> {
    id.strip_prefix('q')?.parse().ok()
}

/// `{"type":"open","session":S}`.
pub(crate) fn open(session: &str) -> String {
    format!(r#"{{"type":"open","session":"{session}"}}"#)
}

/// `{"type":"ask",...}` with [`QUESTIONS`].
pub(crate) fn ask(session: &str, seq: u64, timeout_s: Option<f64>) -> String {
    let mut frame = String::with_capacity(64 + session.len() + QUESTIONS.len());
    let _ = write!(
        frame,
        r#"{{"type":"ask","session":"{session}","id":"q{seq}","questions":{QUESTIONS}"#
    );
    if let Some(t) = timeout_s {
        let _ = write!(frame, r#","timeout_s":{t}"#);
    }
    frame.push('}');
    frame
}

/// `{"type":"ack",...}`.
pub(crate) fn ack(session: &str, id: &str) -> String {
    format!(r#"{{"type":"ack","session":"{session}","id":"{id}"}}"#)
}

/// `{"type":"hello",...}`.
pub(crate) fn hello(key: &str, tab: &str) -> String {
    format!(r#"{{"type":"hello","key":"{key}","tab":"{tab}"}}"#)
}

/// An `answer` picking `Red`.
pub(crate) fn answer(seq: u64) -> String {
    format!(
        r#"{{"type":"answer","id":"q{seq}","response":{{"answers":[{{"header":"Color","selected":["Red"]}}]}}}}"#
    )
}

/// The frame types the generator tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    /// agent: the session exists; carries the viewer URL.
    Opened,
    /// agent: the ask is stored.
    Accepted,
    /// agent: the ask was refused.
    Rejected,
    /// agent: how a request ended.
    Outcome,
    /// either side: a frame was refused.
    Error,
    /// tab: the session's state after `hello`.
    Snapshot,
    /// tab: a new request.
    Request,
    /// tab: a request ended.
    Resolved,
    /// tab: its answer did not count.
    AnswerRejected,
    /// tab: who is here.
    Presence,
    /// Anything else.
    #[serde(other)]
    Other,
}

/// The fields the generator reads; the rest is skipped by the parser.
#[derive(Debug, Deserialize)]
pub(crate) struct Incoming<'a> {
    /// `type`.
    #[serde(rename = "type")]
    pub(crate) kind: Kind,
    /// `id` (accepted, rejected, outcome, resolved, answer_rejected).
    #[serde(default, borrow)]
    pub(crate) id: Option<Cow<'a, str>>,
    /// `session` (opened, accepted, outcome).
    #[serde(default, borrow)]
    pub(crate) session: Option<Cow<'a, str>>,
    /// `viewer_url` (opened).
    #[serde(default, borrow)]
    pub(crate) viewer_url: Option<Cow<'a, str>>,
    /// `request` (request).
    #[serde(default, borrow)]
    pub(crate) request: Option<RequestRef<'a>>,
}

/// The id of a `request`.
#[derive(Debug, Deserialize)]
pub(crate) struct RequestRef<'a> {
    /// `request.id`.
    #[serde(borrow)]
    pub(crate) id: Cow<'a, str>,
}

/// Parses a frame's interesting fields; `None` if it is not a JSON object with a `type`.
pub(crate) fn parse(text: &str) -> Option<Incoming<'_>> {
    serde_json::from_str(text).ok()
}

/// The viewer key in a viewer URL (`.../s/S#k=KEY`).
pub(crate) fn viewer_key(url: &str) -> Option<&str> {
    url.split_once("#k=").map(|(_, key)| key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ask the generator sends is valid JSON with the fields the gateway reads.
    #[test]
    fn ask_is_json() {
        let frame: serde_json::Value =
            serde_json::from_str(&ask("s-1", 42, Some(30.0))).expect("json");
        assert_eq!(frame["id"], "q42");
        assert_eq!(frame["timeout_s"], 30.0);
        assert_eq!(frame["questions"][0]["header"], "Color");
        let answer: serde_json::Value = serde_json::from_str(&answer(42)).expect("json");
        assert_eq!(answer["response"]["answers"][0]["selected"][0], "Red");
    }

    /// Incoming frames yield their kind and ids; unknown kinds are `Other`.
    #[test]
    fn reads_the_fields_it_needs() {
        let f = parse(r#"{"type":"request","request":{"id":"q7","questions":[{"a":1}]}}"#)
            .expect("parsed");
        assert_eq!(f.kind, Kind::Request);
        assert_eq!(seq_of(&f.request.expect("request").id), Some(7));
        let f =
            parse(r#"{"type":"outcome","session":"s","id":"q9","outcome":"answered","by":null}"#)
                .expect("parsed");
        assert_eq!((f.kind, f.id.as_deref()), (Kind::Outcome, Some("q9")));
        assert_eq!(
            parse(r#"{"type":"novel"}"#).expect("parsed").kind,
            Kind::Other
        );
        assert_eq!(viewer_key("http://h/s/x#k=abc"), Some("abc"));
    }
}
