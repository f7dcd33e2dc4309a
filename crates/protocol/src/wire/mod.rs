//! The frames of askgate's wire protocol, version 1: agent ↔ gateway and tab ↔ gateway.
//!
//! Every frame is one JSON object in one WebSocket text frame, tagged by `type`. Incoming
//! frames keep loosely typed fields (`String`, `Value`) so that a bad field is answered with a
//! `rejected` naming it, not with a generic parse error; [`AskFrame::check`] does the rest.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::dialect::{Dialect, Outcome, QuestionSet, Settlement};
use crate::error::{ErrorCode, FieldError, ValidationErrors, json_kind};
use crate::ids::{RequestId, SessionId, TabId, parse_field};
use crate::people::check_answerers;
pub use crate::people::{Via, You};

mod reading;
pub use reading::{read_agent_frame, read_tab_frame};

/// Longest `title`, in characters after stripping.
pub const MAX_TITLE_CHARS: usize = 200;

/// agent → gateway.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentFrame {
    /// Creates the session if new; the gateway replies `opened`.
    Open {
        /// The session; generated when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
    },
    /// Asks a question set; the gateway replies `accepted` or `rejected`.
    Ask(Box<AskFrame>),
    /// Asks for a personal link: a viewer link for one named person, signed for the session,
    /// that person and an expiry; the gateway replies `link`.
    Link {
        /// The session.
        session: String,
        /// The person, as the link will name them (an e-mail address, a user name).
        user: String,
        /// Seconds the link stays valid; absent for the gateway's default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ttl_s: Option<Value>,
    },
    /// Withdraws a pending request (the run was cancelled).
    Cancel {
        /// The session.
        session: String,
        /// The request.
        id: String,
    },
    /// The agent has the outcome; the gateway may forget it.
    Ack {
        /// The session.
        session: String,
        /// The request.
        id: String,
    },
}

/// The `ask` frame, fields as sent: each of any JSON type, so that one of the wrong type is
/// refused by [`AskFrame::check`] at its path rather than failing the whole frame. Read by
/// hand ([`reading`]), as serde's derived reading would, without buffering the frame first.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AskFrame {
    /// The session (a string).
    #[serde(default)]
    pub session: Value,
    /// The request id (a string); generated (uuid4 hex) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// The dialect's name (`"harness"` when absent): see [`Dialect::all`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<Value>,
    /// The question dialects' questions list.
    #[serde(default)]
    pub questions: Value,
    /// Seconds until the request times out; absent or null for no deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<Value>,
    /// A line shown above the questions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Value>,
    /// The people (or `group:NAME`s) who alone may answer or decline; absent: anyone who
    /// holds the link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answerers: Option<Value>,
    /// Every other field: the other dialects' (an approval's `calls`, a form's `message`,
    /// `schema`...), each read by the dialect it belongs to; fields of no dialect are ignored.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// An `ask` that passed every check.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedAsk {
    /// The session.
    pub session: SessionId,
    /// The request id, if the agent chose one.
    pub id: Option<RequestId>,
    /// The validated questions.
    pub questions: QuestionSet,
    /// Milliseconds until the deadline, if any.
    pub timeout_ms: Option<u64>,
    /// The stripped title, if any.
    pub title: Option<String>,
    /// Who alone may answer, as sent (people and `group:NAME`s), if the ask limits it.
    pub answerers: Option<Vec<String>>,
}

impl AskFrame {
    /// Checks every field; `max_timeout_s` bounds `timeout_s`.
    ///
    /// # Errors
    /// Every problem found, each with its path (`session`, `timeout_s`, `questions[0].header`...).
    pub fn check(&self, max_timeout_s: f64) -> Result<CheckedAsk, Vec<FieldError>> {
        let fields = self.check_fields(max_timeout_s);
        let request = fields.dialect.map(|dialect| {
            self.foreign_fields(dialect)?;
            Ok(dialect.gather(|name| self.field(name)))
        });
        fields.finish(request)
    }

