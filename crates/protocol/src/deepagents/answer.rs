//! askgate's check of an answer a browser tab sends for a deepagents question set.
//!
//! deepagents checks nothing about answers (any text in any slot reaches the model), so
//! askgate does, before it builds the resume payload:
//!
//! - The tab sends `{"answers": [...]}`, one entry per question, in order. No other key: a
//!   decline is a `decline` frame, not a `status`.
//! - `text`: a string, kept verbatim.
//! - `multiple_choice`: a string: one of the offered values or an "Other" text (any non-blank
//!   text), kept verbatim as the TUI keeps it.
//! - `multi_select`: either the encoded JSON array string deepagents uses (`["a", "b"]`) or
//!   a JSON list of strings. Each item is an offered value (exact match) or a custom "Other"
//!   text, stripped by Python's `str.strip` as the TUI strips it; blank customs, repeats and
//!   more than [`MAX_OTHER_ENTRIES`] customs are refused. The answer is re-encoded exactly as
//!   the TUI encodes it: offered values in choice order, then customs in the tab's order.
//! - A required question (the default) must be answered, by deepagents' own
//!   `ask_user_answer_is_empty`. An optional one left empty becomes `""` (`[]` for
//!   `multi_select`), as the TUI submits it.
//! - **Forged blocks are refused, not neutralised.** The transcript interpolates answers raw,
//!   so an answer with a line starting `Q:` reads to the model like another question and
//!   answer. An answer whose wire text has, on any line after its first, `Q:` after optional
//!   whitespace is refused (lines split as Python's `str.splitlines` splits them, so U+2028,
//!   U+0085 and the like count). Rewriting the user's words would change what they said
//!   behind their back; refusing tells them why, and they can rephrase.
//! - **Placeholders are refused too**: an answer that is, once stripped, `(cancelled)`,
//!   `(no answer)` or `(error: ...)` would read like deepagents' own markers.
//! - What a person types is at most [`MAX_ANSWER_CHARS`] code points: a text answer, an "Other"
//!   text, each custom value of a `multi_select`. Offered choices are bounded by the ask, so a
//!   `multi_select` of several long choices is never refused for their combined length.

use serde_json::Value;

use super::limits::{MAX_ANSWER_CHARS, MAX_OTHER_ENTRIES};
use super::multi_select::{answer_is_empty, decode, encode};
use super::transcript::{CANCELLED_ANSWER, ERROR_ANSWER_PREFIX, NO_ANSWER};
use super::types::{DeepagentsQuestions, Question, QuestionType};
use crate::error::{ErrorCode, FieldError, ValidationErrors, json_kind};
use crate::unicode::is_py_whitespace;

/// Checks a tab's `response` against `questions` and returns the answers as deepagents'
/// TUI would send them: one wire string per question.
///
/// # Errors
/// Every answer that does not fit, each with its path (`response.answers[1]`).
pub fn check_tab_answer(
    questions: &DeepagentsQuestions,
    response: &Value,
) -> Result<Vec<String>, ValidationErrors> {
    let single = |path: &str, code, message: String| {
        Err(ValidationErrors::single(FieldError::new(
            path, code, message,
        )))
    };
    let Value::Object(object) = response else {
        return single(
            "response",
            ErrorCode::WrongType,
            format!(
                "must be a deepagents answer {{\"answers\": [...]}}, got {}",
                json_kind(response)
            ),
        );
    };
    if let Some(key) = object.keys().find(|k| k.as_str() != "answers") {
        return single(
            &crate::error::field_path("response", key),
            ErrorCode::UnknownField,
            "a deepagents answer has only `answers`; to decline, send a `decline` frame".into(),
        );
    }
    let Some(items) = object.get("answers") else {
        return single(
            "response.answers",
            ErrorCode::MissingField,
            "required field is missing: one answer per question, in order".into(),
        );
    };
    let Value::Array(items) = items else {
        return single(
            "response.answers",
            ErrorCode::WrongType,
            format!(
                "must be a list with one answer per question, got {}",
                json_kind(items)
            ),
        );
    };
    if items.len() != questions.len() {
        return single(
            "response.answers",
            ErrorCode::InvalidAnswer,
            format!(
                "expected {} answers, one per question in order, got {}",
                questions.len(),
                items.len()
            ),
        );
    }
    let mut answers = Vec::with_capacity(items.len());
    let mut errors = Vec::new();
    for (i, (question, item)) in questions.questions().iter().zip(items).enumerate() {
        let path = format!("response.answers[{i}]");
        match check_one(question, item, &path) {
            Ok(answer) => answers.push(answer),
            Err(error) => errors.push(error),
        }
    }
    match ValidationErrors::from_vec(errors) {
        Some(errors) => Err(errors),
        None => Ok(answers),
    }
}

/// Refuses typed text longer than [`MAX_ANSWER_CHARS`].
fn too_long(text: &str, path: &str) -> Result<(), FieldError> {
    let length = text.chars().count();
    if length > MAX_ANSWER_CHARS {
        return Err(invalid(
            path,
            format!("an answer may hold at most {MAX_ANSWER_CHARS} characters, got {length}"),
        ));
    }
    Ok(())
}

