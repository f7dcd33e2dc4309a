//! Identifiers: sessions, requests and tabs, each checked where it enters.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FieldError};

/// Longest session id.
pub const MAX_SESSION_ID_CHARS: usize = 128;
/// Longest request id.
pub const MAX_REQUEST_ID_CHARS: usize = 256;
/// Longest tab id.
pub const MAX_TAB_ID_CHARS: usize = 64;

macro_rules! checked_id {
    ($(#[$doc:meta])* $name:ident, $check:path) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Checks `text` and wraps it.
            ///
            /// # Errors
            /// What is wrong with it, in words.
            pub fn parse(text: impl Into<String>) -> Result<Self, String> {
                let text = text.into();
                $check(&text)?;
                Ok($name(text))
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = String;
            fn try_from(text: String) -> Result<Self, String> {
                $name::parse(text)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

checked_id!(
    /// One agent conversation: 1–128 characters of `A-Z a-z 0-9 . _ : -`, other than `.`
    /// and `..`.
    SessionId,
    check_session_id
);
checked_id!(
    /// One question set within a session: 1–256 printable ASCII characters (0x21–0x7E).
    RequestId,
    check_request_id
);
checked_id!(
    /// One browser tab: 1–64 characters of `A-Z a-z 0-9 . _ : -`, other than `.` and `..`.
    TabId,
    check_tab_id
);

// The characters are checked before the length: they are ASCII once they pass, so the
// length in bytes is the length in characters the message names.
fn check_name(text: &str, what: &str, max: usize) -> Result<(), String> {
    if let Some(bad) = text
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')))
    {
        return Err(format!(
            "a {what} may hold only letters, digits and . _ : -, not {bad:?}"
        ));
    }
    if text.is_empty() || text.len() > max {
        return Err(format!(
            "a {what} has 1 to {max} characters, got {}",
            text.len()
        ));
    }
    // A session id is a path segment of its viewer link and socket URL, and a URL path
    // drops a segment that is `.` or `..` (RFC 3986 dot segments): the browser would ask
    // for another page. Nothing else in this character set is rewritten or percent-encoded
    // in a path, so these two are the only ids that do not survive a URL. Tab ids share the
    // character set and so the rule, should one ever name a URL too.
    if matches!(text, "." | "..") {
        return Err(format!(
            "a {what} may not be {text:?}: a URL path reads it as a directory step, so its \
             links would lead elsewhere"
        ));
    }
    Ok(())
}

fn check_session_id(text: &str) -> Result<(), String> {
    check_name(text, "session id", MAX_SESSION_ID_CHARS)
}

fn check_tab_id(text: &str) -> Result<(), String> {
    check_name(text, "tab id", MAX_TAB_ID_CHARS)
}

fn check_request_id(text: &str) -> Result<(), String> {
    if let Some(bad) = text.chars().find(|c| !('!'..='~').contains(c)) {
        return Err(format!(
            "a request id may hold only printable ASCII without spaces, not {bad:?}"
        ));
    }
    if text.is_empty() || text.len() > MAX_REQUEST_ID_CHARS {
        return Err(format!(
            "a request id has 1 to {MAX_REQUEST_ID_CHARS} characters, got {}",
            text.len()
        ));
    }
    Ok(())
}

/// Parses an id field of a frame, as a [`FieldError`] at `path` on failure.
pub(crate) fn parse_field<T>(
    path: &str,
    text: &str,
    parse: impl FnOnce(String) -> Result<T, String>,
) -> Result<T, FieldError> {
    parse(text.to_owned())
        .map_err(|message| FieldError::new(path, ErrorCode::InvalidValue, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids() {
        assert!(SessionId::parse("thread-1:run_2.a").is_ok());
        assert!(SessionId::parse("").is_err());
        assert!(SessionId::parse("a b").is_err());
        assert!(SessionId::parse("x".repeat(128)).is_ok());
        assert!(SessionId::parse("x".repeat(129)).is_err());
        assert!(SessionId::parse("é").is_err());
    }

    #[test]
    fn request_ids() {
        assert!(RequestId::parse("call_01J9/xyz=+").is_ok());
        assert!(RequestId::parse("a b").is_err());
        assert!(RequestId::parse("\u{7f}").is_err());
        assert!(RequestId::parse("x".repeat(257)).is_err());
        let id: Result<RequestId, _> = serde_json::from_str("\"\"");
        assert!(id.is_err());
    }

    /// A long id of characters it may not hold is refused for the characters, not for a
    /// length counted in bytes that its message would misstate.
    #[test]
    fn a_long_id_of_wrong_characters_names_the_character() {
        let session = SessionId::parse("é".repeat(65)).unwrap_err().to_string();
        assert!(session.contains("not 'é'"), "{session}");
        let request = RequestId::parse("é".repeat(200)).unwrap_err().to_string();
        assert!(request.contains("not 'é'"), "{request}");
        let long = SessionId::parse("x".repeat(129)).unwrap_err().to_string();
        assert!(long.ends_with("got 129"), "{long}");
    }

    /// A viewer link is `/s/{session}`: a browser resolves `/s/./` and `/s/../` away before
    /// it asks for the page, so such a session could never be watched.
    #[test]
    fn dot_segments_are_not_ids() {
        for dots in [".", ".."] {
            let session = SessionId::parse(dots).unwrap_err();
            assert!(
                session.contains("session id") && session.contains("URL path"),
                "{dots:?}: {session}"
            );
            let tab = TabId::parse(dots).unwrap_err();
            assert!(tab.contains("tab id"), "{dots:?}: {tab}");
            let frame: Result<SessionId, _> = serde_json::from_str(&format!("\"{dots}\""));
            assert!(frame.is_err(), "{dots:?} read from JSON");
        }
        for fine in ["...", ".a", "a.", "..a", "a..", "-.", ".:."] {
            assert!(SessionId::parse(fine).is_ok(), "{fine:?}");
            assert!(TabId::parse(fine).is_ok(), "{fine:?}");
        }
    }
}
