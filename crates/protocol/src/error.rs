//! Validation errors: where in the input, a stable code, and a message a person can act on.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Stable machine-readable error codes. New codes may be added; existing ones never change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The text is not JSON (or not JSON askgate can read).
    InvalidJson,
    /// A value has the wrong JSON type.
    WrongType,
    /// A required field is absent.
    MissingField,
    /// A field the dialect does not define.
    UnknownField,
    /// A string is empty, or only whitespace.
    Blank,
    /// A string is longer than its limit.
    TooLong,
    /// A list has fewer items than allowed.
    TooFewItems,
    /// A list has more items than allowed.
    TooManyItems,
    /// Text holds a character the dialect rejects (controls, invisible formatting, ...).
    ForbiddenCharacter,
    /// A value is not one the field allows (a boolean that is not one, an unknown type...).
    InvalidValue,
    /// Two question headers are the same once folded.
    DuplicateHeader,
    /// Two option labels of one question are the same once folded.
    DuplicateLabel,
    /// An answer that does not fit its request (the harness's `check_response`).
    InvalidAnswer,
    /// The gateway could not do it now (storage failed, a limit was reached); try again.
    Unavailable,
    /// The agent's key may not act on that session: it is bound to sessions under another
    /// prefix. Asking again with the same key will not help.
    Forbidden,
    /// A code this build does not know, read from a newer peer (whose error still stands, with
    /// its path and message). Never written by askgate itself.
    #[serde(other)]
    Other,
}

impl ErrorCode {
    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::WrongType => "wrong_type",
            ErrorCode::MissingField => "missing_field",
            ErrorCode::UnknownField => "unknown_field",
            ErrorCode::Blank => "blank",
            ErrorCode::TooLong => "too_long",
            ErrorCode::TooFewItems => "too_few_items",
            ErrorCode::TooManyItems => "too_many_items",
            ErrorCode::ForbiddenCharacter => "forbidden_character",
            ErrorCode::InvalidValue => "invalid_value",
            ErrorCode::DuplicateHeader => "duplicate_header",
            ErrorCode::DuplicateLabel => "duplicate_label",
            ErrorCode::InvalidAnswer => "invalid_answer",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::Other => "other",
        }
    }
}

/// One problem with an input: `questions[2].options[1].label: at most 50 characters ...`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// Where: `questions[2].options[1].label`; empty for the input as a whole.
    pub path: String,
    /// What, in words.
    pub message: String,
    /// What, as a stable code.
    pub code: ErrorCode,
}

impl FieldError {
    /// An error at `path`.
    pub fn new(path: impl Into<String>, code: ErrorCode, message: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            message: message.into(),
            code,
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Every problem found in one input; never empty.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(transparent)]
pub struct ValidationErrors(Vec<FieldError>);

impl ValidationErrors {
    /// Wraps a non-empty list of errors; `None` when there are none.
    pub fn from_vec(errors: Vec<FieldError>) -> Option<Self> {
        (!errors.is_empty()).then_some(ValidationErrors(errors))
    }

    /// A single error.
    pub fn single(error: FieldError) -> Self {
        ValidationErrors(vec![error])
    }

    /// The errors, in the order they were found (input order).
    pub fn errors(&self) -> &[FieldError] {
        &self.0
    }

    /// Takes the errors out.
    pub fn into_vec(self) -> Vec<FieldError> {
        self.0
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

/// A place in the input, chained on the stack and written out only when an error needs it:
/// validating a correct input formats no paths at all.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Path<'a> {
    /// The input itself.
    Root,
    /// A field of an object.
    Key(&'a Path<'a>, &'a str),
    /// An item of a list.
    Index(&'a Path<'a>, usize),
}

impl<'a> Path<'a> {
    /// The field `key` of this object.
    pub(crate) fn key(&'a self, key: &'a str) -> Path<'a> {
        Path::Key(self, key)
    }

    /// The item `index` of this list.
    pub(crate) fn index(&'a self, index: usize) -> Path<'a> {
        Path::Index(self, index)
    }

    /// `questions[2].options[1].label`.
    pub(crate) fn render(&self) -> String {
        // Room for the usual `questions[2].options[1].description` at once: a path is built
        // for every error, and growing it piece by piece reallocated it three or four times.
        let mut out = String::with_capacity(48);
        self.render_into(&mut out);
        out
    }

    fn render_into(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Key(parent, key) => {
                parent.render_into(out);
                push_key(out, key);
            }
            Path::Index(parent, index) => {
                parent.render_into(out);
                out.push('[');
                push_decimal(out, *index);
                out.push(']');
            }
        }
    }
}

/// Appends `n` in decimal, without the formatting machinery (paths are built per error).
pub(crate) fn push_decimal(out: &mut String, n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for &digit in &digits[at..] {
        out.push(char::from(digit));
    }
}

/// Builds paths like `questions[2].options[1].label`.
pub(crate) fn field_path(base: &str, key: &str) -> String {
    let mut path = base.to_owned();
    push_key(&mut path, key);
    path
}

/// Appends `.key` (or `key` at the start) to a path; a key with dots, brackets or spaces is
/// quoted, `["a b"]`, so the path stays unambiguous.
fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !plain {
        path.push('[');
        path.push_str(&json_quote(key));
        path.push(']');
        return;
    }
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// `base[index]`.
pub(crate) fn index_path(base: &str, index: usize) -> String {
    let mut path = String::with_capacity(base.len() + 8);
    path.push_str(base);
    path.push('[');
    push_decimal(&mut path, index);
    path.push(']');
    path
}

/// A string as a JSON literal, for quoting user text inside messages.
pub(crate) fn json_quote(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// The JSON type of a value, for "must be a string, got a number" messages.
pub(crate) fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_naturally() {
        let q = index_path("questions", 2);
        let o = index_path(&field_path(&q, "options"), 1);
        assert_eq!(field_path(&o, "label"), "questions[2].options[1].label");
        assert_eq!(field_path("", "x"), "x");
        assert_eq!(field_path("", "a.b"), "[\"a.b\"]");
        assert_eq!(field_path("questions[0]", ""), "questions[0][\"\"]");
        let root = Path::Root;
        let questions = root.key("questions");
        let second = questions.index(2);
        assert_eq!(second.key("header").render(), "questions[2].header");
        for n in [0, 7, 10, 99, 1234, usize::MAX] {
            assert_eq!(root.index(n).render(), format!("[{n}]"));
        }
    }

    #[test]
    fn display_joins_with_paths() {
        let errors = ValidationErrors::from_vec(vec![
            FieldError::new("a", ErrorCode::Blank, "must not be empty"),
            FieldError::new("", ErrorCode::InvalidJson, "not JSON"),
        ])
        .unwrap();
        assert_eq!(errors.to_string(), "a: must not be empty; not JSON");
        assert!(ValidationErrors::from_vec(vec![]).is_none());
    }

    /// A newer gateway's code still reads, so the error it comes with is not lost.
    #[test]
    fn an_unknown_code_reads_as_other() {
        let error: FieldError =
            serde_json::from_str(r#"{"path":"id","message":"m","code":"brand_new"}"#).unwrap();
        assert_eq!((error.code, error.path.as_str()), (ErrorCode::Other, "id"));
        let known: ErrorCode = serde_json::from_str(r#""too_long""#).unwrap();
        assert_eq!(known, ErrorCode::TooLong);
        let forbidden: ErrorCode = serde_json::from_str(r#""forbidden""#).unwrap();
        assert_eq!(forbidden.as_str(), "forbidden");
        assert_eq!(serde_json::to_string(&forbidden).unwrap(), r#""forbidden""#);
    }
}
