//! A tab's answers to `AskUserQuestion`, checked, and what the host hands back.

use serde_json::{Map, Value, json};

use super::MAX_ANSWER_UNITS;
use super::questions::ClaudeQuestions;
use crate::dialect::{Outcome, Settlement};
use crate::error::{ErrorCode, FieldError, ValidationErrors, json_kind};
use crate::field_paths::{index_path, key_path, response_object};

/// The deny message when the person declines.
pub const DECLINED_MESSAGE: &str = "The person declined to answer.";
/// The deny message when nobody answers in time.
pub const TIMED_OUT_MESSAGE: &str = "No answer in time.";

/// Checks `{"answers": {question: answer}, "response"?}` against the questions and returns
/// the answers and the free text, as the tool reads them; paths start with `response`.
///
/// # Errors
/// Every problem found.
pub fn check_answers(
    questions: &ClaudeQuestions,
    response: &Value,
) -> Result<(Map<String, Value>, Option<String>), ValidationErrors> {
    let one = |path: &str, code, message: String| {
        Err(ValidationErrors::single(FieldError::new(
            path, code, message,
        )))
    };
    let fields = response_object(
        response,
        &["answers", "response"],
        "{\"answers\": {question: answer}, \"response\"?: \"...\"}",
    )?;
    let free_text = match fields.get("response") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text.trim().is_empty() => None,
        Some(Value::String(text)) => {
            if let Err(e) = at_most_units(text, "response.response") {
                return Err(ValidationErrors::single(e));
            }
            Some(text.clone())
        }
        Some(other) => {
            return one(
                "response.response",
                ErrorCode::WrongType,
                format!("must be a string, got {}", json_kind(other)),
            );
        }
    };
    let empty = Map::new();
    let answers = match fields.get("answers") {
        Some(Value::Object(answers)) => answers,
        None | Some(Value::Null) if free_text.is_some() => &empty,
        None | Some(Value::Null) => {
            return one(
                "response.answers",
                ErrorCode::MissingField,
                "required: an answer per question, keyed by question text".into(),
            );
        }
        Some(other) => {
            return one(
                "response.answers",
                ErrorCode::WrongType,
                format!(
                    "must be an object keyed by question text, got {}",
                    json_kind(other)
                ),
            );
        }
    };
    let texts: Vec<&str> = questions.texts().collect();
    let mut errors = Vec::new();
    for key in answers.keys() {
        if !texts.contains(&key.as_str()) {
            errors.push(FieldError::new(
                key_path("response.answers", key),
                ErrorCode::UnknownField,
                "not a question of this request",
            ));
        }
    }
    let mut checked = Map::new();
    for (i, text) in texts.iter().enumerate() {
        let path = key_path("response.answers", text);
        match answers.get(*text) {
            None if free_text.is_some() => {}
            None => errors.push(FieldError::new(
                path,
                ErrorCode::MissingField,
                "unanswered: pick an option or write an answer",
            )),
            Some(answer) => match check_answer(questions, i, answer, &path) {
                Ok(answer) => {
                    checked.insert((*text).to_owned(), answer);
                }
                Err(e) => errors.push(e),
            },
        }
    }
    // The tool refuses a host's answer whose texts together pass its bound.
    let total: usize = checked.values().map(joined_units).sum::<usize>()
        + free_text.as_deref().map_or(0, |t| t.encode_utf16().count());
    if errors.is_empty() && total > MAX_ANSWER_UNITS {
        errors.push(FieldError::new(
            "response",
            ErrorCode::TooLong,
            format!(
                "the answers together hold at most {MAX_ANSWER_UNITS} UTF-16 code units, got \
                 {total}"
            ),
        ));
    }
    match ValidationErrors::from_vec(errors) {
        Some(errors) => Err(errors),
        None => Ok((checked, free_text)),
    }
}

/// At most [`MAX_ANSWER_UNITS`] UTF-16 code units, as the tool counts (JavaScript's length).
fn at_most_units(text: &str, path: &str) -> Result<(), FieldError> {
    let units = text.encode_utf16().count();
    if units > MAX_ANSWER_UNITS {
        return Err(FieldError::new(
            path,
            ErrorCode::TooLong,
            format!("at most {MAX_ANSWER_UNITS} UTF-16 code units, got {units}"),
        ));
    }
    Ok(())
}

