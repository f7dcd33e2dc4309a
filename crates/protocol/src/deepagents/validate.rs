//! The `ask_user` arguments, judged exactly as deepagents-code 0.2.2 judges a model's call.
//!
//! deepagents validates with pydantic TypedDicts (`Question`, `Choice`) and three
//! validators. askgate reproduces the same checks in the same order, so it reports the same
//! errors pydantic does, masking included:
//!
//! 1. `questions`: present, a list. Each item an object whose fields are read in the order
//!    `question`, `type`, `choices`, `required`:
//!    - `question`: a string (never coerced) that is not blank by Python's `str.strip`
//!      (White_Space plus U+001C..U+001F). Not stripped, no length limit, no character rule:
//!      lone surrogates, ESC and zero-width characters pass.
//!    - `type`: exactly `text`, `multiple_choice` or `multi_select`.
//!    - `choices` (optional): a list of objects, each with a string `value` not blank by
//!      Python's `str.strip`. Duplicates and single choices are fine.
//!    - `required` (optional): strictly a JSON boolean.
//! 2. Only for a question whose fields all passed, the cross-field rule: a choice type needs
//!    a non-empty `choices`; a `text` question must not have a non-empty one (`[]` is kept).
//! 3. Only when every question passed: the list must not be empty.
//!
//! Unknown keys are dropped silently at every level. Under [`Bounds::Gateway`] askgate's own
//! limits are checked as well, independently of the above, and reported alongside.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::limits::{Bounds, MAX_CHOICES, MAX_QUESTIONS, MAX_TEXT_CHARS};
use super::pyrepr::py_str_repr;
use super::rejection::{Loc, Problem, RequestError, RequestErrors};
use super::types::{Choice, DeepagentsQuestions, Question, QuestionType};
use crate::error::json_kind;
use crate::unicode::py_is_blank;

/// Validates tool arguments `{"questions": [...]}`; other top-level keys are ignored, as
/// LangChain ignores them.
///
/// # Errors
/// Every problem found, in pydantic's order.
pub fn validate_args(args: &Value, bounds: Bounds) -> Result<DeepagentsQuestions, RequestErrors> {
    let mut errors = Vec::new();
    let questions = match args {
        Value::Object(object) => match object.get("questions") {
            Some(questions) => check_questions(questions, bounds, &mut errors),
            None => {
                errors.push(error(vec![Loc::Key("questions")], Problem::Missing));
                None
            }
        },
        other => {
            errors.push(error(Vec::new(), Problem::NotAnObject(json_kind(other))));
            None
        }
    };
    finish(questions, errors)
}

/// Validates the `questions` list alone; locations start at `questions`.
///
/// # Errors
/// Every problem found, in pydantic's order.
pub fn validate_questions(
    questions: &Value,
    bounds: Bounds,
) -> Result<DeepagentsQuestions, RequestErrors> {
    let mut errors = Vec::new();
    let checked = check_questions(questions, bounds, &mut errors);
    finish(checked, errors)
}

fn finish(
    questions: Option<Vec<Question>>,
    errors: Vec<RequestError>,
) -> Result<DeepagentsQuestions, RequestErrors> {
    match (RequestErrors::from_vec(errors), questions) {
        (None, Some(questions)) => Ok(DeepagentsQuestions::new_unchecked(questions)),
        (Some(errors), _) => Err(errors),
        // Unreachable: a list that failed always leaves an error behind. Kept total anyway.
        (None, None) => Err(RequestErrors::single(error(
            vec![Loc::Key("questions")],
            Problem::NoQuestions,
        ))),
    }
}

fn error(loc: Vec<Loc>, problem: Problem) -> RequestError {
    RequestError { loc, problem }
}

/// Whether any error deepagents itself reports was added since `before`.
fn framework_failed(errors: &[RequestError], before: usize) -> bool {
    errors[before..].iter().any(RequestError::is_framework)
}

fn check_questions(
    value: &Value,
    bounds: Bounds,
    errors: &mut Vec<RequestError>,
) -> Option<Vec<Question>> {
    let Some(items) = value.as_array() else {
        errors.push(error(
            vec![Loc::Key("questions")],
            Problem::NotAList(json_kind(value)),
        ));
        return None;
    };
    let before = errors.len();
    let mut questions = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if let Some(question) = check_question(i, item, bounds, errors) {
            questions.push(question);
        }
    }
    // `_validate_questions` runs only once every item validated.
    if items.is_empty() && !framework_failed(errors, before) {
        errors.push(error(vec![Loc::Key("questions")], Problem::NoQuestions));
    }
    if bounds.limited() && items.len() > MAX_QUESTIONS {
        errors.push(error(
            vec![Loc::Key("questions")],
            Problem::TooManyQuestions(items.len()),
        ));
    }
    (errors.len() == before).then_some(questions)
}

fn question_loc(i: usize, key: Option<&'static str>) -> Vec<Loc> {
    let mut loc = vec![Loc::Key("questions"), Loc::Index(i)];
    loc.extend(key.map(Loc::Key));
    loc
}

