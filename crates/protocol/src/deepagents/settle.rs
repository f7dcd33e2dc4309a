//! How a deepagents request ends, as the agent receives it: the resume payload to hand to
//! LangGraph, and the transcript the tool will return once resumed with it.
//!
//! The agent resumes the paused graph with `Command(resume={interrupt_id: response})`;
//! `result` and `model_text` are the transcript `_parse_answers` will make of that payload,
//! so the agent knows in advance what the model will read.
//!
//! | outcome | `response` | transcript |
//! |---|---|---|
//! | answered | `{"answers": [...]}` (no `status`, as the TUI sends it) | the answers, status success |
//! | declined | `{"status": "cancelled", "answers": ["", ...]}` | `(cancelled)` per question, status success |
//! | timed out | `{"status": "error", "error": "the user did not answer in time", "answers": ["", ...]}` | `(error: the user did not answer in time)` per question, status error |
//! | withdrawn | null | null |
//!
//! deepagents has no timeout of its own. A timeout is reported the way deepagents reports
//! any prompt that failed to get an answer (a TUI widget error resumes the same way): the run
//! goes on, and the model reads that no answer came, with status `error`.

use serde_json::{Value, json};

use super::resume::{Identity, ToolMessage, parse_resume};
use super::types::DeepagentsQuestions;
use crate::dialect::{Outcome, Settlement};

/// The error detail of a request that ran out of time.
pub const TIMED_OUT_DETAIL: &str = "the user did not answer in time";

/// `{"answers": [...]}`: the TUI's resume payload for submitted answers.
pub fn answered_payload(answers: &[String]) -> Value {
    json!({ "answers": answers })
}

/// `{"status": "cancelled", "answers": ["", ...]}`: the TUI's payload for a dismissed prompt.
pub fn cancelled_payload(questions: &DeepagentsQuestions) -> Value {
    json!({ "status": "cancelled", "answers": vec![""; questions.len()] })
}

/// `{"status": "error", "error": TIMED_OUT_DETAIL, "answers": ["", ...]}`.
pub fn timed_out_payload(questions: &DeepagentsQuestions) -> Value {
    json!({ "status": "error", "error": TIMED_OUT_DETAIL, "answers": vec![""; questions.len()] })
}

/// The settlement for `outcome` with the resume payload `response`.
pub fn settlement(
    questions: &DeepagentsQuestions,
    outcome: Outcome,
    response: Value,
) -> Settlement {
    if outcome == Outcome::Withdrawn {
        return Settlement {
            outcome,
            response: Value::Null,
            result: Value::Null,
            model_text: None,
        };
    }
    let message = tool_message(questions, &response);
    Settlement {
        outcome,
        response,
        result: Value::String(message.content.clone()),
        model_text: Some(message.content),
    }
}

/// What the tool returns when resumed with `response` (no receipt: the gateway is not the
/// runtime that can vouch for a thread and turn).
pub fn tool_message(questions: &DeepagentsQuestions, response: &Value) -> ToolMessage {
    parse_resume(response, questions, Identity::untrusted(""))
}
