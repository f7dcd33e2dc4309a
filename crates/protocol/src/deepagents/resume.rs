//! `_parse_answers`: what the `ask_user` tool makes of the value it is resumed with.
//!
//! deepagents checks the resume's shape, never its content: answers are matched to questions
//! by position only, non-string answers are turned into Python `str()` text, and every
//! defect becomes an `(error: ...)` answer with status `error` instead of an exception. This
//! module reproduces that, order of checks included (B.5 of the dialect notes):
//!
//! 1. Not an object: error `invalid ask_user response payload`.
//! 2. `status` is the given string, else (absent, null, a number) `answered`. For `error`, a
//!    non-empty string `error` is the client's detail, which wins over any local one.
//! 3. `answers` absent: an error (`missing ask_user answers payload`) only when answered.
//!    A list: each item `str()`-ed. Anything else: error `invalid ask_user answers payload`,
//!    whatever the status said.
//! 4. `cancelled`: every answer `(cancelled)`, status success. `answered` with a wrong count:
//!    error `ask_user answer count mismatch (expected N, got M)`. Another string: error
//!    `invalid ask_user response status`.
//! 5. The authorization receipt rides along only for answered, all-string, right-count
//!    answers of at most 4000 code points each, with a trusted thread and turn.
//!
//! One effect is LangGraph's, not deepagents': the resumed tool reads its arguments back
//! from the checkpoint, and LangGraph's serializer (`JsonPlusSerializer`, msgpack) writes a
//! lone surrogate as `?`. So a question text holding lone surrogates (which deepagents
//! accepts) reads with `?` in their place in the transcript, while the interrupt payload the
//! client first received still holds them. The transcript here does the same.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::limits::RECEIPT_MAX_ANSWER_CHARS;
use super::pyrepr::py_str;
use super::transcript::{CANCELLED_ANSWER, TranscriptQuestion, error_answer, format_transcript};
use super::types::{DeepagentsQuestions, QuestionType};
use crate::json::lenient::stand_in_surrogate;

/// The `status` of the `ToolMessage`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    /// Answered, or cancelled (a cancel is the user's choice, not a failure).
    Success,
    /// The prompt failed or the resume was malformed.
    Error,
}

/// `additional_kwargs["deepagents_code_ask_user_authorization"]`: trusted same-turn evidence
/// of what the user answered, which deepagents' auto mode may act on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// Always 1.
    pub version: u8,
    /// The trusted thread id.
    pub thread_id: String,
    /// The trusted user-turn id.
    pub turn_id: String,
    /// The tool call answered.
    pub tool_call_id: String,
    /// The answers, one per question, as sent.
    pub answers: Vec<String>,
}

/// The `ToolMessage` the tool returns: the transcript, its status, and maybe a receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolMessage {
    /// The `Q:`/`A:` transcript the model reads.
    pub content: String,
    /// `success` or `error`.
    pub status: ToolStatus,
    /// The authorization receipt, when every condition for one holds.
    pub receipt: Option<Receipt>,
}

/// Who is resuming, as far as deepagents trusts it: the tool call, and the thread and turn
/// ids when the runtime vouches for them (`None` = not trusted, so no receipt).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity<'a> {
    /// The tool call id the interrupt carried.
    pub tool_call_id: &'a str,
    /// The runtime's thread id, when it matches the context's.
    pub thread_id: Option<&'a str>,
    /// The context's turn id, when it matches the latest user prompt's.
    pub turn_id: Option<&'a str>,
}

impl<'a> Identity<'a> {
    /// No trusted thread or turn: the transcript without a receipt.
    pub fn untrusted(tool_call_id: &'a str) -> Self {
        Identity {
            tool_call_id,
            thread_id: None,
            turn_id: None,
        }
    }
}

