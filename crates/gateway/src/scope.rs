//! Which sessions an agent key may act on: all of them, or those within the key's prefix.
//!
//! A scope ends at a separator, so that `team-a` does not reach into `team-ab`: a prefix
//! covers the session id equal to it and the ids that continue it with a separator (`-` `.`
//! `_` `:`), and a prefix that itself ends with a separator covers every id that starts with
//! it. Plain `starts_with` would let the key of `team-a` act on `team-ab-1`, another team's.
//!
//! Several keys on one gateway would otherwise be one trust domain: any of them could open
//! another's session, read its viewer link, and take and acknowledge its outcomes. A scoped
//! key is refused (`forbidden`) on every session outside its prefix, and a session it opens
//! without naming one is generated inside it.

use std::sync::Arc;

use askgate_protocol::SessionId;
use askgate_protocol::ids::MAX_SESSION_ID_CHARS;

/// Characters of a session id the hub generates for an `open` without one (`s-` and 16 hex
/// digits). A scoped key's generated ids are its prefix followed by one (and by a separator
/// first, when the prefix does not end with one), so a prefix must leave room for them; the
/// hub's tests hold its generator to this length.
pub const GENERATED_SESSION_ID_CHARS: usize = 18;

/// The separator put between a prefix that does not end with one and a generated id.
const JOINING_SEPARATOR: char = '-';

/// The longest prefix a key may be scoped to: room for a separator and a generated id.
pub const MAX_PREFIX_CHARS: usize =
    MAX_SESSION_ID_CHARS - JOINING_SEPARATOR.len_utf8() - GENERATED_SESSION_ID_CHARS;

/// Where a scope may end: the session-id characters that are not letters or digits.
fn is_separator(c: char) -> bool {
    matches!(c, '-' | '.' | '_' | ':')
}

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

    /// The sessions within `prefix`: equal to it, or continuing it at a separator.
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
                 that leave room for a generated session id (a separator and \
                 {GENERATED_SESSION_ID_CHARS} more, within the {MAX_SESSION_ID_CHARS} a session \
                 id may have)",
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
            .is_none_or(|prefix| within(prefix, session))
    }

    /// Refuses `session` if it is outside the scope.
    ///
    /// # Errors
    /// What to tell the agent: which prefix its key is bound to, and where the scope ends.
    pub fn permit(&self, session: &str) -> Result<(), String> {
        match self.prefix.as_deref() {
            Some(prefix) if !within(prefix, session) => Err(if prefix.ends_with(is_separator) {
                format!(
                    "this agent key may act only on sessions whose id starts with {prefix:?}, \
                     and {session:?} does not"
                )
            } else {
                format!(
                    "this agent key may act only on the session {prefix:?} and on sessions \
                     whose id continues it after a separator (- . _ :), and {session:?} is \
                     neither"
                )
            }),
            _ => Ok(()),
        }
    }

    /// The session an `open` without one creates: `generated`, after the prefix if there is
    /// one (and a separator, when the prefix does not end with one, so that the id lands
    /// inside the scope).
    ///
    /// # Errors
    /// The two together are not a valid session id (a `generated` id longer than the hub
    /// makes).
    pub fn place(&self, generated: &SessionId) -> Result<SessionId, String> {
        match self.prefix.as_deref() {
            None => Ok(generated.clone()),
            Some(prefix) if prefix.ends_with(is_separator) => {
                SessionId::parse(format!("{prefix}{generated}"))
            }
            Some(prefix) => SessionId::parse(format!("{prefix}{JOINING_SEPARATOR}{generated}")),
        }
    }
}

/// Whether `session` is within `prefix`'s scope: equal to it, or continuing it at a
/// separator (the prefix's own last character, or the session's next one).
fn within(prefix: &str, session: &str) -> bool {
    match session.strip_prefix(prefix) {
        None => false,
        Some("") => true,
        Some(rest) => prefix.ends_with(is_separator) || rest.starts_with(is_separator),
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
        for longest in [
            "p".repeat(MAX_PREFIX_CHARS),
            format!("{}-", "p".repeat(MAX_PREFIX_CHARS - 1)),
        ] {
            let scope = SessionScope::prefix(&longest).unwrap();
            let placed = scope.place(&generated).unwrap();
            assert!(placed.as_str().len() <= MAX_SESSION_ID_CHARS, "{placed}");
            assert!(scope.allows(placed.as_str()), "{placed}");
        }
    }

    #[test]
    fn a_scope_ends_at_a_separator() {
        let scope = SessionScope::prefix("team-a").unwrap();
        for inside in [
            "team-a", "team-a-1", "team-a.1", "team-a_1", "team-a:1", "team-a--",
        ] {
            assert!(scope.allows(inside), "{inside}");
            assert_eq!(scope.permit(inside), Ok(()), "{inside}");
        }
        for outside in ["team-ab-1", "team-ab", "team-a1", "team-", "xteam-a-1", ""] {
            assert!(!scope.allows(outside), "{outside}");
            let refusal = scope.permit(outside).unwrap_err();
            assert!(
                refusal.contains("\"team-a\"") && refusal.contains("after a separator"),
                "{refusal}"
            );
        }
        let generated = SessionId::parse("s-0123456789abcdef").unwrap();
        let placed = scope.place(&generated).unwrap();
        assert_eq!(placed.as_str(), "team-a-s-0123456789abcdef");
        assert!(scope.allows(placed.as_str()));
        // A prefix ending with any separator is its own boundary.
        for prefix in ["t.", "t_", "t:"] {
            let scope = SessionScope::prefix(prefix).unwrap();
            assert!(scope.allows(&format!("{prefix}x")), "{prefix}");
            assert!(!scope.allows("tx"), "{prefix}");
            assert_eq!(
                scope.place(&generated).unwrap().as_str(),
                format!("{prefix}s-0123456789abcdef")
            );
        }
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
        assert!(error.contains("has 110 characters"), "{error}");
        assert!(!error.contains(&long), "{error}");
        assert!(SessionScope::prefix("a:b.c_d-").is_ok());
    }
}
