//! People, not tabs: who a tab's person is, and whether they may answer a request.
//!
//! A tab is a person only on the gateway's own word: a key it signed for that person
//! ([`personal_links`]), or a header from a proxy it was told to trust ([`proxy`]). Nothing a
//! page sends is taken as identity. Asks may name who alone may answer, people or
//! `group:NAME`s from the operator's [`groups`] file.
//!
//! - [`personal_links`]: keys signed for a session, a person and an expiry; nothing stored.
//! - [`inbox_links`]: keys signed for a person and an expiry, opening their inbox; nothing stored.
//! - [`action_links`]: keys signed for one answer of one person to one request (mail links).
//! - [`choices`]: what one click may answer, and the answer it makes.
//! - [`proxy`]: `--user-header` from `--trusted-proxy` addresses only.
//! - [`groups`]: `--groups FILE`, group name → members.
//! - [`issuing`]: personal links issued to agents, each recorded in the audit trail.

pub mod action_links;
pub mod choices;
pub mod groups;
pub mod inbox_links;
pub mod issuing;
pub mod personal_links;
pub mod proxy;

use std::sync::Arc;

use askgate_protocol::wire::{Via, You};

pub use groups::Groups;
pub use inbox_links::{InboxLink, issue_inbox_link};
pub use issuing::{IssuedLink, issue_link};
pub use personal_links::{DEFAULT_LINK_TTL_S, KeyRefusal, MAX_LINK_TTL_S};
pub use proxy::{ProxyIdentity, TrustedProxies};

/// Who a tab is: a person, or an anonymous holder of the session link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    /// The person's name, as the gateway was told it; `None` for an anonymous link holder.
    pub user: Option<Arc<str>>,
    /// How the gateway knows.
    pub via: Via,
    /// When the person's identity ends (Unix ms): a personal link's expiry. None for the
    /// anonymous link holder and a proxy's person, whose identity lasts as long as the tab.
    pub expires_ms: Option<u64>,
}

impl Person {
    /// An anonymous holder of the plain session link.
    pub fn anonymous() -> Self {
        Person {
            user: None,
            via: Via::SessionLink,
            expires_ms: None,
        }
    }

    /// A named person, known `via` a personal link or a proxy.
    pub fn named(user: &str, via: Via) -> Self {
        Person {
            user: Some(Arc::from(user)),
            via,
            expires_ms: None,
        }
    }

    /// The same person, known only until `expires_ms`.
    pub fn until(self, expires_ms: u64) -> Self {
        Person {
            expires_ms: Some(expires_ms),
            ..self
        }
    }

    /// Whether the person's identity has ended by `now_ms` (a link's expiry is its first
    /// moment of no longer working, as when a tab says hello).
    pub fn expired_at(&self, now_ms: u64) -> bool {
        self.expires_ms
            .is_some_and(|expires_ms| expires_ms <= now_ms)
    }

    /// The name, if known.
    pub fn name(&self) -> Option<&str> {
        self.user.as_deref()
    }
}

/// Why a person may not answer a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotAllowed {
    /// Anonymous, and the gateway requires identity to answer.
    Anonymous,
    /// The request names who may answer, and this person is not among them.
    NotAnAnswerer(Vec<String>),
    /// The request needs a quorum, which counts only people the gateway knows.
    AnonymousVote,
}

impl NotAllowed {
    /// What the tab is told.
    pub fn message(&self) -> String {
        match self {
            NotAllowed::Anonymous => "this gateway takes answers only from people it knows; \
                open a personal link, or sign in through the gateway's proxy"
                .to_owned(),
            NotAllowed::NotAnAnswerer(answerers) => {
                format!("only {} may answer this request", answerers.join(", "))
            }
            NotAllowed::AnonymousVote => "this request needs several people's votes, and counts \
                only people the gateway knows; open a personal link, or sign in through the \
                gateway's proxy"
                .to_owned(),
        }
    }

    /// A short reason, for the audit trail.
    pub fn reason(&self) -> &'static str {
        match self {
            NotAllowed::Anonymous | NotAllowed::AnonymousVote => "identity required",
            NotAllowed::NotAnAnswerer(_) => "not an answerer",
        }
    }
}

