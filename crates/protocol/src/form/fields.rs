//! MCP's `requestedSchema`: an object of primitive properties, read into the fields a page
//! shows. Only what MCP defines is accepted (`PrimitiveSchemaDefinition`: strings with
//! formats and lengths, numbers with bounds, booleans, single and multiple choice); anything
//! else is refused with its path.

use serde::Serialize;
use serde_json::{Map, Value};

use super::choices::{read_choice, read_choices};
use super::scalars::{read_boolean, read_number, read_text};
use super::{MAX_FIELDS, MAX_TEXT_CHARS};
use crate::error::{ErrorCode, FieldError, json_kind};
use crate::field_paths::{at_most_chars, index_path, key_path, optional_text};

/// What kind of input a field takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FieldKind {
    /// Free text.
    Text,
    /// An e-mail address.
    Email,
    /// A URI.
    Uri,
    /// A calendar date, `YYYY-MM-DD`.
    Date,
    /// A date and time, `YYYY-MM-DDTHH:MM[:SS[.f]][Z|±HH:MM]`.
    DateTime,
    /// Any number.
    Number,
    /// A whole number.
    Integer,
    /// True or false.
    Boolean,
    /// One of the options.
    Choice,
    /// Any number of the options, as a list.
    Choices,
}

/// One option of a choice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Choice {
    /// What the content holds when it is picked.
    pub value: String,
    /// What the person reads.
    pub label: String,
}

/// One field of a form, as tabs receive it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Field {
    /// The property's name: the content's key.
    pub name: String,
    /// Its kind of input.
    pub kind: FieldKind,
    /// Its title, if the schema has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its description, if the schema has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the content must hold it.
    pub required: bool,
    /// The value the form starts with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Fewest characters (text kinds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Most characters (text kinds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// Smallest number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum: Option<f64>,
    /// Largest number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum: Option<f64>,
    /// Fewest options picked (choices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most options picked (choices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The options (choice, choices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<Choice>>,
    /// The name or title reads as asking for a password, a token or a key, which forms must
    /// not ask for: the page warns.
    pub sensitive: bool,
}

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
        sensitive: super::request::looks_sensitive(name)
            || title
                .as_deref()
                .is_some_and(super::request::looks_sensitive),
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

pub(super) fn count(
    schema: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<u64>, FieldError> {
    match schema.get(key) {
        None => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or_else(|| {
            FieldError::new(
                key_path(path, key),
                ErrorCode::InvalidValue,
                "must be a whole number, 0 or more",
            )
        }),
    }
}

pub(super) fn in_order(
    low: Option<f64>,
    high: Option<f64>,
    path: &str,
    low_key: &str,
    high_key: &str,
) -> Result<(), FieldError> {
    match (low, high) {
        (Some(low), Some(high)) if low > high => Err(FieldError::new(
            key_path(path, low_key),
            ErrorCode::InvalidValue,
            format!("{low_key} {low} is above {high_key} {high}"),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
