//! Forms behind the dialects' common face.

use std::any::Any;
use std::sync::Arc;

use serde_json::{Value, json};

use super::content::check_content;
use super::request::{FIELDS, Form, UrlRules, validate_form};
use crate::dialect::{DialectFace, Outcome, Settlement, Validated};
use crate::error::{ErrorCode, FieldError, ValidationErrors};
use crate::field_paths::response_object;

/// MCP elicitation: a form, or a URL to open.
#[derive(Debug)]
pub struct FormFace;

impl DialectFace for FormFace {
    fn name(&self) -> &'static str {
        "form"
    }

    fn fields(&self) -> &'static [&'static str] {
        &FIELDS
    }

    fn validate(&self, request: &Value) -> Result<Arc<dyn Validated>, ValidationErrors> {
        validate_form(request, UrlRules::Ask).map(|form| Arc::new(form) as Arc<dyn Validated>)
    }

    fn read_back(&self, request: &Value) -> Result<Arc<dyn Validated>, ValidationErrors> {
        validate_form(request, UrlRules::Stored).map(|form| Arc::new(form) as Arc<dyn Validated>)
    }

    /// Elicitation is the server's request to the client, not a tool the model calls.
    fn tool_definition(&self) -> Option<Value> {
        None
    }

    fn request_schema(&self) -> Option<Value> {
        Some(super::request_schema::request_schema())
    }
}

/// The agent receives MCP's `ElicitResult`, in `response` and `result` alike.
fn elicit_result(outcome: Outcome, result: Value) -> Settlement {
    Settlement {
        outcome,
        response: result.clone(),
        result,
        model_text: None,
    }
}

impl Validated for Form {
    fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    fn settle_answer(&self, response: &Value) -> Result<Settlement, ValidationErrors> {
        let result = match check_content(self, response)? {
            Some(content) => json!({"action": "accept", "content": content}),
            None => json!({"action": "accept"}),
        };
        Ok(elicit_result(Outcome::Answered, result))
    }

    /// A decline is `decline`; a timeout and a withdrawal are `cancel`: dismissed without a
    /// choice.
    fn settle_unanswered(&self, outcome: Outcome) -> Settlement {
        let action = if outcome == Outcome::Declined {
            "decline"
        } else {
            "cancel"
        };
        elicit_result(outcome, json!({ "action": action }))
    }

    /// MCP tells a refusal (`decline`) from a dismissal (`cancel`): "Not now" is the latter.
    fn settle_dismissed(&self) -> Settlement {
        elicit_result(Outcome::Declined, json!({ "action": "cancel" }))
    }

    /// A form's default is MCP's `ElicitResult` as the agent would receive it: `{"action":
    /// "accept", "content": {...}}` (the content checked as a tab's; none for a URL) or
    /// `{"action": "decline"}`. Not `cancel`: that is what the deadline gives without a
    /// default.
    fn settle_default(&self, default: &Value) -> Result<Settlement, ValidationErrors> {
        const SHAPE: &str =
            "{\"action\": \"accept\", \"content\": {...}} or {\"action\": \"decline\"}";
        let fields = response_object(default, &["action", "content"], SHAPE)?;
        let refused = |path: &str, code, message: String| {
            Err(ValidationErrors::single(FieldError::new(
                path, code, message,
            )))
        };
        match fields.get("action") {
            Some(Value::String(action)) if action == "accept" => {
                let mut answer = fields.clone();
                answer.remove("action");
                self.settle_answer(&Value::Object(answer))
            }
            Some(Value::String(action)) if action == "decline" => match fields.get("content") {
                None | Some(Value::Null) => Ok(self.settle_unanswered(Outcome::Declined)),
                Some(_) => refused(
                    "response.content",
                    ErrorCode::UnknownField,
                    "a decline has no content".into(),
                ),
            },
            None | Some(Value::Null) => refused(
                "response.action",
                ErrorCode::MissingField,
                format!("required: the default is {SHAPE}"),
            ),
            Some(other) => refused(
                "response.action",
                ErrorCode::InvalidValue,
                format!("must be \"accept\" or \"decline\", got {other}"),
            ),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
