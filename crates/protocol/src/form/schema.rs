//! MCP's `requestedSchema`: an object of primitive properties, read into the fields a page
//! shows. Only what MCP defines is accepted (`PrimitiveSchemaDefinition`: strings with
//! formats and lengths, numbers with bounds, booleans, single and multiple choice); anything
//! else is refused with its path.

use serde_json::{Map, Value};

use super::choices::{read_choice, read_choices};
use super::fields::{Field, FieldKind, looks_sensitive};
use super::scalars::{read_boolean, read_number, read_text};
use super::{MAX_FIELDS, MAX_TEXT_CHARS};
use crate::error::{ErrorCode, FieldError, json_kind};
use crate::field_paths::{at_most_chars, index_path, key_path, optional_text};

const TOP_KEYS: [&str; 5] = ["type", "properties", "required", "$schema", "title"];
const TOP_ANNOTATIONS: [&str; 1] = ["description"];

/// Reads a `requestedSchema` at `path` into its fields, in property order.
///
/// # Errors
/// Every problem found, each at its path.
pub fn read_schema(schema: &Value, path: &str) -> Result<Vec<Field>, Vec<FieldError>> {
    let fail = |at: String, code, message: String| Err(vec![FieldError::new(at, code, message)]);
    let Value::Object(top) = schema else {
        return fail(
            path.into(),
            ErrorCode::WrongType,
            format!(
                "must be an object {{\"type\": \"object\", \"properties\": {{...}}}}, got {}",
                json_kind(schema)
            ),
        );
    };
    let mut errors = Vec::new();
    for key in top.keys() {
        if !TOP_KEYS.contains(&key.as_str()) && !TOP_ANNOTATIONS.contains(&key.as_str()) {
            errors.push(FieldError::new(
                key_path(path, key),
                ErrorCode::UnknownField,
                format!(
                    "not allowed in an elicitation schema, which has only {}",
                    TOP_KEYS.join(", ")
                ),
            ));
        }
    }
    if top.get("type").and_then(Value::as_str) != Some("object") {
        errors.push(FieldError::new(
            key_path(path, "type"),
            ErrorCode::InvalidValue,
            "must be \"object\"",
        ));
    }
    let properties_path = key_path(path, "properties");
    let properties = match top.get("properties") {
        Some(Value::Object(properties)) if properties.len() > MAX_FIELDS => {
            return fail(
                properties_path,
                ErrorCode::TooManyItems,
                format!("at most {MAX_FIELDS} fields, got {}", properties.len()),
            );
        }
        Some(Value::Object(properties)) => properties,
        None => {
            return fail(
                properties_path,
                ErrorCode::MissingField,
                "required: the form's fields, an object of property schemas".into(),
            );
        }
        Some(other) => {
            return fail(
                properties_path,
                ErrorCode::WrongType,
                format!(
                    "must be an object of property schemas, got {}",
                    json_kind(other)
                ),
            );
        }
    };
    let required = read_required(top.get("required"), properties, &key_path(path, "required"))
        .map_err(|e| errors.push(e))
        .unwrap_or_default();
    let mut fields = Vec::with_capacity(properties.len());
    for (name, property) in properties {
        let at = key_path(&properties_path, name);
        if name.is_empty() || name.chars().count() > 256 {
            errors.push(FieldError::new(
                &at,
                ErrorCode::InvalidValue,
                "a field's name has 1 to 256 characters",
            ));
            continue;
        }
        match read_property(name, property, required.contains(&name.as_str()), &at) {
            Ok(field) => fields.push(field),
            Err(mut found) => errors.append(&mut found),
        }
    }
    if errors.is_empty() {
        Ok(fields)
    } else {
        Err(errors)
    }
}

fn read_required<'s>(
    value: Option<&'s Value>,
    properties: &Map<String, Value>,
    path: &str,
) -> Result<Vec<&'s str>, FieldError> {
    let names = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(names)) => names,
        Some(other) => {
            return Err(FieldError::new(
                path,
                ErrorCode::WrongType,
                format!("must be a list of field names, got {}", json_kind(other)),
            ));
        }
    };
    let mut required = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        match name.as_str() {
            Some(name) if properties.contains_key(name) => required.push(name),
            Some(name) => {
                return Err(FieldError::new(
                    index_path(path, i),
                    ErrorCode::InvalidValue,
                    format!("{} is not a field of this form", Value::from(name)),
                ));
            }
            None => {
                return Err(FieldError::new(
                    index_path(path, i),
                    ErrorCode::WrongType,
                    "must be a field's name",
                ));
            }
        }
    }
    Ok(required)
}