fn invalid(path: &str, message: impl Into<String>) -> FieldError {
    FieldError::new(path, ErrorCode::InvalidAnswer, message)
}

/// One answer, normalised to its wire string.
fn check_one(question: &Question, item: &Value, path: &str) -> Result<String, FieldError> {
    let answer = match (question.kind, item) {
        (QuestionType::MultiSelect, _) => multi_select(question, item, path)?,
        (_, Value::String(text)) if answer_is_empty(text, Some(question.kind.as_str())) => {
            String::new()
        }
        (_, Value::String(text)) => text.clone(),
        (kind, other) => {
            return Err(FieldError::new(
                path,
                ErrorCode::WrongType,
                format!(
                    "a {} answer must be a string, got {}",
                    kind.as_str(),
                    json_kind(other)
                ),
            ));
        }
    };
    if answer_is_empty(&answer, Some(question.kind.as_str())) {
        if question.is_required() {
            return Err(invalid(
                path,
                "this question is required: answer it before sending",
            ));
        }
        return Ok(answer);
    }
    // A `multi_select`'s custom values were measured one by one; its offered ones need not be.
    if question.kind != QuestionType::MultiSelect {
        too_long(&answer, path)?;
    }
    if forges_a_block(&answer) {
        return Err(invalid(
            path,
            "a line of the answer starts with \"Q:\", which the model would read as another question; rephrase that line",
        ));
    }
    if is_placeholder(&answer) {
        return Err(invalid(
            path,
            format!(
                "the answer reads like deepagents' own marker {}; rephrase it",
                py_strip(&answer)
            ),
        ));
    }
    Ok(answer)
}

/// A `multi_select` answer, from the encoded string or a list, as the TUI would encode it.
fn multi_select(question: &Question, item: &Value, path: &str) -> Result<String, FieldError> {
    let items: Vec<String> = match item {
        Value::String(text) if text.chars().all(is_py_whitespace) => Vec::new(),
        Value::String(text) => decode(text).ok_or_else(|| {
            invalid(
                path,
                "a multi_select answer must be a JSON array of strings, such as [\"a\", \"b\"], or a list",
            )
        })?,
        Value::Array(values) => values
            .iter()
            .enumerate()
            .map(|(j, v)| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(FieldError::new(
                    format!("{path}[{j}]"),
                    ErrorCode::WrongType,
                    format!("a selected value must be a string, got {}", json_kind(other)),
                )),
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(FieldError::new(
                path,
                ErrorCode::WrongType,
                format!(
                    "a multi_select answer must be a JSON array string or a list, got {}",
                    json_kind(other)
                ),
            ));
        }
    };
    let values: Vec<&str> = question.choice_values().collect();
    let mut picked: Vec<usize> = Vec::new();
    let mut customs: Vec<String> = Vec::new();
    for (j, raw) in items.iter().enumerate() {
        let at = || format!("{path}[{j}]");
        let offered = values.iter().position(|v| *v == raw.as_str()).or_else(|| {
            let stripped = py_strip(raw);
            values.iter().position(|v| *v == stripped)
        });
        let repeated = match offered {
            Some(index) => {
                let seen = picked.contains(&index);
                picked.push(index);
                seen
            }
            None => {
                let custom = py_strip(raw);
                if custom.is_empty() {
                    return Err(invalid(&at(), "a custom value must not be blank"));
                }
                too_long(custom, &at())?;
                let seen = customs.iter().any(|c| c == custom);
                customs.push(custom.to_owned());
                seen
            }
        };
        if repeated {
            return Err(invalid(
                &at(),
                format!("{} is selected twice", serde_json::json!(raw)),
            ));
        }
    }
    if customs.len() > MAX_OTHER_ENTRIES {
        return Err(invalid(
            path,
            format!(
                "at most {MAX_OTHER_ENTRIES} custom values besides the offered choices, got {}",
                customs.len()
            ),
        ));
    }
    picked.sort_unstable();
    let mut ordered: Vec<&str> = picked.iter().map(|&i| values[i]).collect();
    ordered.extend(customs.iter().map(String::as_str));
    Ok(encode(&ordered))
}

/// Python's `str.strip()`.
fn py_strip(text: &str) -> &str {
    text.trim_matches(is_py_whitespace)
}

/// Python's `str.splitlines()` boundaries.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{b}'
            | '\u{c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// Whether a line after the first starts, after whitespace, with `Q:`.
pub(super) fn forges_a_block(answer: &str) -> bool {
    answer
        .split(is_line_break)
        .skip(1)
        .any(|line| line.trim_start_matches(is_py_whitespace).starts_with("Q:"))
}

/// Whether the answer, stripped, is one of deepagents' in-band placeholders.
fn is_placeholder(answer: &str) -> bool {
    let text = py_strip(answer);
    text == CANCELLED_ANSWER
        || text == NO_ANSWER
        || (text.starts_with(ERROR_ANSWER_PREFIX) && text.ends_with(')'))
}
