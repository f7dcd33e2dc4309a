//! Well-formed tool arguments, read straight from JSON text into borrowed fields.
//!
//! Most calls a model makes are valid. Reading them into `serde_json::Value` costs a map per
//! object and a string per field; reading them with the [`Scanner`] costs a few small lists,
//! and strings written without escapes are never copied. Invalid calls are judged on the same
//! pass: a broken rule (a length, a character, a count, a duplicate), a missing or unknown
//! field, a value of the wrong type are each noted where they are met, and the call refused
//! with every error the full validator would list, in its order
//! ([`refusals`](super::refusals)). Only what the tree would read differently (a repeated key,
//! text serde_json refuses, a key written with escapes, deep nesting) returns `None`, and the
//! caller judges the input with the full validator. Both apply the same
//! [`rules`](super::rules) and word errors alike ([`field_errors`](super::field_errors)).
//!
//! - [`read`](mod@read): the readers, from the arguments down to an option, on the scanner.

use std::borrow::Cow;

use serde::Serialize;

mod read;

use super::check::{QuestionFacts, ResponseError, check_answers};
use super::render::{ResultText, answers_text};
use super::types::ResponseRef;
use super::types::{HarnessQuestions, Question, QuestionOption};
use super::validate::{TopLevelExtras, validate_args, validate_view};
use crate::error::{ErrorCode, FieldError, ValidationErrors};
use crate::json::node::Node;
use crate::json::scan::Scanner;
use crate::json::scan::first_special;
use crate::json::write::{push_list, push_str};
use read::read_args;

/// Valid tool arguments' normalised `questions` list, borrowing from the arguments' text
/// where it can: what [`validate_args_json`] proves, without
/// copying a valid call's strings. Serialises exactly as [`HarnessQuestions`] does.
#[derive(Serialize)]
#[serde(transparent)]
pub struct CheckedArgs<'a>(Checked<'a>);

#[derive(Serialize)]
#[serde(untagged)]
enum Checked<'a> {
    Borrowed(Vec<QuestionRef<'a>>),
    Owned(HarnessQuestions),
}

impl From<HarnessQuestions> for CheckedArgs<'_> {
    fn from(questions: HarnessQuestions) -> Self {
        CheckedArgs(Checked::Owned(questions))
    }
}

/// Validates tool arguments already read into a [`Node`] (by [`Node::read_at`], after
/// [`check_args_at`] gave up on them), as [`validate_args`] would the same `Value`.
///
/// # Errors
/// Every problem found, each with its path.
pub fn validate_node(
    args: &Node<'_>,
    extras: TopLevelExtras,
) -> Result<HarnessQuestions, ValidationErrors> {
    validate_view(args, extras)
}

impl CheckedArgs<'_> {
    /// The harness's `ask_user_result` for a response read with its strings borrowed: what the
    /// model reads, or the harness's error (the same as [`ask_user_result`] gives for the
    /// owned questions and response).
    ///
    /// # Errors
    /// The first way the response does not fit, as [`check_response`] reports it.
    ///
    /// [`ask_user_result`]: super::ask_user_result
    /// [`check_response`]: super::check_response
    pub fn result_text(&self, response: &ResponseRef<'_>) -> Result<ResultText, ResponseError> {
        let (cancelled, answers) = (response.cancelled, &response.answers);
        match &self.0 {
            Checked::Borrowed(questions) => check_answers(questions, cancelled, answers)?,
            Checked::Owned(questions) => check_answers(questions.questions(), cancelled, answers)?,
        }
        Ok(answers_text(cancelled, answers))
    }

    /// Appends the normalised `questions` list as compact JSON, byte for byte what
    /// `serde_json` writes for it.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let questions = match &self.0 {
            Checked::Borrowed(questions) => questions,
            Checked::Owned(questions) => {
                // Writing into a `Vec` cannot fail.
                let _ = serde_json::to_writer(out, questions);
                return;
            }
        };
        push_list(out, questions, |out, question| {
            out.extend_from_slice(br#"{"header":"#);
            push_text(out, &question.header);
            out.extend_from_slice(br#","question":"#);
            push_text(out, &question.question);
            out.extend_from_slice(br#","options":"#);
            push_list(out, &question.options, |out, option| {
                out.extend_from_slice(br#"{"label":"#);
                push_text(out, &option.label);
                out.extend_from_slice(br#","description":"#);
                match &option.description {
                    Some(description) => push_text(out, description),
                    None => out.extend_from_slice(b"null"),
                }
                out.push(b'}');
            });
            out.extend_from_slice(if question.multi_select {
                br#","multi_select":true}"#
            } else {
                br#","multi_select":false}"#
            });
        });
    }

    /// The questions as the owned, proven type.
    pub fn into_owned(self) -> HarnessQuestions {
        match self.0 {
            Checked::Borrowed(questions) => HarnessQuestions::new_unchecked(
                questions.into_iter().map(QuestionRef::into_owned).collect(),
            ),
            Checked::Owned(questions) => questions,
        }
    }
}

/// Validates tool arguments given as JSON text (an OpenAI-style string tool call).
///
/// Well-formed arguments take a fast path that reads the text straight into borrowed fields;
/// anything unusual is judged by [`validate_args`], which finds every error.
///
/// # Errors
/// `invalid_json` for text that is not JSON, else as [`validate_args`].
pub fn validate_args_json(
    text: &str,
    extras: TopLevelExtras,
) -> Result<HarnessQuestions, ValidationErrors> {
    check_args_json(text, extras).map(CheckedArgs::into_owned)
}

/// Validates tool arguments given as JSON text, as
/// [`validate_args_json`] does, keeping a valid call's strings
/// borrowed.
///
/// # Errors
/// `invalid_json` for text that is not JSON, else as [`validate_args`].
pub fn check_args_json(
    text: &str,
    extras: TopLevelExtras,
) -> Result<CheckedArgs<'_>, ValidationErrors> {
    match read(text, extras) {
        Some(Ok(questions)) => Ok(CheckedArgs(Checked::Borrowed(questions))),
        Some(Err(errors)) => Err(errors),
        None => check_args_json_fully(text, extras),
    }
}

/// [`check_args_json`] without the fast path, for text it already gave up on (through
/// [`check_args_at`]): the full validator, which finds every error.
///
/// # Errors
/// As [`check_args_json`].
pub fn check_args_json_fully(
    text: &str,
    extras: TopLevelExtras,
) -> Result<CheckedArgs<'_>, ValidationErrors> {
    // A borrowed tree where the scanner can build one; serde_json's `Value` where it cannot
    // (and for text that is not JSON, whose error serde_json words).
    if let Some(args) = Node::parse(text) {
        return validate_view(&args, extras)
            .map(|questions| CheckedArgs(Checked::Owned(questions)));
    }
    let args: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        ValidationErrors::single(FieldError::new(
            "",
            ErrorCode::InvalidJson,
            format!("the arguments are not valid JSON: {e}"),
        ))
    })?;
    validate_args(&args, extras).map(|questions| CheckedArgs(Checked::Owned(questions)))
}

