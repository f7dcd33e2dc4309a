//! The `ask_user_question` arguments, judged exactly as pydantic-ai judges a model's call.
//!
//! The verdict matches pydantic-ai-harness 0.62 on every input (`conformance` tests and a
//! differential test against the real package prove it). The error list does not copy
//! pydantic's: askgate reports every problem it can find, in its own words, with a path such
//! as `questions[2].options[1].label`, where pydantic stops early or masks errors.
//!
//! Each string goes through the harness's pipeline: JSON string (no coercion) → strip by the
//! Unicode White_Space property (`str::trim`, as pydantic-core) → length in code points → the
//! printable rule (Unicode 14.0 categories; `\n` only in `question` and `description`).

use serde_json::{Map, Value};

use super::limits::{
    MAX_DESCRIPTION_CHARS, MAX_HEADER_CHARS, MAX_LABEL_CHARS, MAX_OPTIONS, MAX_QUESTION_CHARS,
    MAX_QUESTIONS, MIN_OPTIONS, MIN_QUESTIONS,
};
use super::types::{HarnessQuestions, Question, QuestionOption};
use crate::error::{
    ErrorCode, FieldError, ValidationErrors, field_path, index_path, json_kind, json_quote,
};
use crate::unicode::{classify, first_forbidden, uniqueness_key};

/// What to do with top-level keys other than `questions`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TopLevelExtras {
    /// Reject them, as the live tool does (`additionalProperties: false`).
    #[default]
    Forbid,
    /// Ignore them, as `AskUserRequest.from_tool_call` does for a deferred call.
    Ignore,
}

/// Validates tool arguments `{"questions": [...]}`.
///
/// # Errors
/// Every problem found, each with its path.
pub fn validate_args(
    args: &Value,
    extras: TopLevelExtras,
) -> Result<HarnessQuestions, ValidationErrors> {
    let Some(object) = args.as_object() else {
        return Err(ValidationErrors::single(FieldError::new(
            "",
            ErrorCode::WrongType,
            format!(
                "the arguments must be an object with `questions`, got {}",
                json_kind(args)
            ),
        )));
    };
    let mut errors = Vec::new();
    let questions = match object.get("questions") {
        Some(value) => check_questions(value, &mut errors),
        None => {
            errors.push(missing("questions"));
            None
        }
    };
    if extras == TopLevelExtras::Forbid {
        for key in object.keys().filter(|k| k.as_str() != "questions") {
            errors.push(unknown(
                field_path("", key),
                "the arguments take only `questions`",
            ));
        }
    }
    finish(questions, errors)
}

/// Validates tool arguments given as JSON text (an OpenAI-style string tool call).
///
/// # Errors
/// `invalid_json` for text that is not JSON, else as [`validate_args`].
pub fn validate_args_json(
    text: &str,
    extras: TopLevelExtras,
) -> Result<HarnessQuestions, ValidationErrors> {
    let args: Value = serde_json::from_str(text).map_err(|e| {
        ValidationErrors::single(FieldError::new(
            "",
            ErrorCode::InvalidJson,
            format!("the arguments are not valid JSON: {e}"),
        ))
    })?;
    validate_args(&args, extras)
}

/// Validates the `questions` list alone; paths start with `questions`.
///
/// # Errors
/// Every problem found, each with its path.
pub fn validate_questions(questions: &Value) -> Result<HarnessQuestions, ValidationErrors> {
    let mut errors = Vec::new();
    let checked = check_questions(questions, &mut errors);
    finish(checked, errors)
}

fn finish(
    questions: Option<Vec<Question>>,
    errors: Vec<FieldError>,
) -> Result<HarnessQuestions, ValidationErrors> {
    match (ValidationErrors::from_vec(errors), questions) {
        (None, Some(questions)) => Ok(HarnessQuestions::new_unchecked(questions)),
        (Some(errors), _) => Err(errors),
        // Unreachable: a list that failed always leaves an error behind. Kept total anyway.
        (None, None) => Err(ValidationErrors::single(FieldError::new(
            "questions",
            ErrorCode::InvalidValue,
            "the questions could not be validated",
        ))),
    }
}

