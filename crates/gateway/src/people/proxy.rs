//! Identity from an identity-aware proxy (oauth2-proxy, Pomerium, Cloudflare Access,
//! Tailscale serve): the person is the value of `--user-header`, taken only from connections
//! whose address is inside a `--trusted-proxy` network. The same header from anywhere else is
//! ignored, and logged (at most every 10 s), since it means someone is trying it on or the
//! proxy's address is not the one configured.
//!
//! The header must come once, as one value: sent twice (or as a comma-joined list, which HTTP
//! treats as the same thing), the first value may be the client's own, put in front of the
//! proxy's. Such a request is refused before any handler reads it, from any address (the
//! header is read on every connection, trusted or not), and logged at most every 10 s.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use askgate_protocol::people::check_user_name;
use axum::http::{HeaderMap, HeaderName, HeaderValue};

/// How often an ignored header is logged, at most.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// A network, as `ADDRESS/BITS` (or one address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    address: IpAddr,
    bits: u8,
}

impl Network {
    /// `10.0.0.0/8`, `fd00::/8`, `127.0.0.1` (a /32), `::1` (a /128).
    ///
    /// # Errors
    /// Not an address, or a prefix longer than the address.
    pub fn parse(text: &str) -> Result<Network, String> {
        let (address, bits) = match text.split_once('/') {
            Some((address, bits)) => (address, Some(bits)),
            None => (text, None),
        };
        let address: IpAddr = address
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not an IP address or ADDRESS/BITS network"))?;
        let most = if address.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            None => most,
            Some(bits) => bits
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|bits| *bits <= most)
                .ok_or_else(|| format!("{text:?}: the prefix must be 0 to {most} bits"))?,
        };
        Ok(Network { address, bits })
    }

    /// Whether `ip` is inside (an IPv4-mapped IPv6 address counts as its IPv4 one).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let keep = |bits: u32, width: u32| {
            if bits == 0 {
                0
            } else {
                u128::MAX << (width - bits)
            }
        };
        match (self.address, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = keep(u32::from(self.bits), 32) as u32;
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = keep(u32::from(self.bits), 128);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// What the proxy said about a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProxyIdentity {
    /// No header (or no header configured): the key alone decides.
    None,
    /// A trusted proxy's header names this person.
    Person(String),
}

/// `--user-header` and the `--trusted-proxy` networks.
#[derive(Debug, Default)]
pub struct TrustedProxies {
    header: Option<HeaderName>,
    networks: Vec<Network>,
    /// The header from an address outside `--trusted-proxy`.
    ignored_log: RateLimitedLog,
    /// The header more than once on one request.
    repeated_log: RateLimitedLog,
}

/// Why a request carrying the user header more than once is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepeatedHeader {
    /// The configured header.
    pub header: HeaderName,
    /// How many lines of it the request had.
    pub lines: usize,
}

impl RepeatedHeader {
    /// What the client is told.
    pub fn message(&self) -> String {
        let how = if self.lines > 1 {
            format!("{} times", self.lines)
        } else {
            "as a comma-separated list".to_owned()
        };
        format!(
            "the identity header {} was sent {how}; it must come once, with one value (a \
             second value could be put in front of the proxy's)",
            self.header
        )
    }
}

impl TrustedProxies {
    /// Takes the person from `header` on connections from `networks`.
    pub fn new(header: Option<HeaderName>, networks: Vec<Network>) -> Self {
        TrustedProxies {
            header,
            networks,
            ..TrustedProxies::default()
        }
    }

    /// The user header's one value, if the request has it: every reading of the header goes
    /// through here.
    ///
    /// # Errors
    /// The header is there more than once, or its one value is a comma-joined list: the
    /// request must be refused (and is logged, at most every 10 s).
    pub fn lone_value<'h>(
        &self,
        headers: &'h HeaderMap,
        peer: Option<IpAddr>,
    ) -> Result<Option<&'h HeaderValue>, RepeatedHeader> {
        let Some(name) = &self.header else {
            return Ok(None);
        };
        let mut values = headers.get_all(name).iter();
        let Some(first) = values.next() else {
            return Ok(None);
        };
        let lines = 1 + values.count();
        if lines == 1 && !first.as_bytes().contains(&b',') {
            return Ok(Some(first));
        }
        if self.repeated_log.ready() {
            tracing::warn!(
                header = %name,
                lines,
                peer = ?peer,
                "refused a request with the user header more than once or as a list (logged at \
                 most every 10 s)"
            );
        }
        Err(RepeatedHeader {
            header: name.clone(),
            lines,
        })
    }

    /// Who the proxy says the request's person is, for a request from `peer`. A request with
    /// the header more than once is refused before this is asked (see
    /// [`TrustedProxies::lone_value`]); asked anyway, it names nobody.
    pub fn identify(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> ProxyIdentity {
        let Ok(Some(value)) = self.lone_value(headers, peer) else {
            return ProxyIdentity::None;
        };
        let Some(name) = &self.header else {
            return ProxyIdentity::None;
        };
        let trusted = peer.is_some_and(|ip| self.networks.iter().any(|n| n.contains(ip)));
        if !trusted {
            if self.ignored_log.ready() {
                tracing::warn!(
                    header = %name,
                    peer = ?peer,
                    "ignored a user header from an address outside --trusted-proxy (logged at \
                     most every 10 s)"
                );
            }
            return ProxyIdentity::None;
        }
        match value.to_str().map(str::trim) {
            Ok(user) if check_user_name(user).is_ok() => ProxyIdentity::Person(user.to_owned()),
            // The proxy sent an empty or unusable name: treat the tab as anonymous rather than
            // as a person nobody can name.
            _ => {
                tracing::warn!(header = %name, "a trusted proxy sent an unusable user name; the tab is anonymous");
                ProxyIdentity::None
            }
        }
    }
}

