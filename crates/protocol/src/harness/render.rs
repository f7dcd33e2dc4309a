//! `ask_user_result`: what the model reads once a request is resolved.

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::check::{ResponseError, check_response};
use super::types::{AskUserResponse, HarnessQuestions};

/// The tool result when the user declines (the harness's `DECLINED`).
pub const DECLINED: &str = "The user declined to answer. Continue without the answer, or ask differently if it is essential.";

/// The tool result when no answer came in time (the harness's `TIMED_OUT`).
pub const TIMED_OUT: &str = "The user did not answer in time. Continue without the answer: make a reasonable choice and say which one you made.";

/// The value `ask_user_result` returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolResult {
    /// `{header: [labels] or [custom answer]}`, keys in the order of the answers.
    Answers(Vec<(String, Vec<String>)>),
    /// A sentence: [`DECLINED`] or [`TIMED_OUT`].
    Text(&'static str),
}

impl ToolResult {
    /// The result of a request that ran out of time.
    pub fn timed_out() -> Self {
        ToolResult::Text(TIMED_OUT)
    }

    /// The text the model receives: a sentence as is, answers as compact JSON (no spaces,
    /// non-ASCII unescaped), as pydantic-ai's `model_response_str` writes it.
    pub fn model_text(&self) -> String {
        match self {
            ToolResult::Text(text) => (*text).to_owned(),
            // Serialising strings and lists into a String cannot fail.
            ToolResult::Answers(_) => serde_json::to_string(self).unwrap_or_default(),
        }
    }

    /// As a JSON value (an object or a string).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

impl Serialize for ToolResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolResult::Text(text) => serializer.serialize_str(text),
            ToolResult::Answers(answers) => {
                let mut map = serializer.serialize_map(Some(answers.len()))?;
                for (header, values) in answers {
                    map.serialize_entry(header, values)?;
                }
                map.end()
            }
        }
    }
}

/// The harness's `ask_user_result`: checks the response, then builds the tool result.
///
/// # Errors
/// The first way the response does not fit, as [`check_response`] reports it.
pub fn ask_user_result(
    request: &HarnessQuestions,
    response: &AskUserResponse,
) -> Result<ToolResult, ResponseError> {
    check_response(request, response)?;
    if response.cancelled {
        return Ok(ToolResult::Text(DECLINED));
    }
    let answers = response
        .answers
        .iter()
        .map(|a| {
            let values = match &a.custom_answer {
                Some(custom) => vec![custom.clone()],
                None => a.selected.clone(),
            };
            (a.header.clone(), values)
        })
        .collect();
    Ok(ToolResult::Answers(answers))
}
