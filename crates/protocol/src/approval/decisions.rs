//! A tab's decisions on an approval request: their check, and what the agent receives.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::MAX_MESSAGE_CHARS;
use super::calls::{Call, DecisionKind};
use crate::dialect::{Outcome, Settlement};
use crate::error::{ErrorCode, FieldError, ValidationErrors, json_kind};
use crate::field_paths::{at_most_chars, index_path, key_path, optional_text, response_object};

/// The reject message every call gets when the person declines the whole request.
pub const DECLINED_MESSAGE: &str = "The person declined.";
/// The reject message every call gets when nobody answers in time.
pub const TIMED_OUT_MESSAGE: &str = "No answer in time.";

/// One call's decision, checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Decision {
    /// Run the call as it is.
    Approve,
    /// Run it with these arguments.
    Edit {
        /// The edited arguments.
        args: Map<String, Value>,
    },
    /// Do not run it.
    Reject {
        /// Why, when the person said.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Do not run it; the model reads this instead.
    Respond {
        /// What the person wrote.
        message: String,
    },
}

impl Decision {
    fn kind(&self) -> DecisionKind {
        match self {
            Decision::Approve => DecisionKind::Approve,
            Decision::Edit { .. } => DecisionKind::Edit,
            Decision::Reject { .. } => DecisionKind::Reject,
            Decision::Respond { .. } => DecisionKind::Respond,
        }
    }
}

/// Checks a tab's `{"decisions": [...]}` against the calls; paths start with `response`.
///
/// # Errors
/// Every problem found.
pub fn check_decisions(
    calls: &[Call],
    response: &Value,
) -> Result<Vec<Decision>, ValidationErrors> {
    let one = |path: &str, code, message: String| {
        Err(ValidationErrors::single(FieldError::new(
            path, code, message,
        )))
    };
    let fields = response_object(response, &["decisions"], "{\"decisions\": [...]}")?;
    let decisions = match fields.get("decisions") {
        Some(Value::Array(decisions)) => decisions,
        None | Some(Value::Null) => {
            return one(
                "response.decisions",
                ErrorCode::MissingField,
                format!("required: one decision per call ({})", calls.len()),
            );
        }
        Some(other) => {
            return one(
                "response.decisions",
                ErrorCode::WrongType,
                format!("must be a list of decisions, got {}", json_kind(other)),
            );
        }
    };
    if decisions.len() != calls.len() {
        return one(
            "response.decisions",
            ErrorCode::InvalidAnswer,
            format!(
                "expected {} decisions, one per call, got {}",
                calls.len(),
                decisions.len()
            ),
        );
    }
    let mut errors = Vec::new();
    let mut checked = Vec::with_capacity(calls.len());
    for (i, (call, decision)) in calls.iter().zip(decisions).enumerate() {
        let path = index_path("response.decisions", i);
        match check_decision(call, decision, &path) {
            Ok(decision) => checked.push(decision),
            Err(mut found) => errors.append(&mut found),
        }
    }
    match ValidationErrors::from_vec(errors) {
        Some(errors) => Err(errors),
        None => Ok(checked),
    }
}

fn check_decision(call: &Call, decision: &Value, path: &str) -> Result<Decision, Vec<FieldError>> {
    let fail =
        |path: String, code, message: String| Err(vec![FieldError::new(path, code, message)]);
    let Value::Object(fields) = decision else {
        return fail(
            path.into(),
            ErrorCode::WrongType,
            format!(
                "a decision must be an object {{\"type\": ...}}, got {}",
                json_kind(decision)
            ),
        );
    };
    let type_path = key_path(path, "type");
    let Some(kind) = fields.get("type").and_then(Value::as_str) else {
        return fail(
            type_path,
            ErrorCode::MissingField,
            format!("required: one of {}", DecisionKind::words(&call.decisions)),
        );
    };
    let Some(kind) = DecisionKind::parse(kind) else {
        return fail(
            type_path,
            ErrorCode::InvalidValue,
            format!(
                "unknown decision {}; this call allows {}",
                Value::from(kind),
                DecisionKind::words(&call.decisions)
            ),
        );
    };
    if !call.decisions.contains(&kind) {
        return fail(
            type_path,
            // Not `forbidden`, which tells a tab it may not answer at all.
            ErrorCode::InvalidValue,
            format!(
                "{} is not allowed here: this call allows {}",
                kind.as_str(),
                DecisionKind::words(&call.decisions)
            ),
        );
    }
    let allowed: &[&str] = match kind {
        DecisionKind::Approve => &["type", "remember", "args"],
        DecisionKind::Edit => &["type", "args"],
        DecisionKind::Reject | DecisionKind::Respond => &["type", "message"],
    };
    if let Some(key) = fields.keys().find(|k| !allowed.contains(&k.as_str())) {
        return fail(
            key_path(path, key),
            ErrorCode::UnknownField,
            format!(
                "unknown field; {} takes {}",
                kind.as_str(),
                allowed.join(", ")
            ),
        );
    }
    let message_path = key_path(path, "message");
    match kind {
        DecisionKind::Approve => {
            // What it asks to remember is read by `remembered`; here it is only checked.
            super::rules::Remember::read(fields, path).map_err(|e| vec![e])?;
            Ok(Decision::Approve)
        }
        DecisionKind::Edit => check_edit(call, fields.get("args"), &key_path(path, "args")),
        DecisionKind::Reject => Ok(Decision::Reject {
            message: check_message(fields.get("message"), &message_path).map_err(|e| vec![e])?,
        }),
        DecisionKind::Respond => match check_message(fields.get("message"), &message_path) {
            Ok(Some(message)) => Ok(Decision::Respond { message }),
            Ok(None) => Err(vec![FieldError::new(
                message_path,
                ErrorCode::Blank,
                "required: what the model reads instead of the tool's result",
            )]),
            Err(e) => Err(vec![e]),
        },
    }
}

