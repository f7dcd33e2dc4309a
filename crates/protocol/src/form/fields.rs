//! One field of a form as tabs receive it: its kind, its options and bounds, whether it reads
//! as asking for a secret; and the checks every reader of a property shares.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{ErrorCode, FieldError};
use crate::field_paths::key_path;

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

/// Whether a field's name or title reads as asking for a secret.
pub fn looks_sensitive(text: &str) -> bool {
    const WORDS: [&str; 16] = [
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "pin",
        "otp",
        "secret",
        "secrets",
        "token",
        "tokens",
        "key",
        "keys",
        "apikey",
        "credential",
        "credentials",
        "cvv",
    ];
    const INSIDE: [&str; 5] = [
        "password",
        "passphrase",
        "apikey",
        "privatekey",
        "accesskey",
    ];
    // Split on anything but letters and at lower-to-upper changes (apiKey, API_KEY).
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            previous_lower = c.is_lowercase();
            word.extend(c.to_lowercase());
        } else {
            previous_lower = false;
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let joined = words.concat();
    words.iter().any(|w| WORDS.contains(&w.as_str())) || INSIDE.iter().any(|w| joined.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_noticed() {
        for name in [
            "password",
            "apiKey",
            "API_KEY",
            "github token",
            "Your PIN",
            "client_secret",
            "privateKey",
            "SSH key",
        ] {
            assert!(looks_sensitive(name), "{name}");
        }
        for name in [
            "name",
            "email",
            "keyboard layout",
            "monkey",
            "pinned",
            "tokenizer",
        ] {
            assert!(!looks_sensitive(name), "{name}");
        }
    }
}
