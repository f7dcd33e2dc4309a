//! A form request as the ask carries it: `message`, `mode`, and the schema (form mode) or the
//! URL (URL mode), with the server that asks.

use serde::Serialize;
use serde_json::{Map, Value};

use super::fields::Field;
use super::schema::read_schema;
use super::{MAX_MESSAGE_CHARS, MAX_SERVER_CHARS, MAX_URL_BYTES};
use crate::error::{ErrorCode, FieldError, ValidationErrors, json_kind};
use crate::field_paths::{at_most_chars, optional_text};

/// Form or URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Fields to fill in.
    Form,
    /// A URL to open (a sign-in, a payment) out of band.
    Url,
}

/// A validated form request, as tabs receive it (its fields beside the ask's others).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Form {
    /// What the server says to the person.
    pub message: String,
    /// Form or URL.
    pub mode: Mode,
    /// Which MCP server asks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The `requestedSchema` as sent (form mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// The schema's fields, in order (form mode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<Field>,
    /// The URL to open (URL mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The URL's host, for the page to show apart (URL mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The server's id for a URL elicitation, handed back untouched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
}

/// The ask's fields a form is made of.
pub const FIELDS: [&str; 8] = [
    // The main field first: sent with another dialect, it is refused as a form's.
    "schema",
    "message",
    "mode",
    "server",
    "url",
    "elicitation_id",
    // Worked out by askgate (read past, so that a normalised form validates as itself).
    "fields",
    "host",
];

/// Validates a form request (an object of the ask's form fields).
///
/// # Errors
/// Every problem found, each at its path.
pub fn validate_form(request: &Value) -> Result<Form, ValidationErrors> {
    let empty = Map::new();
    let fields = request.as_object().unwrap_or(&empty);
    let mut errors = Vec::new();
    let text =
        |key: &str, max: usize, required: bool, errors: &mut Vec<FieldError>| -> Option<String> {
            let checked = optional_text(fields.get(key), key).and_then(|text| match text {
                None if required => Err(FieldError::new(
                    key,
                    ErrorCode::MissingField,
                    "required: a string",
                )),
                None => Ok(None),
                Some(text) if text.trim().is_empty() => {
                    Err(FieldError::new(key, ErrorCode::Blank, "must not be blank"))
                }
                Some(text) => at_most_chars(text, max, key).map(|()| Some(text.clone())),
            });
            checked.map_err(|e| errors.push(e)).ok().flatten()
        };
    let message = text("message", MAX_MESSAGE_CHARS, true, &mut errors);
    let server = text("server", MAX_SERVER_CHARS, false, &mut errors);
    if let Some(c) = server
        .as_deref()
        .and_then(|s| s.chars().find(|c| c.is_control()))
    {
        errors.push(FieldError::new(
            "server",
            ErrorCode::ForbiddenCharacter,
            format!(
                "must not contain control characters, found U+{:04X}",
                c as u32
            ),
        ));
    }
    let elicitation_id = text("elicitation_id", 256, false, &mut errors);
    let mode = match fields.get("mode") {
        None | Some(Value::Null) => Mode::Form,
        Some(Value::String(mode)) if mode == "form" => Mode::Form,
        Some(Value::String(mode)) if mode == "url" => Mode::Url,
        Some(other) => {
            errors.push(FieldError::new(
                "mode",
                ErrorCode::InvalidValue,
                format!("must be \"form\" or \"url\", got {other}"),
            ));
            Mode::Form
        }
    };
    let misplaced = |key: &str, errors: &mut Vec<FieldError>, mode_name: &str| {
        if fields.get(key).is_some_and(|v| !v.is_null()) {
            errors.push(FieldError::new(
                key,
                ErrorCode::UnknownField,
                format!("not used in {mode_name} mode"),
            ));
        }
    };
    let mut form = Form {
        message: message.unwrap_or_default(),
        mode,
        server,
        schema: None,
        fields: Vec::new(),
        url: None,
        host: None,
        elicitation_id,
    };
    match mode {
        Mode::Form => {
            misplaced("url", &mut errors, "form");
            misplaced("elicitation_id", &mut errors, "form");
            match fields.get("schema").filter(|s| !s.is_null()) {
                None => errors.push(FieldError::new("schema", ErrorCode::MissingField, 
                    "required in form mode: the requested schema, {\"type\": \"object\", \"properties\": {...}}")),
                Some(schema) => match read_schema(schema, "schema") {
                    Ok(read) => {
                        form.schema = Some(schema.clone());
                        form.fields = read;
                    }
                    Err(mut found) => errors.append(&mut found),
                },
            }
        }
        Mode::Url => {
            misplaced("schema", &mut errors, "URL");
            match fields.get("url") {
                Some(Value::String(url)) => match url_host(url) {
                    Ok(host) => {
                        form.host = Some(host);
                        form.url = Some(url.clone());
                    }
                    Err(message) => {
                        errors.push(FieldError::new("url", ErrorCode::InvalidValue, message));
                    }
                },
                None | Some(Value::Null) => errors.push(FieldError::new(
                    "url",
                    ErrorCode::MissingField,
                    "required in URL mode",
                )),
                Some(other) => errors.push(FieldError::new(
                    "url",
                    ErrorCode::WrongType,
                    format!("must be a string, got {}", json_kind(other)),
                )),
            }
        }
    }
    match ValidationErrors::from_vec(errors) {
        Some(errors) => Err(errors),
        None => Ok(form),
    }
}

/// The host of an `http` or `https` URL, lowercased: what the person must see to know where
/// the link goes (the part after any `user@`, which reads like a host but is not one).
fn url_host(url: &str) -> Result<String, String> {
    if url.len() > MAX_URL_BYTES {
        return Err(format!("at most {MAX_URL_BYTES} bytes, got {}", url.len()));
    }
    if let Some(c) = url.chars().find(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!(
            "must not contain spaces or control characters, found U+{:04X}",
            c as u32
        ));
    }
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))
        .ok_or("must be an http:// or https:// URL")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6
            .split_once(']')
            .map(|(h, _)| format!("[{h}]"))
            .unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or("").to_owned(),
    };
    if host.is_empty() || host == "[]" {
        return Err("has no host".into());
    }
    Ok(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_what_the_link_reaches() {
        assert_eq!(
            url_host("https://Example.com/a?b#c").unwrap(),
            "example.com"
        );
        assert_eq!(
            url_host("https://bank.com@evil.example:8443/x").unwrap(),
            "evil.example"
        );
        assert_eq!(url_host("http://[::1]:80/").unwrap(), "[::1]");
        for bad in [
            "javascript:alert(1)",
            "ftp://x",
            "https://",
            "https://a b",
            "https:///x",
        ] {
            assert!(url_host(bad).is_err(), "{bad}");
        }
    }
}
