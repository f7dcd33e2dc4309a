//! A form's fields of one value: text (with a format), numbers, booleans.

use serde_json::{Map, Value};

use super::fields::{Field, FieldKind, count, in_order};
use crate::error::{ErrorCode, FieldError};
use crate::field_paths::key_path;

pub(super) fn read_text(
    schema: &Map<String, Value>,
    path: &str,
    field: &mut Field,
) -> Result<(), Vec<FieldError>> {
    field.kind = match schema.get("format") {
        None => FieldKind::Text,
        Some(format) => match format.as_str() {
            Some("email") => FieldKind::Email,
            Some("uri") => FieldKind::Uri,
            Some("date") => FieldKind::Date,
            Some("date-time") => FieldKind::DateTime,
            _ => {
                return Err(vec![FieldError::new(
                    key_path(path, "format"),
                    ErrorCode::InvalidValue,
                    "must be one of \"email\", \"uri\", \"date\", \"date-time\"",
                )]);
            }
        },
    };
    field.min_length = count(schema, "minLength", path).map_err(|e| vec![e])?;
    field.max_length = count(schema, "maxLength", path).map_err(|e| vec![e])?;
    in_order(
        field.min_length.map(|n| n as f64),
        field.max_length.map(|n| n as f64),
        path,
        "minLength",
        "maxLength",
    )
    .map_err(|e| vec![e])?;
    field.default = match schema.get("default") {
        None => None,
        Some(Value::String(text)) => Some(Value::from(text.as_str())),
        Some(_) => {
            return Err(vec![FieldError::new(
                key_path(path, "default"),
                ErrorCode::WrongType,
                "must be a string",
            )]);
        }
    };
    Ok(())
}

pub(super) fn read_number(
    schema: &Map<String, Value>,
    kind: &str,
    path: &str,
    field: &mut Field,
) -> Result<(), Vec<FieldError>> {
    field.kind = if kind == "integer" {
        FieldKind::Integer
    } else {
        FieldKind::Number
    };
    let bound = |key: &str| match schema.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(vec![FieldError::new(
            key_path(path, key),
            ErrorCode::WrongType,
            "must be a number",
        )]),
    };
    field.minimum = bound("minimum")?;
    field.maximum = bound("maximum")?;
    in_order(field.minimum, field.maximum, path, "minimum", "maximum").map_err(|e| vec![e])?;
    field.default = match schema.get("default") {
        None => None,
        Some(Value::Number(n))
            if kind == "number" || n.as_f64().is_some_and(|n| n.fract() == 0.0) =>
        {
            Some(Value::Number(n.clone()))
        }
        Some(_) => {
            return Err(vec![FieldError::new(
                key_path(path, "default"),
                ErrorCode::WrongType,
                format!(
                    "must be {}",
                    if kind == "integer" {
                        "a whole number"
                    } else {
                        "a number"
                    }
                ),
            )]);
        }
    };
    Ok(())
}

pub(super) fn read_boolean(
    schema: &Map<String, Value>,
    path: &str,
    field: &mut Field,
) -> Result<(), Vec<FieldError>> {
    field.kind = FieldKind::Boolean;
    field.default = match schema.get("default") {
        None => None,
        Some(Value::Bool(b)) => Some(Value::Bool(*b)),
        Some(_) => {
            return Err(vec![FieldError::new(
                key_path(path, "default"),
                ErrorCode::WrongType,
                "must be true or false",
            )]);
        }
    };
    Ok(())
}