fn check_edit(call: &Call, args: Option<&Value>, path: &str) -> Result<Decision, Vec<FieldError>> {
    let args = match args {
        Some(value @ Value::Object(args)) => {
            if let Some(schema) = &call.edit_schema {
                let errors = schema.check(value, path);
                if !errors.is_empty() {
                    return Err(errors);
                }
            }
            args
        }
        None | Some(Value::Null) => {
            return Err(vec![FieldError::new(
                path,
                ErrorCode::MissingField,
                "required: the edited arguments, an object",
            )]);
        }
        Some(other) => {
            return Err(vec![FieldError::new(
                path,
                ErrorCode::WrongType,
                format!("must be an object of arguments, got {}", json_kind(other)),
            )]);
        }
    };
    Ok(Decision::Edit { args: args.clone() })
}

/// A message of at most [`MAX_MESSAGE_CHARS`]; an absent or blank one is no message.
fn check_message(value: Option<&Value>, path: &str) -> Result<Option<String>, FieldError> {
    let Some(text) = optional_text(value, path)? else {
        return Ok(None);
    };
    at_most_chars(text, MAX_MESSAGE_CHARS, path)?;
    Ok((!text.trim().is_empty()).then(|| text.clone()))
}

/// What the agent receives for these decisions.
pub fn settlement(calls: &[Call], outcome: Outcome, decisions: &[Decision]) -> Settlement {
    let result: Vec<Value> = calls
        .iter()
        .zip(decisions)
        .map(|(call, decision)| {
            let args = match decision {
                Decision::Edit { args } => args,
                _ => &call.args,
            };
            let mut entry = json!({
                "name": call.name,
                "decision": decision.kind().as_str(),
                "args": args,
            });
            if let Decision::Reject {
                message: Some(message),
            }
            | Decision::Respond { message } = decision
            {
                entry["message"] = Value::from(message.as_str());
            }
            entry
        })
        .collect();
    let model_text = calls
        .iter()
        .zip(decisions)
        .map(|(call, decision)| match decision {
            Decision::Approve => format!("{}: approved", call.name),
            Decision::Edit { .. } => format!("{}: edited", call.name),
            Decision::Reject { message: None } => format!("{}: rejected", call.name),
            Decision::Reject { message: Some(m) } => format!("{}: rejected: {m}", call.name),
            Decision::Respond { message } => format!("{}: responded: {message}", call.name),
        })
        .collect::<Vec<_>>()
        .join("\n");
    Settlement {
        outcome,
        response: json!({ "decisions": decisions }),
        result: Value::Array(result),
        model_text: Some(model_text),
    }
}

/// Every call rejected with one message: a decline, or no answer in time.
pub fn rejected_all(calls: &[Call], outcome: Outcome) -> Settlement {
    let message = match outcome {
        Outcome::TimedOut => TIMED_OUT_MESSAGE,
        _ => DECLINED_MESSAGE,
    };
    let decisions: Vec<Decision> = calls
        .iter()
        .map(|_| Decision::Reject {
            message: Some(message.to_owned()),
        })
        .collect();
    settlement(calls, outcome, &decisions)
}

/// What each approve decision of a checked `{"decisions": [...]}` asks to remember (`None` for
/// the others, and for approvals that ask nothing).
pub fn remembered(response: &Value) -> Vec<Option<super::rules::Remember>> {
    response["decisions"]
        .as_array()
        .map(|decisions| {
            decisions
                .iter()
                .map(|decision| {
                    let fields = decision.as_object()?;
                    (fields.get("type")? == "approve")
                        .then(|| super::rules::Remember::read(fields, "").ok().flatten())
                        .flatten()
                })
                .collect()
        })
        .unwrap_or_default()
}
