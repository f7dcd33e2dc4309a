//! Keys: agents present a configured key; tabs present a viewer key derived from the session.
//!
//! Without agent keys (local mode) any local program may act as an agent, but not a web page:
//! a browser lets any site the person visits open a socket or send a request to a port on
//! their machine, and an agent's `open` hands back the viewer key. So in local mode a request
//! that carries an `Origin` (browsers send one; agents' HTTP and WebSocket clients do not),
//! or that names a host other than this machine or the public URL's (DNS rebinding), is refused.
//!
//! A viewer key is `base64url(HMAC-SHA256(secret, "viewer:" + session))`, unpadded. It is
//! stateless, survives restarts (the secret is kept in the data directory) and is the same on
//! every node that shares the secret.

use axum::http::HeaderMap;
use axum::http::header::{AUTHORIZATION, HOST, ORIGIN};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use std::net::IpAddr;

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

/// Why a request may not act as an agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentRefusal {
    /// Keys are configured, and the request presented none of them.
    WrongKey,
    /// Local mode, and a web page sent the request.
    FromWebPage,
    /// Local mode, and the request names a host that is neither this machine nor the public
    /// URL's.
    ForeignHost,
}

impl AgentRefusal {
    /// What to tell the client (short enough for a close frame's reason).
    pub fn message(self) -> &'static str {
        match self {
            AgentRefusal::WrongKey => "missing or wrong agent key (Authorization: Bearer <key>)",
            AgentRefusal::FromWebPage => {
                "a web page may not act as an agent in local mode (the request has an Origin)"
            }
            AgentRefusal::ForeignHost => {
                "in local mode agents must reach the gateway as localhost or its public URL"
            }
        }
    }
}

/// The configured agent keys, and in local mode the host names agents may use.
#[derive(Clone, Debug, Default)]
pub struct AgentKeys {
    keys: Vec<Vec<u8>>,
    /// The public URL's host, lowercase: agents may reach the gateway by it too.
    public_host: Option<String>,
}

impl AgentKeys {
    /// Accepts exactly these keys; none means local mode (every local agent accepted), where
    /// the gateway is also reached as `public_url`.
    pub fn new(keys: &[String], public_url: &str) -> Self {
        let authority = public_url.split("://").nth(1).unwrap_or(public_url);
        let authority = authority.split(['/', '?', '#']).next().unwrap_or_default();
        AgentKeys {
            keys: keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
            public_host: Some(host_name(authority).to_ascii_lowercase()).filter(|h| !h.is_empty()),
        }
    }

    /// Whether the request with `headers` may act as an agent.
    ///
    /// # Errors
    /// Why not.
    pub fn admit(&self, headers: &HeaderMap) -> Result<(), AgentRefusal> {
        let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
        if !self.keys.is_empty() {
            return if self.allows(header(AUTHORIZATION)) {
                Ok(())
            } else {
                Err(AgentRefusal::WrongKey)
            };
        }
        if headers.contains_key(ORIGIN) {
            return Err(AgentRefusal::FromWebPage);
        }
        let host = host_name(header(HOST).unwrap_or_default()).to_ascii_lowercase();
        let local = host == "localhost"
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
            || self.public_host.as_deref() == Some(host.as_str());
        if local {
            Ok(())
        } else {
            Err(AgentRefusal::ForeignHost)
        }
    }

    /// Whether an `Authorization` header value presents one of the keys.
    fn allows(&self, authorization: Option<&str>) -> bool {
        let Some(presented) = authorization.and_then(bearer_key) else {
            return false;
        };
        // Compare against every key without stopping early, so timing says nothing.
        self.keys.iter().fold(false, |found, key| {
            found | constant_time_eq(key, presented.as_bytes())
        })
    }
}

/// The key of a `Bearer` credential. RFC 7235 makes the scheme case-insensitive and lets
/// any run of spaces or tabs follow it, and clients do write `bearer`.
fn bearer_key(authorization: &str) -> Option<&str> {
    const BLANK: [char; 2] = [' ', '\t'];
    let (scheme, key) = authorization.trim_matches(BLANK).split_once(BLANK)?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| key.trim_start_matches(BLANK))
}

/// The host of a `Host` header or URL authority, without its port or an IPv6 address's
/// brackets.
fn host_name(authority: &str) -> &str {
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if let Some(bracketed) = authority.strip_prefix('[') {
        return bracketed.split(']').next().unwrap_or_default();
    }
    authority.split(':').next().unwrap_or_default()
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

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn agent_keys() {
        let keys = AgentKeys::new(&["k1".into(), "k2".into()], "http://127.0.0.1:8080");
        let with = |auth| headers(&[("host", "gw.example"), ("authorization", auth)]);
        assert_eq!(keys.admit(&with("Bearer k2")), Ok(()));
        assert_eq!(keys.admit(&with("Bearer k3")), Err(AgentRefusal::WrongKey));
        assert_eq!(keys.admit(&with("k1")), Err(AgentRefusal::WrongKey));
        assert_eq!(
            keys.admit(&headers(&[("host", "127.0.0.1")])),
            Err(AgentRefusal::WrongKey)
        );
        // With a key, a web page may be an agent (it cannot learn the key by itself).
        let page = headers(&[
            ("origin", "https://app.example"),
            ("authorization", "Bearer k1"),
        ]);
        assert_eq!(keys.admit(&page), Ok(()));
    }

    /// RFC 7235: the scheme is read in any case, and spaces or tabs may run between it and
    /// the key.
    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        let keys = AgentKeys::new(&["k1".into()], "http://127.0.0.1:8080");
        let with = |auth| headers(&[("host", "gw.example"), ("authorization", auth)]);
        for presented in [
            "bearer k1",
            "BEARER k1",
            "BeArEr  k1",
            "bearer\tk1",
            "Bearer \t k1 ",
        ] {
            assert_eq!(keys.admit(&with(presented)), Ok(()), "{presented:?}");
        }
        for presented in [
            "bearerk1", "Basic k1", "bearer", "bearer ", "Bearer k", "Bear k1",
        ] {
            assert_eq!(
                keys.admit(&with(presented)),
                Err(AgentRefusal::WrongKey),
                "{presented:?}"
            );
        }
    }

    #[test]
    fn local_mode_admits_local_programs_only() {
        let keys = AgentKeys::new(&[], "http://askgate.lan:8080/");
        for host in [
            "127.0.0.1:8080",
            "127.1.2.3",
            "localhost:9",
            "LOCALHOST",
            "[::1]:8080",
            "askgate.lan:8080",
        ] {
            assert_eq!(keys.admit(&headers(&[("host", host)])), Ok(()), "{host}");
        }
        for host in ["evil.example:8080", "10.0.0.2:8080", "[fe80::1]:8080", ""] {
            assert_eq!(
                keys.admit(&headers(&[("host", host)])),
                Err(AgentRefusal::ForeignHost),
                "{host:?}"
            );
        }
        let page = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "https://evil.example"),
        ]);
        assert_eq!(keys.admit(&page), Err(AgentRefusal::FromWebPage));
        // The message fits a WebSocket close frame's reason.
        for refusal in [
            AgentRefusal::WrongKey,
            AgentRefusal::FromWebPage,
            AgentRefusal::ForeignHost,
        ] {
            assert!(refusal.message().len() <= 123);
        }
    }
}
