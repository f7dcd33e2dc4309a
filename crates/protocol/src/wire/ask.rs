//! The `ask` frame as sent, and its check: every field judged at its path, the dialect's
//! request validated by its dialect.

use serde::Serialize;
use serde_json::{Map, Value};

use super::callback::{Callback, check_callback};
use crate::approval::{ApprovalCalls, Quorum};
use crate::dialect::{Dialect, QuestionSet};
use crate::error::{ErrorCode, FieldError, ValidationErrors, json_kind};
use crate::ids::{RequestId, SessionId, parse_field};
use crate::people::check_answerers;

/// Longest `title`, in characters after stripping.
pub const MAX_TITLE_CHARS: usize = 200;

/// The `ask` frame, fields as sent: each of any JSON type, so that one of the wrong type is
/// refused by [`AskFrame::check`] at its path rather than failing the whole frame. Read by
/// hand (`wire::reading`), as serde's derived reading would, without buffering the frame first.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AskFrame {
    /// The session (a string).
    pub session: Value,
    /// The request id (a string); generated (uuid4 hex) when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// The dialect's name (`"harness"` when absent): see [`Dialect::all`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dialect: Option<Value>,
    /// The question dialects' questions list.
    pub questions: Value,
    /// Seconds until the request times out; absent or null for no deadline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<Value>,
    /// A line shown above the questions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<Value>,
    /// The people (or `group:NAME`s) who alone may answer or decline; absent: anyone who
    /// holds the link.
    #[serde(skip_serializing_if = "Option::is_none")]
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
    /// Reminders and escalation, if the ask asks for them.
    pub follow_ups: AskedFollowUps,
    /// The answer given should the deadline pass with none (`default`, as sent, checked
    /// against the request as a tab's answer would be); only with a deadline.
    pub default: Option<Value>,
    /// For an approval, how many people must decide each call (`quorum`, `veto`).
    pub quorum: Option<Quorum>,
    /// Whether remembered approvals may answer it, or be made from its answer (`rules`,
    /// true unless the ask says `false`).
    pub rules: bool,
    /// Where its outcome is POSTed when it ends (`callback`), if anywhere.
    pub callback: Option<Callback>,
}

