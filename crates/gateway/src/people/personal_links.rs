//! Personal links: a viewer link whose key is signed for one session, one person and an
//! expiry, so that a tab opened with it is that person. Nothing is stored per link, and the
//! secret never leaves the gateway: the key carries what it was signed for.
//!
//! A key is `p1.{session}.{user}.{expires_ms}.{tag}`: the session and the user in unpadded
//! base64url, and the tag `HMAC-SHA256(secret, "person", session, user, expires_ms)`, likewise.
//! It names its session so that one opened under another session's address is told so; a
//! plain viewer key holds no `.`, so the two never mix.

use askgate_protocol::SessionId;
use askgate_protocol::people::check_user_name;
use askgate_protocol::wire::Via;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac as _;

use super::Person;
use crate::keys::ViewerKeys;

/// How long a personal link works when the agent does not say: a day.
pub const DEFAULT_LINK_TTL_S: u64 = 24 * 3600;
/// The longest a personal link may work: 90 days. A longer-lived grant belongs behind an
/// identity-aware proxy, where it can be taken back.
pub const MAX_LINK_TTL_S: u64 = 90 * 24 * 3600;

const VERSION: &str = "p1";

/// Why a tab's key was refused (said in the 4401 close, which the page shows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyRefusal {
    /// Not this session's viewer key, nor a personal key signed by this gateway for it.
    Wrong,
    /// A personal key signed for this session, whose time is up.
    Expired,
    /// A personal key, well formed but not signed for this session.
    OtherSession,
}

impl KeyRefusal {
    /// The close frame's reason.
    pub fn reason(self) -> &'static str {
        match self {
            KeyRefusal::Wrong => "wrong viewer key",
            KeyRefusal::Expired => "this personal link has expired; ask for a new one",
            KeyRefusal::OtherSession => "this personal link is for another session",
        }
    }
}

/// A personal key's parts, as read (not yet checked).
struct Parts<'k> {
    session: String,
    user: String,
    expires_ms: u64,
    expires_text: &'k str,
    tag: Vec<u8>,
}

fn read_parts(key: &str) -> Option<Parts<'_>> {
    let mut fields = key.split('.');
    let version = fields.next()?;
    let (session, user, expires, tag) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    if version != VERSION || fields.next().is_some() {
        return None;
    }
    let session = String::from_utf8(URL_SAFE_NO_PAD.decode(session).ok()?).ok()?;
    let user = String::from_utf8(URL_SAFE_NO_PAD.decode(user).ok()?).ok()?;
    check_user_name(&user).ok()?;
    // Digits only: `+5` or ` 5` would parse, and then one link would have several keys.
    if expires.is_empty() || !expires.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Parts {
        session,
        user,
        expires_ms: expires.parse().ok()?,
        expires_text: expires,
        tag: URL_SAFE_NO_PAD.decode(tag).ok()?,
    })
}

impl ViewerKeys {
    fn personal_mac(&self, session: &str, user: &str, expires: &str) -> hmac::Hmac<sha2::Sha256> {
        self.mac_over(&[
            b"person",
            session.as_bytes(),
            user.as_bytes(),
            expires.as_bytes(),
        ])
    }