fn check_questions(value: &Value, errors: &mut Vec<FieldError>) -> Option<Vec<Question>> {
    const PATH: &str = "questions";
    let Some(items) = value.as_array() else {
        errors.push(wrong_type(PATH, "a list of questions", value));
        return None;
    };
    let mut ok = true;
    if items.len() < MIN_QUESTIONS {
        errors.push(FieldError::new(
            PATH,
            ErrorCode::TooFewItems,
            format!("must hold at least {MIN_QUESTIONS} question, got none"),
        ));
        ok = false;
    } else if items.len() > MAX_QUESTIONS {
        errors.push(FieldError::new(
            PATH,
            ErrorCode::TooManyItems,
            format!(
                "must hold at most {MAX_QUESTIONS} questions, got {}",
                items.len()
            ),
        ));
        ok = false;
    }
    let mut questions = Vec::with_capacity(items.len());
    // Every header that validated, valid question or not, so one pass reports every duplicate.
    let mut headers: Vec<(usize, &str)> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let (question, header) = check_question(&index_path(PATH, i), item, errors);
        if let Some(header) = header {
            headers.push((i, header));
        }
        match question {
            Some(question) => questions.push(question),
            None => ok = false,
        }
    }
    let duplicates = duplicates(&headers);
    for (later, earlier) in &duplicates {
        errors.push(FieldError::new(
            field_path(&index_path(PATH, *later), "header"),
            ErrorCode::DuplicateHeader,
            format!(
                "question headers must be unique: this header is the same as questions[{earlier}].header ({}) once case, width and spacing are folded",
                json_quote(text_at(&headers, *earlier)),
            ),
        ));
    }
    (ok && duplicates.is_empty()).then_some(questions)
}

fn text_at<'a>(headers: &[(usize, &'a str)], index: usize) -> &'a str {
    headers
        .iter()
        .find(|&&(i, _)| i == index)
        .map_or("", |&(_, h)| h)
}

/// The question if it is valid, and its stripped header if that field alone is.
fn check_question<'a>(
    path: &str,
    value: &'a Value,
    errors: &mut Vec<FieldError>,
) -> (Option<Question>, Option<&'a str>) {
    let Some(object) = value.as_object() else {
        errors.push(wrong_type(
            path,
            "an object with header, question and options",
            value,
        ));
        return (None, None);
    };
    let before = errors.len();
    let header = required(object, path, "header", errors).and_then(|v| {
        text(
            &field_path(path, "header"),
            v,
            1,
            MAX_HEADER_CHARS,
            false,
            errors,
        )
    });
    let question = required(object, path, "question", errors).and_then(|v| {
        text(
            &field_path(path, "question"),
            v,
            1,
            MAX_QUESTION_CHARS,
            true,
            errors,
        )
    });
    let options = required(object, path, "options", errors)
        .and_then(|v| check_options(&field_path(path, "options"), v, errors));
    let multi_select = match object.get("multi_select") {
        None => Some(false),
        Some(v) => lax_bool(&field_path(path, "multi_select"), v, errors),
    };
    for key in object.keys() {
        if !matches!(
            key.as_str(),
            "header" | "question" | "options" | "multi_select"
        ) {
            errors.push(unknown(
                field_path(path, key),
                "a question has only header, question, options and multi_select",
            ));
        }
    }
    match (header, question, options, multi_select) {
        (Some(header), Some(question), Some(options), Some(multi_select))
            if errors.len() == before =>
        {
            let valid = Question {
                header: header.to_owned(),
                question: question.to_owned(),
                options,
                multi_select,
            };
            (Some(valid), Some(header))
        }
        (header, ..) => (None, header),
    }
}

fn check_options(
    path: &str,
    value: &Value,
    errors: &mut Vec<FieldError>,
) -> Option<Vec<QuestionOption>> {
    let Some(items) = value.as_array() else {
        errors.push(wrong_type(path, "a list of options", value));
        return None;
    };
    let before = errors.len();
    if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&items.len()) {
        let code = if items.len() < MIN_OPTIONS {
            ErrorCode::TooFewItems
        } else {
            ErrorCode::TooManyItems
        };
        errors.push(FieldError::new(
            path,
            code,
            format!(
                "must offer {MIN_OPTIONS} to {MAX_OPTIONS} options, got {}",
                items.len()
            ),
        ));
    }
    let mut options = Vec::with_capacity(items.len());
    let mut labels: Vec<(usize, &str)> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = index_path(path, i);
        let Some(object) = item.as_object() else {
            errors.push(wrong_type(
                &item_path,
                "an object with a label and an optional description",
                item,
            ));
            continue;
        };
        let label = required(object, &item_path, "label", errors).and_then(|v| {
            text(
                &field_path(&item_path, "label"),
                v,
                1,
                MAX_LABEL_CHARS,
                false,
                errors,
            )
        });
        let description = match object.get("description") {
            None | Some(Value::Null) => Some(None),
            Some(v) => text(
                &field_path(&item_path, "description"),
                v,
                0,
                MAX_DESCRIPTION_CHARS,
                true,
                errors,
            )
            .map(Some),
        };
        for key in object.keys() {
            if !matches!(key.as_str(), "label" | "description") {
                errors.push(unknown(
                    field_path(&item_path, key),
                    "an option has only label and description",
                ));
            }
        }
        if let Some(label) = label {
            labels.push((i, label));
            if let Some(description) = description {
                options.push(QuestionOption {
                    label: label.to_owned(),
                    description: description.map(str::to_owned),
                });
            }
        }
    }
    let duplicates = duplicates(&labels);
    for (later, earlier) in &duplicates {
        errors.push(FieldError::new(
            field_path(&index_path(path, *later), "label"),
            ErrorCode::DuplicateLabel,
            format!(
                "option labels must be unique within a question: this label is the same as options[{earlier}].label ({}) once case, width and spacing are folded",
                json_quote(text_at(&labels, *earlier)),
            ),
        ));
    }
    (errors.len() == before).then_some(options)
}

