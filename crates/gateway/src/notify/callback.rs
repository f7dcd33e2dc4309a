//! An ask's own `callback`: when its request ends, the outcome is POSTed where the ask said,
//! through the same durable queue as every notification (kept with the ending's commit, tried
//! again with backoff until a 2xx or `--notify-retry-for-s`, never lost to a restart or, on
//! Redis, to a node's death). Unlike a webhook, the URL is an agent's, not the operator's:
//! it is judged at the ask (the private-address rule, `--callback-hosts`) and again at each
//! try, since the flags may have changed since.

use askgate_protocol::Outcome;
use askgate_protocol::wire::callback::{Callback, CallbackFormat};
use url::{Host, Url};

use super::SendError;
use super::address;
use super::webhook::{Client, Post};
use crate::store::{StoredDelivery, StoredResolution};

/// Tasks sending callbacks at once: a receiver that is slow (up to the send timeout) holds up
/// only its own sender.
pub const CALLBACK_SENDERS: usize = 4;

/// Which callback URLs may be called.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallbackHosts {
    /// `--callback-hosts`: the host names callbacks may go to (`*.example.com`: any name under
    /// it), private addresses included (the operator listed them); `None`: any host but
    /// private addresses.
    pub hosts: Option<Vec<String>>,
    /// `--notify-allow-private`: whether private, loopback and link-local addresses may be.
    pub allow_private: bool,
}

impl CallbackHosts {
    /// Parses `--callback-hosts`: host names, comma-separated, each a name or `*.` and a
    /// name; empty: any host.
    ///
    /// # Errors
    /// A name that is not one (with the name).
    pub fn parse(text: &str, allow_private: bool) -> Result<CallbackHosts, String> {
        let mut hosts = Vec::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let name = name.trim_end_matches('.');
            let bare = name.strip_prefix("*.").unwrap_or(name);
            let valid = !bare.is_empty()
                && bare.len() <= 253
                && bare
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
            if !valid {
                return Err(format!(
                    "--callback-hosts: {name:?} is not a host name (a name like hooks.example.com or an \
                     IPv4 address, without a port, or *.example.com for any name under it)"
                ));
            }
            hosts.push(name.to_ascii_lowercase());
        }
        Ok(CallbackHosts {
            hosts: (!hosts.is_empty()).then_some(hosts),
            allow_private,
        })
    }

    /// Whether callbacks may reach private addresses: with `--notify-allow-private`, or when
    /// `--callback-hosts` lists the hosts (the operator chose them, internal ones included).
    pub fn allows_private(&self) -> bool {
        self.allow_private || self.hosts.is_some()
    }

    /// Why `url` may not be called back, or `None` if it may: a host `--callback-hosts` does
    /// not list, or an address written in it that is private (unless allowed). A name is
    /// judged by what it resolves to at each try.
    pub fn refuses(&self, url: &str) -> Option<String> {
        let Ok(url) = Url::parse(url) else {
            return Some("not a URL".to_owned());
        };
        let host = match url.host() {
            Some(Host::Domain(name)) => name.trim_end_matches('.').to_ascii_lowercase(),
            Some(Host::Ipv4(ip)) => ip.to_string(),
            Some(Host::Ipv6(ip)) => format!("[{ip}]"),
            None => return Some("the URL has no host".to_owned()),
        };
        if let Some(hosts) = &self.hosts {
            let listed = hosts
                .iter()
                .any(|allowed| match allowed.strip_prefix("*.") {
                    Some(parent) => {
                        host.len() > parent.len() + 1 && host.ends_with(&format!(".{parent}"))
                    }
                    None => *allowed == host,
                });
            if !listed {
                return Some(format!(
                    "{host} is not a host callbacks may go to (--callback-hosts lists {})",
                    hosts.join(", ")
                ));
            }
        }
        if !self.allows_private()
            && let Some((ip, why)) = address::refused_literal(&url)
        {
            return Some(format!(
                "{ip} is {why}; callbacks there are refused unless the gateway runs with --notify-allow-private"
            ));
        }
        None
    }
}

