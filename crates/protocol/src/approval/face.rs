//! Approvals behind the dialects' common face.

use std::any::Any;
use std::sync::Arc;

use serde_json::Value;

use super::calls::{Call, validate_calls};
use super::decisions::{check_decisions, rejected_all, settlement};
use crate::dialect::{DialectFace, Outcome, Settlement, Validated};
use crate::error::ValidationErrors;

/// Tool-call approvals: approve, edit, reject or respond to what an agent is about to run.
#[derive(Debug)]
pub struct ApprovalFace;

/// The calls of one approval request, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalCalls(pub Vec<Call>);

impl DialectFace for ApprovalFace {
    fn name(&self) -> &'static str {
        "approval"
    }

    fn fields(&self) -> &'static [&'static str] {
        &["calls"]
    }

    fn validate(&self, request: &Value) -> Result<Arc<dyn Validated>, ValidationErrors> {
        validate_calls(request).map(|calls| Arc::new(ApprovalCalls(calls)) as Arc<dyn Validated>)
    }

    /// Approvals are not a tool the model calls: they judge the calls of other tools.
    fn tool_definition(&self) -> Option<Value> {
        None
    }
}

impl Validated for ApprovalCalls {
    fn to_json(&self) -> Value {
        serde_json::to_value(&self.0).unwrap_or(Value::Null)
    }

    fn settle_answer(&self, response: &Value) -> Result<Settlement, ValidationErrors> {
        let decisions = check_decisions(&self.0, response)?;
        Ok(settlement(&self.0, Outcome::Answered, &decisions))
    }

    fn settle_unanswered(&self, outcome: Outcome) -> Settlement {
        match outcome {
            Outcome::Declined | Outcome::TimedOut => rejected_all(&self.0, outcome),
            _ => Settlement::withdrawn(),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
