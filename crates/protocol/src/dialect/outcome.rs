//! How a request ends, and what the agent receives then.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A tab answered.
    Answered,
    /// A tab declined to answer.
    Declined,
    /// The deadline passed first.
    TimedOut,
    /// The agent withdrew the question (its run was cancelled).
    Withdrawn,
}

impl Outcome {
    /// Every outcome, for metrics.
    pub const ALL: [Outcome; 4] = [
        Outcome::Answered,
        Outcome::Declined,
        Outcome::TimedOut,
        Outcome::Withdrawn,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Answered => "answered",
            Outcome::Declined => "declined",
            Outcome::TimedOut => "timed_out",
            Outcome::Withdrawn => "withdrawn",
        }
    }
}

/// A request's end as the agent receives it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settlement {
    /// How it ended.
    pub outcome: Outcome,
    /// The dialect's response object (harness: `{"answers":[...],"cancelled":bool}`;
    /// deepagents: the resume payload for `Command(resume={interrupt_id: response})`); null
    /// when withdrawn.
    pub response: Value,
    /// What the tool returns (harness: the `ask_user_result` object or a sentence;
    /// deepagents: the `Q:`/`A:` transcript); null when withdrawn.
    pub result: Value,
    /// The exact text the model reads; null when withdrawn.
    pub model_text: Option<String>,
}

impl Settlement {
    /// The settlement of a withdrawn request, the same for every dialect: nothing to hand
    /// the framework, since its run was cancelled.
    pub fn withdrawn() -> Self {
        Settlement {
            outcome: Outcome::Withdrawn,
            response: Value::Null,
            result: Value::Null,
            model_text: None,
        }
    }
}