/// The keys each kind of property may have, beside `type`, `title` and `description`.
fn allowed_keys(kind: &str, choice: bool) -> &'static [&'static str] {
    match (kind, choice) {
        ("string", false) => &["minLength", "maxLength", "format", "default"],
        ("string", true) => &["enum", "enumNames", "oneOf", "const", "default"],
        ("number" | "integer", _) => &["minimum", "maximum", "default"],
        ("boolean", _) => &["default"],
        _ => &["items", "minItems", "maxItems", "default"],
    }
}

fn read_property(
    name: &str,
    property: &Value,
    required: bool,
    path: &str,
) -> Result<Field, Vec<FieldError>> {
    let one = |at: String, code, message: String| vec![FieldError::new(at, code, message)];
    let Value::Object(schema) = property else {
        return Err(one(
            path.into(),
            ErrorCode::WrongType,
            format!(
                "a field's schema must be an object, got {}",
                json_kind(property)
            ),
        ));
    };
    let Some(kind @ ("string" | "number" | "integer" | "boolean" | "array")) =
        schema.get("type").and_then(Value::as_str)
    else {
        return Err(one(
            key_path(path, "type"),
            ErrorCode::InvalidValue,
            "must be one of \"string\", \"number\", \"integer\", \"boolean\" or \"array\" \
             (an elicitation form has only primitive fields)"
                .into(),
        ));
    };
    // `const` is the one-option choice pydantic renders for `Literal["x"]` (the MCP Python
    // SDK sends it as is).
    let choice = kind == "string"
        && (schema.contains_key("enum")
            || schema.contains_key("oneOf")
            || schema.contains_key("const"));
    let allowed = allowed_keys(kind, choice);
    let mut errors = Vec::new();
    for key in schema.keys() {
        if !matches!(key.as_str(), "type" | "title" | "description")
            && !allowed.contains(&key.as_str())
        {
            errors.push(FieldError::new(
                key_path(path, key),
                ErrorCode::UnknownField,
                format!(
                    "not allowed on a {} field, which takes {}",
                    if choice { "choice" } else { kind },
                    ["title", "description"]
                        .iter()
                        .chain(allowed)
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    let mut text = |key: &str| -> Option<String> {
        optional_text(schema.get(key), &key_path(path, key))
            .and_then(|t| {
                t.map(|t| {
                    at_most_chars(t, MAX_TEXT_CHARS, &key_path(path, key)).map(|()| t.clone())
                })
                .transpose()
            })
            .map_err(|e| errors.push(e))
            .ok()
            .flatten()
    };
    let title = text("title");
    let description = text("description");
    let mut field = Field {
        name: name.to_owned(),
        kind: FieldKind::Text,
        sensitive: looks_sensitive(name) || title.as_deref().is_some_and(looks_sensitive),
        title,
        description,
        required,
        default: None,
        min_length: None,
        max_length: None,
        minimum: None,
        maximum: None,
        min_items: None,
        max_items: None,
        options: None,
    };
    let shaped = match (kind, choice) {
        ("string", false) => read_text(schema, path, &mut field),
        ("string", true) => read_choice(schema, path, &mut field),
        ("number" | "integer", _) => read_number(schema, kind, path, &mut field),
        ("boolean", _) => read_boolean(schema, path, &mut field),
        _ => read_choices(schema, path, &mut field),
    };
    if let Err(mut found) = shaped {
        errors.append(&mut found);
    }
    if errors.is_empty() {
        Ok(field)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::form::fields::Choice;

    #[test]
    fn a_const_string_is_a_choice_of_one() {
        // pydantic's rendering of `Literal["green"] = "green"`, as the MCP Python SDK sends it.
        let schema = json!({"type": "object", "title": "Form", "properties": {
            "color": {"const": "green", "default": "green", "title": "Color", "type": "string"}}});
        let fields = read_schema(&schema, "schema").expect("a const string is a choice");
        assert_eq!(fields[0].kind, FieldKind::Choice);
        assert_eq!(
            fields[0].options,
            Some(vec![Choice {
                value: "green".into(),
                label: "green".into()
            }])
        );
        assert_eq!(fields[0].default, Some(json!("green")));

        let refused = |property: Value| {
            let schema = json!({"type": "object", "properties": {"color": property}});
            read_schema(&schema, "schema")
                .expect_err("refused")
                .into_iter()
                .map(|e| e.path)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            refused(json!({"type": "string", "const": "a", "enum": ["a", "b"]})),
            ["schema.properties.color.const"]
        );
        assert_eq!(
            refused(json!({"type": "string", "const": 1})),
            ["schema.properties.color.const"]
        );
        assert_eq!(
            refused(json!({"type": "string", "const": "a", "default": "b"})),
            ["schema.properties.color.default"]
        );
        assert_eq!(
            refused(json!({"type": "string", "const": "a", "format": "email"})),
            ["schema.properties.color.format"]
        );
    }
}
