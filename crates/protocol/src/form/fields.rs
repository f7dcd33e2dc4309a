//! MCP's `requestedSchema`: an object of primitive properties, read into the fields a page
//! shows. Only what MCP defines is accepted (`PrimitiveSchemaDefinition`: strings with
//! formats and lengths, numbers with bounds, booleans, single and multiple choice); anything
//! else is refused with its path.

use serde::Serialize;
use serde_json::{Map, Value};

use super::{MAX_CHOICES, MAX_FIELDS, MAX_TEXT_CHARS};
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

fn count(schema: &Map<String, Value>, key: &str, path: &str) -> Result<Option<u64>, FieldError> {
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

fn in_order(
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

fn read_text(
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

fn read_number(
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

fn read_boolean(
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

fn read_choice(
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

fn read_choices(
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
