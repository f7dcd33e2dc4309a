//! What an agent sends and gets back: [`Ask`], [`Answered`], [`Opened`].

use std::time::Duration;

use askgate_protocol::harness::Question;
use askgate_protocol::wire::{AskFrame, OutcomeFrame};
use askgate_protocol::{Dialect, Outcome};
use serde_json::Value;

/// One question set to put to people, as the `ask` frame carries it.
///
/// Build it with [`Ask::new`] (any dialect, questions as JSON) or [`Ask::harness`] (typed
/// harness questions), then the `with_*` methods.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ask {
    /// The session (one agent conversation).
    pub session: String,
    /// The request id; when `None` the client generates one (32 hex digits, uuid4) before
    /// the first send, so that re-sends after a reconnect name the same request.
    pub id: Option<String>,
    /// The dialect; `None` means the gateway's default, harness.
    pub dialect: Option<Dialect>,
    /// The dialect's request: its `questions` list, an approval's `calls`, or (for a dialect
    /// of several fields, such as a form) an object of its fields; sent under the dialect's
    /// own field names.
    pub questions: Value,
    /// How long people have to answer; `None` for no deadline.
    pub timeout: Option<Duration>,
    /// A line shown above the questions.
    pub title: Option<String>,
    /// Who alone may answer: people's names and `group:NAME`s (1 to 32); `None`: anyone
    /// holding the link.
    pub answerers: Option<Vec<String>>,
    /// When, after the ask, the same people are told again if it is still open (once).
    pub remind_after: Option<Duration>,
    /// When, after the ask, these people and `group:NAME`s are added to the answerers and
    /// told, if it is still open (once).
    pub escalate: Option<(Duration, Vec<String>)>,
    /// The answer given should the deadline pass with none (the ask's `default`, in the shape
    /// a tab answers in: harness `{"answers": [...]}`, an approval's `{"decisions": [...]}`, a
    /// form's `{"action": "accept", "content": {...}}` or `{"action": "decline"}`...). Needs a
    /// timeout.
    pub default_answer: Option<Value>,
}

impl Ask {
    /// An ask in the default dialect with `questions` as JSON.
    pub fn new(session: impl Into<String>, questions: Value) -> Self {
        Ask {
            session: session.into(),
            questions,
            ..Ask::default()
        }
    }

    /// A tool-call approval: `calls` as JSON, each `{"name", "args", "description"?,
    /// "args_schema"?, "decisions"?}`; the outcome's `response` holds the decisions.
    pub fn approval(session: impl Into<String>, calls: Value) -> Self {
        Ask {
            dialect: Dialect::parse("approval").ok(),
            ..Ask::new(session, calls)
        }
    }

    /// A pydantic-ai-harness `ask_user_question` ask.
    pub fn harness(session: impl Into<String>, questions: Vec<Question>) -> Self {
        let questions = Value::Array(
            questions
                .into_iter()
                .map(|q| serde_json::to_value(q).unwrap_or(Value::Null))
                .collect(),
        );
        Ask {
            dialect: Some(Dialect::HARNESS),
            ..Ask::new(session, questions)
        }
    }

    /// Names the request (the harness's `AskUserRequest.id` or the tool call id).
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the deadline.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the title.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Lets only these people (or `group:NAME`s) answer.
    #[must_use]
    pub fn with_answerers<I, S>(mut self, answerers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.answerers = Some(answerers.into_iter().map(Into::into).collect());
        self
    }

    /// Tells the same people again `after` the ask, if it is still open then.
    #[must_use]
    pub fn with_reminder(mut self, after: Duration) -> Self {
        self.remind_after = Some(after);
        self
    }

    /// `after` the ask, if it is still open then, lets `to` (people and `group:NAME`s) answer
    /// too, and tells them.
    #[must_use]
    pub fn with_escalation<I, S>(mut self, after: Duration, to: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.escalate = Some((after, to.into_iter().map(Into::into).collect()));
        self
    }

    /// Gives `answer` if nobody answers before the timeout (see [`Ask::default_answer`]): the
    /// outcome is then the framework's answer, with `by` and `via` saying `default`.
    #[must_use]
    pub fn with_default_answer(mut self, answer: Value) -> Self {
        self.default_answer = Some(answer);
        self
    }

    /// The request id, generated now if there is none yet: for callers that want to log it
    /// or store it before asking.
    pub fn request_id(&mut self) -> &str {
        self.id.get_or_insert_with(new_id)
    }

    /// The `ask` frame, with the id fixed.
    pub(crate) fn into_frame(mut self) -> AskFrame {
        let id = self.request_id().to_owned();
        let dialect = self.dialect.unwrap_or_default();
        let mut rest = serde_json::Map::new();
        dialect.spread_into(&self.questions, &mut rest);
        let questions = rest.remove("questions").unwrap_or(Value::Null);
        if let Some(after) = self.remind_after {
            rest.insert("remind_after_s".into(), Value::from(after.as_secs_f64()));
        }
        if let Some(answer) = self.default_answer {
            rest.insert("default".into(), answer);
        }
        if let Some((after, to)) = self.escalate {
            rest.insert(
                "escalate".into(),
                serde_json::json!({"after_s": after.as_secs_f64(), "to": to}),
            );
        }
        AskFrame {
            session: Value::String(self.session),
            id: Some(Value::String(id)),
            dialect: self.dialect.map(|d| Value::from(d.as_str())),
            questions,
            rest,
            timeout_s: self.timeout.map(|t| Value::from(t.as_secs_f64())),
            title: self.title.map(Value::String),
            answerers: self
                .answerers
                .map(|names| Value::Array(names.into_iter().map(Value::String).collect())),
        }
    }
}

