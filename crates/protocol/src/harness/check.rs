//! `check_response`: does an answer fit its request? The harness's checks, in its order, with
//! its exact messages, so a Python host reads the very text pydantic-ai-harness would raise.

use super::types::{AskUserResponse, HarnessQuestions, Question};
use crate::error::{ErrorCode, FieldError, Path};
use crate::unicode::{first_forbidden, push_repr, py_is_blank, py_list_repr};

/// The first way a response does not fit its request: the harness's `ValueError` text, and
/// where in the response the problem is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ResponseError {
    /// Where: `answers[1].selected`, `answers`, ...
    pub path: String,
    /// The harness's message, byte for byte.
    pub message: String,
}

impl ResponseError {
    fn at(path: String, message: impl Into<String>) -> Self {
        ResponseError {
            path,
            message: message.into(),
        }
    }

    /// As a [`FieldError`] with code `invalid_answer`.
    pub fn into_field_error(self) -> FieldError {
        FieldError::new(self.path, ErrorCode::InvalidAnswer, self.message)
    }
}

/// `answers[answer].field`, written once, for an error.
fn answer_path(answer: usize, field: &str) -> String {
    Path::Root.key("answers").index(answer).key(field).render()
}

/// `start` then `repr(text)` then `end`.
fn with_repr(start: &str, text: &str, end: &str) -> String {
    let mut message = String::with_capacity(start.len() + text.len() + end.len() + 2);
    message.push_str(start);
    push_repr(text, &mut message);
    message.push_str(end);
    message
}

/// Checks `response` against `request` exactly as the harness's `check_response` does.
///
/// # Errors
/// The first failure, with the harness's message.
pub fn check_response(
    request: &HarnessQuestions,
    response: &AskUserResponse,
) -> Result<(), ResponseError> {
    let answers = &response.answers;
    if response.cancelled {
        if !answers.is_empty() {
            return Err(ResponseError::at(
                "answers".into(),
                "a cancelled response carries no answers",
            ));
        }
        return Ok(());
    }
    // Headers are unique, so a list of the still-unanswered questions is the harness's dict.
    let mut pending: Vec<&Question> = request.questions().iter().collect();
    for (i, answer) in answers.iter().enumerate() {
        let Some(at) = pending.iter().position(|q| q.header == answer.header) else {
            return Err(ResponseError::at(
                answer_path(i, "header"),
                with_repr(
                    "answer for unknown or repeated question ",
                    &answer.header,
                    "",
                ),
            ));
        };
        let question = pending.swap_remove(at);
        if let Some(custom) = &answer.custom_answer {
            check_custom(i, !answer.selected.is_empty(), custom)?;
        } else {
            check_picks(i, question, &answer.selected)?;
        }
    }
    if !pending.is_empty() {
        let mut headers: Vec<&str> = pending.iter().map(|q| q.header.as_str()).collect();
        headers.sort_unstable();
        return Err(ResponseError::at(
            "answers".into(),
            format!("unanswered questions: {}", py_list_repr(&headers)),
        ));
    }
    Ok(())
}

fn check_custom(answer: usize, also_selected: bool, custom: &str) -> Result<(), ResponseError> {
    let error = |message: &str| {
        Err(ResponseError::at(
            answer_path(answer, "custom_answer"),
            message,
        ))
    };
    if also_selected {
        return error("a custom answer cannot also select options");
    }
    // Python's `str.strip`, which also counts U+001C..U+001F as whitespace.
    if py_is_blank(custom) {
        return error("a custom answer must not be blank");
    }
    // The printable rule, on the unstripped text, newlines allowed.
    if first_forbidden(custom, true).is_some() {
        return error("must not contain control characters or invisible formatting");
    }
    Ok(())
}

fn check_picks(
    answer: usize,
    question: &Question,
    selected: &[String],
) -> Result<(), ResponseError> {
    let error = |problem: &str| {
        let mut message = with_repr("answer for ", &question.header, " ");
        message.push_str(problem);
        Err(ResponseError::at(answer_path(answer, "selected"), message))
    };
    let offered = |label: &str| question.options.iter().any(|o| o.label == label);
    if !selected.iter().all(|label| offered(label)) {
        let unknown: Vec<&str> = selected
            .iter()
            .map(String::as_str)
            .filter(|label| !offered(label))
            .collect();
        let listed = py_list_repr(&unknown);
        return error(&format!("picked options it does not offer: {listed}"));
    }
    if selected.is_empty() {
        return error("picked nothing");
    }
    // Every pick is one of at most six labels: more picks than labels repeat one.
    let repeated = (1..selected.len()).any(|j| selected[..j].contains(&selected[j]));
    if repeated {
        return error("picked the same option twice");
    }
    if selected.len() > 1 && !question.multi_select {
        return error("picked several options but it is single-select");
    }
    Ok(())
}