/// What a callback POSTs of an ending whose `request.resolved` webhook body is
/// `resolved_body`: that body (`askgate`) without the session's viewer link, whose key would
/// let the receiver (the agent's choice, perhaps a third party's service) watch and answer the
/// session; or a LangGraph run resuming the thread with the response (`langgraph-server`;
/// nothing for a withdrawn request, whose run was given up).
pub fn body(
    callback: &Callback,
    resolved_body: &str,
    resolution: &StoredResolution,
) -> Option<String> {
    match callback.format {
        CallbackFormat::Askgate => {
            let mut body: serde_json::Value = serde_json::from_str(resolved_body).ok()?;
            if let Some(data) = body
                .get_mut("data")
                .and_then(serde_json::Value::as_object_mut)
            {
                data.remove("url");
            }
            Some(body.to_string())
        }
        CallbackFormat::LanggraphServer => {
            if resolution.settlement.outcome == Outcome::Withdrawn {
                return None;
            }
            Some(
                callback
                    .langgraph_run(&resolution.settlement.response)
                    .to_string(),
            )
        }
    }
}

/// POSTs `delivery` to `callback`, signed at `now_s` when it has a secret.
///
/// # Errors
/// It was not answered with a 2xx in time; or its URL may no longer be called (for good).
pub async fn send(
    client: &Client,
    callback: &Callback,
    delivery: &StoredDelivery,
    now_s: u64,
    hosts: &CallbackHosts,
) -> Result<(), SendError> {
    let target = callback.target_url();
    let what = format!("callback to {target}");
    if let Some(why) = hosts.refuses(&callback.url) {
        return Err(SendError::Rejected(format!("{what}: {why}")));
    }
    let url = Url::parse(&target).map_err(|e| SendError::Rejected(format!("{what}: {e}")))?;
    let secrets: Vec<Vec<u8>> = callback.secret_bytes().into_iter().collect();
    let api_key = callback.api_key.as_deref();
    let headers: Vec<(&str, &str)> = api_key.map(|key| ("x-api-key", key)).into_iter().collect();
    // A LangGraph server that does not know the thread or the assistant, or refuses the
    // command, answers the same however often it is asked.
    let final_statuses: &[u16] = match callback.format {
        CallbackFormat::Askgate => &[],
        CallbackFormat::LanggraphServer => &[400, 404, 410, 422],
    };
    let post = Post {
        what: &what,
        url: &url,
        secrets: &secrets,
        headers: &headers,
        id: &delivery.id,
        body: &delivery.body,
        final_statuses,
    };
    post.send(client, now_s, hosts.allows_private()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_hosts_and_their_subdomains_alone_are_called_back() {
        let hosts = CallbackHosts::parse("hooks.example.com, *.runs.example.org", false).unwrap();
        assert_eq!(hosts.refuses("https://hooks.example.com/x"), None);
        assert_eq!(hosts.refuses("https://HOOKS.example.com/x"), None);
        assert_eq!(hosts.refuses("https://a.runs.example.org/x"), None);
        assert!(hosts.refuses("https://runs.example.org/x").is_some());
        assert!(hosts.refuses("https://evilruns.example.org/x").is_some());
        assert!(hosts.refuses("https://other.example.com/").is_some());
        let any = CallbackHosts::parse("", false).unwrap();
        assert_eq!(any.refuses("https://anything.example/"), None);
        assert!(
            any.refuses("http://127.0.0.1:9/")
                .unwrap()
                .contains("loopback")
        );
        assert!(
            any.refuses("http://169.254.169.254/")
                .unwrap()
                .contains("link-local")
        );
        let private = CallbackHosts::parse("", true).unwrap();
        assert_eq!(private.refuses("http://127.0.0.1:9/"), None);
        assert!(CallbackHosts::parse("a b", false).is_err());
        assert!(CallbackHosts::parse("hooks.example.com:8080", false).is_err());
        // Listed by the operator: an internal name, or a private address, may be called.
        let internal = CallbackHosts::parse("graphs.internal., 10.0.0.7", false).unwrap();
        assert_eq!(internal.refuses("http://graphs.internal.:2024/"), None);
        assert_eq!(internal.refuses("http://10.0.0.7/"), None);
        assert!(internal.refuses("http://10.0.0.8/").is_some());
    }
}
