//! The part of JSON Schema that tool argument schemas use, for checking edited arguments.
//!
//! [`inspect`] reads a schema once, when the agent asks: a supported keyword with a malformed
//! value refuses the ask (with the keyword's path); the first keyword askgate does not check
//! makes edits checked as a JSON object only ([`Support::Unchecked`]), which tabs are told.
//! [`EditSchema`] reads an accepted schema once, at the ask, and
//! [`EditSchema::check`] then judges each edit against it.
//!
//! - `canonical`: one key per JSON value as JSON Schema compares them, for `enum` and `const`.
//! - `compiled`: [`EditSchema`], the schema read into rules, each `enum` indexed.
//! - `checker`: an edit judged against an [`EditSchema`], within [`MAX_CHECK_STEPS`].

mod canonical;
mod checker;
mod compiled;

use serde_json::Value;

pub use checker::Checked;
pub use compiled::EditSchema;

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

/// Steps one edit's check may take (a schema node visited, or a value read to compare with an
/// `enum` or a `const`): bounds the work of a wide `anyOf` applied to every item of a long
/// array, and of large values compared with many `enum`s.
pub const MAX_CHECK_STEPS: u32 = 200_000;

/// Most values (objects, lists, strings, numbers, booleans, nulls) in one `args_schema`.
pub const MAX_SCHEMA_VALUES: usize = 50_000;

/// Most entries in one `enum`.
pub const MAX_ENUM_ENTRIES: usize = 10_000;

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

/// Reads a schema at `path`: its size, its shape, and whether every keyword is checked.
///
/// # Errors
/// A schema of more than [`MAX_SCHEMA_VALUES`] values, an `enum` of more than
/// [`MAX_ENUM_ENTRIES`], a checked keyword whose value is malformed: at its path.
pub fn inspect(schema: &Value, path: &str) -> Result<Support, FieldError> {
    // Keywords first, so that an enum too long is named where it is.
    let support = inspect_schema(schema, path)?;
    let values = count_values(schema);
    if values > MAX_SCHEMA_VALUES {
        return Err(FieldError::new(
            path,
            ErrorCode::TooManyItems,
            format!("at most {MAX_SCHEMA_VALUES} values in all, got {values}"),
        ));
    }
    Ok(support)
}

fn count_values(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(count_values).sum(),
        Value::Object(object) => object.values().map(count_values).sum(),
        _ => 0,
    }
}

fn inspect_schema(schema: &Value, path: &str) -> Result<Support, FieldError> {
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
                    .map(|(name, schema)| inspect_schema(schema, &key_path(at, name))),
            ),
            _ => malformed("an object of schemas"),
        },
        "required" => match value {
            Value::Array(names) if names.iter().all(Value::is_string) => Ok(Support::Checked),
            _ => malformed("a list of property names"),
        },
        "enum" => match value {
            Value::Array(values) if values.len() > MAX_ENUM_ENTRIES => Err(FieldError::new(
                at,
                ErrorCode::TooManyItems,
                format!("at most {MAX_ENUM_ENTRIES} entries, got {}", values.len()),
            )),
            Value::Array(values) if !values.is_empty() => Ok(Support::Checked),
            _ => malformed("a non-empty list"),
        },
        "const" => Ok(Support::Checked),
        "items" | "additionalProperties" => inspect_schema(value, at),
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
                    .map(|(i, schema)| inspect_schema(schema, &index_path(at, i))),
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
