//! deepagents behind the dialects' common face.

use std::any::Any;
use std::sync::Arc;

use serde_json::Value;

use super::{Bounds, DeepagentsQuestions, settle};
use crate::dialect::{DialectFace, Outcome, Settlement, Validated};
use crate::error::ValidationErrors;

/// deepagents `ask_user`.
#[derive(Debug)]
pub struct DeepagentsFace;

impl DialectFace for DeepagentsFace {
    fn name(&self) -> &'static str {
        "deepagents"
    }

    /// deepagents questions are held to askgate's bounds too ([`Bounds::Gateway`]).
    fn validate(&self, request: &Value) -> Result<Arc<dyn Validated>, ValidationErrors> {
        super::validate_questions(request, Bounds::Gateway)
            .map(|q| Arc::new(q) as Arc<dyn Validated>)
            .map_err(|e| e.field_errors())
    }

    fn tool_definition(&self) -> Option<Value> {
        Some(super::tool_definition())
    }
}

impl Validated for DeepagentsQuestions {
    fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    fn settle_answer(&self, response: &Value) -> Result<Settlement, ValidationErrors> {
        let answers = super::check_tab_answer(self, response)?;
        Ok(settle::settlement(
            self,
            Outcome::Answered,
            settle::answered_payload(&answers),
        ))
    }

    fn settle_unanswered(&self, outcome: Outcome) -> Settlement {
        let payload = match outcome {
            // deepagents has no timeout: report it as a prompt that failed to get an answer.
            Outcome::TimedOut => settle::timed_out_payload(self),
            // The TUI's dismissal payload, as a client that does resume would send it.
            Outcome::Declined => settle::cancelled_payload(self),
            _ => return Settlement::withdrawn(),
        };
        settle::settlement(self, outcome, payload)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
