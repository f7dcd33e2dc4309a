//! Answer links: the links in a mail that answer one request as one person with one choice
//! (`{public_url}/a/{key}`). As with personal links, nothing is stored per link: the key
//! carries what it was signed for, under the gateway's secret with a label of its own, so a
//! personal key cannot pass for an answer key or the reverse.
//!
//! A key is `m1.{session}.{request}.{user}.{expires_ms}.{choice}.{digest}.{tag}`: the session,
//! the request id and the user in unpadded base64url; the choice as [`Choice::as_key`] spells
//! it; `digest`, the first 24 hex digits of the request's questions digest (the audit trail's
//! `digest`), so that a link cannot answer a later request asked under the same id with other
//! questions; and the tag, `HMAC-SHA256(secret, "answer-link", each field before it)`, in
//! base64url.
//!
//! A link works until its request's deadline, or, for a request without one,
//! [`UNDATED_LINK_TTL_MS`] after the notification was made, and never longer than
//! [`MAX_LINK_TTL_S`] after it.

use askgate_protocol::people::check_user_name;
use askgate_protocol::{RequestId, SessionId};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac as _;

use super::MAX_LINK_TTL_S;
use super::choices::Choice;
use crate::keys::ViewerKeys;

/// How long the links of a mail about a request without a deadline work: a week from the
/// notification, long enough to be read after a weekend away, short enough that an old mail
/// does not stay a standing grant.
pub const UNDATED_LINK_TTL_MS: u64 = 7 * 86_400 * 1000;

/// Hex digits of the questions digest a key carries (96 bits).
pub const DIGEST_HEX: usize = 24;

const VERSION: &str = "m1";
const LABEL: &[u8] = b"answer-link";

/// What an answer link was signed for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionLink {
    /// The request's session.
    pub session: SessionId,
    /// The request.
    pub request: RequestId,
    /// Who answers.
    pub user: String,
    /// When it stops working (Unix ms).
    pub expires_ms: u64,
    /// The answer it gives.
    pub choice: Choice,
    /// The first [`DIGEST_HEX`] digits of the questions digest it was made for.
    pub digest: String,
}

/// Why an answer link's key was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkRefusal {
    /// Not a key this gateway signed, or one changed since.
    Forged,
    /// Signed, and its time is up (at this moment, Unix ms).
    Expired(u64),
}

impl LinkRefusal {
    /// What the person is told.
    pub fn reason(self) -> String {
        match self {
            LinkRefusal::Forged => "This link is not one this gateway made, or it was changed \
                on its way (a mail program may have cut it): open the link from the mail again, \
                whole."
                .to_owned(),
            LinkRefusal::Expired(at_ms) => format!(
                "This link expired at {}; the question can no longer be answered from this mail.",
                crate::notify::delivery::rfc3339(at_ms)
            ),
        }
    }
}

/// When the links of a mail made at `created_ms` about a request with `deadline_ms` expire.
pub fn link_expiry(deadline_ms: Option<u64>, created_ms: u64) -> u64 {
    let longest = created_ms.saturating_add(MAX_LINK_TTL_S * 1000);
    deadline_ms
        .unwrap_or_else(|| created_ms.saturating_add(UNDATED_LINK_TTL_MS))
        .min(longest)
}

/// The part of a questions digest (hex) a key carries.
pub fn short_digest(digest: &str) -> String {
    digest.chars().take(DIGEST_HEX).collect()
}

impl ViewerKeys {
    fn action_mac(&self, fields: &[&str]) -> hmac::Hmac<sha2::Sha256> {
        let mut parts: Vec<&[u8]> = vec![LABEL];
        parts.extend(fields.iter().map(|field| field.as_bytes()));
        self.mac_over(&parts)
    }

    /// The key of `link`.
    pub fn action_key(&self, link: &ActionLink) -> String {
        let fields = [
            VERSION.to_owned(),
            URL_SAFE_NO_PAD.encode(link.session.as_str()),
            URL_SAFE_NO_PAD.encode(link.request.as_str()),
            URL_SAFE_NO_PAD.encode(&link.user),
            link.expires_ms.to_string(),
            link.choice.as_key(),
            link.digest.clone(),
        ];
        let signed: Vec<&str> = fields.iter().map(String::as_str).collect();
        let tag = self.action_mac(&signed).finalize().into_bytes();
        format!("{}.{}", fields.join("."), URL_SAFE_NO_PAD.encode(tag))
    }

    /// `{public_url}/a/{key}` for `link`.
    pub fn action_url(&self, link: &ActionLink) -> String {
        format!("{}/a/{}", self.public_url(), self.action_key(link))
    }