/// A question text as the resumed tool reads it back from LangGraph's checkpoint: each lone
/// surrogate (held as its stand-in) becomes `?`.
pub fn checkpointed_text(text: &str) -> Cow<'_, str> {
    if text.chars().any(|c| stand_in_surrogate(c).is_some()) {
        Cow::Owned(
            text.chars()
                .map(|c| {
                    if stand_in_surrogate(c).is_some() {
                        '?'
                    } else {
                        c
                    }
                })
                .collect(),
        )
    } else {
        Cow::Borrowed(text)
    }
}

/// What `_parse_answers` returns for the resume value `response`.
pub fn parse_resume(
    response: &Value,
    questions: &DeepagentsQuestions,
    identity: Identity<'_>,
) -> ToolMessage {
    let n = questions.len();
    let parsed = read_resume(response, n);
    let answers = match &parsed.failure {
        Some(detail) => vec![error_answer(detail); n],
        None => parsed.answers,
    };
    let receipt = match (parsed.receipt_ok, identity.thread_id, identity.turn_id) {
        (true, Some(thread_id), Some(turn_id))
            if answers.len() == n
                && answers
                    .iter()
                    .all(|a| a.chars().count() <= RECEIPT_MAX_ANSWER_CHARS) =>
        {
            Some(Receipt {
                version: 1,
                thread_id: thread_id.to_owned(),
                turn_id: turn_id.to_owned(),
                tool_call_id: identity.tool_call_id.to_owned(),
                answers: answers.clone(),
            })
        }
        _ => None,
    };
    let texts: Vec<Cow<'_, str>> = questions
        .questions()
        .iter()
        .map(|q| checkpointed_text(&q.question))
        .collect();
    let transcript_questions: Vec<TranscriptQuestion<'_>> = texts
        .iter()
        .zip(questions.questions())
        .map(|(text, q)| TranscriptQuestion {
            text,
            multi_select: q.kind == QuestionType::MultiSelect,
        })
        .collect();
    ToolMessage {
        content: format_transcript(&transcript_questions, &answers),
        status: if parsed.failure.is_some() {
            ToolStatus::Error
        } else {
            ToolStatus::Success
        },
        receipt,
    }
}

/// A resume, read: the answers, or why the prompt failed.
struct Read {
    /// The answers when the prompt did not fail (placeholders for a cancel).
    answers: Vec<String>,
    /// The error detail, when it failed.
    failure: Option<String>,
    /// Answered, with a list of strings only: a receipt may follow.
    receipt_ok: bool,
}

fn read_resume(response: &Value, n: usize) -> Read {
    let fail = |detail: &str| Read {
        answers: Vec::new(),
        failure: Some(detail.to_owned()),
        receipt_ok: false,
    };
    let Value::Object(object) = response else {
        return fail("invalid ask_user response payload");
    };
    let status = match object.get("status") {
        Some(Value::String(status)) => status.as_str(),
        _ => "answered",
    };
    let client_error = match (status, object.get("error")) {
        ("error", Some(Value::String(text))) if !text.is_empty() => Some(text.as_str()),
        _ => None,
    };
    // Whatever the status, the detail a client declared wins over one found here.
    let fail_with = |local: &str| fail(client_error.unwrap_or(local));
    let (answers, all_strings) = match object.get("answers") {
        None if status == "answered" => return fail_with("missing ask_user answers payload"),
        None => (Vec::new(), false),
        Some(Value::Array(items)) => (
            items.iter().map(py_str).collect::<Vec<_>>(),
            items.iter().all(Value::is_string),
        ),
        Some(_) => return fail_with("invalid ask_user answers payload"),
    };
    match status {
        "cancelled" => Read {
            answers: vec![CANCELLED_ANSWER.to_owned(); n],
            failure: None,
            receipt_ok: false,
        },
        "answered" if answers.len() != n => fail_with(&format!(
            "ask_user answer count mismatch (expected {n}, got {})",
            answers.len()
        )),
        "answered" => Read {
            answers,
            failure: None,
            receipt_ok: all_strings,
        },
        "error" => fail_with("ask_user interaction failed"),
        _ => fail_with("invalid ask_user response status"),
    }
}
