//! `--listen`: the addresses the gateway binds, read from `HOST:PORT`s (a host name, an IPv4
//! address, or an IPv6 address in brackets), each host name resolved at start.

use std::net::SocketAddr;

use anyhow::{Context as _, anyhow, bail};
use tokio::net::TcpListener;

use crate::config::Config;

/// One address to bind, and the `--listen` value it came from (errors name it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::cli) struct ListenAddr {
    /// The `--listen` value, as given.
    pub given: String,
    /// One address it resolved to.
    pub addr: SocketAddr,
}

/// Resolves the `--listen` values, in order: each to every address it names (a host name to
/// every one it resolves to), an address named twice bound once. Empty values (`a,,b`) are
/// skipped.
///
/// # Errors
/// A value is not `HOST:PORT`, its port is not a number from 0 to 65535, its host does not
/// resolve, or no value was given; the error names `--listen` and the value.
pub(in crate::cli) async fn resolve(values: &[String]) -> anyhow::Result<Vec<ListenAddr>> {
    let mut resolved: Vec<ListenAddr> = Vec::new();
    for given in values.iter().map(|value| value.trim()) {
        if given.is_empty() {
            continue;
        }
        for addr in resolve_one(given).await? {
            // Port 0 asks for a fresh port each time, so it is never the same address twice.
            let twice = addr.port() != 0 && resolved.iter().any(|earlier| earlier.addr == addr);
            if !twice {
                resolved.push(ListenAddr {
                    given: given.to_owned(),
                    addr,
                });
            }
        }
    }
    if resolved.is_empty() {
        bail!("--listen: no address given (give HOST:PORT, e.g. 127.0.0.1:8080)");
    }
    Ok(resolved)
}

/// The addresses one `--listen` value names.
async fn resolve_one(given: &str) -> anyhow::Result<Vec<SocketAddr>> {
    const SHAPE: &str = "give HOST:PORT, e.g. localhost:8080, 0.0.0.0:8080 or [::]:8080";
    if let Ok(addr) = given.parse::<SocketAddr>() {
        return Ok(vec![addr]);
    }
    let Some((host, port)) = given.rsplit_once(':') else {
        bail!("--listen {given}: no port ({SHAPE})");
    };
    if host.is_empty() {
        bail!("--listen {given}: no host ({SHAPE})");
    }
    if host.contains(':') && !host.starts_with('[') {
        bail!("--listen {given}: an IPv6 address goes in brackets ({SHAPE})");
    }
    if host.starts_with('[') {
        bail!("--listen {given}: {host} is not an IPv6 address ({SHAPE})");
    }
    let port: u16 = port.parse().map_err(|_| {
        anyhow!("--listen {given}: the port {port:?} is not a number from 0 to 65535 ({SHAPE})")
    })?;
    let found: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .with_context(|| format!("--listen {given}: resolving the host name {host}"))?
        .collect();
    if found.is_empty() {
        bail!("--listen {given}: the host name {host} resolves to no address");
    }
    let mut addrs = Vec::with_capacity(found.len());
    for addr in found {
        if !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }
    Ok(addrs)
}

/// Binds every address, in order, once `config` allows each (without an agent key, loopback
/// only): the listeners, in the same order.
///
/// # Errors
/// An address is not allowed, or cannot be bound; the error names `--listen` and the value.
pub(in crate::cli) async fn bind(
    addrs: &[ListenAddr],
    config: &Config,
) -> anyhow::Result<Vec<TcpListener>> {
    for ListenAddr { given, addr } in addrs {
        config
            .check_bind(addr)
            .map_err(|why| anyhow!("--listen {given}: {why}"))?;
    }
    let mut listeners = Vec::with_capacity(addrs.len());
    for ListenAddr { given, addr } in addrs {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("--listen {given}: listening on {addr}"))?;
        listeners.push(listener);
    }
    Ok(listeners)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn refused(value: &str) -> String {
        format!("{:#}", resolve(&[value.to_owned()]).await.unwrap_err())
    }

    #[tokio::test]
    async fn listen_values_are_read_and_refused_with_the_flag_and_value() {
        let read = resolve(&[
            "127.0.0.1:8080".into(),
            " [::1]:8081".into(),
            String::new(),
            "127.0.0.1:8080".into(),
            "127.0.0.1:0".into(),
            "127.0.0.1:0".into(),
        ])
        .await
        .unwrap();
        let addrs: Vec<String> = read.iter().map(|r| r.addr.to_string()).collect();
        assert_eq!(
            addrs,
            ["127.0.0.1:8080", "[::1]:8081", "127.0.0.1:0", "127.0.0.1:0"]
        );
        assert_eq!(read[1].given, "[::1]:8081");
        let localhost = resolve(&["localhost:9".into()]).await.unwrap();
        assert!(!localhost.is_empty());
        assert!(localhost.iter().all(|r| r.addr.ip().is_loopback()));
        for (value, why) in [
            ("localhost", "--listen localhost: no port"),
            (":80", "--listen :80: no host"),
            (
                "::1:80",
                "--listen ::1:80: an IPv6 address goes in brackets",
            ),
            (
                "[nope]:80",
                "--listen [nope]:80: [nope] is not an IPv6 address",
            ),
            (
                "localhost:http",
                "--listen localhost:http: the port \"http\" is not a number",
            ),
            ("localhost:65536", "--listen localhost:65536: the port"),
            (
                "nosuch.invalid:80",
                "--listen nosuch.invalid:80: resolving the host name",
            ),
        ] {
            let error = refused(value).await;
            assert!(error.starts_with(why), "{value}: {error}");
        }
        let none = format!("{:#}", resolve(&[" ".into()]).await.unwrap_err());
        assert!(none.starts_with("--listen: no address given"), "{none}");
    }
}
