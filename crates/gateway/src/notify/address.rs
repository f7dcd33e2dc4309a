//! Which addresses the gateway will not call on anyone's behalf: loopback, private,
//! link-local (cloud metadata services live there) and the like. A webhook URL is written by
//! an operator, but what its name resolves to can change after start; without this guard a
//! webhook (or, later, a callback an agent names) could reach services only the gateway's
//! own network should. `--notify-allow-private` lifts it (tests, a receiver on the same
//! host).

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::dns::Name;
use url::{Host, Url};

/// Why an address is not called, or `None` if it may be.
pub fn refused_because(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => refused_v4(v4),
            None => refused_v6(v6),
        },
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local (where cloud metadata services answer)")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else if ip.is_broadcast() || ip.is_multicast() || a >= 240 {
        Some("broadcast, multicast or reserved")
    } else {
        None
    }
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if first & 0xfe00 == 0xfc00 {
        Some("private (unique local, where cloud metadata services also answer)")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("multicast")
    } else {
        None
    }
}

/// Why `url`'s host, if written as an address, is refused.
pub fn refused_literal(url: &Url) -> Option<(IpAddr, &'static str)> {
    let ip = match url.host()? {
        Host::Ipv4(v4) => IpAddr::V4(v4),
        Host::Ipv6(v6) => IpAddr::V6(v6),
        Host::Domain(_) => return None,
    };
    refused_because(ip).map(|why| (ip, why))
}

/// Whether `url`'s host is a loopback address written out, or `localhost`: where a test's
/// own stand-in may be called over plain http with `--notify-allow-private`.
pub fn is_loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(name)) => name == "localhost",
        None => false,
    }
}

/// The resolver of the gateway's HTTP client: unless private addresses are allowed, a name
/// resolving to any refused address is refused, so what is checked is what is connected to
/// (a name cannot pass the check and then resolve elsewhere for the connection).
#[derive(Clone, Debug)]
pub struct GuardedResolver {
    /// Whether refused addresses are let through (`--notify-allow-private`).
    pub allow_private: bool,
}

impl tower_service::Service<Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !allow_private
                && let Some(refused) = found.iter().find_map(|a| {
                    refused_because(a.ip())
                        .map(|why| format!("{host} resolves to {}, which is {why}", a.ip()))
                })
            {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    Refused(refused),
                ));
            }
            Ok(found.into_iter())
        })
    }
}

/// A name that resolved to a refused address.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (refused without --notify-allow-private)", self.0)
    }
}

impl std::error::Error for Refused {}

/// Whether `error`, or one of its causes, is a [`Refused`].
pub fn is_refused(error: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(error), |e| e.source()).any(|e| {
        e.is::<Refused>()
            || e.downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
                .is_some_and(<dyn std::error::Error + Send + Sync>::is::<Refused>)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_loopback_link_local_and_metadata_addresses_are_refused() {
        for refused in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            let ip: IpAddr = refused.parse().unwrap();
            assert!(refused_because(ip).is_some(), "{refused} should be refused");
        }
        for allowed in ["93.184.215.14", "1.1.1.1", "2606:4700::1111", "172.32.0.1"] {
            let ip: IpAddr = allowed.parse().unwrap();
            assert_eq!(refused_because(ip), None, "{allowed} should be allowed");
        }
        let url = Url::parse("http://[::1]:8080/hook").unwrap();
        assert_eq!(refused_literal(&url).map(|(_, why)| why), Some("loopback"));
        assert!(refused_literal(&Url::parse("https://example.com/").unwrap()).is_none());
    }
}
