//! `AskUserQuestion` behind the dialects' common face.

use std::any::Any;
use std::sync::Arc;

use serde_json::Value;

use super::answers::{allowed, check_answers, denied};
use super::questions::{ClaudeQuestions, validate_questions};
use crate::dialect::{DialectFace, Outcome, Settlement, Validated};
use crate::error::ValidationErrors;

/// The Claude Agent SDK's `AskUserQuestion`.
#[derive(Debug)]
pub struct ClaudeFace;

impl DialectFace for ClaudeFace {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn validate(&self, request: &Value) -> Result<Arc<dyn Validated>, ValidationErrors> {
        validate_questions(request).map(|q| Arc::new(q) as Arc<dyn Validated>)
    }

    /// The tool is built into Claude Code: the SDK defines it, not the host.
    fn tool_definition(&self) -> Option<Value> {
        None
    }
}

impl Validated for ClaudeQuestions {
    fn to_json(&self) -> Value {
        Value::Array(self.questions.iter().cloned().map(Value::Object).collect())
    }

    fn settle_answer(&self, response: &Value) -> Result<Settlement, ValidationErrors> {
        let (answers, free_text) = check_answers(self, response)?;
        Ok(allowed(self, answers, free_text))
    }

    fn settle_unanswered(&self, outcome: Outcome) -> Settlement {
        match outcome {
            Outcome::Declined | Outcome::TimedOut => denied(outcome),
            _ => Settlement::withdrawn(),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
