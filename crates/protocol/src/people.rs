//! People on the wire: who a tab is ([`You`], [`Via`]), and who an ask lets answer.
//!
//! A name is compared byte for byte, as the gateway was told it (by a personal link, a
//! proxy's header, an ask's `answerers`, a groups file): no case folding, no trimming, so
//! that two spellings are two people rather than one guessed at.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorCode, FieldError, json_kind};

/// How the gateway knew who a tab's person is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    /// A link signed for that person (`POST /v1/sessions/{session}/links`, or `link`).
    PersonalLink,
    /// A trusted identity-aware proxy's header (`--user-header`).
    Proxy,
    /// The plain session link: an anonymous link holder.
    SessionLink,
    /// A link in a mail the gateway sent that person, signed for them and one request: an
    /// answer given without a tab.
    Email,
    /// A click on a Slack message from the gateway's app, by the Slack user the notify file
    /// names as that person: an answer given without a tab.
    Slack,
    /// Nobody: the ask's `default`, given when its deadline passed with no answer.
    Default,
    /// A withdrawal by the agent (its `cancel`, or `DELETE` with an agent key).
    Agent,
    /// A withdrawal by an operator key (`DELETE`, `askgate requests withdraw`).
    Operator,
    /// A withdrawal by the gateway itself (an orphaned request past its time).
    Gateway,
    /// An approval given by a remembered rule (`by` is `rule:{id}`, `user` its maker).
    Rule,
}

impl Via {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::PersonalLink => "personal-link",
            Via::Proxy => "proxy",
            Via::SessionLink => "session-link",
            Via::Email => "email",
            Via::Slack => "slack",
            Via::Default => "default",
            Via::Agent => "agent",
            Via::Operator => "operator",
            Via::Gateway => "gateway",
            Via::Rule => "rule",
        }
    }
}

/// Who a tab is: the person (null for an anonymous link holder) and how that is known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct You {
    /// The person, or null.
    pub user: Option<String>,
    /// How the gateway knows.
    pub via: Via,
    /// Whether this tab may answer at all (false: watch-only, under `--require-identity`).
    #[serde(default = "yes")]
    pub may_answer: bool,
    /// The operator's groups the person is in, so the page can tell whether an ask that
    /// names `group:NAME` is theirs to answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Whether the person follows the session (told of its requests that name no one); absent
    /// when not, and always for an anonymous link holder, who cannot follow.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub following: bool,
}

fn yes() -> bool {
    true
}

/// Most people (and groups) one ask may name as its answerers.
pub const MAX_ANSWERERS: usize = 32;
/// Longest name of a person (or `group:NAME`), in characters: an e-mail address may have 254.
pub const MAX_USER_CHARS: usize = 256;

/// Checks a person's name as an agent or operator gives it: not empty, at most
/// [`MAX_USER_CHARS`], no control characters and no space at either end (names are compared
/// byte for byte, so a stray space would make a name nobody signs in as).
///
/// # Errors
/// What is wrong with it.
pub fn check_user_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".to_owned());
    }
    let length = name.chars().count();
    if length > MAX_USER_CHARS {
        return Err(format!("at most {MAX_USER_CHARS} characters, got {length}"));
    }
    if name.chars().any(char::is_control) {
        return Err("must not hold control characters".to_owned());
    }
    if name.trim() != name {
        return Err("must not start or end with a space".to_owned());
    }
    Ok(())
}

pub(crate) fn check_answerers(value: Option<&Value>) -> Result<Option<Vec<String>>, FieldError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(FieldError::new(
                "answerers",
                ErrorCode::WrongType,
                format!("must be a list of names, got {}", json_kind(other)),
            ));
        }
    };
    if items.is_empty() || items.len() > MAX_ANSWERERS {
        return Err(FieldError::new(
            "answerers",
            ErrorCode::InvalidValue,
            format!(
                "must name 1 to {MAX_ANSWERERS} people or groups, got {}; leave it out to let anyone with the link answer",
                items.len()
            ),
        ));
    }
    let mut names: Vec<String> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let path = format!("answerers[{index}]");
        let Value::String(name) = item else {
            return Err(FieldError::new(
                path,
                ErrorCode::WrongType,
                format!("must be a string, got {}", json_kind(item)),
            ));
        };
        check_user_name(name).map_err(|m| FieldError::new(&path, ErrorCode::InvalidValue, m))?;
        if name.strip_prefix("group:").is_some_and(str::is_empty) {
            return Err(FieldError::new(
                path,
                ErrorCode::InvalidValue,
                "`group:` must be followed by a group's name",
            ));
        }
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    Ok(Some(names))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_name_is_at_most_256_characters_with_no_control_or_edge_space() {
        assert!(check_user_name(&"é".repeat(MAX_USER_CHARS)).is_ok());
        let long = check_user_name(&"é".repeat(MAX_USER_CHARS + 1)).unwrap_err();
        assert_eq!(long, "at most 256 characters, got 257");
        assert!(check_user_name("").is_err());
        assert!(check_user_name("a\u{7}b").is_err());
        assert!(check_user_name("alice ").is_err());
    }

    #[test]
    fn answerers_are_1_to_32_names_kept_once_in_order() {
        let names: Vec<String> = (0..MAX_ANSWERERS).map(|i| format!("p{i}")).collect();
        assert_eq!(
            check_answerers(Some(&json!(names)))
                .unwrap()
                .map(|l| l.len()),
            Some(MAX_ANSWERERS)
        );
        let twice = check_answerers(Some(&json!(["b", "a", "b"]))).unwrap();
        assert_eq!(twice, Some(vec!["b".to_owned(), "a".to_owned()]));
        assert_eq!(check_answerers(None).unwrap(), None);
        assert_eq!(check_answerers(Some(&Value::Null)).unwrap(), None);
        let error = check_answerers(Some(&json!([]))).unwrap_err();
        assert_eq!(error.path, "answerers");
    }

    /// Serde's name and `as_str` agree for every way of knowing a person.
    #[test]
    fn each_via_has_one_name_on_the_wire() {
        for via in [
            Via::PersonalLink,
            Via::Proxy,
            Via::SessionLink,
            Via::Email,
            Via::Slack,
            Via::Default,
            Via::Agent,
            Via::Operator,
            Via::Gateway,
        ] {
            assert_eq!(serde_json::to_value(via).unwrap(), json!(via.as_str()));
            assert_eq!(
                serde_json::from_value::<Via>(json!(via.as_str())).unwrap(),
                via
            );
        }
        assert_eq!(Via::Email.as_str(), "email");
        assert_eq!(Via::Slack.as_str(), "slack");
    }
}
