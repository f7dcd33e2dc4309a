//! `AskUserQuestion`'s questions, validated as the tool's schema does.

use serde_json::{Map, Value};

use super::{MAX_OPTIONS, MAX_QUESTIONS, MAX_TEXT_CHARS, MIN_OPTIONS};
use crate::error::{ErrorCode, FieldError, ValidationErrors, json_kind};
use crate::field_paths::{at_most_chars, index_path, key_path};

/// Questions that passed validation, as sent (keys the schema does not name included).
#[derive(Clone, Debug, PartialEq)]
pub struct ClaudeQuestions {
    /// The questions, each an object as sent.
    pub questions: Vec<Map<String, Value>>,
}

impl ClaudeQuestions {
    /// The question texts, in order.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.questions.iter().map(|q| {
            q.get("question")
                .and_then(Value::as_str)
                .unwrap_or_default()
        })
    }

    /// The option labels of question `i`.
    pub fn labels(&self, i: usize) -> Vec<&str> {
        self.questions
            .get(i)
            .and_then(|q| q.get("options"))
            .and_then(Value::as_array)
            .map(|options| {
                options
                    .iter()
                    .filter_map(|o| o.get("label").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether question `i` takes several options (`multiSelect`, false when absent).
    pub fn multi_select(&self, i: usize) -> bool {
        self.questions
            .get(i)
            .and_then(|q| q.get("multiSelect"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

/// Validates the `questions` of an `AskUserQuestion` input; paths start with `questions`.
///
/// # Errors
/// Every problem found.
pub fn validate_questions(questions: &Value) -> Result<ClaudeQuestions, ValidationErrors> {
    let one = |code, message: String| {
        Err(ValidationErrors::single(FieldError::new(
            "questions",
            code,
            message,
        )))
    };
    let items = match questions {
        Value::Array(items) => items,
        Value::Null => return one(ErrorCode::MissingField, "required: 1 to 4 questions".into()),
        other => {
            return one(
                ErrorCode::WrongType,
                format!("must be a list of questions, got {}", json_kind(other)),
            );
        }
    };
    if items.is_empty() {
        return one(ErrorCode::TooFewItems, "at least 1 question".into());
    }
    if items.len() > MAX_QUESTIONS {
        return one(
            ErrorCode::TooManyItems,
            format!("at most {MAX_QUESTIONS} questions, got {}", items.len()),
        );
    }
    let mut errors = Vec::new();
    let mut valid = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = index_path("questions", i);
        match item {
            Value::Object(question) => {
                let before = errors.len();
                check_question(question, &path, &mut errors);
                if errors.len() == before {
                    valid.push(question.clone());
                }
            }
            other => errors.push(FieldError::new(path, ErrorCode::WrongType, format!(
                "a question must be an object {{question, header, options, multiSelect}}, got {}",
                json_kind(other)
            ))),
        }
    }
    for (i, question) in valid.iter().enumerate() {
        if valid[..i]
            .iter()
            .any(|q| q.get("question") == question.get("question"))
        {
            errors.push(FieldError::new(
                key_path(&index_path("questions", i), "question"),
                ErrorCode::DuplicateHeader,
                "question texts must be unique: answers are keyed by them",
            ));
        }
    }
    match ValidationErrors::from_vec(errors) {
        Some(errors) => Err(errors),
        None => Ok(ClaudeQuestions { questions: valid }),
    }
}

fn text<'v>(
    object: &'v Map<String, Value>,
    key: &str,
    path: &str,
    max: usize,
    required: bool,
    errors: &mut Vec<FieldError>,
) -> Option<&'v str> {
    let at = key_path(path, key);
    match object.get(key) {
        Some(Value::String(text)) => match at_most_chars(text, max, &at) {
            Ok(()) => Some(text),
            Err(e) => {
                errors.push(e);
                None
            }
        },
        None if !required => None,
        None => {
            errors.push(FieldError::new(
                at,
                ErrorCode::MissingField,
                "required: a string",
            ));
            None
        }
        Some(other) => {
            errors.push(FieldError::new(
                at,
                ErrorCode::WrongType,
                format!("must be a string, got {}", json_kind(other)),
            ));
            None
        }
    }
}

fn check_question(question: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    text(question, "question", path, MAX_TEXT_CHARS, true, errors);
    // The tool's schema asks for a short header but does not hold it to its length.
    text(question, "header", path, MAX_TEXT_CHARS, true, errors);
    match question.get("kind") {
        None | Some(Value::Null) => {}
        Some(Value::String(kind)) if kind == "choice" => {}
        Some(other) => errors.push(FieldError::new(
            key_path(path, "kind"),
            ErrorCode::InvalidValue,
            format!(
                "askgate asks choice questions only (the tool's extended {other} questions are \
                 not supported)"
            ),
        )),
    }
    match question.get("multiSelect") {
        // The schema's default.
        None | Some(Value::Bool(_)) => {}
        Some(other) => errors.push(FieldError::new(
            key_path(path, "multiSelect"),
            ErrorCode::WrongType,
            format!("must be true or false, got {}", json_kind(other)),
        )),
    }
    let options_path = key_path(path, "options");
    let options = match question.get("options") {
        Some(Value::Array(options)) => options,
        None => {
            return errors.push(FieldError::new(
                options_path,
                ErrorCode::MissingField,
                "required: 2 to 4 options",
            ));
        }
        Some(other) => {
            return errors.push(FieldError::new(
                options_path,
                ErrorCode::WrongType,
                format!("must be a list of options, got {}", json_kind(other)),
            ));
        }
    };
    if options.len() < MIN_OPTIONS {
        return errors.push(FieldError::new(
            options_path,
            ErrorCode::TooFewItems,
            format!("at least {MIN_OPTIONS} options, got {}", options.len()),
        ));
    }
    if options.len() > MAX_OPTIONS {
        return errors.push(FieldError::new(
            options_path,
            ErrorCode::TooManyItems,
            format!("at most {MAX_OPTIONS} options, got {}", options.len()),
        ));
    }
    let mut labels: Vec<&str> = Vec::with_capacity(options.len());
    for (i, option) in options.iter().enumerate() {
        let at = index_path(&options_path, i);
        let Value::Object(option) = option else {
            errors.push(FieldError::new(
                at,
                ErrorCode::WrongType,
                "an option must be an object {label, description}",
            ));
            continue;
        };
        if let Some(label) = text(option, "label", &at, MAX_TEXT_CHARS, true, errors) {
            if labels.contains(&label) {
                errors.push(FieldError::new(
                    key_path(&at, "label"),
                    ErrorCode::DuplicateLabel,
                    "option labels must be unique within a question",
                ));
            }
            labels.push(label);
        }
        // Required by the tool's first option schema, optional in its second: either passes.
        text(option, "description", &at, MAX_TEXT_CHARS, false, errors);
        text(option, "preview", &at, MAX_TEXT_CHARS, false, errors);
    }
}