    /// [`check`](Self::check), moving the dialect's request out of the frame instead of
    /// copying it (the frame keeps every other field, for a refusal to quote).
    ///
    /// # Errors
    /// As [`check`](Self::check).
    pub fn check_taking(&mut self, max_timeout_s: f64) -> Result<CheckedAsk, Vec<FieldError>> {
        let fields = self.check_fields(max_timeout_s);
        let request = fields.dialect.map(|dialect| {
            self.foreign_fields(dialect)?;
            Ok(dialect.gather_owned(|name| self.take_field(name)))
        });
        fields.finish(request)
    }

    /// Every field but the dialect's request, checked.
    fn check_fields(&self, max_timeout_s: f64) -> CheckedFields {
        let mut errors = Vec::new();
        let session = string_field("session", &self.session)
            .and_then(|session| parse_field("session", session, SessionId::parse))
            .map_err(|e| errors.push(e))
            .ok();
        let id = match &self.id {
            None => None,
            Some(id) => string_field("id", id)
                .and_then(|id| parse_field("id", id, RequestId::parse))
                .map_err(|e| errors.push(e))
                .ok(),
        };
        let dialect = match &self.dialect {
            None => Some(Dialect::HARNESS),
            Some(name) => string_field("dialect", name)
                .and_then(|name| {
                    Dialect::parse(name)
                        .map_err(|m| FieldError::new("dialect", ErrorCode::InvalidValue, m))
                })
                .map_err(|e| errors.push(e))
                .ok(),
        };
        let timeout_ms = check_timeout(self.timeout_s.as_ref(), max_timeout_s)
            .map_err(|e| errors.push(e))
            .ok();
        let title = check_title(self.title.as_ref())
            .map_err(|e| errors.push(e))
            .ok();
        let answerers = check_answerers(self.answerers.as_ref())
            .map_err(|e| errors.push(e))
            .ok();
        CheckedFields {
            errors,
            session,
            id,
            dialect,
            timeout_ms,
            title,
            answerers,
        }
    }

    /// A field of the ask by name: `questions`, or one of the rest.
    fn field(&self, name: &str) -> Option<&Value> {
        match name {
            "questions" => Some(&self.questions).filter(|v| !v.is_null()),
            _ => self.rest.get(name).filter(|v| !v.is_null()),
        }
    }

    /// A field of the ask by name, taken out of it.
    fn take_field(&mut self, name: &str) -> Option<Value> {
        let value = match name {
            "questions" => std::mem::take(&mut self.questions),
            _ => self.rest.remove(name)?,
        };
        Some(value).filter(|v| !v.is_null())
    }

