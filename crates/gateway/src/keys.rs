//! Keys: agents present a configured key; tabs present a viewer key derived from the session.
//!
//! An agent key may be bound to a [`SessionScope`]; the connection or call it admits carries
//! that scope, and the hub refuses sessions outside it.
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

use std::fmt;
use std::net::IpAddr;

use askgate_protocol::SessionId;

use crate::scope::SessionScope;

/// Derives and checks viewer keys, and builds viewer URLs.
#[derive(Clone)]
pub struct ViewerKeys {
    /// HMAC-SHA256 keyed with the secret and given nothing yet: cloned for each MAC, so the
    /// key's two blocks are hashed once, not on every ask's viewer URL and every tab's key.
    keyed: Hmac<Sha256>,
    public_url: String,
}

impl ViewerKeys {
    /// Keys under `secret`; links start with `public_url` (no trailing slash).
    pub fn new(secret: &[u8], public_url: &str) -> Self {
        ViewerKeys {
            // HMAC accepts a key of any length, so this cannot fail.
            keyed: Hmac::<Sha256>::new_from_slice(secret)
                .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length")),
            public_url: public_url.trim_end_matches('/').to_owned(),
        }
    }

    /// An HMAC under the secret, over `parts` (each followed by a NUL, which no part holds:
    /// ids and names are checked for control characters where they enter).
    pub(crate) fn mac_over(&self, parts: &[&[u8]]) -> Hmac<Sha256> {
        let mut mac = self.keyed.clone();
        for part in parts {
            mac.update(part);
            mac.update(b"\0");
        }
        mac
    }

    /// `{public_url}/s/{session}#k={key}` for any key of the session.
    pub(crate) fn url_with_key(&self, session: &SessionId, key: &str) -> String {
        format!("{}/s/{}#k={}", self.public_url, session, key)
    }

    fn mac(&self, session: &str) -> Hmac<Sha256> {
        let mut mac = self.keyed.clone();
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
        self.url_with_key(session, &self.key(session))
    }

    /// The public URL links start with (no trailing slash).
    pub fn public_url(&self) -> &str {
        &self.public_url
    }

    /// The public URL's origin as a browser sends it in `Origin`: `scheme://host[:port]`, the
    /// port only when it is not the scheme's default. `None` if the URL has none (not http).
    pub fn public_origin(&self) -> Option<String> {
        let url = url::Url::parse(&self.public_url).ok()?;
        match url.origin() {
            origin @ url::Origin::Tuple(..) => Some(origin.ascii_serialization()),
            url::Origin::Opaque(_) => None,
        }
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

/// One configured agent key, and the sessions it may act on.
#[derive(Clone, PartialEq, Eq)]
pub struct AgentKey {
    secret: String,
    scope: SessionScope,
}

impl AgentKey {
    /// What names the key where it must be named without being given away (a remembered
    /// approval's `key`): `k` and the first 12 hex digits of its HMAC-SHA256 under the
    /// gateway's `secret` (so that the id tells nothing of a weak key to one without it; the
    /// same on every node that shares the secret).
    pub fn id(&self, secret: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(b"agent-key:");
        mac.update(self.secret.as_bytes());
        let digest = mac.finalize().into_bytes();
        let hex: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        format!("k{hex}")
    }

    /// A key that acts on every session.
    pub fn unscoped(secret: impl Into<String>) -> Self {
        AgentKey::scoped(secret, SessionScope::everywhere())
    }

    /// A key that acts on the sessions of `scope` only.
    pub fn scoped(secret: impl Into<String>, scope: SessionScope) -> Self {
        AgentKey {
            secret: secret.into(),
            scope,
        }
    }

    /// `KEY` (every session) or `KEY:PREFIX` (the sessions within `PREFIX`, a scope that
    /// ends at a separator), split at the first `:`, so a key itself cannot hold one.
    ///
    /// # Errors
    /// The key is empty, or the prefix is not one a session id can start with. The message
    /// never repeats the text: it holds a secret.
    pub fn parse(text: &str) -> Result<Self, String> {
        let Some((secret, prefix)) = text.split_once(':') else {
            return Ok(AgentKey::unscoped(text));
        };
        if secret.is_empty() {
            return Err("the key before `:` is empty (the form is KEY or KEY:PREFIX)".to_owned());
        }
        Ok(AgentKey::scoped(secret, SessionScope::prefix(prefix)?))
    }

    /// The key as agents present it.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// The sessions it may act on.
    pub fn scope(&self) -> &SessionScope {
        &self.scope
    }
}

/// Keys are secrets, and configurations get logged: only the scope is shown.
impl fmt::Debug for AgentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentKey")
            .field("secret", &"<redacted>")
            .field("scope", &self.scope)
            .finish()
    }
}

/// The key id of every agent in local mode, where agents have no key.
pub const LOCAL_KEY_ID: &str = "local";

