//! Keys: agents present a configured key; tabs present a viewer key derived from the session.
//!
//! A viewer key is `base64url(HMAC-SHA256(secret, "viewer:" + session))`, unpadded. It is
//! stateless, survives restarts (the secret is kept in the data directory) and is the same on
//! every node that shares the secret.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use askgate_protocol::SessionId;

/// Derives and checks viewer keys, and builds viewer URLs.
#[derive(Clone)]
pub struct ViewerKeys {
    secret: Vec<u8>,
    public_url: String,
}

impl ViewerKeys {
    /// Keys under `secret`; links start with `public_url` (no trailing slash).
    pub fn new(secret: Vec<u8>, public_url: &str) -> Self {
        ViewerKeys {
            secret,
            public_url: public_url.trim_end_matches('/').to_owned(),
        }
    }

    fn mac(&self, session: &str) -> Hmac<Sha256> {
        // HMAC accepts a key of any length, so this cannot fail.
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(b"viewer:");
        mac.update(session.as_bytes());
        mac
    }

    /// The viewer key of `session`.
    pub fn key(&self, session: &SessionId) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(session.as_str()).finalize().into_bytes())
    }

    /// Whether `key` is the viewer key of `session` (compared in constant time).
    pub fn verify(&self, session: &SessionId, key: &str) -> bool {
        match URL_SAFE_NO_PAD.decode(key.trim_end_matches('=')) {
            Ok(tag) => self.mac(session.as_str()).verify_slice(&tag).is_ok(),
            Err(_) => false,
        }
    }

    /// `{public_url}/s/{session}#k={key}`.
    pub fn viewer_url(&self, session: &SessionId) -> String {
        format!("{}/s/{}#k={}", self.public_url, session, self.key(session))
    }
}

/// The configured agent keys.
#[derive(Clone, Debug, Default)]
pub struct AgentKeys {
    keys: Vec<Vec<u8>>,
}

impl AgentKeys {
    /// Accepts exactly these keys; none means local mode (every agent accepted).
    pub fn new(keys: &[String]) -> Self {
        AgentKeys {
            keys: keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
        }
    }

    /// Whether an `Authorization` header value lets an agent in.
    pub fn allows(&self, authorization: Option<&str>) -> bool {
        if self.keys.is_empty() {
            return true;
        }
        let Some(presented) = authorization.and_then(|h| h.strip_prefix("Bearer ")) else {
            return false;
        };
        // Compare against every key without stopping early, so timing says nothing.
        self.keys.iter().fold(false, |found, key| {
            found | constant_time_eq(key, presented.trim().as_bytes())
        })
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewer_keys_verify_only_for_their_session() {
        let keys = ViewerKeys::new(b"secret".to_vec(), "http://h:1/");
        let a = SessionId::parse("a").unwrap();
        let b = SessionId::parse("b").unwrap();
        let key = keys.key(&a);
        assert!(keys.verify(&a, &key));
        assert!(!keys.verify(&b, &key));
        assert!(!keys.verify(&a, "not-a-key"));
        assert_eq!(keys.viewer_url(&a), format!("http://h:1/s/a#k={key}"));
        let other = ViewerKeys::new(b"other".to_vec(), "http://h:1");
        assert!(!other.verify(&a, &key));
    }

    #[test]
    fn agent_keys() {
        assert!(AgentKeys::new(&[]).allows(None));
        let keys = AgentKeys::new(&["k1".into(), "k2".into()]);
        assert!(keys.allows(Some("Bearer k2")));
        assert!(!keys.allows(Some("Bearer k3")));
        assert!(!keys.allows(Some("k1")));
        assert!(!keys.allows(None));
    }
}
