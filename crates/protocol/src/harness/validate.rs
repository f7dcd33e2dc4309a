//! The `ask_user_question` arguments, judged exactly as pydantic-ai judges a model's call.
//!
//! The verdict matches pydantic-ai-harness 0.62 on every input (the conformance vectors and a
//! differential test against the real package check it). The error list does not copy
//! pydantic's: askgate reports every problem it can find, in its own words, with a path such
//! as `questions[2].options[1].label`, where pydantic stops early or masks errors.
//!
//! Each string goes through the harness's pipeline: JSON string (no coercion) → strip by the
//! Unicode White_Space property (`str::trim`, as pydantic-core does) → length in code points →
//! the printable rule (Unicode 14.0 categories; `\n` only in `question` and `description`).

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::field_errors::{
    arguments_not_an_object, duplicate_header, duplicate_label, missing, not_a_bool, options_count,
    text_error, too_few_questions, too_many_questions, unknown, wrong_type,
};
use super::limits::{MAX_OPTIONS, MAX_QUESTIONS, MIN_OPTIONS, MIN_QUESTIONS};
use super::rules::{TextRule, check_text, folded_duplicates, lax_bool};
use super::types::{HarnessQuestions, Question, QuestionOption};
use crate::error::{ErrorCode, FieldError, Path, ValidationErrors};

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
        return Err(ValidationErrors::single(arguments_not_an_object(args)));
    };
    let mut errors = Vec::new();
    let root = Path::Root;
    let questions = match object.get("questions") {
        Some(value) => check_questions(&root.key("questions"), value, &mut errors),
        None => {
            errors.push(missing(&root.key("questions")));
            None
        }
    };
    if extras == TopLevelExtras::Forbid {
        for key in object.keys().filter(|&k| k != "questions") {
            errors.push(unknown(
                &root.key(key),
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
    let root = Path::Root;
    let checked = check_questions(&root.key("questions"), questions, &mut errors);
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

fn check_questions(
    path: &Path<'_>,
    value: &Value,
    errors: &mut Vec<FieldError>,
) -> Option<Vec<Question>> {
    let Some(items) = value.as_array() else {
        errors.push(wrong_type(path, "a list of questions", value));
        return None;
    };
    let mut ok = true;
    if items.len() < MIN_QUESTIONS {
        errors.push(too_few_questions(path));
        ok = false;
    } else if items.len() > MAX_QUESTIONS {
        errors.push(too_many_questions(path, items.len()));
        ok = false;
    }
    let mut questions = Vec::with_capacity(items.len());
    // Every header that validated, valid question or not, so one pass reports every duplicate.
    let mut headers: Vec<(usize, &str)> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let (question, header) = check_question(&path.index(i), item, errors);
        if let Some(header) = header {
            headers.push((i, header));
        }
        match question {
            Some(question) => questions.push(question),
            None => ok = false,
        }
    }
    let duplicates = folded_duplicates(&headers);
    for &(later, earlier) in &duplicates {
        errors.push(duplicate_header(path, later, earlier, &headers));
    }
    (ok && duplicates.is_empty()).then_some(questions)
}

/// The question if it is valid, and its stripped header if that field alone is.
fn check_question<'a>(
    path: &Path<'_>,
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
    let header = field_text(object, path, "header", TextRule::HEADER, true, errors);
    let question = field_text(object, path, "question", TextRule::QUESTION, true, errors);
    let options = match object.get("options") {
        Some(v) => check_options(&path.key("options"), v, errors),
        None => {
            errors.push(missing(&path.key("options")));
            None
        }
    };
    let multi_select = match object.get("multi_select") {
        None => Some(false),
        Some(v) => {
            let parsed = lax_bool(v);
            if parsed.is_none() {
                errors.push(not_a_bool(&path.key("multi_select"), v));
            }
            parsed
        }
    };
    for key in object.keys() {
        if !matches!(
            key.as_str(),
            "header" | "question" | "options" | "multi_select"
        ) {
            errors.push(unknown(
                &path.key(key),
                "a question has only header, question, options and multi_select",
            ));
        }
    }
    match (header, question, options, multi_select) {
        // Any error at all means no questions are returned: build them only while none is.
        (Some(header), Some(question), Some(options), Some(multi_select)) if errors.is_empty() => {
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
    path: &Path<'_>,
    value: &Value,
    errors: &mut Vec<FieldError>,
) -> Option<Vec<QuestionOption>> {
    let Some(items) = value.as_array() else {
        errors.push(wrong_type(path, "a list of options", value));
        return None;
    };
    if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&items.len()) {
        errors.push(options_count(path, items.len()));
    }
    let mut options = Vec::with_capacity(items.len());
    let mut labels: Vec<(usize, &str)> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = path.index(i);
        let Some(object) = item.as_object() else {
            errors.push(wrong_type(
                &item_path,
                "an object with a label and an optional description",
                item,
            ));
            continue;
        };
        let label = field_text(object, &item_path, "label", TextRule::LABEL, true, errors);
        let description = match object.get("description") {
            None => Some(None),
            Some(value) if value.is_null() => Some(None),
            Some(_) => field_text(
                object,
                &item_path,
                "description",
                TextRule::DESCRIPTION,
                false,
                errors,
            )
            .map(Some),
        };
        for key in object.keys() {
            if !matches!(key.as_str(), "label" | "description") {
                errors.push(unknown(
                    &item_path.key(key),
                    "an option has only label and description",
                ));
            }
        }
        if let Some(label) = label {
            labels.push((i, label));
            if let Some(description) = description.filter(|_| errors.is_empty()) {
                options.push(QuestionOption {
                    label: label.to_owned(),
                    description: description.map(str::to_owned),
                });
            }
        }
    }
    let duplicates = folded_duplicates(&labels);
    for &(later, earlier) in &duplicates {
        errors.push(duplicate_label(path, later, earlier, &labels));
    }
    errors.is_empty().then_some(options)
}

/// The stripped text of `object[key]`, or the errors that keep it from being one.
fn field_text<'v>(
    object: &'v Map<String, Value>,
    parent: &Path<'_>,
    key: &str,
    rule: TextRule,
    required: bool,
    errors: &mut Vec<FieldError>,
) -> Option<&'v str> {
    let path = parent.key(key);
    let Some(value) = object.get(key) else {
        if required {
            errors.push(missing(&path));
        }
        return None;
    };
    let Some(raw) = value.as_str() else {
        errors.push(wrong_type(&path, "a string", value));
        return None;
    };
    match check_text(raw, rule) {
        Ok(stripped) => Some(stripped),
        Err(problem) => {
            errors.push(text_error(&path, rule, problem));
            None
        }
    }
}

/// Deserialising validates: a question set read from anywhere is one the framework takes.
impl<'de> Deserialize<'de> for HarnessQuestions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(deserializer)?;
        validate_questions(&raw).map_err(serde::de::Error::custom)
    }
}