/// The configured agent keys, and in local mode the host names agents may use.
#[derive(Clone, Debug, Default)]
pub struct AgentKeys {
    keys: Vec<AgentKey>,
    /// The operator keys: they read every session and withdraw, and are no agent's. Held as
    /// unscoped keys for their redacted `Debug`.
    operators: Vec<AgentKey>,
    /// The public URL's host, lowercase: agents may reach the gateway by it too.
    public_host: Option<String>,
    /// What the keys' ids are made with ([`AgentKey::id`]): the gateway's secret.
    id_secret: Vec<u8>,
}

impl AgentKeys {
    /// Accepts exactly these keys; none means local mode (every local agent accepted), where
    /// the gateway is also reached as `public_url`.
    pub fn new(keys: &[AgentKey], public_url: &str) -> Self {
        let authority = public_url.split("://").nth(1).unwrap_or(public_url);
        let authority = authority.split(['/', '?', '#']).next().unwrap_or_default();
        AgentKeys {
            keys: keys.to_vec(),
            operators: Vec::new(),
            public_host: Some(host_name(authority).to_ascii_lowercase()).filter(|h| !h.is_empty()),
            id_secret: Vec::new(),
        }
    }

    /// These, their ids ([`AgentKey::id`]) made with `secret`, the gateway's.
    #[must_use]
    pub fn with_id_secret(mut self, secret: &[u8]) -> Self {
        self.id_secret = secret.to_vec();
        self
    }

    /// Whether the request with `headers` may act as an agent, and if so on which sessions
    /// (every one in local mode).
    ///
    /// # Errors
    /// Why not.
    pub fn admit(&self, headers: &HeaderMap) -> Result<SessionScope, AgentRefusal> {
        let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
        if !self.keys.is_empty() {
            return self
                .scope_of(header(AUTHORIZATION))
                .ok_or(AgentRefusal::WrongKey);
        }
        if headers.contains_key(ORIGIN) {
            return Err(AgentRefusal::FromWebPage);
        }
        let host = host_name(header(HOST).unwrap_or_default()).to_ascii_lowercase();
        let local = host == "localhost"
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
            || self.public_host.as_deref() == Some(host.as_str());
        if local {
            Ok(SessionScope::everywhere())
        } else {
            Err(AgentRefusal::ForeignHost)
        }
    }