/// `(later index, earlier index)` for every item whose fold equals an earlier item's.
fn duplicates(items: &[(usize, &str)]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    if items.len() < 2 {
        return found;
    }
    if items.iter().all(|(_, s)| s.is_ascii()) {
        // The fold of ASCII text is its ASCII lowercase: compare without allocating.
        for (j, &(later, b)) in items.iter().enumerate() {
            if let Some(&(earlier, _)) = items[..j].iter().find(|(_, a)| a.eq_ignore_ascii_case(b))
            {
                found.push((later, earlier));
            }
        }
        return found;
    }
    let keys: Vec<String> = items.iter().map(|(_, s)| uniqueness_key(s)).collect();
    for j in 1..items.len() {
        if let Some(i) = (0..j).find(|&i| keys[i] == keys[j]) {
            found.push((items[j].0, items[i].0));
        }
    }
    found
}

fn required<'v>(
    object: &'v Map<String, Value>,
    path: &str,
    key: &str,
    errors: &mut Vec<FieldError>,
) -> Option<&'v Value> {
    let value = object.get(key);
    if value.is_none() {
        errors.push(missing(&field_path(path, key)));
    }
    value
}

/// One string field: type, strip, length, printable rule. Returns the stripped text.
fn text<'v>(
    path: &str,
    value: &'v Value,
    min_chars: usize,
    max_chars: usize,
    newlines: bool,
    errors: &mut Vec<FieldError>,
) -> Option<&'v str> {
    let Value::String(raw) = value else {
        errors.push(wrong_type(path, "a string", value));
        return None;
    };
    let stripped = raw.trim();
    let length = stripped.chars().count();
    if length < min_chars {
        errors.push(FieldError::new(
            path,
            ErrorCode::Blank,
            "must not be empty or only whitespace",
        ));
        return None;
    }
    if length > max_chars {
        errors.push(FieldError::new(
            path,
            ErrorCode::TooLong,
            format!(
                "at most {max_chars} characters (after trimming surrounding whitespace), got {length}"
            ),
        ));
        return None;
    }
    if let Some((at, c)) = first_forbidden(stripped, newlines) {
        let what = if c == '\n' {
            "a line break (only `question` and `description` may span lines)"
        } else {
            classify(c).describe()
        };
        errors.push(FieldError::new(
            path,
            ErrorCode::ForbiddenCharacter,
            format!(
                "must not contain control characters or invisible formatting: U+{:04X}, {what}, at character {}",
                c as u32,
                at + 1
            ),
        ));
        return None;
    }
    Some(stripped)
}

/// pydantic's lax boolean: `true/false`, `0/1`, `0.0/1.0`, and a few words in any ASCII case.
fn lax_bool(path: &str, value: &Value, errors: &mut Vec<FieldError>) -> Option<bool> {
    let parsed = match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f == 0.0 => Some(false),
            Some(f) if f == 1.0 => Some(true),
            _ => None,
        },
        Value::String(s) => {
            const FALSE: [&str; 6] = ["0", "off", "f", "false", "n", "no"];
            const TRUE: [&str; 6] = ["1", "on", "t", "true", "y", "yes"];
            if FALSE.iter().any(|w| s.eq_ignore_ascii_case(w)) {
                Some(false)
            } else if TRUE.iter().any(|w| s.eq_ignore_ascii_case(w)) {
                Some(true)
            } else {
                None
            }
        }
        _ => None,
    };
    if parsed.is_none() {
        let got = match value {
            Value::String(s) => format!("the string {}", json_quote(s)),
            Value::Number(n) => format!("the number {n}"),
            other => json_kind(other).to_owned(),
        };
        errors.push(FieldError::new(
            path,
            ErrorCode::InvalidValue,
            format!("must be a boolean (true or false), got {got}"),
        ));
    }
    parsed
}

fn missing(path: &str) -> FieldError {
    FieldError::new(path, ErrorCode::MissingField, "required field is missing")
}

fn unknown(path: String, hint: &str) -> FieldError {
    FieldError::new(
        path,
        ErrorCode::UnknownField,
        format!("unknown field; {hint}"),
    )
}

fn wrong_type(path: &str, expected: &str, value: &Value) -> FieldError {
    FieldError::new(
        path,
        ErrorCode::WrongType,
        format!("must be {expected}, got {}", json_kind(value)),
    )
}
