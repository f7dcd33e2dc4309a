//! Where the agent endpoint is: the WebSocket URL derived from what the caller gave.
//!
//! People copy the gateway's address from its banner or its viewer links (`http://...`), so a
//! base URL is accepted as well as the endpoint itself.

use crate::error::ClientError;

/// The path of the agent endpoint under the gateway's base URL.
pub const AGENT_PATH: &str = "/v1/agent";

/// The agent endpoint's WebSocket URL for `url`:
///
/// - `ws://host:port/v1/agent` (or any `ws://` / `wss://` URL with a path) is used as is;
/// - `ws://host:port` with no path gets [`AGENT_PATH`];
/// - a base URL `http://host:port[/prefix]` becomes `ws://host:port[/prefix]/v1/agent`, and
///   `https://` becomes `wss://`.
///
/// # Errors
/// [`ClientError::Url`] for another scheme, no host, or a base URL with a query or fragment.
pub fn agent_url(url: &str) -> Result<String, ClientError> {
    let bad = |message: &str| ClientError::Url {
        url: url.to_owned(),
        message: message.to_owned(),
    };
    let (scheme, rest) = url
        .trim()
        .split_once("://")
        .ok_or_else(|| bad("expected ws://, wss://, http:// or https://"))?;
    let (authority, tail) = match rest.find(['/', '?', '#']) {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    if authority.is_empty() {
        return Err(bad("no host"));
    }
    match scheme.to_ascii_lowercase().as_str() {
        scheme @ ("ws" | "wss") => {
            let tail = if tail.is_empty() || tail == "/" {
                AGENT_PATH
            } else {
                tail
            };
            Ok(format!("{scheme}://{authority}{tail}"))
        }
        scheme @ ("http" | "https") => {
            if tail.contains(['?', '#']) {
                return Err(bad("a base URL carries no query or fragment"));
            }
            let ws = if scheme == "https" { "wss" } else { "ws" };
            let prefix = tail.trim_end_matches('/');
            if prefix.ends_with(AGENT_PATH) {
                Ok(format!("{ws}://{authority}{prefix}"))
            } else {
                Ok(format!("{ws}://{authority}{prefix}{AGENT_PATH}"))
            }
        }
        _ => Err(bad("expected ws://, wss://, http:// or https://")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_urls_are_kept() {
        for url in [
            "ws://127.0.0.1:8080/v1/agent",
            "wss://gate.example/v1/agent",
            "ws://h/custom?x=1",
        ] {
            assert_eq!(agent_url(url).unwrap(), url);
        }
    }

    #[test]
    fn base_urls_get_the_agent_path() {
        let cases = [
            ("ws://127.0.0.1:8080", "ws://127.0.0.1:8080/v1/agent"),
            ("ws://127.0.0.1:8080/", "ws://127.0.0.1:8080/v1/agent"),
            ("http://127.0.0.1:8080", "ws://127.0.0.1:8080/v1/agent"),
            ("http://127.0.0.1:8080/", "ws://127.0.0.1:8080/v1/agent"),
            (
                "HTTPS://gate.example/askgate/",
                "wss://gate.example/askgate/v1/agent",
            ),
            ("http://h:1/v1/agent", "ws://h:1/v1/agent"),
        ];
        for (given, want) in cases {
            assert_eq!(agent_url(given).unwrap(), want, "{given}");
        }
    }

    #[test]
    fn unusable_urls_are_refused() {
        for url in [
            "127.0.0.1:8080",
            "ftp://h/",
            "http://",
            "http://h/?k=1",
            "ws:///v1/agent",
        ] {
            assert!(
                matches!(agent_url(url), Err(ClientError::Url { .. })),
                "{url}"
            );
        }
    }
}
