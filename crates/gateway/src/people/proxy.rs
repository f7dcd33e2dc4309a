//! Identity from an identity-aware proxy (oauth2-proxy, Pomerium, Cloudflare Access,
//! Tailscale serve): the person is the value of `--user-header`, taken only from connections
//! whose address is inside a `--trusted-proxy` network. The same header from anywhere else is
//! ignored, and logged (at most every 10 s), since it means someone is trying it on or the
//! proxy's address is not the one configured.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use askgate_protocol::people::check_user_name;
use axum::http::{HeaderMap, HeaderName};

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
    /// When an ignored header was last logged (ms since `started`), for the rate limit.
    last_logged: AtomicU64,
    started: Option<Instant>,
}

impl TrustedProxies {
    /// Takes the person from `header` on connections from `networks`.
    pub fn new(header: Option<HeaderName>, networks: Vec<Network>) -> Self {
        TrustedProxies {
            header,
            networks,
            last_logged: AtomicU64::new(0),
            started: Some(Instant::now()),
        }
    }

    /// Who the proxy says the request's person is, for a request from `peer`.
    pub fn identify(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> ProxyIdentity {
        let Some(name) = &self.header else {
            return ProxyIdentity::None;
        };
        let Some(value) = headers.get(name) else {
            return ProxyIdentity::None;
        };
        let trusted = peer.is_some_and(|ip| self.networks.iter().any(|n| n.contains(ip)));
        if !trusted {
            self.log_ignored(name, peer);
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

    fn log_ignored(&self, header: &HeaderName, peer: Option<IpAddr>) {
        let now = self
            .started
            .map_or(0, |started| started.elapsed().as_millis() as u64)
            + LOG_EVERY.as_millis() as u64;
        let last = self.last_logged.load(Ordering::Relaxed);
        if now >= last + LOG_EVERY.as_millis() as u64
            && self
                .last_logged
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(
                header = %header,
                peer = ?peer,
                "ignored a user header from an address outside --trusted-proxy (logged at most every 10 s)"
            );
        }
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
}
