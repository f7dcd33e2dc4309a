//! Why a deepagents request was refused, told two ways: as deepagents tells the model (the
//! pydantic error list and LangGraph `ToolNode`'s error message), and as askgate tells an
//! agent (a [`FieldError`] with a path like `questions[2].choices[1].value` and a code).

use std::fmt;

use serde_json::{Value, json};

use super::pyrepr::py_repr;
use super::types::{QuestionType, TOOL_NAME};
use crate::error::{ErrorCode, FieldError, ValidationErrors, field_path, index_path};

/// One step into the arguments: an object key or a list index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Loc {
    /// A field of an object.
    Key(&'static str),
    /// An item of a list.
    Index(usize),
}

/// What is wrong with a value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// A required field is absent (`missing`).
    Missing,
    /// Not a string (`string_type`); what it is instead.
    NotAString(&'static str),
    /// Not a list (`list_type`); what it is instead.
    NotAList(&'static str),
    /// Not an object (`dict_type`); what it is instead.
    NotAnObject(&'static str),
    /// `required` is not a JSON boolean (`bool_type`, strict); the value.
    NotABool(Value),
    /// `type` is not one of the three names (`literal_error`); the value.
    UnknownType(Value),
    /// The question text is blank by Python's `str.strip` (`value_error`).
    BlankQuestion,
    /// A choice value is blank by Python's `str.strip` (`value_error`); Python's repr of the
    /// choice, as deepagents quotes it.
    BlankChoice(String),
    /// `questions` is an empty list (`value_error`).
    NoQuestions,
    /// A choice question without choices (`value_error`); its type and the repr of its text.
    ChoicesRequired(QuestionType, String),
    /// A text question with choices (`value_error`); the repr of its text.
    ChoicesForbidden(String),
    /// askgate's bound: more questions than [`MAX_QUESTIONS`](super::limits::MAX_QUESTIONS).
    TooManyQuestions(usize),
    /// askgate's bound: more choices than [`MAX_CHOICES`](super::limits::MAX_CHOICES).
    TooManyChoices(usize),
    /// askgate's bound: text longer than [`MAX_TEXT_CHARS`](super::limits::MAX_TEXT_CHARS).
    TooLong(usize),
}

/// One problem and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestError {
    /// Where, as deepagents locates it (`questions`, 0, `choices`, 1).
    pub loc: Vec<Loc>,
    /// What.
    pub problem: Problem,
}

impl RequestError {
    /// Whether deepagents itself reports this problem (askgate's bounds are not its own).
    pub fn is_framework(&self) -> bool {
        !matches!(
            self.problem,
            Problem::TooManyQuestions(_) | Problem::TooManyChoices(_) | Problem::TooLong(_)
        )
    }

    /// pydantic's error type (`missing`, `value_error`...); `None` for askgate's bounds.
    pub fn framework_type(&self) -> Option<&'static str> {
        Some(match self.problem {
            Problem::Missing => "missing",
            Problem::NotAString(_) => "string_type",
            Problem::NotAList(_) => "list_type",
            Problem::NotAnObject(_) => "dict_type",
            Problem::NotABool(_) => "bool_type",
            Problem::UnknownType(_) => "literal_error",
            Problem::BlankQuestion
            | Problem::BlankChoice(_)
            | Problem::NoQuestions
            | Problem::ChoicesRequired(..)
            | Problem::ChoicesForbidden(_) => "value_error",
            Problem::TooManyQuestions(_) | Problem::TooManyChoices(_) | Problem::TooLong(_) => {
                return None;
            }
        })
    }

    /// pydantic's message, byte for byte; `None` for askgate's bounds.
    pub fn framework_message(&self) -> Option<String> {
        Some(match &self.problem {
            Problem::Missing => "Field required".to_owned(),
            Problem::NotAString(_) => "Input should be a valid string".to_owned(),
            Problem::NotAList(_) => "Input should be a valid list".to_owned(),
            Problem::NotAnObject(_) => "Input should be a valid dictionary".to_owned(),
            Problem::NotABool(_) => "Input should be a valid boolean".to_owned(),
            Problem::UnknownType(_) => {
                "Input should be 'text', 'multiple_choice' or 'multi_select'".to_owned()
            }
            Problem::BlankQuestion => "Value error, question text must not be blank".to_owned(),
            Problem::BlankChoice(choice) => {
                format!("Value error, choice has a blank 'value': {choice}")
            }
            Problem::NoQuestions => {
                "Value error, ask_user requires at least one question".to_owned()
            }
            Problem::ChoicesRequired(kind, question) => format!(
                "Value error, {} question {question} requires a non-empty 'choices' list",
                kind.as_str()
            ),
            Problem::ChoicesForbidden(question) => {
                format!("Value error, text question {question} must not define 'choices'")
            }
            Problem::TooManyQuestions(_) | Problem::TooManyChoices(_) | Problem::TooLong(_) => {
                return None;
            }
        })
    }

    /// The dotted location `ToolNode` prints: `questions.0.choices.1`.
    pub fn dotted_loc(&self) -> String {
        let parts: Vec<String> = self
            .loc
            .iter()
            .map(|l| match l {
                Loc::Key(k) => (*k).to_owned(),
                Loc::Index(i) => i.to_string(),
            })
            .collect();
        parts.join(".")
    }

    /// askgate's path: `questions[0].choices[1].value`. A blank choice is reported at its
    /// `value`, which is what is blank.
    pub fn path(&self) -> String {
        let mut path = String::new();
        for step in &self.loc {
            path = match step {
                Loc::Key(k) => field_path(&path, k),
                Loc::Index(i) => index_path(&path, *i),
            };
        }
        match self.problem {
            Problem::BlankChoice(_) => field_path(&path, "value"),
            Problem::ChoicesRequired(..) | Problem::ChoicesForbidden(_) => {
                field_path(&path, "choices")
            }
            _ => path,
        }
    }

    /// As askgate reports it to an agent: path, stable code, and a message in askgate's words.
    pub fn to_field_error(&self) -> FieldError {
        let (code, message) = match &self.problem {
            Problem::Missing => (ErrorCode::MissingField, "required field is missing".into()),
            Problem::NotAString(got) => (ErrorCode::WrongType, format!("must be a string, got {got}")),
            Problem::NotAList(got) => (ErrorCode::WrongType, format!("must be a list, got {got}")),
            Problem::NotAnObject(got) => {
                (ErrorCode::WrongType, format!("must be an object, got {got}"))
            }
            Problem::NotABool(value) => (
                ErrorCode::WrongType,
                format!(
                    "must be true or false (a JSON boolean; strings and numbers are not read as one), got {value}"
                ),
            ),
            Problem::UnknownType(value) => (
                ErrorCode::InvalidValue,
                format!("must be \"text\", \"multiple_choice\" or \"multi_select\", got {value}"),
            ),
            Problem::BlankQuestion | Problem::BlankChoice(_) => {
                (ErrorCode::Blank, "must not be empty or only whitespace".into())
            }
            Problem::NoQuestions => (
                ErrorCode::TooFewItems,
                "must hold at least 1 question, got none".into(),
            ),
            Problem::ChoicesRequired(kind, _) => (
                ErrorCode::TooFewItems,
                format!("a {} question needs a non-empty list of choices", kind.as_str()),
            ),
            Problem::ChoicesForbidden(_) => (
                ErrorCode::InvalidValue,
                "a text question must not offer choices (drop them, or make it multiple_choice or multi_select)".into(),
            ),
            Problem::TooManyQuestions(n) => (
                ErrorCode::TooManyItems,
                format!(
                    "askgate forwards at most {} questions per ask, got {n}",
                    super::limits::MAX_QUESTIONS
                ),
            ),
            Problem::TooManyChoices(n) => (
                ErrorCode::TooManyItems,
                format!(
                    "askgate forwards at most {} choices per question, got {n}",
                    super::limits::MAX_CHOICES
                ),
            ),
            Problem::TooLong(n) => (
                ErrorCode::TooLong,
                format!(
                    "askgate forwards at most {} characters per text, got {n}",
                    super::limits::MAX_TEXT_CHARS
                ),
            ),
        };
        FieldError::new(self.path(), code, message)
    }
}