    /// The fields of other dialects sent with the ask, each an error, so a request sent
    /// under the wrong name is not silently read as empty.
    fn foreign_fields(&self, dialect: Dialect) -> Result<(), Vec<FieldError>> {
        let sent = self
            .rest
            .iter()
            .filter(|(_, value)| !value.is_null())
            .map(|(name, _)| name.as_str())
            .chain((!self.questions.is_null()).then_some("questions"));
        let foreign: Vec<FieldError> = sent
            .filter(|name| dialect.is_foreign_field(name))
            .map(|name| {
                FieldError::new(
                    name,
                    ErrorCode::UnknownField,
                    format!(
                        "the {} dialect's request goes in {}, not `{name}`",
                        dialect.as_str(),
                        dialect
                            .face()
                            .fields()
                            .iter()
                            .map(|f| format!("`{f}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
            .collect();
        if foreign.is_empty() {
            Ok(())
        } else {
            Err(foreign)
        }
    }
}

/// An ask's fields but its request, checked: each `None` where it was refused.
struct CheckedFields {
    errors: Vec<FieldError>,
    session: Option<SessionId>,
    id: Option<RequestId>,
    dialect: Option<Dialect>,
    timeout_ms: Option<Option<u64>>,
    title: Option<Option<String>>,
    answerers: Option<Option<Vec<String>>>,
}

impl CheckedFields {
    /// The checked ask, once its dialect's `request` (when the dialect was known) is
    /// validated too; else every error found.
    fn finish(
        mut self,
        request: Option<Result<Value, Vec<FieldError>>>,
    ) -> Result<CheckedAsk, Vec<FieldError>> {
        let questions = match (self.dialect, request) {
            (Some(dialect), Some(request)) => request
                .and_then(|request| {
                    QuestionSet::validate(dialect, &request).map_err(ValidationErrors::into_vec)
                })
                .map_err(|e| self.errors.extend(e))
                .ok(),
            _ => None,
        };
        match (
            self.session.take(),
            questions,
            self.timeout_ms.take(),
            self.title.take(),
            self.answerers.take(),
        ) {
            (Some(session), Some(questions), Some(timeout_ms), Some(title), Some(answerers))
                if self.errors.is_empty() =>
            {
                Ok(CheckedAsk {
                    session,
                    id: self.id.take(),
                    questions,
                    timeout_ms,
                    title,
                    answerers,
                })
            }
            _ => Err(std::mem::take(&mut self.errors)),
        }
    }
}

/// A field that must be a string.
fn string_field<'v>(path: &str, value: &'v Value) -> Result<&'v str, FieldError> {
    match value {
        Value::String(text) => Ok(text),
        Value::Null => Err(FieldError::new(
            path,
            ErrorCode::MissingField,
            "required: a string",
        )),
        other => Err(FieldError::new(
            path,
            ErrorCode::WrongType,
            format!("must be a string, got {}", json_kind(other)),
        )),
    }
}

/// The longest timeout held: a thousand years, in milliseconds. A longer one means the same to
/// anyone waiting, and is held as this.
const MAX_TIMEOUT_MS: u64 = 1000 * 365 * 24 * 3600 * 1000;

fn check_timeout(value: Option<&Value>, max_timeout_s: f64) -> Result<Option<u64>, FieldError> {
    let seconds = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(_) => {
            return Err(FieldError::new(
                "timeout_s",
                ErrorCode::WrongType,
                "must be a number of seconds, or null for no deadline",
            ));
        }
    };
    if seconds.is_nan() || seconds <= 0.0 {
        return Err(FieldError::new(
            "timeout_s",
            ErrorCode::InvalidValue,
            format!("must be positive, got {seconds}; use null for no deadline"),
        ));
    }
    if seconds > max_timeout_s {
        return Err(FieldError::new(
            "timeout_s",
            ErrorCode::InvalidValue,
            format!("at most {max_timeout_s} seconds, got {seconds}"),
        ));
    }
    // At least one millisecond, so a tiny positive timeout still means "a deadline"; at most
    // a thousand years, so a deadline stays an integer every client reads exactly (a
    // JavaScript number holds integers exactly up to 2^53 ms, about the year 287,000).
    let millis = (seconds * 1000.0).ceil().min(MAX_TIMEOUT_MS as f64) as u64;
    Ok(Some(millis.max(1)))
}

/// A title is askgate's own, shown above the questions and never handed to a framework: any
/// text the contract allows (at most 200 characters), emoji sequences and line breaks
/// included. The page shows it as text, isolated from the text around it.
fn check_title(value: Option<&Value>) -> Result<Option<String>, FieldError> {
    let text = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => text.trim(),
        Some(_) => {
            return Err(FieldError::new(
                "title",
                ErrorCode::WrongType,
                "must be a string",
            ));
        }
    };
    let length = text.chars().count();
    if length > MAX_TITLE_CHARS {
        return Err(FieldError::new(
            "title",
            ErrorCode::TooLong,
            format!("at most {MAX_TITLE_CHARS} characters, got {length}"),
        ));
    }
    Ok((!text.is_empty()).then(|| text.to_owned()))
}

/// gateway → agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToAgent {
    /// The session exists; here is the link for people.
    Opened {
        /// The session.
        session: String,
        /// `{public_url}/s/{session}#k={viewer key}`.
        viewer_url: String,
    },
    /// The request is stored and shown to every tab.
    Accepted {
        /// The session.
        session: String,
        /// The request id (the agent's, or the generated one).
        id: String,
        /// When it times out (Unix ms), or null.
        deadline_ms: Option<u64>,
        /// The link for people.
        viewer_url: String,
    },
    /// The request was refused; nothing was stored.
    Rejected {
        /// The session, as sent.
        session: String,
        /// The request id, as sent (null if none was given).
        id: Option<String>,
        /// Every problem, with its path.
        errors: Vec<FieldError>,
    },
    /// How a request ended. Re-sent on every re-ask until acked.
    Outcome(OutcomeFrame),
    /// A personal link, as asked for by `link`.
    Link {
        /// The session.
        session: String,
        /// The person it names.
        user: String,
        /// `{public_url}/s/{session}#k={personal key}`.
        url: String,
        /// When it stops working (Unix ms).
        expires_ms: u64,
    },
    /// A frame the gateway could not take.
    Error {
        /// A stable code: `bad_frame`, `unknown_type`, `not_found`, `unavailable`...
        code: String,
        /// What was wrong, in words.
        message: String,
        /// The session of the request the frame named, when it named one (a `cancel`):
        /// askgate's addition, so a client can tell which of its withdrawals this answers.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        /// The request the frame named, likewise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
}

/// The `outcome` frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutcomeFrame {
    /// The session.
    pub session: String,
    /// The request.
    pub id: String,
    /// The settlement: outcome, response, result, model text.
    #[serde(flatten)]
    pub settlement: Settlement,
    /// The tab that answered or declined, else null.
    pub by: Option<String>,
    /// The person who answered or declined, if the gateway knew them; else null.
    #[serde(default)]
    pub user: Option<String>,
    /// When it ended (Unix ms).
    pub at_ms: u64,
}

/// A request as tabs see it.
///
/// The normalised request goes under its dialect's field names: `questions`; `calls` for
/// approvals; a form's `message`, `schema`, `fields`... at the top.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestView {
    /// The request id.
    pub id: String,
    /// The dialect.
    pub dialect: Dialect,
    /// The agent's title, if any.
    pub title: Option<String>,
    /// The normalised request: questions, tool calls, a form (see
    /// [`Dialect::spread`]).
    pub questions: Value,
    /// When it was asked (Unix ms).
    pub asked_at_ms: u64,
    /// When it times out (Unix ms), or null.
    pub deadline_ms: Option<u64>,
    /// Who alone may answer (people and `group:NAME`s), when the ask said so.
    pub answerers: Option<Vec<String>>,
}