    /// The personal key of `user` in `session`, working until `expires_ms`.
    pub fn personal_key(&self, session: &SessionId, user: &str, expires_ms: u64) -> String {
        let expires = expires_ms.to_string();
        let tag = self
            .personal_mac(session.as_str(), user, &expires)
            .finalize()
            .into_bytes();
        format!(
            "{VERSION}.{}.{}.{expires}.{}",
            URL_SAFE_NO_PAD.encode(session.as_str()),
            URL_SAFE_NO_PAD.encode(user),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The personal link of `user` in `session`.
    pub fn personal_url(&self, session: &SessionId, user: &str, expires_ms: u64) -> String {
        self.url_with_key(session, &self.personal_key(session, user, expires_ms))
    }

    /// Who a tab presenting `key` for `session` is, at `now_ms`: an anonymous link holder
    /// (the viewer key) or the person a personal key names. Signatures are compared in
    /// constant time; the expiry is judged only once the signature holds.
    ///
    /// # Errors
    /// Why the key is refused.
    pub fn identify(
        &self,
        session: &SessionId,
        key: &str,
        now_ms: u64,
    ) -> Result<Person, KeyRefusal> {
        if !key.contains('.') {
            return if self.verify(session, key) {
                Ok(Person::anonymous())
            } else {
                Err(KeyRefusal::Wrong)
            };
        }
        let parts = read_parts(key).ok_or(KeyRefusal::Wrong)?;
        let signed = self
            .personal_mac(&parts.session, &parts.user, parts.expires_text)
            .verify_slice(&parts.tag)
            .is_ok();
        if !signed {
            return Err(KeyRefusal::Wrong);
        }
        // Judged only once the signature holds: an unsigned key learns nothing.
        if parts.session != session.as_str() {
            return Err(KeyRefusal::OtherSession);
        }
        if parts.expires_ms <= now_ms {
            return Err(KeyRefusal::Expired);
        }
        Ok(Person::named(&parts.user, Via::PersonalLink).until(parts.expires_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> ViewerKeys {
        ViewerKeys::new(b"secret", "http://gw")
    }

    fn session(id: &str) -> SessionId {
        SessionId::parse(id).unwrap()
    }

    #[test]
    fn a_personal_key_names_its_person_until_it_expires() {
        let keys = keys();
        let key = keys.personal_key(&session("s1"), "alice@example.com", 2_000);
        let person = keys.identify(&session("s1"), &key, 1_999).unwrap();
        assert_eq!(person.name(), Some("alice@example.com"));
        assert_eq!(person.via, Via::PersonalLink);
        assert_eq!(
            person.expires_ms,
            Some(2_000),
            "the tab's identity ends with the link"
        );
        assert!(!person.expired_at(1_999) && person.expired_at(2_000));
        assert_eq!(
            keys.identify(&session("s1"), &key, 2_000),
            Err(KeyRefusal::Expired)
        );
        let url = keys.personal_url(&session("s1"), "alice@example.com", 2_000);
        assert_eq!(url, format!("http://gw/s/s1#k={key}"));
    }

    #[test]
    fn a_changed_or_foreign_key_is_refused() {
        let keys = keys();
        let key = keys.personal_key(&session("s1"), "alice@example.com", 2_000);
        assert_eq!(
            keys.identify(&session("s2"), &key, 0),
            Err(KeyRefusal::OtherSession)
        );
        // Someone else's name, another session, or a later expiry, with the same signature.
        let parts: Vec<&str> = key.split('.').collect();
        let bob = URL_SAFE_NO_PAD.encode("bob@example.com");
        let s2 = URL_SAFE_NO_PAD.encode("s2");
        for forged in [
            [parts[0], parts[1], &bob, parts[3], parts[4]].join("."),
            [parts[0], &s2, parts[2], parts[3], parts[4]].join("."),
        ] {
            assert_eq!(
                keys.identify(&session("s1"), &forged, 0),
                Err(KeyRefusal::Wrong)
            );
            assert_eq!(
                keys.identify(&session("s2"), &forged, 0),
                Err(KeyRefusal::Wrong)
            );
        }
        let later = [parts[0], parts[1], parts[2], "99999", parts[4]].join(".");
        assert_eq!(
            keys.identify(&session("s1"), &later, 0),
            Err(KeyRefusal::Wrong)
        );
        let other_secret = ViewerKeys::new(b"other", "http://gw");
        assert_eq!(
            other_secret.identify(&session("s1"), &key, 0),
            Err(KeyRefusal::Wrong)
        );
        for junk in [
            "p1",
            "p1....",
            "p1.x.y.z.w",
            "p2.czE.YQ.1.AA",
            "p1.czE.YQ.+1.AA",
            ".",
            "",
        ] {
            assert_eq!(
                keys.identify(&session("s1"), junk, 0),
                Err(KeyRefusal::Wrong),
                "{junk}"
            );
        }
    }

    #[test]
    fn the_plain_viewer_key_is_an_anonymous_link_holder() {
        let keys = keys();
        let key = keys.key(&session("s1"));
        assert_eq!(
            keys.identify(&session("s1"), &key, 0),
            Ok(Person::anonymous())
        );
    }
}