/// What an ask says should happen while it stays open: `remind_after_s` (the same people
/// told again, once) and `escalate` (more people added and told, once).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AskedFollowUps {
    /// Milliseconds after the ask to remind, if ever.
    pub remind_after_ms: Option<u64>,
    /// Milliseconds after the ask to escalate, and to whom (people and `group:NAME`s).
    pub escalate: Option<(u64, Vec<String>)>,
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
        let follow_ups = check_follow_ups(&self.rest)
            .map_err(|e| errors.extend(e))
            .ok();
        let quorum = Quorum::read(&self.rest).map_err(|e| errors.extend(e)).ok();
        let rules = match self.rest.get("rules") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(rules)) => *rules,
            Some(other) => {
                errors.push(FieldError::new(
                    "rules",
                    ErrorCode::WrongType,
                    format!("expected true or false, got {}", json_kind(other)),
                ));
                true
            }
        };
        let callback = check_callback(self.rest.get("callback"))
            .map_err(|e| errors.extend(e))
            .ok()
            .flatten();
        let default = self.rest.get("default").filter(|v| !v.is_null()).cloned();
        if default.is_some() && matches!(timeout_ms, Some(None)) {
            errors.push(FieldError::new(
                "default",
                ErrorCode::InvalidValue,
                "a default is the answer given when the deadline passes: it needs `timeout_s`",
            ));
        }
        CheckedFields {
            errors,
            session,
            id,
            dialect,
            timeout_ms,
            title,
            answerers,
            follow_ups,
            default,
            quorum,
            rules,
            callback,
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
    follow_ups: Option<AskedFollowUps>,
    /// `default` as sent, checked once the request is.
    default: Option<Value>,
    /// `quorum` and `veto`, checked against the calls once they are.
    quorum: Option<Option<Quorum>>,
    /// `rules`.
    rules: bool,
    /// `callback`.
    callback: Option<Callback>,
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
        if let (Some(questions), Some(default)) = (&questions, &self.default)
            && let Err(errors) = questions.settle_default(default)
        {
            self.errors.extend(errors.into_vec());
        }
        if let (Some(Some(quorum)), Some(Some(answerers))) = (&self.quorum, &self.answerers)
            && answerers.iter().all(|name| !name.starts_with("group:"))
            && answerers.len() < usize::from(quorum.needed)
        {
            self.errors.push(FieldError::new(
                "quorum",
                ErrorCode::InvalidValue,
                format!(
                    "needs {} people, and `answerers` names {}: it could never be reached",
                    quorum.needed,
                    answerers.len()
                ),
            ));
        }
        if let (Some(questions), Some(Some(quorum))) = (&questions, &self.quorum) {
            match questions.downcast::<ApprovalCalls>() {
                Some(calls) => {
                    if let Err(error) = quorum.check_calls(&calls.0) {
                        self.errors.push(error);
                    }
                }
                None => self.errors.push(FieldError::new(
                    "quorum",
                    ErrorCode::InvalidValue,
                    format!(
                        "only approval requests take a quorum, not {}",
                        questions.dialect()
                    ),
                )),
            }
        }
        match (
            self.session.take(),
            questions,
            self.timeout_ms.take(),
            self.title.take(),
            self.answerers.take(),
            self.follow_ups.take(),
        ) {
            (
                Some(session),
                Some(questions),
                Some(timeout_ms),
                Some(title),
                Some(answerers),
                Some(follow_ups),
            ) if self.errors.is_empty() => Ok(CheckedAsk {
                session,
                id: self.id.take(),
                questions,
                timeout_ms,
                title,
                answerers,
                follow_ups,
                default: self.default.take(),
                quorum: self.quorum.take().flatten(),
                rules: self.rules,
                callback: self.callback.take(),
            }),
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
pub(super) const MAX_TIMEOUT_MS: u64 = 1000 * 365 * 24 * 3600 * 1000;

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

/// `remind_after_s` and `escalate` (`{"after_s": N, "to": [...]}`), read from the fields no
/// dialect names. Each wait is as `timeout_s` is: positive seconds, held as milliseconds.
fn check_follow_ups(rest: &Map<String, Value>) -> Result<AskedFollowUps, Vec<FieldError>> {
    let mut errors = Vec::new();
    let remind_after_ms = match rest.get("remind_after_s") {
        None | Some(Value::Null) => None,
        Some(value) => check_wait("remind_after_s", value)
            .map_err(|e| errors.push(e))
            .ok(),
    };
    let escalate = match rest.get("escalate") {
        None | Some(Value::Null) => None,
        Some(Value::Object(escalate)) => {
            for key in escalate.keys() {
                if !matches!(key.as_str(), "after_s" | "to") {
                    errors.push(FieldError::new(
                        format!("escalate.{key}"),
                        ErrorCode::UnknownField,
                        "`escalate` takes `after_s` and `to` only",
                    ));
                }
            }
            let after = match escalate.get("after_s") {
                None | Some(Value::Null) => {
                    errors.push(FieldError::new(
                        "escalate.after_s",
                        ErrorCode::MissingField,
                        "required: seconds after the ask to escalate",
                    ));
                    None
                }
                Some(value) => check_wait("escalate.after_s", value)
                    .map_err(|e| errors.push(e))
                    .ok(),
            };
            let to = match escalate.get("to") {
                None | Some(Value::Null) => {
                    errors.push(FieldError::new(
                        "escalate.to",
                        ErrorCode::MissingField,
                        "required: the people and `group:NAME`s to add and tell",
                    ));
                    None
                }
                Some(Value::Array(list)) if list.is_empty() => {
                    errors.push(FieldError::new(
                        "escalate.to",
                        ErrorCode::InvalidValue,
                        "must name at least one person or `group:NAME`",
                    ));
                    None
                }
                Some(value) => check_answerers(Some(value))
                    .map_err(|mut e| {
                        e.path = format!("escalate.to{}", e.path.trim_start_matches("answerers"));
                        errors.push(e);
                    })
                    .ok()
                    .flatten(),
            };
            after.zip(to)
        }
        Some(other) => {
            errors.push(FieldError::new(
                "escalate",
                ErrorCode::WrongType,
                format!(
                    "must be an object {{\"after_s\": N, \"to\": [...]}}, got {}",
                    json_kind(other)
                ),
            ));
            None
        }
    };
    if errors.is_empty() {
        Ok(AskedFollowUps {
            remind_after_ms,
            escalate,
        })
    } else {
        Err(errors)
    }
}

/// A wait after the ask, in positive seconds, as milliseconds (at least one).
fn check_wait(path: &str, value: &Value) -> Result<u64, FieldError> {
    let Value::Number(number) = value else {
        return Err(FieldError::new(
            path,
            ErrorCode::WrongType,
            format!("must be a number of seconds, got {}", json_kind(value)),
        ));
    };
    let seconds = number.as_f64().unwrap_or(f64::NAN);
    if seconds.is_nan() || seconds <= 0.0 {
        return Err(FieldError::new(
            path,
            ErrorCode::InvalidValue,
            format!("must be positive, got {seconds}"),
        ));
    }
    let millis = (seconds * 1000.0).ceil().min(MAX_TIMEOUT_MS as f64) as u64;
    Ok(millis.max(1))
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