impl Serialize for RequestView {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("dialect", &self.dialect)?;
        map.serialize_entry("title", &self.title)?;
        for (name, value) in self.dialect.spread(&self.questions) {
            map.serialize_entry(name, value)?;
        }
        map.serialize_entry("asked_at_ms", &self.asked_at_ms)?;
        map.serialize_entry("deadline_ms", &self.deadline_ms)?;
        if let Some(answerers) = &self.answerers {
            map.serialize_entry("answerers", answerers)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for RequestView {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut fields = Map::<String, Value>::deserialize(deserializer)?;
        let mut take = |name: &str| fields.remove(name).unwrap_or(Value::Null);
        let id = String::deserialize(take("id")).map_err(D::Error::custom)?;
        let dialect = Dialect::deserialize(take("dialect")).map_err(D::Error::custom)?;
        let title = Option::deserialize(take("title")).map_err(D::Error::custom)?;
        let asked_at_ms = u64::deserialize(take("asked_at_ms")).map_err(D::Error::custom)?;
        let deadline_ms = Option::deserialize(take("deadline_ms")).map_err(D::Error::custom)?;
        let answerers = Option::deserialize(take("answerers")).map_err(D::Error::custom)?;
        let questions = dialect.gather(|name| fields.get(name));
        Ok(RequestView {
            id,
            dialect,
            title,
            questions,
            asked_at_ms,
            deadline_ms,
            answerers,
        })
    }
}

/// A request that has ended, as a tab that joins later sees it: the request and how it
/// ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FinishedView {
    /// The request as it was shown.
    #[serde(flatten)]
    pub request: RequestView,
    /// How it ended.
    pub outcome: Outcome,
    /// The dialect's response (null when withdrawn).
    pub response: Value,
    /// The tab that answered or declined, if one did.
    pub by: Option<String>,
    /// The person who did, if known.
    #[serde(default)]
    pub user: Option<String>,
    /// How that person was known, when a tab answered or declined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
    /// When it ended (Unix ms).
    pub at_ms: u64,
}

