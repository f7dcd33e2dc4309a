//! Which sessions an agent key may act on: all of them, or those whose id starts with the
//! key's prefix.
//!
//! Several keys on one gateway would otherwise be one trust domain: any of them could open
//! another's session, read its viewer link, and take and acknowledge its outcomes. A scoped
//! key is refused (`forbidden`) on every session outside its prefix, and a session it opens
//! without naming one is generated inside it.

use std::sync::Arc;

use askgate_protocol::SessionId;
use askgate_protocol::ids::MAX_SESSION_ID_CHARS;

/// Characters of a session id the hub generates for an `open` without one (`s-` and 16 hex
/// digits). A scoped key's generated ids are its prefix followed by one, so a prefix must
/// leave room for them; the hub's tests hold its generator to this length.
pub const GENERATED_SESSION_ID_CHARS: usize = 18;

/// The longest prefix a key may be scoped to.
pub const MAX_PREFIX_CHARS: usize = MAX_SESSION_ID_CHARS - GENERATED_SESSION_ID_CHARS;

/// The sessions one agent key may act on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionScope {
    /// `None`: every session. Shared, since every connection the key admits holds it.
    prefix: Option<Arc<str>>,
}

impl SessionScope {
    /// How long the prefix is, in characters (`None`: every session).
    pub fn prefix_chars(&self) -> Option<usize> {
        self.prefix.as_deref().map(|prefix| prefix.chars().count())
    }

    /// Every session: keys without a prefix, and local mode.
    pub fn everywhere() -> Self {
        SessionScope { prefix: None }
    }

    /// The sessions whose id starts with `prefix`.
    ///
    /// # Errors
    /// The prefix is empty, holds a character no session id may hold, or is too long for a
    /// generated id to follow it. The message never repeats the prefix: split from a key at
    /// its first `:`, a mistyped one may be part of the key.
    pub fn prefix(prefix: &str) -> Result<Self, String> {
        if prefix.is_empty() {
            return Err(
                "the session prefix after `:` is empty (leave out the `:` for a key \
                        that acts on every session)"
                    .to_owned(),
            );
        }
        let session_id_char =
            |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-');
        if !prefix.chars().all(session_id_char) {
            return Err(
                "the session prefix after `:` may hold only the characters of a \
                        session id: letters, digits and . _ : -"
                    .to_owned(),
            );
        }
        if prefix.len() > MAX_PREFIX_CHARS {
            return Err(format!(
                "the session prefix after `:` has {} characters, more than the {MAX_PREFIX_CHARS} \
                 that leave room for a generated session id ({GENERATED_SESSION_ID_CHARS} more, \
                 within the {MAX_SESSION_ID_CHARS} a session id may have)",
                prefix.len()
            ));
        }
        Ok(SessionScope {
            prefix: Some(prefix.into()),
        })
    }

    /// Whether `session` (as the agent sent it, valid or not) is within the scope.
    pub fn allows(&self, session: &str) -> bool {
        self.prefix
            .as_deref()
            .is_none_or(|prefix| session.starts_with(prefix))
    }

    /// Refuses `session` if it is outside the scope.
    ///
    /// # Errors
    /// What to tell the agent: which prefix its key is bound to.
    pub fn permit(&self, session: &str) -> Result<(), String> {
        match self.prefix.as_deref() {
            Some(prefix) if !session.starts_with(prefix) => Err(format!(
                "this agent key may act only on sessions whose id starts with {prefix:?}, \
                 and {session:?} does not"
            )),
            _ => Ok(()),
        }
    }

    /// The session an `open` without one creates: `generated`, after the prefix if there is
    /// one.
    ///
    /// # Errors
    /// The two together are not a valid session id (a `generated` id longer than the hub
    /// makes).
    pub fn place(&self, generated: &SessionId) -> Result<SessionId, String> {
        match self.prefix.as_deref() {
            None => Ok(generated.clone()),
            Some(prefix) => SessionId::parse(format!("{prefix}{generated}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_scope_allows_only_the_sessions_it_starts() {
        let scope = SessionScope::prefix("team-a-").unwrap();
        assert!(scope.allows("team-a-1"));
        assert!(scope.allows("team-a-"));
        assert!(!scope.allows("team-b-1"));
        assert!(!scope.allows("team-a"));
        assert!(!scope.allows("xteam-a-1"));
        let refusal = scope.permit("team-b-1").unwrap_err();
        assert!(
            refusal.contains("\"team-a-\"") && refusal.contains("\"team-b-1\""),
            "{refusal}"
        );
        assert_eq!(scope.permit("team-a-1"), Ok(()));
        assert!(SessionScope::everywhere().allows("anything"));
        assert_eq!(SessionScope::everywhere().permit("team-b-1"), Ok(()));
    }

    #[test]
    fn a_generated_session_lands_after_the_prefix() {
        let generated = SessionId::parse("s-0123456789abcdef").unwrap();
        assert_eq!(generated.as_str().len(), GENERATED_SESSION_ID_CHARS);
        let scope = SessionScope::prefix("team-a-").unwrap();
        assert_eq!(
            scope.place(&generated).unwrap().as_str(),
            "team-a-s-0123456789abcdef"
        );
        assert_eq!(
            SessionScope::everywhere().place(&generated).unwrap(),
            generated
        );
        let longest = SessionScope::prefix(&"p".repeat(MAX_PREFIX_CHARS)).unwrap();
        let placed = longest.place(&generated).unwrap();
        assert_eq!(placed.as_str().len(), MAX_SESSION_ID_CHARS);
    }

    #[test]
    fn a_prefix_is_checked_without_being_repeated() {
        for (prefix, expected) in [
            ("", "is empty"),
            ("team a", "only the characters of a session id"),
            ("team/a", "only the characters of a session id"),
            ("é", "only the characters of a session id"),
        ] {
            let error = SessionScope::prefix(prefix).unwrap_err();
            assert!(error.contains(expected), "{prefix:?}: {error}");
        }
        let long = "p".repeat(MAX_PREFIX_CHARS + 1);
        let error = SessionScope::prefix(&long).unwrap_err();
        assert!(error.contains("has 111 characters"), "{error}");
        assert!(!error.contains(&long), "{error}");
        assert!(SessionScope::prefix("a:b.c_d-").is_ok());
    }
}