/// The gateway's rules about people: whether anonymous tabs may answer, and the groups.
#[derive(Clone, Debug, Default)]
pub struct People {
    /// Anonymous tabs watch only.
    pub require_identity: bool,
    /// The operator's groups.
    pub groups: Groups,
}

impl People {
    /// What a tab is told about itself.
    pub fn you(&self, person: &Person) -> You {
        You {
            user: person.user.as_deref().map(str::to_owned),
            via: person.via,
            may_answer: person.user.is_some() || !self.require_identity,
            groups: person
                .name()
                .map(|user| self.groups.groups_of(user))
                .unwrap_or_default(),
            following: false,
        }
    }

    /// Whether `person` may answer (or decline) a request whose ask named `answerers`.
    ///
    /// # Errors
    /// Why not.
    pub fn may_answer(
        &self,
        person: &Person,
        answerers: Option<&[String]>,
    ) -> Result<(), NotAllowed> {
        let Some(name) = person.name() else {
            if self.require_identity || answerers.is_some() {
                return Err(match answerers {
                    Some(list) => NotAllowed::NotAnAnswerer(list.to_vec()),
                    None => NotAllowed::Anonymous,
                });
            }
            return Ok(());
        };
        match answerers {
            None => Ok(()),
            Some(list) if list.iter().any(|entry| self.names(entry, name)) => Ok(()),
            Some(list) => Err(NotAllowed::NotAnAnswerer(list.to_vec())),
        }
    }

    /// Whether the answerers' entry `entry` (a person or `group:NAME`) names `user`.
    fn names(&self, entry: &str, user: &str) -> bool {
        match entry.strip_prefix("group:") {
            Some(group) => self.groups.has_member(group, user),
            None => entry == user,
        }
    }

    /// The first `group:NAME` in `answerers` that names no group, with its position.
    pub fn unknown_group<'a>(&self, answerers: &'a [String]) -> Option<(usize, &'a str)> {
        answerers.iter().enumerate().find_map(|(index, entry)| {
            let group = entry.strip_prefix("group:")?;
            (!self.groups.has_group(group)).then_some((index, group))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn people(require_identity: bool) -> People {
        People {
            require_identity,
            groups: Groups::parse(r#"{"ops": ["carol@example.com"]}"#).unwrap(),
        }
    }

    #[test]
    fn only_the_named_people_and_groups_may_answer() {
        let list = vec!["alice@example.com".to_owned(), "group:ops".to_owned()];
        let rules = people(false);
        let alice = Person::named("alice@example.com", Via::PersonalLink);
        let carol = Person::named("carol@example.com", Via::Proxy);
        let bob = Person::named("bob@example.com", Via::PersonalLink);
        assert_eq!(rules.may_answer(&alice, Some(&list)), Ok(()));
        assert_eq!(rules.may_answer(&carol, Some(&list)), Ok(()));
        assert!(matches!(
            rules.may_answer(&bob, Some(&list)),
            Err(NotAllowed::NotAnAnswerer(_))
        ));
        assert!(rules.may_answer(&Person::anonymous(), Some(&list)).is_err());
        // Names are compared as given: no case folding.
        let shouting = Person::named("ALICE@example.com", Via::Proxy);
        assert!(rules.may_answer(&shouting, Some(&list)).is_err());
    }

    #[test]
    fn identity_required_makes_anonymous_tabs_watch_only() {
        let anonymous = Person::anonymous();
        assert_eq!(people(false).may_answer(&anonymous, None), Ok(()));
        assert_eq!(
            people(true).may_answer(&anonymous, None),
            Err(NotAllowed::Anonymous)
        );
        assert!(!people(true).you(&anonymous).may_answer);
        let alice = Person::named("alice@example.com", Via::PersonalLink);
        assert_eq!(people(true).may_answer(&alice, None), Ok(()));
    }

    #[test]
    fn an_unknown_group_is_found_with_its_position() {
        let list = vec!["group:ops".to_owned(), "group:nobody".to_owned()];
        assert_eq!(people(false).unknown_group(&list), Some((1, "nobody")));
    }
}