/// gateway → tab.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToTab {
    /// The state of the session, sent right after `hello`.
    Snapshot {
        /// The session.
        session: String,
        /// This tab's id.
        tab: String,
        /// The server's clock, to count deadlines down against.
        now_ms: u64,
        /// How many tabs are watching.
        tabs: usize,
        /// Whether an agent is connected to the session.
        agent_online: bool,
        /// Who this tab is, and whether it may answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        you: Option<You>,
        /// Every open request, oldest first.
        requests: Vec<RequestView>,
        /// The largest frame the gateway takes from a tab, in bytes: a page checks an answer
        /// against it before sending, rather than have the socket closed with 4413.
        max_frame_bytes: usize,
        /// The session's recent finished requests, oldest ending first: so a person who
        /// looked away (or reloads) can see what was asked and how it ended.
        #[serde(default)]
        finished: Vec<FinishedView>,
    },
    /// A new open request.
    Request {
        /// The request.
        request: RequestView,
    },
    /// A request ended; sent to every tab, the winner included.
    Resolved {
        /// The request.
        id: String,
        /// How it ended.
        outcome: Outcome,
        /// The tab that answered or declined, else null.
        by: Option<String>,
        /// The person who did, if known; else null.
        #[serde(default)]
        user: Option<String>,
        /// How that person was known, when a tab answered or declined.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        via: Option<Via>,
        /// The response given (null when withdrawn).
        response: Value,
    },
    /// This tab's answer did not count; the request stays open unless already resolved.
    AnswerRejected {
        /// The request.
        id: String,
        /// Why, with paths (`response.answers[0].selected`...).
        errors: Vec<FieldError>,
    },
    /// Who is here.
    Presence {
        /// How many tabs are watching.
        tabs: usize,
        /// Whether an agent is connected to the session.
        agent_online: bool,
    },
    /// The session's recent history, newest first, as asked for by `history`.
    History {
        /// Ended requests, from the audit trail: what was asked, how it ended, by whom.
        entries: Vec<Value>,
    },
    /// A frame the gateway could not take.
    Error {
        /// A stable code.
        code: String,
        /// What was wrong, in words.
        message: String,
    },
}

/// tab → gateway.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromTab {
    /// The first frame: the viewer key, and the tab's id if it has one.
    Hello {
        /// The viewer key from the URL fragment.
        key: String,
        /// The tab's id (kept in `sessionStorage`); generated when absent or invalid.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tab: Option<String>,
    },
    /// An answer to an open request.
    Answer {
        /// The request.
        id: String,
        /// The dialect's answer (harness: `{"answers":[...]}`).
        response: Value,
    },
    /// Declines an open request.
    Decline {
        /// The request.
        id: String,
        /// The person put it aside rather than refused it (a form's "Not now"): the dialect
        /// settles it as dismissed, where it tells the two apart (MCP's `cancel`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        dismiss: bool,
    },
    /// Asks for the session's recent history (answered by `history`).
    History,
}