/// A fresh id: 32 lowercase hex digits shaped as a uuid4, as the gateway generates them.
pub(crate) fn new_id() -> String {
    let mut bytes: [u8; 16] = rand::random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A session the gateway holds, and the link people open to answer in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opened {
    /// The session id.
    pub session: String,
    /// `{public_url}/s/{session}#k={viewer key}`: the key rides in the fragment.
    pub viewer_url: String,
}

/// How an ask ended: the gateway's `outcome` frame.
///
/// Despite the name it is not always an answer: check [`outcome`](Self::outcome). Whatever
/// the outcome, [`model_text`](Self::model_text) is what the model should read.
#[derive(Clone, Debug, PartialEq)]
pub struct Answered {
    frame: OutcomeFrame,
}

impl Answered {
    pub(crate) fn new(frame: OutcomeFrame) -> Self {
        Answered { frame }
    }

    /// The session.
    pub fn session(&self) -> &str {
        &self.frame.session
    }

    /// The request id.
    pub fn id(&self) -> &str {
        &self.frame.id
    }

    /// How it ended: answered, declined, timed out, withdrawn.
    pub fn outcome(&self) -> Outcome {
        self.frame.settlement.outcome
    }

    /// The dialect's response object (harness: `{"answers":[...],"cancelled":bool}`); null
    /// when withdrawn.
    pub fn response(&self) -> &Value {
        &self.frame.settlement.response
    }

    /// What the tool returns (harness: the `ask_user_result` object, or the `DECLINED` /
    /// `TIMED_OUT` sentence); null when withdrawn.
    pub fn result(&self) -> &Value {
        &self.frame.settlement.result
    }

    /// The exact text the model reads; `None` when withdrawn.
    pub fn model_text(&self) -> Option<&str> {
        self.frame.settlement.model_text.as_deref()
    }

    /// The tab that answered or declined.
    pub fn by(&self) -> Option<&str> {
        self.frame.by.as_deref()
    }

    /// The person who answered or declined, when the gateway knew them (a personal link, a
    /// trusted proxy); `None` for an anonymous link holder or an ending without a tab.
    pub fn user(&self) -> Option<&str> {
        self.frame.user.as_deref()
    }

    /// How the gateway knew who ended it, or `default` when the ask's default answered
    /// at the deadline; `None` for endings no one made (a timeout, a withdrawal).
    pub fn via(&self) -> Option<askgate_protocol::wire::Via> {
        self.frame.via
    }

    /// When it ended (Unix ms, the gateway's clock).
    pub fn at_ms(&self) -> u64 {
        self.frame.at_ms
    }

    /// The frame as received.
    pub fn into_frame(self) -> OutcomeFrame {
        self.frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use askgate_protocol::harness::QuestionOption;
    use serde_json::json;

    #[test]
    fn ids_look_like_uuid4_hex() {
        let id = new_id();
        assert_eq!(id.len(), 32);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_eq!(&id[12..13], "4");
        assert!(matches!(&id[16..17], "8" | "9" | "a" | "b"));
        assert_ne!(new_id(), id);
    }

    #[test]
    fn the_id_is_fixed_before_the_frame_leaves() {
        let mut ask = Ask::new("s", json!([])).with_timeout(Duration::from_millis(1500));
        let id = ask.request_id().to_owned();
        let frame = ask.clone().into_frame();
        assert_eq!(frame.id, Some(json!(id)));
        assert_eq!(frame.timeout_s, Some(json!(1.5)));
        assert_eq!(frame.dialect, None);
        assert_eq!(ask.into_frame().id, Some(json!(id)));
    }

    #[test]
    fn a_reminder_and_an_escalation_go_in_the_frame() {
        let frame = Ask::new("s", json!([]))
            .with_reminder(Duration::from_secs(900))
            .with_escalation(Duration::from_millis(1500), ["group:leads"])
            .into_frame();
        assert_eq!(frame.rest["remind_after_s"], json!(900.0));
        assert_eq!(
            frame.rest["escalate"],
            json!({"after_s": 1.5, "to": ["group:leads"]})
        );
    }

    #[test]
    fn harness_questions_become_json() {
        let question = Question {
            header: "Color".into(),
            question: "Which?".into(),
            options: vec![
                QuestionOption {
                    label: "Red".into(),
                    description: None,
                },
                QuestionOption {
                    label: "Blue".into(),
                    description: Some("calm".into()),
                },
            ],
            multi_select: false,
        };
        let frame = Ask::harness("s", vec![question])
            .with_title("Pick")
            .into_frame();
        assert_eq!(frame.dialect, Some(json!("harness")));
        assert_eq!(frame.questions[0]["options"][1]["description"], "calm");
        assert_eq!(frame.title, Some(json!("Pick")));
    }
}
