//! The tool calls of an approval request: their validation and their normalised form.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::schema::{self, EditSchema, Support};
use super::{MAX_CALLS, MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS};
use crate::error::{ErrorCode, FieldError, ValidationErrors, json_kind};
use crate::field_paths::{at_most_chars, index_path, key_path, optional_text};

/// What a person may do with a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DecisionKind {
    /// Run the call as it is.
    Approve,
    /// Run it with other arguments.
    Edit,
    /// Do not run it (with a reason, perhaps).
    Reject,
    /// Do not run it; the model gets the person's message instead of the tool's result.
    Respond,
}

impl DecisionKind {
    /// Every kind, in the order tabs list them.
    pub const ALL: [DecisionKind; 4] = [
        DecisionKind::Approve,
        DecisionKind::Edit,
        DecisionKind::Reject,
        DecisionKind::Respond,
    ];

    /// What a call allows when the agent does not say.
    pub const DEFAULT: [DecisionKind; 2] = [DecisionKind::Approve, DecisionKind::Reject];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Approve => "approve",
            DecisionKind::Edit => "edit",
            DecisionKind::Reject => "reject",
            DecisionKind::Respond => "respond",
        }
    }

    /// Reads a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        DecisionKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Names, joined for messages.
    pub fn words(kinds: &[DecisionKind]) -> String {
        kinds
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// How an edit's arguments are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EditCheck {
    /// Against the call's `args_schema`.
    Schema,
    /// As a JSON object only: no schema, or one with a keyword askgate does not check.
    Object,
}

/// One tool call, validated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Call {
    /// The tool's name.
    pub name: String,
    /// The arguments the model gave.
    pub args: Map<String, Value>,
    /// What the tool does, as the agent describes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The tool's JSON Schema for its arguments, as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args_schema: Option<Value>,
    /// What the person may do, in [`DecisionKind::ALL`]'s order.
    pub decisions: Vec<DecisionKind>,
    /// How edits are checked.
    pub edit_check: EditCheck,
    /// Why edits are checked as an object only although there is a schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edit_note: Option<String>,
    /// `args_schema` read once, at the ask, when edits are checked against it.
    #[serde(skip)]
    pub edit_schema: Option<Arc<EditSchema>>,
}

/// The keys a call may have.
const CALL_KEYS: [&str; 5] = ["name", "args", "description", "args_schema", "decisions"];
/// The keys askgate adds to a normalised call; read past, and worked out again, so that a
/// normalised call (as the store keeps it) validates as itself.
const DERIVED_KEYS: [&str; 2] = ["edit_check", "edit_note"];

/// Validates an approval request's `calls`; error paths start with `calls`.
///
/// # Errors
/// Every problem found.
pub fn validate_calls(calls: &Value) -> Result<Vec<Call>, ValidationErrors> {
    let items = match calls {
        Value::Array(items) => items,
        Value::Null => {
            return Err(one(
                "calls",
                ErrorCode::MissingField,
                format!(
                    "required: a list of 1 to {MAX_CALLS} tool calls, each {{\"name\", \"args\"}}"
                ),
            ));
        }
        other => {
            return Err(one(
                "calls",
                ErrorCode::WrongType,
                format!("must be a list of tool calls, got {}", json_kind(other)),
            ));
        }
    };
    if items.is_empty() {
        return Err(one(
            "calls",
            ErrorCode::TooFewItems,
            "at least one tool call",
        ));
    }
    if items.len() > MAX_CALLS {
        return Err(one(
            "calls",
            ErrorCode::TooManyItems,
            format!("at most {MAX_CALLS} tool calls, got {}", items.len()),
        ));
    }
    let mut errors = Vec::new();
    let mut valid = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match validate_call(item, &index_path("calls", i), &mut errors) {
            Some(call) => valid.push(call),
            None => continue,
        }
    }
    match ValidationErrors::from_vec(errors) {
        Some(errors) => Err(errors),
        None => Ok(valid),
    }
}

fn one(path: &str, code: ErrorCode, message: impl Into<String>) -> ValidationErrors {
    ValidationErrors::single(FieldError::new(path, code, message))
}