impl FromTab {
    /// The tab id a `hello` asks for, if it is a valid one.
    pub fn requested_tab(tab: Option<&str>) -> Option<TabId> {
        tab.and_then(|t| TabId::parse(t).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ask(value: Value) -> AskFrame {
        match serde_json::from_value(value).unwrap() {
            AgentFrame::Ask(frame) => *frame,
            other => panic!("not an ask: {other:?}"),
        }
    }

    fn questions() -> Value {
        json!([{"header": "Color", "question": "Which?", "options": [{"label": "Red"}, {"label": "Blue"}]}])
    }

    #[test]
    fn a_good_ask_checks() {
        let frame = ask(
            json!({"type": "ask", "session": "s1", "id": "r1", "questions": questions(), "timeout_s": 1.5, "title": " Deploy "}),
        );
        let checked = frame.check(86_400.0).unwrap();
        assert_eq!(checked.session.as_str(), "s1");
        assert_eq!(checked.timeout_ms, Some(1500));
        assert_eq!(checked.title.as_deref(), Some("Deploy"));
    }

    #[test]
    fn any_positive_timeout_is_taken_when_no_limit_is_set() {
        let timeout = |seconds: Value| {
            let frame = ask(
                json!({"type": "ask", "session": "s", "questions": questions(), "timeout_s": seconds}),
            );
            frame.check(f64::INFINITY).map(|checked| checked.timeout_ms)
        };
        assert_eq!(timeout(json!(30 * 24 * 3600)), Ok(Some(2_592_000_000)));
        assert_eq!(timeout(json!(1e-9)), Ok(Some(1)));
        assert_eq!(timeout(json!(1e300)), Ok(Some(MAX_TIMEOUT_MS)));
        assert_eq!(timeout(json!(u64::MAX)), Ok(Some(MAX_TIMEOUT_MS)));
        let frame =
            ask(json!({"type": "ask", "session": "s", "questions": questions(), "timeout_s": 61}));
        let errors = frame.check(60.0).unwrap_err();
        assert_eq!(errors[0].message, "at most 60 seconds, got 61");
    }

    #[test]
    fn a_title_may_hold_any_text_up_to_200_characters() {
        let title = "👩\u{200d}💻 Review\nsecond line \u{1FAE8}\u{ad}";
        let frame =
            ask(json!({"type": "ask", "session": "s", "questions": questions(), "title": title}));
        assert_eq!(frame.check(60.0).unwrap().title.as_deref(), Some(title));
        let longest = "é".repeat(200);
        let frame =
            ask(json!({"type": "ask", "session": "s", "questions": questions(), "title": longest}));
        assert!(frame.check(60.0).is_ok());
        let frame = ask(
            json!({"type": "ask", "session": "s", "questions": questions(), "title": longest + "x"}),
        );
        let errors = frame.check(60.0).unwrap_err();
        assert_eq!(errors[0].path, "title");
        assert_eq!(errors[0].message, "at most 200 characters, got 201");
    }

    #[test]
    fn every_bad_field_is_named() {
        let frame = ask(
            json!({"type": "ask", "session": "a b", "id": "", "dialect": "x", "questions": [], "timeout_s": -1, "title": 5}),
        );
        let errors = frame.check(86_400.0).unwrap_err();
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["session", "id", "dialect", "timeout_s", "title"]);
        let frame = ask(json!({"type": "ask", "session": "s", "questions": [], "timeout_s": "10"}));
        let errors = frame.check(86_400.0).unwrap_err();
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["timeout_s", "questions"]);
    }

    #[test]
    fn frames_round_trip() {
        let frame = ToTab::Presence {
            tabs: 2,
            agent_online: true,
        };
        let text = serde_json::to_string(&frame).unwrap();
        assert_eq!(text, r#"{"type":"presence","tabs":2,"agent_online":true}"#);
        assert_eq!(serde_json::from_str::<ToTab>(&text).unwrap(), frame);
        let hello: FromTab = serde_json::from_str(r#"{"type":"hello","key":"k"}"#).unwrap();
        assert_eq!(
            hello,
            FromTab::Hello {
                key: "k".into(),
                tab: None
            }
        );
    }

    #[test]
    fn a_decline_dismisses_only_when_it_says_so() {
        let plain: FromTab = serde_json::from_str(r#"{"type":"decline","id":"r1"}"#).unwrap();
        let dismissed: FromTab =
            serde_json::from_str(r#"{"type":"decline","id":"r1","dismiss":true}"#).unwrap();
        let decline = |dismiss| FromTab::Decline {
            id: "r1".into(),
            dismiss,
        };
        assert_eq!((plain, dismissed), (decline(false), decline(true)));
        assert_eq!(
            serde_json::to_string(&decline(false)).unwrap(),
            r#"{"type":"decline","id":"r1"}"#
        );
        let wrong = serde_json::from_str::<FromTab>(r#"{"type":"decline","id":"r1","dismiss":1}"#);
        assert!(wrong.is_err());
    }
}