/// The length of an answer as the tool joins it: a list's entries by ", ", each quoted as
/// JSON when it holds ", " or a quote.
fn joined_units(answer: &Value) -> usize {
    match answer {
        Value::String(text) => text.encode_utf16().count(),
        Value::Array(entries) => {
            let parts: Vec<String> = entries
                .iter()
                .filter_map(Value::as_str)
                .map(|t| {
                    if t.contains(", ") || t.contains('"') {
                        Value::from(t).to_string()
                    } else {
                        t.to_owned()
                    }
                })
                .collect();
            parts.join(", ").encode_utf16().count()
        }
        _ => 0,
    }
}

/// One answer: a label or custom text; for a multi-select, a list of them.
fn check_answer(
    questions: &ClaudeQuestions,
    i: usize,
    answer: &Value,
    path: &str,
) -> Result<Value, FieldError> {
    let typed = |text: &str, at: &str| -> Result<(), FieldError> {
        if text.trim().is_empty() {
            return Err(FieldError::new(
                at,
                ErrorCode::Blank,
                "an answer must not be blank",
            ));
        }
        at_most_units(text, at)
    };
    match answer {
        Value::String(text) => {
            typed(text, path)?;
            Ok(answer.clone())
        }
        Value::Array(picked) if questions.multi_select(i) => {
            if picked.is_empty() {
                return Err(FieldError::new(
                    path,
                    ErrorCode::TooFewItems,
                    "pick at least one option, or write an answer",
                ));
            }
            // Every option and one answer of the person's own, as the tool admits.
            let most = questions.labels(i).len() + 1;
            if picked.len() > most {
                return Err(FieldError::new(
                    path,
                    ErrorCode::TooManyItems,
                    format!(
                        "at most {most} answers (the options and one of your own), got {}",
                        picked.len()
                    ),
                ));
            }
            for (j, entry) in picked.iter().enumerate() {
                let at = index_path(path, j);
                let Value::String(text) = entry else {
                    return Err(FieldError::new(
                        at,
                        ErrorCode::WrongType,
                        format!("must be a string, got {}", json_kind(entry)),
                    ));
                };
                typed(text, &at)?;
                if picked[..j].contains(entry) {
                    return Err(FieldError::new(
                        at,
                        ErrorCode::InvalidAnswer,
                        "picked twice",
                    ));
                }
            }
            Ok(answer.clone())
        }
        Value::Array(_) => Err(FieldError::new(
            path,
            ErrorCode::InvalidAnswer,
            "this question takes one answer: a label or your own text",
        )),
        other => Err(FieldError::new(
            path,
            ErrorCode::WrongType,
            format!(
                "must be a label or your own text{}, got {}",
                if questions.multi_select(i) {
                    " (or a list of them)"
                } else {
                    ""
                },
                json_kind(other)
            ),
        )),
    }
}

/// What the host returns: `allow` with the tool's input and the answers.
pub fn allowed(
    questions: &ClaudeQuestions,
    answers: Map<String, Value>,
    free_text: Option<String>,
) -> Settlement {
    let mut input = json!({ "questions": questions.questions });
    input["answers"] = Value::Object(answers);
    if let Some(text) = free_text {
        input["response"] = Value::String(text);
    }
    let result = json!({"behavior": "allow", "updated_input": input});
    Settlement {
        outcome: Outcome::Answered,
        response: result.clone(),
        result,
        model_text: None,
    }
}

/// What the host returns when nobody answers: `deny`, saying why.
pub fn denied(outcome: Outcome) -> Settlement {
    let message = if outcome == Outcome::TimedOut {
        TIMED_OUT_MESSAGE
    } else {
        DECLINED_MESSAGE
    };
    let result = json!({"behavior": "deny", "message": message});
    Settlement {
        outcome,
        response: result.clone(),
        result,
        model_text: None,
    }
}