    /// The id ([`AgentKey::id`]) of the agent key the request with `headers` presents, once
    /// [`admit`](Self::admit) let it in: [`LOCAL_KEY_ID`] in local mode, where agents have no
    /// key.
    pub fn key_id(&self, headers: &HeaderMap) -> String {
        let presented = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer_key);
        let found = presented.and_then(|presented| {
            self.keys
                .iter()
                .find(|key| constant_time_eq(key.secret.as_bytes(), presented.as_bytes()))
        });
        found.map_or_else(|| LOCAL_KEY_ID.to_owned(), |key| key.id(&self.id_secret))
    }

    /// The ids of every agent key (only [`LOCAL_KEY_ID`] in local mode).
    pub fn key_ids(&self) -> Vec<String> {
        if self.keys.is_empty() {
            return vec![LOCAL_KEY_ID.to_owned()];
        }
        let mut ids: Vec<String> = self
            .keys
            .iter()
            .map(|key| key.id(&self.id_secret))
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// These, and `operators` as the operator keys.
    #[must_use]
    pub fn with_operators(mut self, operators: &[AgentKey]) -> Self {
        self.operators = operators.to_vec();
        self
    }

    /// Whether no agent key is set: agents are the programs on this machine, known by
    /// where they call from rather than by a key.
    pub fn local_mode(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether the request with `headers` presents an operator key.
    pub fn is_operator(&self, headers: &HeaderMap) -> bool {
        let Some(presented) = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer_key)
        else {
            return false;
        };
        // Every key compared, as for agent keys: the time says nothing of which matched.
        self.operators.iter().fold(false, |found, key| {
            constant_time_eq(key.secret().as_bytes(), presented.as_bytes()) | found
        })
    }

    /// The scope of the key an `Authorization` header value presents, if it presents one.
    fn scope_of(&self, authorization: Option<&str>) -> Option<SessionScope> {
        let presented = authorization.and_then(bearer_key)?.as_bytes();
        // Every key is compared, with no early stop at a match, so the time taken says
        // nothing about how close a guess came or which key it matched. The first match
        // wins: the command line refuses a key given twice with different scopes.
        let mut scope = None;
        for key in &self.keys {
            let matches = constant_time_eq(key.secret.as_bytes(), presented);
            if matches && scope.is_none() {
                scope = Some(key.scope.clone());
            }
        }
        scope
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
        let keys = ViewerKeys::new(b"secret", "http://h:1/");
        let a = SessionId::parse("a").unwrap();
        let b = SessionId::parse("b").unwrap();
        let key = keys.key(&a);
        assert!(keys.verify(&a, &key));
        assert!(!keys.verify(&b, &key));
        assert!(!keys.verify(&a, "not-a-key"));
        assert_eq!(keys.viewer_url(&a), format!("http://h:1/s/a#k={key}"));
        let other = ViewerKeys::new(b"other", "http://h:1");
        assert!(!other.verify(&a, &key));
    }

    /// Links already handed out, and every node sharing the secret, need the same key for a
    /// session: the expected values are Python's `hmac` (`base64.urlsafe_b64encode(hmac.new(
    /// secret, b"viewer:" + session, hashlib.sha256).digest()).rstrip(b"=")`), a key shorter
    /// than SHA-256's block and one longer (which HMAC hashes first); each asked twice, so a
    /// MAC started from the keyed state is not left changed by the one before.
    #[test]
    fn a_viewer_key_is_the_hmac_of_its_session_under_the_secret() {
        let short = ViewerKeys::new(b"secret", "http://h:1");
        let long = ViewerKeys::new(&[b'x'; 100], "http://h:1");
        let a = SessionId::parse("a").unwrap();
        let team = SessionId::parse("team-a-1").unwrap();
        for _ in 0..2 {
            assert_eq!(short.key(&a), "nXS9CQTDW5J8vCXZ-k3MOGm_Gv08GtiL038bJrzndEY");
            assert_eq!(
                long.key(&team),
                "IyK26agh_5U-lQ176S4LhZaJNNuIgYE-TRX0rYdXC1A"
            );
        }
        assert!(long.verify(&team, "IyK26agh_5U-lQ176S4LhZaJNNuIgYE-TRX0rYdXC1A"));
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
        let keys = AgentKeys::new(
            &[AgentKey::unscoped("k1"), AgentKey::unscoped("k2")],
            "http://127.0.0.1:8080",
        );
        let with = |auth| headers(&[("host", "gw.example"), ("authorization", auth)]);
        assert_eq!(
            keys.admit(&with("Bearer k2")),
            Ok(SessionScope::everywhere())
        );
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
        assert_eq!(keys.admit(&page), Ok(SessionScope::everywhere()));
    }

    /// The key presented picks the scope the request is admitted with; the first `:` splits
    /// a configured key from its prefix.
    #[test]
    fn a_key_admits_with_its_own_scope() {
        let team_a = SessionScope::prefix("team-a-").unwrap();
        let keys = AgentKeys::new(
            &[
                AgentKey::parse("ka:team-a-").unwrap(),
                AgentKey::parse("kall").unwrap(),
            ],
            "http://127.0.0.1:8080",
        );
        let with = |auth| headers(&[("host", "gw.example"), ("authorization", auth)]);
        assert_eq!(keys.admit(&with("Bearer ka")), Ok(team_a));
        assert_eq!(
            keys.admit(&with("Bearer kall")),
            Ok(SessionScope::everywhere())
        );
        assert_eq!(
            keys.admit(&with("Bearer ka:team-a-")),
            Err(AgentRefusal::WrongKey)
        );

        let colons = AgentKey::parse("k:a:b").unwrap();
        assert_eq!(
            (colons.secret(), colons.scope().allows("a:b-1")),
            ("k", true)
        );
        assert!(!colons.scope().allows("a1"));
        assert!(!colons.scope().allows("a:b1"));
        assert!(
            AgentKey::parse(":team-a-")
                .unwrap_err()
                .contains("key before `:` is empty")
        );
        assert!(
            AgentKey::parse("k:")
                .unwrap_err()
                .contains("prefix after `:` is empty")
        );
        assert_eq!(AgentKey::parse("k").unwrap(), AgentKey::unscoped("k"));
    }

    /// A configuration printed with `{:?}` shows scopes, not keys.
    #[test]
    fn an_agent_keys_debug_form_hides_the_key() {
        let shown = format!("{:?}", AgentKey::parse("hunter2:team-a-").unwrap());
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("team-a-"), "{shown}");
    }

    /// RFC 7235: the scheme is read in any case, and spaces or tabs may run between it and
    /// the key.
    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        let keys = AgentKeys::new(&[AgentKey::unscoped("k1")], "http://127.0.0.1:8080");
        let with = |auth| headers(&[("host", "gw.example"), ("authorization", auth)]);
        for presented in [
            "bearer k1",
            "BEARER k1",
            "BeArEr  k1",
            "bearer\tk1",
            "Bearer \t k1 ",
        ] {
            let admitted = keys.admit(&with(presented));
            assert_eq!(admitted, Ok(SessionScope::everywhere()), "{presented:?}");
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
            let admitted = keys.admit(&headers(&[("host", host)]));
            assert_eq!(admitted, Ok(SessionScope::everywhere()), "{host}");
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
