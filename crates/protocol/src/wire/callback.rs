//! An ask's `callback`: where the gateway POSTs the outcome when the request ends, so that a
//! paused run in a durable engine is resumed without a process waiting on the gateway.
//!
//! ```json
//! {"url": "https://hooks.example.com/askgate", "secret": "whsec_..."}
//! {"url": "https://my-graph.example.com", "format": "langgraph-server",
//!  "thread_id": "...", "assistant_id": "agent", "interrupt_id": "..."}
//! ```
//!
//! The `askgate` format (the default) POSTs the body of a `request.resolved` webhook, signed
//! as Standard Webhooks sign it with `secret` (required). The `langgraph-server` format
//! starts a run on a LangGraph Agent Server thread (`POST {url}/threads/{thread_id}/runs`)
//! that resumes it with the request's response (`command.resume`, keyed by `interrupt_id`
//! when given); `secret` is optional there (the body is signed when given), and `api_key`
//! goes in `x-api-key`. Only the syntax is checked here: which hosts may be called is the
//! gateway's to judge.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ErrorCode, FieldError, json_kind};

/// Longest callback `url`, in bytes.
pub const MAX_CALLBACK_URL_BYTES: usize = 2048;
/// Longest `thread_id`, `assistant_id`, `interrupt_id` or `api_key`, in bytes.
pub const MAX_CALLBACK_NAME_BYTES: usize = 256;
/// Fewest and most bytes a callback secret decodes to (as webhook secrets).
pub const CALLBACK_SECRET_BYTES: std::ops::RangeInclusive<usize> = 24..=64;

/// What a callback POSTs.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub enum CallbackFormat {
    /// The `request.resolved` webhook body, signed.
    #[default]
    #[serde(rename = "askgate")]
    Askgate,
    /// A LangGraph Agent Server run resuming the thread with the request's response.
    #[serde(rename = "langgraph-server")]
    LanggraphServer,
}

/// A checked `callback`. Its `Debug` leaves out the secret and the API key.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Callback {
    /// Where to POST (for `langgraph-server`, the server's base URL).
    pub url: String,
    /// The Standard Webhooks secret (`whsec_` and base64) the POST is signed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// What is POSTed.
    #[serde(default)]
    pub format: CallbackFormat,
    /// For `langgraph-server`: the thread to resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// For `langgraph-server`: the assistant (graph) whose run resumes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assistant_id: Option<String>,
    /// For `langgraph-server`: the interrupt the response answers (`resume` is then
    /// `{interrupt_id: response}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt_id: Option<String>,
    /// For `langgraph-server`: sent as `x-api-key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
}

impl std::fmt::Debug for Callback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callback")
            .field("url", &self.url)
            .field("format", &self.format)
            .field("thread_id", &self.thread_id)
            .field("signed", &self.secret.is_some())
            .finish_non_exhaustive()
    }
}

impl Callback {
    /// The secret's bytes (checked when asked: a stored one that no longer decodes signs
    /// nothing).
    pub fn secret_bytes(&self) -> Option<Vec<u8>> {
        let secret = self.secret.as_deref()?;
        base64::engine::general_purpose::STANDARD
            .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
            .ok()
    }

    /// The URL the POST goes to.
    pub fn target_url(&self) -> String {
        match (self.format, &self.thread_id) {
            (CallbackFormat::LanggraphServer, Some(thread)) => {
                format!("{}/threads/{thread}/runs", self.url.trim_end_matches('/'))
            }
            _ => self.url.clone(),
        }
    }

    /// The body of a `langgraph-server` POST resuming with `response`.
    pub fn langgraph_run(&self, response: &Value) -> Value {
        let resume = match &self.interrupt_id {
            Some(interrupt) => {
                let mut keyed = Map::new();
                keyed.insert(interrupt.clone(), response.clone());
                Value::Object(keyed)
            }
            None => response.clone(),
        };
        serde_json::json!({
            "assistant_id": self.assistant_id,
            "command": {"resume": resume},
        })
    }
}

const FIELDS: [&str; 7] = [
    "url",
    "secret",
    "format",
    "thread_id",
    "assistant_id",
    "interrupt_id",
    "api_key",
];

