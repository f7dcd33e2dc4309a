//! Inbox links: a key signed for one person and an expiry, not for a session, so that the
//! inbox page opened with it is that person across every session. Like personal links,
//! nothing is stored per link: the key carries what it was signed for.
//!
//! A key is `i1.{user}.{expires_ms}.{tag}`: the user in unpadded base64url, and the tag
//! `HMAC-SHA256(secret, "inbox", user, expires_ms)`. Its first part differs from a personal
//! key's (`p1`, signed over `"person"` and a session), so neither is ever taken for the other.

use askgate_protocol::people::check_user_name;
use askgate_protocol::wire::Via;
use askgate_protocol::{ErrorCode, FieldError};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac as _;
use serde_json::Value;

use super::{KeyRefusal, Person, issuing};
use crate::clock::now_ms;
use crate::keys::ViewerKeys;

const VERSION: &str = "i1";

/// An inbox link, as issued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboxLink {
    /// `{public_url}/inbox#k={inbox key}`.
    pub url: String,
    /// When it stops working (Unix ms).
    pub expires_ms: u64,
}

impl ViewerKeys {
    fn inbox_mac(&self, user: &str, expires: &str) -> hmac::Hmac<sha2::Sha256> {
        self.mac_over(&[b"inbox", user.as_bytes(), expires.as_bytes()])
    }

    /// The inbox key of `user`, working until `expires_ms`.
    pub fn inbox_key(&self, user: &str, expires_ms: u64) -> String {
        let expires = expires_ms.to_string();
        let tag = self.inbox_mac(user, &expires).finalize().into_bytes();
        format!(
            "{VERSION}.{}.{expires}.{}",
            URL_SAFE_NO_PAD.encode(user),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// Who an inbox presenting `key` is, at `now_ms`. The signature is compared in constant
    /// time, and the expiry judged only once it holds.
    ///
    /// # Errors
    /// Why the key is refused.
    pub fn identify_inbox(&self, key: &str, now_ms: u64) -> Result<Person, KeyRefusal> {
        let mut fields = key.split('.');
        let (Some(VERSION), Some(user), Some(expires), Some(tag), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return Err(KeyRefusal::Wrong);
        };
        let user = URL_SAFE_NO_PAD
            .decode(user)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .filter(|user| check_user_name(user).is_ok())
            .ok_or(KeyRefusal::Wrong)?;
        // Digits only, so that one link has one key.
        if expires.is_empty() || !expires.bytes().all(|b| b.is_ascii_digit()) {
            return Err(KeyRefusal::Wrong);
        }
        let expires_ms: u64 = expires.parse().map_err(|_| KeyRefusal::Wrong)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| KeyRefusal::Wrong)?;
        if self.inbox_mac(&user, expires).verify_slice(&tag).is_err() {
            return Err(KeyRefusal::Wrong);
        }
        if expires_ms <= now_ms {
            return Err(KeyRefusal::Expired);
        }
        Ok(Person::named(&user, Via::PersonalLink).until(expires_ms))
    }
}

/// Issues `user` an inbox link working for `ttl_s` seconds (a day when absent). Nothing is
/// recorded: an inbox belongs to no session, so no session's trail is the place for it.
///
/// # Errors
/// The user or the ttl is not one a link can carry, each with its path.
pub fn issue_inbox_link(
    keys: &ViewerKeys,
    user: &str,
    ttl_s: Option<&Value>,
) -> Result<InboxLink, Vec<FieldError>> {
    let user_error = check_user_name(user)
        .err()
        .map(|m| FieldError::new("user", ErrorCode::InvalidValue, m));
    let ttl = match (user_error, issuing::ttl_ms(ttl_s)) {
        (None, Ok(ttl)) => ttl,
        (user_error, ttl) => return Err(user_error.into_iter().chain(ttl.err()).collect()),
    };
    let expires_ms = now_ms().saturating_add(ttl);
    Ok(InboxLink {
        url: format!(
            "{}/inbox#k={}",
            keys.public_url(),
            keys.inbox_key(user, expires_ms)
        ),
        expires_ms,
    })
}

#[cfg(test)]
mod tests {
    use askgate_protocol::SessionId;

    use super::*;

    fn keys() -> ViewerKeys {
        ViewerKeys::new(b"0123456789abcdef0123456789abcdef", "https://gate.example")
    }

    #[test]
    fn an_inbox_key_names_its_person_until_it_expires() {
        let keys = keys();
        let key = keys.inbox_key("alice@example.com", 2_000);
        let person = keys.identify_inbox(&key, 1_000).unwrap();
        assert_eq!(person.name(), Some("alice@example.com"));
        assert_eq!(person.expires_ms, Some(2_000));
        assert_eq!(keys.identify_inbox(&key, 2_000), Err(KeyRefusal::Expired));
    }

    #[test]
    fn a_changed_foreign_or_session_key_opens_no_inbox() {
        let keys = keys();
        let key = keys.inbox_key("alice@example.com", 2_000);
        let bob = key.replacen(
            &URL_SAFE_NO_PAD.encode("alice@example.com"),
            &URL_SAFE_NO_PAD.encode("bob@example.com"),
            1,
        );
        assert_eq!(keys.identify_inbox(&bob, 1_000), Err(KeyRefusal::Wrong));
        let later = key.replacen(".2000.", ".9000.", 1);
        assert_eq!(keys.identify_inbox(&later, 1_000), Err(KeyRefusal::Wrong));
        let other = ViewerKeys::new(b"another secret of 32 bytes!!!!!!", "https://x");
        assert_eq!(other.identify_inbox(&key, 1_000), Err(KeyRefusal::Wrong));
        // A personal link's key is for one session, never an inbox.
        let session = SessionId::parse("s-1").unwrap();
        let personal = keys.personal_key(&session, "alice@example.com", 2_000);
        assert_eq!(
            keys.identify_inbox(&personal, 1_000),
            Err(KeyRefusal::Wrong)
        );
        assert_eq!(
            keys.identify_inbox(&keys.key(&session), 1_000),
            Err(KeyRefusal::Wrong)
        );
    }

    #[test]
    fn an_inbox_link_is_checked_at_its_paths() {
        let link = issue_inbox_link(&keys(), "alice@example.com", None).unwrap();
        assert!(
            link.url.starts_with("https://gate.example/inbox#k=i1."),
            "{}",
            link.url
        );
        let errors = issue_inbox_link(&keys(), "", Some(&serde_json::json!("soon"))).unwrap_err();
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["user", "ttl_s"]);
    }
}
