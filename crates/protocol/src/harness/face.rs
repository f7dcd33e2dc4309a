//! The harness behind the dialects' common face.

use std::any::Any;
use std::sync::Arc;

use serde::Deserialize as _;
use serde_json::Value;

use super::{AskUserResponse, DECLINED, HarnessQuestions, ToolResult};
use crate::dialect::{DialectFace, Outcome, Settlement, Validated};
use crate::error::{ErrorCode, FieldError, ValidationErrors};

/// pydantic-ai-harness `ask_user_question`.
#[derive(Debug)]
pub struct HarnessFace;

impl DialectFace for HarnessFace {
    fn name(&self) -> &'static str {
        "harness"
    }

    fn validate(&self, request: &Value) -> Result<Arc<dyn Validated>, ValidationErrors> {
        super::validate_questions(request).map(|q| Arc::new(q) as Arc<dyn Validated>)
    }

    fn tool_definition(&self) -> Option<Value> {
        Some(super::tool_definition())
    }
}

impl Validated for HarnessQuestions {
    fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    fn settle_answer(&self, response: &Value) -> Result<Settlement, ValidationErrors> {
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
        let result = super::ask_user_result(self, &parsed).map_err(|e| {
            let path = format!("response.{}", e.path);
            ValidationErrors::single(FieldError::new(path, ErrorCode::InvalidAnswer, e.message))
        })?;
        Ok(settlement(Outcome::Answered, &parsed, &result))
    }

    fn settle_unanswered(&self, outcome: Outcome) -> Settlement {
        let result = match outcome {
            // The harness's timeout: the answerer is cancelled and the tool returns TIMED_OUT.
            Outcome::TimedOut => ToolResult::timed_out(),
            Outcome::Declined => ToolResult::Text(DECLINED),
            _ => return Settlement::withdrawn(),
        };
        settlement(outcome, &AskUserResponse::declined(), &result)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn settlement(outcome: Outcome, response: &AskUserResponse, result: &ToolResult) -> Settlement {
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