/// The ask's `callback`, checked: `None` when absent or null.
///
/// # Errors
/// Every problem, at its path (`callback.url`, `callback.secret`...).
pub fn check_callback(value: Option<&Value>) -> Result<Option<Callback>, Vec<FieldError>> {
    let object = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(object)) => object,
        Some(other) => {
            return Err(vec![FieldError::new(
                "callback",
                ErrorCode::WrongType,
                format!(
                    "expected an object like {{\"url\": \"https://...\", \"secret\": \"whsec_...\"}}, got {}",
                    json_kind(other)
                ),
            )]);
        }
    };
    let mut errors = Vec::new();
    for key in object.keys() {
        if !FIELDS.contains(&key.as_str()) {
            errors.push(FieldError::new(
                format!("callback.{key}"),
                ErrorCode::UnknownField,
                format!(
                    "`callback` takes {}",
                    FIELDS.map(|f| format!("`{f}`")).join(", ")
                ),
            ));
        }
    }
    let mut text = |name: &str, max: usize| -> Option<String> {
        match object.get(name) {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) if text.is_empty() => {
                errors.push(FieldError::new(
                    format!("callback.{name}"),
                    ErrorCode::InvalidValue,
                    "must not be empty",
                ));
                None
            }
            Some(Value::String(text)) if text.len() > max => {
                errors.push(FieldError::new(
                    format!("callback.{name}"),
                    ErrorCode::TooLong,
                    format!("{} bytes; at most {max}", text.len()),
                ));
                None
            }
            Some(Value::String(text)) => Some(text.clone()),
            Some(other) => {
                errors.push(FieldError::new(
                    format!("callback.{name}"),
                    ErrorCode::WrongType,
                    format!("expected a string, got {}", json_kind(other)),
                ));
                None
            }
        }
    };
    let url = text("url", MAX_CALLBACK_URL_BYTES);
    let secret = text("secret", 200);
    let format = text("format", 40);
    let thread_id = text("thread_id", MAX_CALLBACK_NAME_BYTES);
    let assistant_id = text("assistant_id", MAX_CALLBACK_NAME_BYTES);
    let interrupt_id = text("interrupt_id", MAX_CALLBACK_NAME_BYTES);
    let api_key = text("api_key", MAX_CALLBACK_NAME_BYTES);
    let present = |name: &str| object.get(name).is_some_and(|v| !v.is_null());
    if !present("url") {
        errors.push(FieldError::new(
            "callback.url",
            ErrorCode::MissingField,
            "required: the http(s) URL the outcome is POSTed to",
        ));
    }
    if let Some(url) = &url {
        match url::Url::parse(url) {
            Ok(parsed)
                if matches!(parsed.scheme(), "http" | "https") && parsed.host().is_some() =>
            {
                if !parsed.username().is_empty() || parsed.password().is_some() {
                    errors.push(FieldError::new(
                        "callback.url",
                        ErrorCode::InvalidValue,
                        "must not hold credentials: sign with `secret` (or `api_key` for langgraph-server)",
                    ));
                }
            }
            Ok(_) => errors.push(FieldError::new(
                "callback.url",
                ErrorCode::InvalidValue,
                "must be an http or https URL with a host",
            )),
            Err(error) => errors.push(FieldError::new(
                "callback.url",
                ErrorCode::InvalidValue,
                format!("not a URL: {error}"),
            )),
        }
    }
    let format = match format.as_deref() {
        None => Some(CallbackFormat::Askgate),
        Some("askgate") => Some(CallbackFormat::Askgate),
        Some("langgraph-server") => Some(CallbackFormat::LanggraphServer),
        Some(other) => {
            errors.push(FieldError::new(
                "callback.format",
                ErrorCode::InvalidValue,
                format!("{other:?} is not a callback format: `askgate` (the default) or `langgraph-server`"),
            ));
            None
        }
    };
    if let Some(secret) = &secret {
        let decoded = secret.strip_prefix("whsec_").and_then(|encoded| {
            base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()
        });
        match decoded {
            Some(bytes) if CALLBACK_SECRET_BYTES.contains(&bytes.len()) => {}
            Some(bytes) => errors.push(FieldError::new(
                "callback.secret",
                ErrorCode::InvalidValue,
                format!(
                    "decodes to {} bytes; a secret is {} to {} random bytes",
                    bytes.len(),
                    CALLBACK_SECRET_BYTES.start(),
                    CALLBACK_SECRET_BYTES.end()
                ),
            )),
            None => errors.push(FieldError::new(
                "callback.secret",
                ErrorCode::InvalidValue,
                "must be `whsec_` followed by base64 (a Standard Webhooks secret)",
            )),
        }
    }
    match format {
        Some(CallbackFormat::Askgate) => {
            if !present("secret") {
                errors.push(FieldError::new(
                    "callback.secret",
                    ErrorCode::MissingField,
                    "required: the `whsec_...` secret the outcome is signed with, so the receiver can trust it",
                ));
            }
            for name in ["thread_id", "assistant_id", "interrupt_id", "api_key"] {
                if present(name) {
                    errors.push(FieldError::new(
                        format!("callback.{name}"),
                        ErrorCode::InvalidValue,
                        "only for `\"format\": \"langgraph-server\"`",
                    ));
                }
            }
        }
        Some(CallbackFormat::LanggraphServer) => {
            for (name, what) in [
                ("thread_id", "the thread to resume"),
                ("assistant_id", "the assistant (graph) whose run resumes it"),
            ] {
                if !present(name) {
                    errors.push(FieldError::new(
                        format!("callback.{name}"),
                        ErrorCode::MissingField,
                        format!("required for langgraph-server: {what}"),
                    ));
                }
            }
            if let Some(thread) = &thread_id
                && (!thread
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
                    || thread.bytes().all(|b| b == b'.'))
            {
                errors.push(FieldError::new(
                    "callback.thread_id",
                    ErrorCode::InvalidValue,
                    "letters, digits, `-`, `_` and `.` only, not dots alone (it goes in the URL's path)",
                ));
            }
            if let Some(url) = &url
                && let Ok(parsed) = url::Url::parse(url)
                && (parsed.query().is_some() || parsed.fragment().is_some())
            {
                errors.push(FieldError::new(
                    "callback.url",
                    ErrorCode::InvalidValue,
                    "for langgraph-server, the server's base URL, without a query or fragment (`/threads/{thread_id}/runs` is added to its path)",
                ));
            }
        }
        None => {}
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Some(Callback {
        url: url.unwrap_or_default(),
        secret,
        format: format.unwrap_or_default(),
        thread_id,
        assistant_id,
        interrupt_id,
        api_key,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    fn paths(value: &Value) -> Vec<String> {
        check_callback(Some(value))
            .expect_err("refused")
            .into_iter()
            .map(|e| e.path)
            .collect()
    }

    #[test]
    fn each_problem_is_named_at_its_path() {
        assert_eq!(paths(&json!("https://x.example")), ["callback"]);
        assert_eq!(paths(&json!({})), ["callback.url", "callback.secret"]);
        assert_eq!(
            paths(&json!({"url": "ftp://x.example/", "secret": SECRET, "extra": 1})),
            ["callback.extra", "callback.url"]
        );
        assert_eq!(
            paths(&json!({"url": "https://u:p@x.example/", "secret": "whsec_!!"})),
            ["callback.url", "callback.secret"]
        );
        assert_eq!(
            paths(&json!({"url": "https://x.example/", "secret": "whsec_c2hvcnQ="})),
            ["callback.secret"]
        );
        assert_eq!(
            paths(&json!({"url": "https://x.example/", "secret": SECRET, "thread_id": "t"})),
            ["callback.thread_id"]
        );
        assert_eq!(
            paths(
                &json!({"url": "https://x.example/", "format": "langgraph-server", "thread_id": "a/b"})
            ),
            ["callback.assistant_id", "callback.thread_id"]
        );
        assert_eq!(
            paths(&json!({"url": "https://x.example/", "format": "zapier"})),
            ["callback.format"]
        );
        assert_eq!(
            paths(
                &json!({"url": "https://x.example/?a=1", "format": "langgraph-server", "thread_id": "..", "assistant_id": "a"})
            ),
            ["callback.thread_id", "callback.url"]
        );
    }

    #[test]
    fn a_langgraph_callback_resumes_its_thread_keyed_by_the_interrupt() {
        let callback = check_callback(Some(&json!({
            "url": "http://graphs.example:2024/",
            "format": "langgraph-server",
            "thread_id": "t-1",
            "assistant_id": "agent",
            "interrupt_id": "i-9",
        })))
        .unwrap()
        .unwrap();
        assert_eq!(
            callback.target_url(),
            "http://graphs.example:2024/threads/t-1/runs"
        );
        assert_eq!(
            callback.langgraph_run(&json!({"decisions": [{"type": "approve"}]})),
            json!({"assistant_id": "agent", "command": {"resume": {"i-9": {"decisions": [{"type": "approve"}]}}}})
        );
        assert_eq!(callback.secret_bytes(), None);
        assert!(!format!("{callback:?}").contains("agent\""));
        let signed = check_callback(Some(
            &json!({"url": "https://x.example/", "secret": SECRET}),
        ))
        .unwrap()
        .unwrap();
        assert_eq!(signed.secret_bytes().map(|b| b.len()), Some(24));
        assert!(!format!("{signed:?}").contains("MfKQ"));
        assert_eq!(check_callback(None), Ok(None));
        assert_eq!(check_callback(Some(&Value::Null)), Ok(None));
    }
}