/// Appends a string the fast path read as a JSON string. A borrowed one is a slice of JSON
/// text written without escapes, so it holds nothing JSON escapes (no `"`, `\` or control
/// character) and goes out as it came in, unscanned; a decoded one is escaped.
#[expect(
    clippy::ptr_arg,
    reason = "whether the text is borrowed is what counts here"
)]
fn push_text(out: &mut Vec<u8>, text: &Cow<'_, str>) {
    match text {
        Cow::Borrowed(plain) => {
            debug_assert!(first_special(plain.as_bytes()).is_none(), "{plain:?}");
            out.push(b'"');
            out.extend_from_slice(plain.as_bytes());
            out.push(b'"');
        }
        Cow::Owned(decoded) => push_str(out, decoded),
    }
}

/// A valid question, its strings stripped and borrowed where they can be. A borrowed string
/// is always a slice of a JSON string written without escapes ([`Scanner::string`]), which
/// [`push_text`] relies on.
#[derive(Serialize)]
struct QuestionRef<'a> {
    header: Cow<'a, str>,
    question: Cow<'a, str>,
    options: Vec<OptionRef<'a>>,
    multi_select: bool,
}

/// A valid option; serialised exactly as [`QuestionOption`].
#[derive(Serialize)]
struct OptionRef<'a> {
    label: Cow<'a, str>,
    description: Option<Cow<'a, str>>,
}

impl QuestionRef<'_> {
    fn into_owned(self) -> Question {
        Question {
            header: self.header.into_owned(),
            question: self.question.into_owned(),
            options: self
                .options
                .into_iter()
                .map(|o| QuestionOption {
                    label: o.label.into_owned(),
                    description: o.description.map(Cow::into_owned),
                })
                .collect(),
            multi_select: self.multi_select,
        }
    }
}

/// The valid questions of `text`, or every error the full validator would list; `None` when
/// the full validator must decide.
fn read(text: &str, extras: TopLevelExtras) -> Option<Judged<'_>> {
    let mut scanner = Scanner::new(text);
    let judged = read_args(&mut scanner, extras)?;
    scanner.end()?;
    Some(judged)
}

/// Valid questions, or every error the full validator would list, in its order.
type Judged<'a> = Result<Vec<QuestionRef<'a>>, ValidationErrors>;

/// Reads tool arguments (top-level keys other than `questions` refused) where `scanner`
/// stands, inside a larger text: the valid questions, or every error exactly as the full
/// validator lists them. `None` when the full validator must decide (a repeated key, text
/// serde_json refuses...), the scanner then left anywhere.
pub fn check_args_at<'a>(
    scanner: &mut Scanner<'a>,
) -> Option<Result<CheckedArgs<'a>, ValidationErrors>> {
    let judged = read_args(scanner, TopLevelExtras::Forbid)?;
    Some(judged.map(|questions| CheckedArgs(Checked::Borrowed(questions))))
}

impl QuestionFacts for QuestionRef<'_> {
    fn header(&self) -> &str {
        &self.header
    }
    fn labels(&self) -> impl Iterator<Item = &str> {
        self.options.iter().map(|o| &*o.label)
    }
    fn multi_select(&self) -> bool {
        self.multi_select
    }
}
