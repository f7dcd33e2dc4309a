//! The part of JSON Schema that tool argument schemas use, for checking edited arguments.
//!
//! [`inspect`] reads a schema once, when the agent asks: a supported keyword with a malformed
//! value refuses the ask (with the keyword's path); the first keyword askgate does not check
//! makes edits checked as a JSON object only ([`Support::Unchecked`]), which tabs are told.
//! [`check`] then judges an edit against a schema that [`inspect`] accepted.

use serde_json::{Map, Value};

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

/// Checks `value` (at `path`) against a schema [`inspect`] found [`Support::Checked`], and
/// lists every problem found.
pub fn check(schema: &Value, value: &Value, path: &str) -> Vec<FieldError> {
    let mut checker = Checker {
        visits: MAX_SCHEMA_VISITS,
        errors: Vec::new(),
    };
    checker.check(schema, value, path);
    if checker.visits == 0 {
        // Past the bound nothing checked can be trusted, so no error found is reported.
        return vec![FieldError::new(
            path,
            ErrorCode::InvalidValue,
            format!(
                "too much to check: the schema and the value take more than {MAX_SCHEMA_VISITS} \
                 steps"
            ),
        )];
    }
    checker.errors
}

struct Checker {
    /// Schema nodes left to visit; at 0 every check fails.
    visits: u32,
    errors: Vec<FieldError>,
}

impl Checker {
    fn fail(&mut self, path: &str, code: ErrorCode, message: impl Into<String>) {
        self.errors.push(FieldError::new(path, code, message));
    }

    /// Whether `value` fits `schema`, without keeping the errors.
    fn fits(&mut self, schema: &Value, value: &Value, path: &str) -> bool {
        let before = self.errors.len();
        self.check(schema, value, path);
        let fits = self.errors.len() == before && self.visits > 0;
        self.errors.truncate(before);
        fits
    }

    fn check(&mut self, schema: &Value, value: &Value, path: &str) {
        if self.visits == 0 {
            return;
        }
        self.visits -= 1;
        let schema = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                return self.fail(path, ErrorCode::InvalidValue, "no value is allowed here");
            }
            Value::Object(schema) => schema,
            _ => return,
        };
        if let Some(types) = schema.get("type")
            && !type_fits(types, value)
        {
            return self.fail(
                path,
                ErrorCode::WrongType,
                format!("expected {}, got {}", type_words(types), json_kind(value)),
            );
        }
        if let Some(Value::Array(allowed)) = schema.get("enum")
            && !allowed.iter().any(|a| same_json(a, value))
        {
            self.fail(
                path,
                ErrorCode::InvalidValue,
                format!("must be one of {}", listed(allowed)),
            );
        }
        if let Some(wanted) = schema.get("const")
            && !same_json(wanted, value)
        {
            self.fail(path, ErrorCode::InvalidValue, format!("must be {wanted}"));
        }
        match value {
            Value::Object(object) => self.check_object(schema, object, path),
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        self.check(item_schema, item, &index_path(path, i));
                    }
                }
            }
            Value::String(text) => self.check_length(schema, text, path),
            Value::Number(number) => self.check_range(schema, number.as_f64(), path),
            _ => {}
        }
        self.check_choices(schema, value, path);
    }

    fn check_object(
        &mut self,
        schema: &Map<String, Value>,
        object: &Map<String, Value>,
        path: &str,
    ) {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    self.fail(&key_path(path, name), ErrorCode::MissingField, "required");
                }
            }
        }
        for (name, item) in object {
            let at = key_path(path, name);
            match properties.and_then(|p| p.get(name)) {
                Some(property) => self.check(property, item, &at),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => self.fail(
                        &at,
                        ErrorCode::UnknownField,
                        "not allowed: the tool takes no argument of this name",
                    ),
                    Some(extra) => self.check(extra, item, &at),
                    None => {}
                },
            }
        }
    }

    fn check_length(&mut self, schema: &Map<String, Value>, text: &str, path: &str) {
        let chars = text.chars().count() as u64;
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && chars < min
        {
            let code = if chars == 0 {
                ErrorCode::Blank
            } else {
                ErrorCode::InvalidValue
            };
            self.fail(
                path,
                code,
                format!("at least {min} characters, got {chars}"),
            );
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && chars > max
        {
            self.fail(
                path,
                ErrorCode::TooLong,
                format!("at most {max} characters, got {chars}"),
            );
        }
    }

    fn check_range(&mut self, schema: &Map<String, Value>, number: Option<f64>, path: &str) {
        let Some(number) = number else { return };
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && number < min
        {
            self.fail(
                path,
                ErrorCode::InvalidValue,
                format!("at least {min}, got {number}"),
            );
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
            && number > max
        {
            self.fail(
                path,
                ErrorCode::InvalidValue,
                format!("at most {max}, got {number}"),
            );
        }
    }

    fn check_choices(&mut self, schema: &Map<String, Value>, value: &Value, path: &str) {
        if let Some(Value::Array(choices)) = schema.get("anyOf")
            && !choices.iter().any(|choice| self.fits(choice, value, path))
        {
            self.fail(
                path,
                ErrorCode::InvalidValue,
                format!("fits none of the {} allowed forms (anyOf)", choices.len()),
            );
        }
        if let Some(Value::Array(choices)) = schema.get("oneOf") {
            let fitting = choices
                .iter()
                .filter(|choice| self.fits(choice, value, path))
                .count();
            match fitting {
                1 => {}
                0 => self.fail(
                    path,
                    ErrorCode::InvalidValue,
                    format!("fits none of the {} allowed forms (oneOf)", choices.len()),
                ),
                n => self.fail(
                    path,
                    ErrorCode::InvalidValue,
                    format!("fits {n} of the allowed forms, and must fit exactly one (oneOf)"),
                ),
            }
        }
    }
}

fn type_fits(types: &Value, value: &Value) -> bool {
    let fits = |name: &str| match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => true,
    };
    match types {
        Value::String(name) => fits(name),
        Value::Array(names) => names.iter().filter_map(Value::as_str).any(fits),
        _ => true,
    }
}

fn type_words(types: &Value) -> String {
    let word = |name: &str| match name {
        "object" => "an object",
        "array" => "a list",
        "string" => "a string",
        "number" => "a number",
        "integer" => "a whole number",
        "boolean" => "true or false",
        "null" => "null",
        _ => "something else",
    };
    match types {
        Value::String(name) => word(name).to_owned(),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .map(word)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "a value".to_owned(),
    }
}

/// JSON equality as JSON Schema has it: `1` and `1.0` are the same number.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// At most ten values, written as JSON.
fn listed(values: &[Value]) -> String {
    let mut words: Vec<String> = values.iter().take(10).map(Value::to_string).collect();
    if values.len() > 10 {
        words.push(format!("… ({} in all)", values.len()));
    }
    words.join(", ")
}

#[cfg(test)]
mod tests;