/// The question if deepagents (and the bounds) accept it; its errors otherwise.
fn check_question(
    i: usize,
    value: &Value,
    bounds: Bounds,
    errors: &mut Vec<RequestError>,
) -> Option<Question> {
    let Some(object) = value.as_object() else {
        errors.push(error(
            question_loc(i, None),
            Problem::NotAnObject(json_kind(value)),
        ));
        return None;
    };
    let before = errors.len();
    let text = question_text(i, object, bounds, errors);
    let kind = match object.get("type") {
        None => {
            errors.push(error(question_loc(i, Some("type")), Problem::Missing));
            None
        }
        Some(value) => {
            let kind = value.as_str().and_then(QuestionType::parse);
            if kind.is_none() {
                errors.push(error(
                    question_loc(i, Some("type")),
                    Problem::UnknownType(value.clone()),
                ));
            }
            kind
        }
    };
    let choices = match object.get("choices") {
        None => Some(None),
        Some(value) => check_choices(i, value, bounds, errors).map(Some),
    };
    let required = match object.get("required") {
        None => Some(None),
        Some(Value::Bool(b)) => Some(Some(*b)),
        Some(other) => {
            errors.push(error(
                question_loc(i, Some("required")),
                Problem::NotABool(other.clone()),
            ));
            None
        }
    };
    if framework_failed(errors, before) {
        return None;
    }
    let (Some(text), Some(kind), Some(choices), Some(required)) = (text, kind, choices, required)
    else {
        return None;
    };
    // `_validate_question`: only for a question whose fields all validated.
    let has_choices = choices.as_ref().is_some_and(|c| !c.is_empty());
    if kind.has_choices() && !has_choices {
        errors.push(error(
            question_loc(i, None),
            Problem::ChoicesRequired(kind, py_str_repr(text)),
        ));
    } else if !kind.has_choices() && has_choices {
        errors.push(error(
            question_loc(i, None),
            Problem::ChoicesForbidden(py_str_repr(text)),
        ));
    }
    (errors.len() == before).then(|| Question {
        question: text.to_owned(),
        kind,
        choices,
        required,
    })
}

fn question_text<'v>(
    i: usize,
    object: &'v Map<String, Value>,
    bounds: Bounds,
    errors: &mut Vec<RequestError>,
) -> Option<&'v str> {
    let loc = || question_loc(i, Some("question"));
    match object.get("question") {
        None => {
            errors.push(error(loc(), Problem::Missing));
            None
        }
        Some(Value::String(text)) => {
            if py_is_blank(text) {
                errors.push(error(loc(), Problem::BlankQuestion));
                return None;
            }
            check_length(text, bounds, loc, errors);
            Some(text)
        }
        Some(other) => {
            errors.push(error(loc(), Problem::NotAString(json_kind(other))));
            None
        }
    }
}

fn check_length(
    text: &str,
    bounds: Bounds,
    loc: impl FnOnce() -> Vec<Loc>,
    errors: &mut Vec<RequestError>,
) {
    if bounds.limited() && text.len() > MAX_TEXT_CHARS {
        let chars = text.chars().count();
        if chars > MAX_TEXT_CHARS {
            errors.push(error(loc(), Problem::TooLong(chars)));
        }
    }
}

fn check_choices(
    i: usize,
    value: &Value,
    bounds: Bounds,
    errors: &mut Vec<RequestError>,
) -> Option<Vec<Choice>> {
    let loc = |j: Option<usize>, key: Option<&'static str>| {
        let mut loc = question_loc(i, Some("choices"));
        loc.extend(j.map(Loc::Index));
        loc.extend(key.map(Loc::Key));
        loc
    };
    let Some(items) = value.as_array() else {
        errors.push(error(loc(None, None), Problem::NotAList(json_kind(value))));
        return None;
    };
    let before = errors.len();
    let mut choices = Vec::with_capacity(items.len());
    for (j, item) in items.iter().enumerate() {
        let Some(object) = item.as_object() else {
            errors.push(error(
                loc(Some(j), None),
                Problem::NotAnObject(json_kind(item)),
            ));
            continue;
        };
        match object.get("value") {
            None => errors.push(error(loc(Some(j), Some("value")), Problem::Missing)),
            Some(Value::String(text)) if py_is_blank(text) => {
                // `{choice!r}` quotes the choice after unknown keys were dropped.
                let repr = format!("{{'value': {}}}", py_str_repr(text));
                errors.push(error(loc(Some(j), None), Problem::BlankChoice(repr)));
            }
            Some(Value::String(text)) => {
                check_length(text, bounds, || loc(Some(j), Some("value")), errors);
                choices.push(Choice {
                    value: text.clone(),
                });
            }
            Some(other) => errors.push(error(
                loc(Some(j), Some("value")),
                Problem::NotAString(json_kind(other)),
            )),
        }
    }
    if bounds.limited() && items.len() > MAX_CHOICES {
        errors.push(error(loc(None, None), Problem::TooManyChoices(items.len())));
    }
    // askgate's bounds do not stop deepagents' own cross-field rule from being checked.
    (!framework_failed(errors, before)).then_some(choices)
}

/// Deserialising validates: a question set read from anywhere is one the framework takes.
impl<'de> Deserialize<'de> for DeepagentsQuestions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(deserializer)?;
        validate_questions(&raw, Bounds::Framework)
            .map_err(|e| serde::de::Error::custom(e.field_errors()))
    }
}