    /// What `key` was signed for, if this gateway signed it and it has not expired at
    /// `now_ms`. The signature is compared in constant time, and the expiry judged only once
    /// it holds.
    ///
    /// # Errors
    /// Why the key is refused.
    pub fn read_action(&self, key: &str, now_ms: u64) -> Result<ActionLink, LinkRefusal> {
        let fields: Vec<&str> = key.split('.').collect();
        let [
            version,
            session,
            request,
            user,
            expires,
            choice,
            digest,
            tag,
        ] = fields[..]
        else {
            return Err(LinkRefusal::Forged);
        };
        if version != VERSION {
            return Err(LinkRefusal::Forged);
        }
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| LinkRefusal::Forged)?;
        self.action_mac(&fields[..7])
            .verify_slice(&tag)
            .map_err(|_| LinkRefusal::Forged)?;
        // Signed by this gateway: what follows was written by `action_key`, but a key signed
        // by an older askgate under the same secret is still read with care.
        let text = |field: &str| {
            URL_SAFE_NO_PAD
                .decode(field)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .ok_or(LinkRefusal::Forged)
        };
        let session = SessionId::parse(&text(session)?).map_err(|_| LinkRefusal::Forged)?;
        let request = RequestId::parse(&text(request)?).map_err(|_| LinkRefusal::Forged)?;
        let user = text(user)?;
        check_user_name(&user).map_err(|_| LinkRefusal::Forged)?;
        if expires.is_empty() || !expires.bytes().all(|b| b.is_ascii_digit()) {
            return Err(LinkRefusal::Forged);
        }
        let expires_ms: u64 = expires.parse().map_err(|_| LinkRefusal::Forged)?;
        let choice = Choice::from_key(choice).ok_or(LinkRefusal::Forged)?;
        if expires_ms <= now_ms {
            return Err(LinkRefusal::Expired(expires_ms));
        }
        Ok(ActionLink {
            session,
            request,
            user,
            expires_ms,
            choice,
            digest: digest.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> ViewerKeys {
        ViewerKeys::new(b"secret", "http://gw:8080/")
    }

    fn link() -> ActionLink {
        ActionLink {
            session: SessionId::parse("s1").unwrap(),
            request: RequestId::parse("r.1/x").unwrap(),
            user: "alice@example.com".into(),
            expires_ms: 2_000,
            choice: Choice::Option(2),
            digest: "0123456789abcdef01234567".into(),
        }
    }

    #[test]
    fn a_key_reads_back_as_what_it_was_signed_for_until_it_expires() {
        let keys = keys();
        let key = keys.action_key(&link());
        assert!(key.starts_with("m1."), "{key}");
        assert_eq!(keys.read_action(&key, 1_999), Ok(link()));
        assert_eq!(
            keys.read_action(&key, 2_000),
            Err(LinkRefusal::Expired(2_000))
        );
        assert_eq!(keys.action_url(&link()), format!("http://gw:8080/a/{key}"));
        // Every character is one a URL path carries as it is.
        assert!(
            key.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
            "{key}"
        );
    }

    #[test]
    fn a_changed_key_is_forged() {
        let keys = keys();
        let key = keys.action_key(&link());
        let fields: Vec<&str> = key.split('.').collect();
        let bob = URL_SAFE_NO_PAD.encode("bob@example.com");
        let other_request = URL_SAFE_NO_PAD.encode("r2");
        let changed = |at: usize, to: &str| {
            let mut changed = fields.clone();
            changed[at] = to;
            changed.join(".")
        };
        for forged in [
            changed(2, &other_request),
            changed(3, &bob),
            changed(4, "99999"),
            changed(5, "o3"),
            changed(5, "approve"),
            changed(6, "ffffffffffffffffffffffff"),
            changed(0, "m2"),
        ] {
            assert_eq!(
                keys.read_action(&forged, 0),
                Err(LinkRefusal::Forged),
                "{forged}"
            );
        }
        // One byte of the tag changed.
        let mut bytes = key.clone().into_bytes();
        let last = bytes.len() - 2;
        bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(bytes).unwrap();
        assert_eq!(keys.read_action(&flipped, 0), Err(LinkRefusal::Forged));
        let other_secret = ViewerKeys::new(b"other", "http://gw:8080");
        assert_eq!(other_secret.read_action(&key, 0), Err(LinkRefusal::Forged));
        // An expired key that was also changed is forged, not expired: nothing is said of a
        // key whose signature does not hold.
        assert_eq!(
            keys.read_action(&changed(3, &bob), u64::MAX),
            Err(LinkRefusal::Forged)
        );
        for junk in ["", ".", "m1", "m1.......", "p1.czE.YQ.1.AA"] {
            assert_eq!(
                keys.read_action(junk, 0),
                Err(LinkRefusal::Forged),
                "{junk}"
            );
        }
    }

    #[test]
    fn a_personal_key_is_not_an_answer_key() {
        let keys = keys();
        let personal = keys.personal_key(&SessionId::parse("s1").unwrap(), "alice@example.com", 9);
        assert_eq!(keys.read_action(&personal, 0), Err(LinkRefusal::Forged));
    }

    #[test]
    fn links_last_until_the_deadline_or_a_week_and_at_most_ninety_days() {
        assert_eq!(link_expiry(Some(5_000), 1_000), 5_000);
        assert_eq!(link_expiry(None, 1_000), 1_000 + UNDATED_LINK_TTL_MS);
        assert_eq!(
            link_expiry(Some(u64::MAX), 1_000),
            1_000 + MAX_LINK_TTL_S * 1000
        );
        assert_eq!(short_digest(&"ab".repeat(32)).len(), DIGEST_HEX);
    }
}
