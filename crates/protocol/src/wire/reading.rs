//! Reading the frames that come most often (an agent's `ask`, a tab's `answer`) straight into
//! their fields.
//!
//! serde reads a frame tagged by `type` by first copying the whole object into a buffer of its
//! own, then reading the variant from that copy, and an ask's `rest` (its fields of other
//! dialects) makes it buffer again. Here the `type` is found first, on a pass that keeps
//! nothing, and an `ask` or an `answer` is then read once, into the values it keeps. The
//! result is the same frame the tagged reading gives (the tests hold the two to it); anything
//! these readers do not take as is, they hand to serde's own reading, so a bad frame is
//! refused in the same words.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::{AgentFrame, AskFrame, FromTab};

/// Reads an agent's frame.
///
/// # Errors
/// The text is not an agent frame: serde_json's error, as for `AgentFrame`.
pub fn read_agent_frame(text: &str) -> Result<AgentFrame, serde_json::Error> {
    if frame_type(text).as_deref() == Some("ask")
        && let Ok(ask) = serde_json::from_str::<Box<AskFrame>>(text)
    {
        return Ok(AgentFrame::Ask(ask));
    }
    serde_json::from_str(text)
}

/// Reads a tab's frame.
///
/// # Errors
/// The text is not a tab frame: serde_json's error, as for `FromTab`.
pub fn read_tab_frame(text: &str) -> Result<FromTab, serde_json::Error> {
    /// An `answer`'s fields, as `FromTab::Answer` has them; others are ignored there too.
    #[derive(Deserialize)]
    struct Answer {
        id: String,
        response: Value,
    }
    if frame_type(text).as_deref() == Some("answer")
        && let Ok(Answer { id, response }) = serde_json::from_str::<Answer>(text)
    {
        return Ok(FromTab::Answer { id, response });
    }
    serde_json::from_str(text)
}

/// The frame's `type`, if it is an object with one string `type`.
fn frame_type(text: &str) -> Option<Cow<'_, str>> {
    #[derive(Deserialize)]
    struct Tagged<'a> {
        #[serde(rename = "type", borrow)]
        kind: Key<'a>,
    }
    serde_json::from_str::<Tagged<'_>>(text)
        .ok()
        .map(|tagged| tagged.kind.0)
}

/// A string that borrows from the text unless it was written with escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for KeyVisitor<'a> {
            type Value = Key<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Borrowed(text)))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Owned(text.to_owned())))
            }
            fn visit_string<E: de::Error>(self, text: String) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(KeyVisitor(std::marker::PhantomData))
    }
}

/// An ask's fields read as the derived reading of `AskFrame` would: each named field once
/// (twice is an error), `null` for an absent optional field's `None`, every other field into
/// `rest`. `type` is skipped: inside `AgentFrame` serde has taken it already, and read
/// directly it is the tag.
impl<'de> Deserialize<'de> for AskFrame {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(AskVisitor)
    }
}

struct AskVisitor;

impl<'de> Visitor<'de> for AskVisitor {
    type Value = AskFrame;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an ask frame")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AskFrame, A::Error> {
        let mut frame = AskFrame::default();
        let mut seen = Seen::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match key.as_ref() {
                "type" => {
                    map.next_value::<IgnoredAny>()?;
                }
                "session" => frame.session = seen.once("session", map.next_value()?)?,
                "questions" => frame.questions = seen.once("questions", map.next_value()?)?,
                "id" => frame.id = seen.once("id", map.next_value()?)?,
                "dialect" => frame.dialect = seen.once("dialect", map.next_value()?)?,
                "timeout_s" => frame.timeout_s = seen.once("timeout_s", map.next_value()?)?,
                "title" => frame.title = seen.once("title", map.next_value()?)?,
                "answerers" => frame.answerers = seen.once("answerers", map.next_value()?)?,
                _ => {
                    frame.rest.insert(key.into_owned(), map.next_value()?);
                }
            }
        }
        Ok(frame)
    }
}

/// The named fields of an ask met so far, one bit each (in [`ASK_FIELDS`]' order).
#[derive(Default)]
struct Seen(u8);

/// The fields an ask names, each read at most once.
const ASK_FIELDS: [&str; 7] = [
    "session",
    "questions",
    "id",
    "dialect",
    "timeout_s",
    "title",
    "answerers",
];

