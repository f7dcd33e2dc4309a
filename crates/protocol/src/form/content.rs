//! The content of an accepted form, checked against its fields.

use serde_json::{Map, Value};

use super::fields::{Field, FieldKind};
use super::formats::{is_date, is_date_time, is_email, is_uri};
use super::request::{Form, Mode};
use crate::error::{ErrorCode, FieldError, ValidationErrors, json_kind};
use crate::field_paths::{key_path, response_object};

/// Checks a tab's `{"content": {...}}` against the form; paths start with `response`.
/// Returns the content the server receives (URL mode: none).
///
/// # Errors
/// Every problem found.
pub fn check_content(
    form: &Form,
    response: &Value,
) -> Result<Option<Map<String, Value>>, ValidationErrors> {
    let one = |path: &str, code, message: String| {
        Err(ValidationErrors::single(FieldError::new(
            path, code, message,
        )))
    };
    let fields = response_object(response, &["content"], "{\"content\": {...}}")?;
    let content = match fields.get("content") {
        Some(Value::Object(content)) => content,
        None | Some(Value::Null) if form.mode == Mode::Url => return Ok(None),
        None | Some(Value::Null) => {
            return one(
                "response.content",
                ErrorCode::MissingField,
                "required: the form's values, by field name".into(),
            );
        }
        Some(other) => {
            return one(
                "response.content",
                ErrorCode::WrongType,
                format!(
                    "must be an object of the form's values, got {}",
                    json_kind(other)
                ),
            );
        }
    };
    if form.mode == Mode::Url {
        if let Some(key) = content.keys().next() {
            return one(
                &key_path("response.content", key),
                ErrorCode::UnknownField,
                "a URL request takes no content: accepting is consent to open it".into(),
            );
        }
        return Ok(None);
    }
    let mut errors = Vec::new();
    for key in content.keys() {
        if !form.fields.iter().any(|f| &f.name == key) {
            errors.push(FieldError::new(
                key_path("response.content", key),
                ErrorCode::UnknownField,
                "not a field of this form",
            ));
        }
    }
    for field in &form.fields {
        let path = key_path("response.content", &field.name);
        match content.get(&field.name) {
            None if field.required => {
                errors.push(FieldError::new(path, ErrorCode::MissingField, "required"));
            }
            None => {}
            Some(value) => {
                if let Err(e) = check_value(field, value, &path) {
                    errors.push(e);
                }
            }
        }
    }
    match ValidationErrors::from_vec(errors) {
        Some(errors) => Err(errors),
        None => Ok(Some(content.clone())),
    }
}

fn check_value(field: &Field, value: &Value, path: &str) -> Result<(), FieldError> {
    let fail = |code, message: String| Err(FieldError::new(path, code, message));
    let wrong = |expected: &str| {
        fail(
            ErrorCode::WrongType,
            format!("expected {expected}, got {}", json_kind(value)),
        )
    };
    match field.kind {
        FieldKind::Text
        | FieldKind::Email
        | FieldKind::Uri
        | FieldKind::Date
        | FieldKind::DateTime => {
            let Value::String(text) = value else {
                return wrong("a string");
            };
            let chars = text.chars().count() as u64;
            if let Some(min) = field.min_length.filter(|&min| chars < min) {
                return fail(
                    ErrorCode::InvalidValue,
                    format!("at least {min} characters, got {chars}"),
                );
            }
            if let Some(max) = field.max_length.filter(|&max| chars > max) {
                return fail(
                    ErrorCode::TooLong,
                    format!("at most {max} characters, got {chars}"),
                );
            }
            let (fits, what) = match field.kind {
                FieldKind::Email => (is_email(text), "an e-mail address, name@example.com"),
                FieldKind::Uri => (
                    is_uri(text),
                    "a URI with a scheme, such as https://example.com",
                ),
                FieldKind::Date => (is_date(text), "a date, YYYY-MM-DD"),
                FieldKind::DateTime => (is_date_time(text), "a date and time, YYYY-MM-DDTHH:MM"),
                _ => (true, ""),
            };
            if !fits {
                return fail(ErrorCode::InvalidValue, format!("expected {what}"));
            }
            Ok(())
        }
        FieldKind::Number | FieldKind::Integer => {
            let Some(number) = value.as_f64().filter(|_| value.is_number()) else {
                return wrong(if field.kind == FieldKind::Integer {
                    "a whole number"
                } else {
                    "a number"
                });
            };
            if field.kind == FieldKind::Integer && number.fract() != 0.0 {
                return wrong("a whole number");
            }
            if let Some(min) = field.minimum.filter(|&min| number < min) {
                return fail(
                    ErrorCode::InvalidValue,
                    format!("at least {min}, got {number}"),
                );
            }
            if let Some(max) = field.maximum.filter(|&max| number > max) {
                return fail(
                    ErrorCode::InvalidValue,
                    format!("at most {max}, got {number}"),
                );
            }
            Ok(())
        }
        FieldKind::Boolean => match value {
            Value::Bool(_) => Ok(()),
            _ => wrong("true or false"),
        },
        FieldKind::Choice => match value.as_str() {
            Some(picked) if offered(field, picked) => Ok(()),
            Some(_) => fail(
                ErrorCode::InvalidValue,
                format!("must be one of {}", values(field)),
            ),
            None => wrong("one of the options, a string"),
        },
        FieldKind::Choices => {
            let Value::Array(picked) = value else {
                return wrong("a list of the options");
            };
            if let Some(bad) = picked
                .iter()
                .find(|p| !p.as_str().is_some_and(|p| offered(field, p)))
            {
                return fail(
                    ErrorCode::InvalidValue,
                    format!("{bad} is not an option; the options are {}", values(field)),
                );
            }
            let count = picked.len() as u64;
            if let Some(min) = field.min_items.filter(|&min| count < min) {
                return fail(
                    ErrorCode::TooFewItems,
                    format!("pick at least {min}, got {count}"),
                );
            }
            if let Some(max) = field.max_items.filter(|&max| count > max) {
                return fail(
                    ErrorCode::TooManyItems,
                    format!("pick at most {max}, got {count}"),
                );
            }
            Ok(())
        }
    }
}

fn offered(field: &Field, picked: &str) -> bool {
    field.options.iter().flatten().any(|o| o.value == picked)
}

fn values(field: &Field) -> String {
    let options: Vec<String> = field
        .options
        .iter()
        .flatten()
        .take(10)
        .map(|o| Value::from(o.value.as_str()).to_string())
        .collect();
    options.join(", ")
}