/// A warning that may be logged at most once every [`LOG_EVERY`]: a client can cause it on
/// every request.
#[derive(Debug)]
struct RateLimitedLog {
    /// When it was last logged (ms since `started`, plus one period so that the first call
    /// logs).
    last_logged: AtomicU64,
    started: Instant,
}

impl Default for RateLimitedLog {
    fn default() -> Self {
        RateLimitedLog {
            last_logged: AtomicU64::new(0),
            started: Instant::now(),
        }
    }
}

impl RateLimitedLog {
    /// Whether to log now (and, if so, the period starts again).
    fn ready(&self) -> bool {
        let every = LOG_EVERY.as_millis() as u64;
        let now = self.started.elapsed().as_millis() as u64 + every;
        let last = self.last_logged.load(Ordering::Relaxed);
        now >= last + every
            && self
                .last_logged
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn networks_hold_their_addresses() {
        let net = Network::parse("10.1.0.0/16").unwrap();
        assert!(net.contains(ip("10.1.200.3")));
        assert!(!net.contains(ip("10.2.0.1")));
        assert!(net.contains(ip("::ffff:10.1.0.9")));
        assert!(
            Network::parse("127.0.0.1")
                .unwrap()
                .contains(ip("127.0.0.1"))
        );
        assert!(
            !Network::parse("127.0.0.1")
                .unwrap()
                .contains(ip("127.0.0.2"))
        );
        assert!(Network::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        assert!(Network::parse("fd00::/8").unwrap().contains(ip("fd12::1")));
        assert!(!Network::parse("fd00::/8").unwrap().contains(ip("10.0.0.1")));
        assert!(Network::parse("10.0.0.0/33").is_err());
        assert!(Network::parse("ten").is_err());
    }

    #[test]
    fn the_header_counts_only_from_a_trusted_address() {
        let proxies = TrustedProxies::new(
            Some(HeaderName::from_static("x-forwarded-email")),
            vec![Network::parse("127.0.0.1/32").unwrap()],
        );
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-email", "alice@example.com".parse().unwrap());
        assert_eq!(
            proxies.identify(&headers, Some(ip("127.0.0.1"))),
            ProxyIdentity::Person("alice@example.com".into())
        );
        assert_eq!(
            proxies.identify(&headers, Some(ip("127.0.0.2"))),
            ProxyIdentity::None
        );
        assert_eq!(proxies.identify(&headers, None), ProxyIdentity::None);
        assert_eq!(
            proxies.identify(&HeaderMap::new(), Some(ip("127.0.0.1"))),
            ProxyIdentity::None
        );
    }

    #[test]
    fn the_header_twice_or_as_a_list_is_refused_from_anywhere() {
        let proxies = TrustedProxies::new(
            Some(HeaderName::from_static("x-forwarded-email")),
            vec![Network::parse("127.0.0.1/32").unwrap()],
        );
        let mut twice = HeaderMap::new();
        twice.append("x-forwarded-email", "mallory@example.com".parse().unwrap());
        twice.append("x-forwarded-email", "alice@example.com".parse().unwrap());
        let mut listed = HeaderMap::new();
        listed.insert(
            "x-forwarded-email",
            "mallory@example.com, alice@example.com".parse().unwrap(),
        );
        for peer in [Some(ip("127.0.0.1")), Some(ip("10.0.0.1")), None] {
            let refusal = proxies.lone_value(&twice, peer).unwrap_err();
            assert_eq!(refusal.lines, 2);
            assert!(
                refusal
                    .message()
                    .contains("x-forwarded-email was sent 2 times")
            );
            assert_eq!(proxies.identify(&twice, peer), ProxyIdentity::None);
            let refusal = proxies.lone_value(&listed, peer).unwrap_err();
            assert!(refusal.message().contains("as a comma-separated list"));
            assert_eq!(proxies.identify(&listed, peer), ProxyIdentity::None);
        }
        // Without --user-header nothing is read, so nothing is refused.
        let unconfigured = TrustedProxies::new(None, Vec::new());
        assert_eq!(unconfigured.lone_value(&twice, None), Ok(None));
    }

    #[test]
    fn a_warning_is_logged_once_per_period() {
        let log = RateLimitedLog::default();
        assert!(log.ready());
        assert!(!log.ready());
    }
}