fn validate_call(item: &Value, path: &str, errors: &mut Vec<FieldError>) -> Option<Call> {
    let Value::Object(fields) = item else {
        errors.push(FieldError::new(
            path,
            ErrorCode::WrongType,
            format!(
                "a tool call must be an object {{\"name\", \"args\"}}, got {}",
                json_kind(item)
            ),
        ));
        return None;
    };
    let before = errors.len();
    let unknown =
        |k: &&String| !CALL_KEYS.contains(&k.as_str()) && !DERIVED_KEYS.contains(&k.as_str());
    for key in fields.keys().filter(unknown) {
        errors.push(FieldError::new(
            key_path(path, key),
            ErrorCode::UnknownField,
            format!("unknown field; a tool call has {}", CALL_KEYS.join(", ")),
        ));
    }
    let name = check_text(
        fields.get("name"),
        &key_path(path, "name"),
        MAX_NAME_CHARS,
        true,
    )
    .map_err(|e| errors.push(e))
    .ok()
    .flatten();
    let args = match fields.get("args") {
        Some(Value::Object(args)) => Some(args.clone()),
        None | Some(Value::Null) => {
            errors.push(FieldError::new(
                key_path(path, "args"),
                ErrorCode::MissingField,
                "required: the call's arguments, an object (`{}` for none)",
            ));
            None
        }
        Some(other) => {
            errors.push(FieldError::new(
                key_path(path, "args"),
                ErrorCode::WrongType,
                format!("must be an object of arguments, got {}", json_kind(other)),
            ));
            None
        }
    };
    let description = check_text(
        fields.get("description"),
        &key_path(path, "description"),
        MAX_DESCRIPTION_CHARS,
        false,
    )
    .map_err(|e| errors.push(e))
    .ok()
    .flatten();
    let decisions = check_decisions(fields.get("decisions"), &key_path(path, "decisions"))
        .map_err(|e| errors.push(e))
        .ok();
    let schema_path = key_path(path, "args_schema");
    let args_schema = fields.get("args_schema").filter(|s| !s.is_null());
    let support = match args_schema {
        None => None,
        Some(schema) => schema::inspect(schema, &schema_path)
            .map_err(|e| errors.push(e))
            .ok(),
    };
    if errors.len() > before {
        return None;
    }
    let edit_schema = match (&support, args_schema) {
        (Some(Support::Checked), Some(schema)) => Some(Arc::new(EditSchema::new(schema))),
        _ => None,
    };
    let (edit_check, edit_note) = match support {
        Some(Support::Checked) => (EditCheck::Schema, None),
        Some(Support::Unchecked { keyword, at }) => {
            let at = at.strip_prefix(path).unwrap_or(&at).trim_start_matches('.');
            (
                EditCheck::Object,
                Some(format!(
                    "args_schema uses {} at {at}, which askgate does not check: edits are \
                 checked as a JSON object only",
                    Value::from(keyword)
                )),
            )
        }
        None => (EditCheck::Object, None),
    };
    Some(Call {
        name: name?,
        args: args?,
        description,
        args_schema: args_schema.cloned(),
        decisions: decisions?,
        edit_check,
        edit_note,
        edit_schema,
    })
}

/// A string of 1..=`max` characters with no control characters (line breaks allowed in
/// descriptions); `None` when absent and not `required`.
fn check_text(
    value: Option<&Value>,
    path: &str,
    max: usize,
    required: bool,
) -> Result<Option<String>, FieldError> {
    let text = match optional_text(value, path)? {
        Some(text) => text,
        None if required => {
            return Err(FieldError::new(
                path,
                ErrorCode::MissingField,
                "required: a string",
            ));
        }
        None => return Ok(None),
    };
    if text.trim().is_empty() {
        return Err(FieldError::new(path, ErrorCode::Blank, "must not be blank"));
    }
    at_most_chars(text, max, path)?;
    // A name is one line; a description may have line breaks and tabs.
    let forbidden = |c: char| c.is_control() && (required || !matches!(c, '\n' | '\t' | '\r'));
    if let Some(c) = text.chars().find(|&c| forbidden(c)) {
        return Err(FieldError::new(
            path,
            ErrorCode::ForbiddenCharacter,
            format!(
                "must not contain control characters, found U+{:04X}",
                c as u32
            ),
        ));
    }
    Ok(Some(text.clone()))
}

fn check_decisions(value: Option<&Value>, path: &str) -> Result<Vec<DecisionKind>, FieldError> {
    let names = match value {
        None | Some(Value::Null) => return Ok(DecisionKind::DEFAULT.to_vec()),
        Some(Value::Array(names)) if names.is_empty() => {
            return Err(FieldError::new(
                path,
                ErrorCode::TooFewItems,
                format!(
                    "at least one of {}",
                    DecisionKind::words(&DecisionKind::ALL)
                ),
            ));
        }
        Some(Value::Array(names)) => names,
        Some(other) => {
            return Err(FieldError::new(
                path,
                ErrorCode::WrongType,
                format!(
                    "must be a list of decisions ({}), got {}",
                    DecisionKind::words(&DecisionKind::ALL),
                    json_kind(other)
                ),
            ));
        }
    };
    let mut kinds = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let at = index_path(path, i);
        let kind = name.as_str().and_then(DecisionKind::parse).ok_or_else(|| {
            FieldError::new(
                &at,
                ErrorCode::InvalidValue,
                format!(
                    "unknown decision {name}; expected one of {}",
                    DecisionKind::words(&DecisionKind::ALL)
                ),
            )
        })?;
        if kinds.contains(&kind) {
            return Err(FieldError::new(
                at,
                ErrorCode::InvalidValue,
                format!("{} is listed twice", kind.as_str()),
            ));
        }
        kinds.push(kind);
    }
    kinds.sort_unstable();
    Ok(kinds)
}