impl Seen {
    /// `value` of field `name`, unless it was met before.
    fn once<T, E: de::Error>(&mut self, name: &'static str, value: T) -> Result<T, E> {
        let bit = ASK_FIELDS
            .iter()
            .position(|field| *field == name)
            .map_or(0, |at| 1u8 << at);
        if self.0 & bit != 0 {
            return Err(E::duplicate_field(name));
        }
        self.0 |= bit;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Frames of every shape: each must read as serde's tagged reading reads it, and a bad one
    /// be refused in its words.
    fn frames() -> Vec<String> {
        let mut texts: Vec<String> = [
            json!({"type": "ask", "session": "s", "id": "r1", "questions": [{"question": "Q?",
                   "header": "H", "options": [{"label": "a"}, {"label": "b"}]}]}),
            json!({"session": "s", "type": "ask", "timeout_s": 5.5, "title": "T",
                   "answerers": ["a@x", "group:ops"], "dialect": "approval",
                   "calls": [{"tool": "rm", "args": {"path": "/"}}], "unknown": [1, {"x": null}]}),
            json!({"type": "ask", "id": null, "dialect": null, "timeout_s": null,
                   "title": null, "answerers": null, "session": null, "questions": null}),
            json!({"type": "ask"}),
            json!({"type": "ask", "session": 7, "questions": "nope", "mode": "url"}),
            json!({"type": "ask", "session": "s", "message": "m", "schema": {"type": "object"}}),
            json!({"type": "open", "session": "s"}),
            json!({"type": "cancel", "session": "s", "id": "r"}),
            json!({"type": "ack", "session": "s"}),
            json!({"type": "link", "session": "s", "user": "u", "ttl_s": 60}),
            json!({"type": "nope"}),
            json!({"type": 5}),
            json!({"session": "s"}),
            json!([1, 2]),
            json!("ask"),
        ]
        .iter()
        .map(Value::to_string)
        .collect();
        texts.extend(
            [
                r#"{"type":"ask","session":"s","session":"t"}"#,
                r#"{"type":"ask","type":"ask","session":"s"}"#,
                r#"{"type":"ask","x":1,"x":2}"#,
                r#"{"type":"a\u0073k","ses\u0073ion":"s","questions":[]}"#,
                r#"{"type":"ask","session":"s""#,
                r#"{"type":"ask","session":"s"} trailing"#,
                r#"{"type":"answer","id":"r","response":{"answers":[]}}"#,
                r#"{"type":"answer","id":"r"}"#,
                r#"{"type":"answer","id":5,"response":1}"#,
                r#"{"type":"answer","id":"r","id":"q","response":1}"#,
                r#"{"response":null,"extra":[true],"type":"answer","id":"r"}"#,
                r#"{"type":"decline","id":"r","dismiss":true}"#,
                r#"{"type":"hello","key":"k"}"#,
                r#"{"type":"history"}"#,
                "",
                "nul",
            ]
            .map(str::to_owned),
        );
        texts.extend(
            ASK_FIELDS
                .iter()
                .map(|field| format!(r#"{{"type":"ask","{field}":"a","{field}":"b"}}"#)),
        );
        texts
    }

    fn same<T: PartialEq + fmt::Debug>(
        text: &str,
        ours: Result<T, serde_json::Error>,
        tagged: Result<T, serde_json::Error>,
    ) {
        match (ours, tagged) {
            (Ok(ours), Ok(tagged)) => assert_eq!(ours, tagged, "{text}"),
            (Err(ours), Err(tagged)) => assert_eq!(ours.to_string(), tagged.to_string(), "{text}"),
            (ours, tagged) => panic!("{text}: read as {ours:?}, serde reads {tagged:?}"),
        }
    }

    #[test]
    fn agent_frames_read_as_the_tagged_reading_reads_them() {
        for text in frames() {
            same(
                &text,
                read_agent_frame(&text),
                serde_json::from_str::<AgentFrame>(&text),
            );
        }
    }

    /// `AskFrame` as serde derives its reading, inside the tagged frame.
    #[derive(Debug, Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Derived {
        Ask(Box<DerivedAsk>),
    }

    #[derive(Debug, Deserialize)]
    struct DerivedAsk {
        #[serde(default)]
        session: Value,
        #[serde(default)]
        id: Option<Value>,
        #[serde(default)]
        dialect: Option<Value>,
        #[serde(default)]
        questions: Value,
        #[serde(default)]
        timeout_s: Option<Value>,
        #[serde(default)]
        title: Option<Value>,
        #[serde(default)]
        answerers: Option<Value>,
        #[serde(flatten)]
        rest: serde_json::Map<String, Value>,
    }

    #[test]
    fn an_ask_reads_as_serde_derives_its_reading() {
        for text in frames()
            .iter()
            .filter(|t| frame_type(t).as_deref() == Some("ask"))
        {
            let derived = serde_json::from_str::<Derived>(text).map(|Derived::Ask(d)| AskFrame {
                session: d.session,
                id: d.id,
                dialect: d.dialect,
                questions: d.questions,
                timeout_s: d.timeout_s,
                title: d.title,
                answerers: d.answerers,
                rest: d.rest,
            });
            let ours = read_agent_frame(text).map(|frame| match frame {
                AgentFrame::Ask(ask) => *ask,
                other => panic!("{text}: read as {other:?}"),
            });
            same(text, ours, derived);
        }
    }

    #[test]
    fn tab_frames_read_as_the_tagged_reading_reads_them() {
        for text in frames() {
            same(
                &text,
                read_tab_frame(&text),
                serde_json::from_str::<FromTab>(&text),
            );
        }
    }

    #[test]
    fn an_ask_read_directly_keeps_its_other_fields_and_not_its_tag() {
        let text = r#"{"type":"ask","session":"s","calls":[1],"questions":[]}"#;
        let AgentFrame::Ask(ask) = read_agent_frame(text).unwrap() else {
            panic!("an ask");
        };
        assert_eq!(ask.session, json!("s"));
        assert_eq!(ask.questions, json!([]));
        assert_eq!(Value::Object(ask.rest), json!({"calls": [1]}));
        assert_eq!(frame_type(text).as_deref(), Some("ask"));
    }
}
