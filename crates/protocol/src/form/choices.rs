//! A form's choices: one option (`enum`, legacy `enumNames`, `oneOf: [{const, title}]`, a
//! lone `const`) or several (`type: "array"` with `items.enum` or `items.anyOf`).

use serde_json::{Map, Value};

use super::MAX_CHOICES;
use super::MAX_TEXT_CHARS;
use super::fields::{Choice, Field, FieldKind, count, in_order};
use crate::error::{ErrorCode, FieldError};
use crate::field_paths::{index_path, key_path};

/// `enum` (with the legacy `enumNames`) or `oneOf: [{const, title}]`, at `path`.
fn read_options(
    enum_: Option<&Value>,
    names: Option<&Value>,
    one_of: Option<&Value>,
    path: &str,
    one_of_key: &str,
) -> Result<Vec<Choice>, Vec<FieldError>> {
    let one = |at: String, code, message: &str| vec![FieldError::new(at, code, message)];
    let options: Vec<Choice> = match (enum_, one_of) {
        (Some(_), Some(_)) => {
            return Err(one(
                key_path(path, one_of_key),
                ErrorCode::InvalidValue,
                "give `enum` or the titled options, not both",
            ));
        }
        (Some(values), None) => {
            let at = key_path(path, "enum");
            let Some(values) = values.as_array().filter(|v| !v.is_empty()) else {
                return Err(one(
                    at,
                    ErrorCode::InvalidValue,
                    "must be a non-empty list of strings",
                ));
            };
            let labels = match names {
                None => None,
                Some(Value::Array(labels)) if labels.len() == values.len() => Some(labels),
                Some(_) => {
                    return Err(one(
                        key_path(path, "enumNames"),
                        ErrorCode::InvalidValue,
                        "must be a list of strings, one per `enum` value",
                    ));
                }
            };
            let mut options = Vec::with_capacity(values.len());
            for (i, value) in values.iter().enumerate() {
                let Some(value) = value.as_str() else {
                    return Err(one(
                        index_path(&at, i),
                        ErrorCode::WrongType,
                        "must be a string",
                    ));
                };
                let label = match labels.map(|l| &l[i]) {
                    None => value,
                    Some(Value::String(label)) => label,
                    Some(_) => {
                        return Err(one(
                            index_path(&key_path(path, "enumNames"), i),
                            ErrorCode::WrongType,
                            "must be a string",
                        ));
                    }
                };
                options.push(Choice {
                    value: value.to_owned(),
                    label: label.to_owned(),
                });
            }
            options
        }
        (None, Some(titled)) => {
            let at = key_path(path, one_of_key);
            let Some(titled) = titled.as_array().filter(|v| !v.is_empty()) else {
                return Err(one(
                    at,
                    ErrorCode::InvalidValue,
                    "must be a non-empty list of {\"const\", \"title\"}",
                ));
            };
            let mut options = Vec::with_capacity(titled.len());
            for (i, option) in titled.iter().enumerate() {
                let item = index_path(&at, i);
                let Some(object) = option.as_object() else {
                    return Err(one(
                        item,
                        ErrorCode::WrongType,
                        "must be an object {\"const\", \"title\"}",
                    ));
                };
                if let Some(key) = object
                    .keys()
                    .find(|k| !matches!(k.as_str(), "const" | "title" | "description"))
                {
                    return Err(one(
                        key_path(&item, key),
                        ErrorCode::UnknownField,
                        "an option has only const and title",
                    ));
                }
                let (Some(value), Some(label)) = (
                    object.get("const").and_then(Value::as_str),
                    object.get("title").and_then(Value::as_str),
                ) else {
                    return Err(one(
                        item,
                        ErrorCode::InvalidValue,
                        "an option needs a string `const` and a string `title`",
                    ));
                };
                options.push(Choice {
                    value: value.to_owned(),
                    label: label.to_owned(),
                });
            }
            options
        }
        (None, None) => {
            return Err(one(
                key_path(path, "enum"),
                ErrorCode::MissingField,
                "required: the options (`enum`, or titled options)",
            ));
        }
    };
    if options.len() > MAX_CHOICES {
        return Err(one(
            path.into(),
            ErrorCode::TooManyItems,
            &format!("at most {MAX_CHOICES} options, got {}", options.len()),
        ));
    }
    for (i, option) in options.iter().enumerate() {
        if options[..i].iter().any(|o| o.value == option.value) {
            return Err(one(
                path.into(),
                ErrorCode::InvalidValue,
                &format!(
                    "the option {} is listed twice",
                    Value::from(option.value.as_str())
                ),
            ));
        }
        if option.value.chars().count() > MAX_TEXT_CHARS
            || option.label.chars().count() > MAX_TEXT_CHARS
        {
            return Err(one(
                path.into(),
                ErrorCode::TooLong,
                &format!("an option has at most {MAX_TEXT_CHARS} characters"),
            ));
        }
    }
    Ok(options)
}

