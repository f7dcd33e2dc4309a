//! What every dialect offers the gateway: a validated question set, and how a request ends.
//!
//! The gateway stays dialect-blind: it stores a [`QuestionSet`], checks a tab's answer with
//! [`QuestionSet::settle_answer`], and hands the agent the [`Settlement`] it produces.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::deepagents::{self, Bounds, DeepagentsQuestions};
use crate::error::{ErrorCode, FieldError, ValidationErrors};
use crate::harness::{self, AskUserResponse, HarnessQuestions, ToolResult};

/// The "ask the user" tools askgate serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// pydantic-ai-harness `ask_user_question`.
    #[default]
    Harness,
    /// deepagents `ask_user`.
    Deepagents,
}

impl Dialect {
    /// Parses the wire name.
    ///
    /// # Errors
    /// An unknown name, in words.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "harness" => Ok(Dialect::Harness),
            "deepagents" => Ok(Dialect::Deepagents),
            other => Err(format!(
                "unknown dialect {}; expected \"harness\" or \"deepagents\"",
                Value::from(other)
            )),
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Harness => "harness",
            Dialect::Deepagents => "deepagents",
        }
    }
}

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

/// A question set that passed its dialect's validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuestionSet {
    /// pydantic-ai-harness questions.
    Harness(HarnessQuestions),
    /// deepagents questions.
    Deepagents(DeepagentsQuestions),
}

impl QuestionSet {
    /// Validates the `questions` list of an ask; error paths start with `questions`.
    /// deepagents questions are held to askgate's bounds too ([`Bounds::Gateway`]).
    ///
    /// # Errors
    /// Every problem found.
    pub fn validate(dialect: Dialect, questions: &Value) -> Result<Self, ValidationErrors> {
        match dialect {
            Dialect::Harness => harness::validate_questions(questions).map(QuestionSet::Harness),
            Dialect::Deepagents => deepagents::validate_questions(questions, Bounds::Gateway)
                .map(QuestionSet::Deepagents)
                .map_err(|e| e.field_errors()),
        }
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        match self {
            QuestionSet::Harness(_) => Dialect::Harness,
            QuestionSet::Deepagents(_) => Dialect::Deepagents,
        }
    }

    /// The normalised questions list, as tabs receive it.
    pub fn to_json(&self) -> Value {
        let value = match self {
            QuestionSet::Harness(questions) => serde_json::to_value(questions),
            QuestionSet::Deepagents(questions) => serde_json::to_value(questions),
        };
        value.unwrap_or(Value::Null)
    }

    /// Checks a tab's `answer` against the questions and builds what the agent receives.
    ///
    /// # Errors
    /// Why the answer does not fit (the dialect's own message, with a path); the request
    /// stays open.
    pub fn settle_answer(&self, response: &Value) -> Result<Settlement, ValidationErrors> {
        match self {
            QuestionSet::Deepagents(questions) => {
                let answers = deepagents::check_tab_answer(questions, response)?;
                Ok(deepagents::settle::settlement(
                    questions,
                    Outcome::Answered,
                    deepagents::settle::answered_payload(&answers),
                ))
            }
            QuestionSet::Harness(questions) => {
                let parsed = AskUserResponse::deserialize(response).map_err(|e| {
                    ValidationErrors::single(FieldError::new(
                        "response",
                        ErrorCode::WrongType,
                        format!("not a harness response {{\"answers\": [...]}}: {e}"),
                    ))
                })?;
                if parsed.cancelled {
                    return Err(ValidationErrors::single(FieldError::new(
                        "response.cancelled",
                        ErrorCode::InvalidValue,
                        "to decline, send a `decline` frame instead of an answer",
                    )));
                }
                let result = harness::ask_user_result(questions, &parsed).map_err(|e| {
                    let path = format!("response.{}", e.path);
                    ValidationErrors::single(FieldError::new(
                        path,
                        ErrorCode::InvalidAnswer,
                        e.message,
                    ))
                })?;
                Ok(harness_settlement(Outcome::Answered, &parsed, &result))
            }
        }
    }

    /// The settlement of a request that ended without an answer.
    pub fn settle_without_answer(&self, outcome: Outcome) -> Settlement {
        match (self, outcome) {
            (_, Outcome::Withdrawn | Outcome::Answered) => Settlement {
                outcome,
                response: Value::Null,
                result: Value::Null,
                model_text: None,
            },
            (QuestionSet::Harness(_), Outcome::Declined) => harness_settlement(
                outcome,
                &AskUserResponse::declined(),
                &ToolResult::Text(harness::DECLINED),
            ),
            // The harness's timeout: the answerer is cancelled and the tool returns TIMED_OUT.
            (QuestionSet::Harness(_), Outcome::TimedOut) => harness_settlement(
                outcome,
                &AskUserResponse::declined(),
                &ToolResult::timed_out(),
            ),
            // The TUI's dismissal payload, as a client that does resume would send it.
            (QuestionSet::Deepagents(questions), Outcome::Declined) => {
                deepagents::settle::settlement(
                    questions,
                    outcome,
                    deepagents::settle::cancelled_payload(questions),
                )
            }
            // deepagents has no timeout: report it as a prompt that failed to get an answer.
            (QuestionSet::Deepagents(questions), Outcome::TimedOut) => {
                deepagents::settle::settlement(
                    questions,
                    outcome,
                    deepagents::settle::timed_out_payload(questions),
                )
            }
        }
    }
}

fn harness_settlement(
    outcome: Outcome,
    response: &AskUserResponse,
    result: &ToolResult,
) -> Settlement {
    Settlement {
        outcome,
        response: serde_json::json!({
            "answers": response.answers,
            "cancelled": response.cancelled,
        }),
        result: result.to_json(),
        model_text: Some(result.model_text()),
    }
}