/// Every problem found in one request; never empty.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct RequestErrors(Vec<RequestError>);

impl RequestErrors {
    pub(super) fn from_vec(errors: Vec<RequestError>) -> Option<Self> {
        (!errors.is_empty()).then_some(RequestErrors(errors))
    }

    pub(super) fn single(error: RequestError) -> Self {
        RequestErrors(vec![error])
    }

    /// The problems, deepagents' own in pydantic's order, askgate's bounds among them.
    pub fn errors(&self) -> &[RequestError] {
        &self.0
    }

    /// Whether deepagents itself would refuse the request (not only askgate's bounds).
    pub fn framework_refuses(&self) -> bool {
        self.0.iter().any(RequestError::is_framework)
    }

    /// The errors deepagents reports, as `[{"type", "loc", "msg"}]` (what `ToolNode` keeps
    /// after filtering out injected arguments).
    pub fn framework_errors(&self) -> Value {
        let items: Vec<Value> = self
            .0
            .iter()
            .filter_map(|e| {
                let loc: Vec<Value> = e
                    .loc
                    .iter()
                    .map(|l| match l {
                        Loc::Key(k) => json!(k),
                        Loc::Index(i) => json!(i),
                    })
                    .collect();
                Some(json!({
                    "type": e.framework_type()?,
                    "loc": loc,
                    "msg": e.framework_message()?,
                }))
            })
            .collect();
        Value::Array(items)
    }

    /// The content of the error `ToolMessage` the model receives from LangGraph's `ToolNode`
    /// for these arguments: the raw arguments as a Python dict repr, then one `loc: msg`
    /// line per error (only the first indented by one space), then the retry request.
    pub fn tool_message(&self, raw_args: &Value) -> String {
        let lines: Vec<String> = self
            .0
            .iter()
            .filter_map(|e| Some(format!("{}: {}", e.dotted_loc(), e.framework_message()?)))
            .collect();
        let detail = if lines.is_empty() {
            self.field_errors().to_string()
        } else {
            lines.join("\n")
        };
        format!(
            "Error invoking tool '{TOOL_NAME}' with kwargs {} with error:\n {detail}\n Please fix the error and try again.",
            py_repr(raw_args)
        )
    }

    /// As askgate reports them to an agent.
    pub fn field_errors(&self) -> ValidationErrors {
        let errors: Vec<FieldError> = self.0.iter().map(RequestError::to_field_error).collect();
        ValidationErrors::from_vec(errors).unwrap_or_else(|| {
            ValidationErrors::single(FieldError::new(
                "questions",
                ErrorCode::InvalidValue,
                "the questions could not be validated",
            ))
        })
    }
}

impl fmt::Display for RequestErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.field_errors(), f)
    }
}
