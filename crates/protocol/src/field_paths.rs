//! Reading the fields the agent or a tab wrote: error paths into them, and their text.

use serde_json::{Map, Value};

use crate::error::{ErrorCode, FieldError, ValidationErrors, json_kind};

/// `path.key`, or `path["key"]` when the key is not a plain name (so a key holding a dot or
/// a bracket cannot pass for a deeper path).
pub(crate) fn key_path(path: &str, key: &str) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (plain, path.is_empty()) {
        (true, true) => key.to_owned(),
        (true, false) => format!("{path}.{key}"),
        (false, _) => format!("{path}[{}]", Value::from(key)),
    }
}

/// `path[i]`.
pub(crate) fn index_path(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// A string field that may be absent (or null).
pub(crate) fn optional_text<'v>(
    value: Option<&'v Value>,
    path: &str,
) -> Result<Option<&'v String>, FieldError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(FieldError::new(
            path,
            ErrorCode::WrongType,
            format!("must be a string, got {}", json_kind(other)),
        )),
    }
}

/// `text` has at most `max` characters.
pub(crate) fn at_most_chars(text: &str, max: usize, path: &str) -> Result<(), FieldError> {
    let chars = text.chars().count();
    if chars > max {
        return Err(FieldError::new(
            path,
            ErrorCode::TooLong,
            format!("at most {max} characters, got {chars}"),
        ));
    }
    Ok(())
}

/// A tab's `response`: an object with only the `keys` a dialect's answer has (`shape` shows
/// it in words, as `{"decisions": [...]}`).
pub(crate) fn response_object<'v>(
    response: &'v Value,
    keys: &[&str],
    shape: &str,
) -> Result<&'v Map<String, Value>, ValidationErrors> {
    let Value::Object(fields) = response else {
        return Err(ValidationErrors::single(FieldError::new(
            "response",
            ErrorCode::WrongType,
            format!("must be an object {shape}, got {}", json_kind(response)),
        )));
    };
    if let Some(key) = fields.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(ValidationErrors::single(FieldError::new(
            key_path("response", key),
            ErrorCode::UnknownField,
            format!("unknown field; the answer is {shape}"),
        )));
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_keys_are_dotted_and_others_quoted() {
        assert_eq!(key_path("args", "query"), "args.query");
        assert_eq!(key_path("", "query"), "query");
        assert_eq!(key_path("args", "a.b"), "args[\"a.b\"]");
        assert_eq!(key_path("args", "x\"]"), "args[\"x\\\"]\"]");
        assert_eq!(key_path("args", ""), "args[\"\"]");
        assert_eq!(index_path("calls", 3), "calls[3]");
    }
}
