//! The part of JSON Schema that tool argument schemas use, for checking edited arguments.
//!
//! [`inspect`] reads a schema once, when the agent asks: a supported keyword with a malformed
//! value refuses the ask (with the keyword's path); the first keyword askgate does not check
//! makes edits checked as a JSON object only ([`Support::Unchecked`]), which tabs are told.
//! [`check`] ([`checker`]) then judges an edit against a schema that [`inspect`] accepted.

mod checker;

use serde_json::Value;

pub use checker::check;

use crate::error::{ErrorCode, FieldError, json_kind};
use crate::field_paths::{index_path, key_path};

/// Keywords that constrain, and are checked.
const CHECKED: [&str; 13] = [
    "type",
    "properties",
    "required",
    "enum",
    "const",
    "items",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "additionalProperties",
    "anyOf",
    "oneOf",
];

/// Keywords that constrain nothing (annotations, and definitions nothing can reference
/// without `$ref`, which is not supported).
const ANNOTATIONS: [&str; 13] = [
    "title",
    "description",
    "default",
    "examples",
    "format",
    "$schema",
    "$id",
    "$comment",
    "$defs",
    "definitions",
    "deprecated",
    "readOnly",
    "writeOnly",
];

const TYPES: [&str; 7] = [
    "object", "array", "string", "number", "integer", "boolean", "null",
];

/// Schema nodes one check may visit: bounds the work of a wide `anyOf` applied to every item
/// of a long array.
pub const MAX_SCHEMA_VISITS: u32 = 200_000;

/// Whether edits can be checked against a schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Support {
    /// Every keyword is one askgate checks.
    Checked,
    /// `keyword`, at `at`, is not checked: edits are checked as a JSON object only.
    Unchecked {
        /// The first keyword found that askgate does not check.
        keyword: String,
        /// Where it is, from `args_schema`.
        at: String,
    },
}

/// Reads a schema at `path`: its shape, and whether every keyword is checked.
///
/// # Errors
/// A checked keyword whose value is malformed, at its path.
pub fn inspect(schema: &Value, path: &str) -> Result<Support, FieldError> {
    let object = match schema {
        Value::Bool(_) => return Ok(Support::Checked),
        Value::Object(object) => object,
        other => {
            return Err(FieldError::new(
                path,
                ErrorCode::WrongType,
                format!(
                    "a schema must be an object or a boolean, got {}",
                    json_kind(other)
                ),
            ));
        }
    };
    let mut support = Support::Checked;
    for (keyword, value) in object {
        let at = key_path(path, keyword);
        if ANNOTATIONS.contains(&keyword.as_str()) {
            continue;
        }
        if !CHECKED.contains(&keyword.as_str()) {
            if support == Support::Checked {
                support = Support::Unchecked {
                    keyword: keyword.clone(),
                    at: path.to_owned(),
                };
            }
            continue;
        }
        let inner = inspect_keyword(keyword, value, &at)?;
        if support == Support::Checked {
            support = inner;
        }
    }
    Ok(support)
}

fn inspect_keyword(keyword: &str, value: &Value, at: &str) -> Result<Support, FieldError> {
    let malformed = |expected: &str| {
        Err(FieldError::new(
            at,
            ErrorCode::InvalidValue,
            format!("`{keyword}` must be {expected}, got {}", json_kind(value)),
        ))
    };
    match keyword {
        "type" => match value {
            Value::String(name) if TYPES.contains(&name.as_str()) => Ok(Support::Checked),
            Value::Array(names)
                if !names.is_empty()
                    && names
                        .iter()
                        .all(|n| n.as_str().is_some_and(|n| TYPES.contains(&n))) =>
            {
                Ok(Support::Checked)
            }
            _ => Err(FieldError::new(
                at,
                ErrorCode::InvalidValue,
                format!(
                    "`type` must be one of {} or a list of them",
                    TYPES.join(", ")
                ),
            )),
        },
        "properties" => match value {
            Value::Object(properties) => first_unchecked(
                properties
                    .iter()
                    .map(|(name, schema)| inspect(schema, &key_path(at, name))),
            ),
            _ => malformed("an object of schemas"),
        },
        "required" => match value {
            Value::Array(names) if names.iter().all(Value::is_string) => Ok(Support::Checked),
            _ => malformed("a list of property names"),
        },
        "enum" => match value {
            Value::Array(values) if !values.is_empty() => Ok(Support::Checked),
            _ => malformed("a non-empty list"),
        },
        "const" => Ok(Support::Checked),
        "items" | "additionalProperties" => inspect(value, at),
        "minimum" | "maximum" => match value {
            Value::Number(_) => Ok(Support::Checked),
            _ => malformed("a number"),
        },
        "minLength" | "maxLength" => match value.as_u64() {
            Some(_) => Ok(Support::Checked),
            None => malformed("a whole number, 0 or more"),
        },
        // anyOf / oneOf
        _ => match value {
            Value::Array(schemas) if !schemas.is_empty() => first_unchecked(
                schemas
                    .iter()
                    .enumerate()
                    .map(|(i, schema)| inspect(schema, &index_path(at, i))),
            ),
            _ => malformed("a non-empty list of schemas"),
        },
    }
}

fn first_unchecked(
    mut supports: impl Iterator<Item = Result<Support, FieldError>>,
) -> Result<Support, FieldError> {
    let mut found = Support::Checked;
    for support in supports.by_ref() {
        let support = support?;
        if found == Support::Checked {
            found = support;
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests;
