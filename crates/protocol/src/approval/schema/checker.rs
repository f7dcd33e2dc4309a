//! Judging an edit against a schema [`inspect`](super::inspect) accepted: every problem found,
//! each at its path, within a bound on the work one check may do.

use serde_json::{Map, Value};

use super::MAX_SCHEMA_VISITS;
use crate::error::{ErrorCode, FieldError, json_kind};
use crate::field_paths::{index_path, key_path};

/// Checks `value` (at `path`) against a schema [`inspect`](super::inspect) found
/// [`Support::Checked`](super::Support::Checked), and lists every problem found.
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