pub(super) fn read_choice(
    schema: &Map<String, Value>,
    path: &str,
    field: &mut Field,
) -> Result<(), Vec<FieldError>> {
    field.kind = FieldKind::Choice;
    let options = match schema.get("const") {
        None => read_options(
            schema.get("enum"),
            schema.get("enumNames"),
            schema.get("oneOf"),
            path,
            "oneOf",
        )?,
        Some(_)
            if ["enum", "enumNames", "oneOf"]
                .iter()
                .any(|k| schema.contains_key(*k)) =>
        {
            return Err(vec![FieldError::new(
                key_path(path, "const"),
                ErrorCode::InvalidValue,
                "give `const` (the one option), `enum` or the titled options, one of them",
            )]);
        }
        Some(Value::String(value)) if value.chars().count() <= MAX_TEXT_CHARS => vec![Choice {
            value: value.clone(),
            label: value.clone(),
        }],
        Some(Value::String(_)) => {
            return Err(vec![FieldError::new(
                key_path(path, "const"),
                ErrorCode::TooLong,
                format!("an option has at most {MAX_TEXT_CHARS} characters"),
            )]);
        }
        Some(_) => {
            return Err(vec![FieldError::new(
                key_path(path, "const"),
                ErrorCode::WrongType,
                "must be a string, the one option",
            )]);
        }
    };
    field.default = match schema.get("default") {
        None => None,
        Some(Value::String(value)) if options.iter().any(|o| &o.value == value) => {
            Some(Value::from(value.as_str()))
        }
        Some(_) => {
            return Err(vec![FieldError::new(
                key_path(path, "default"),
                ErrorCode::InvalidValue,
                "must be one of the options",
            )]);
        }
    };
    field.options = Some(options);
    Ok(())
}

pub(super) fn read_choices(
    schema: &Map<String, Value>,
    path: &str,
    field: &mut Field,
) -> Result<(), Vec<FieldError>> {
    field.kind = FieldKind::Choices;
    let items_path = key_path(path, "items");
    let Some(items) = schema.get("items").and_then(Value::as_object) else {
        return Err(vec![FieldError::new(
            items_path,
            ErrorCode::MissingField,
            "required: the options, {\"type\": \"string\", \"enum\": [...]} or {\"anyOf\": [{\"const\", \"title\"}...]}",
        )]);
    };
    if let Some(key) = items
        .keys()
        .find(|k| !matches!(k.as_str(), "type" | "enum" | "anyOf"))
    {
        return Err(vec![FieldError::new(
            key_path(&items_path, key),
            ErrorCode::UnknownField,
            "the options take only type, enum or anyOf",
        )]);
    }
    if items.get("type").is_some_and(|t| t != "string") {
        return Err(vec![FieldError::new(
            key_path(&items_path, "type"),
            ErrorCode::InvalidValue,
            "must be \"string\"",
        )]);
    }
    let options = read_options(
        items.get("enum"),
        None,
        items.get("anyOf"),
        &items_path,
        "anyOf",
    )?;
    field.min_items = count(schema, "minItems", path).map_err(|e| vec![e])?;
    field.max_items = count(schema, "maxItems", path).map_err(|e| vec![e])?;
    in_order(
        field.min_items.map(|n| n as f64),
        field.max_items.map(|n| n as f64),
        path,
        "minItems",
        "maxItems",
    )
    .map_err(|e| vec![e])?;
    field.default = match schema.get("default") {
        None => None,
        Some(Value::Array(values))
            if values.iter().all(|v| {
                v.as_str()
                    .is_some_and(|v| options.iter().any(|o| o.value == v))
            }) =>
        {
            Some(Value::Array(values.clone()))
        }
        Some(_) => {
            return Err(vec![FieldError::new(
                key_path(path, "default"),
                ErrorCode::InvalidValue,
                "must be a list of the options",
            )]);
        }
    };
    field.options = Some(options);
    Ok(())
}
