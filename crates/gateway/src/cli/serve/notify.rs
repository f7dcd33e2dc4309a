//! The flags about telling people of requests: the notify file, how long to keep trying,
//! and whether private addresses may be called.

use std::net::ToSocketAddrs as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use clap::Args;

use crate::notify::address::refused_because;
use crate::notify::settings::FromEnv;
use crate::notify::{DEFAULT_RETRY_FOR, MAX_RETRY_FOR_S, NotifyConfig, NotifySettings};
use crate::people::Groups;

/// Flags of `askgate serve` about notifications.
#[derive(Debug, Args)]
pub struct NotifyArgs {
    /// A TOML file saying how people are reached (e-mail), their groups, and the webhooks
    /// told of requests (docs/NOTIFY.md). Read at start; give every node the same file.
    #[arg(
        long,
        hide_env_values = true,
        env = "ASKGATE_NOTIFY",
        value_name = "FILE"
    )]
    pub notify: Option<PathBuf>,

    /// How long, in seconds, a notification that keeps failing is tried before it is given
    /// up (counted and logged).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = DEFAULT_RETRY_FOR.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..=MAX_RETRY_FOR_S),
        hide_env_values = true,
        env = "ASKGATE_NOTIFY_RETRY_FOR_S"
    )]
    pub notify_retry_for_s: u64,

    /// Let webhooks reach loopback, private, link-local and metadata addresses (refused by
    /// default: a name that resolves there could reach what only the gateway's network
    /// should). For a receiver on the same host or network, and tests.
    #[arg(long, hide_env_values = true, env = "ASKGATE_NOTIFY_ALLOW_PRIVATE")]
    pub notify_allow_private: bool,

    /// The hosts an ask's `callback` may POST to, comma-separated (`hooks.example.com`, or
    /// `*.example.com` for any name under it); unset: any host (but private, loopback and
    /// link-local addresses, unless --notify-allow-private).
    #[arg(
        long,
        hide_env_values = true,
        env = "ASKGATE_CALLBACK_HOSTS",
        value_name = "HOSTS",
        default_value = ""
    )]
    pub callback_hosts: String,

    /// A PEM file holding the P-256 private key Web Push is signed with (VAPID; PKCS#8
    /// "PRIVATE KEY" or SEC1 "EC PRIVATE KEY"). Without it the key is derived from the
    /// viewer-link secret, the same on every node that shares it. Changing the key makes
    /// every subscription made under the old one stop working.
    #[arg(
        long,
        hide_env_values = true,
        env = "ASKGATE_VAPID_KEY_FILE",
        value_name = "FILE"
    )]
    pub vapid_key_file: Option<PathBuf>,
}

impl NotifyArgs {
    /// Which URLs callbacks may go to (`--callback-hosts`, `--notify-allow-private`).
    ///
    /// # Errors
    /// A listed host is not a host name.
    pub fn callback_hosts(&self) -> anyhow::Result<crate::notify::CallbackHosts> {
        crate::notify::CallbackHosts::parse(&self.callback_hosts, self.notify_allow_private)
            .map_err(anyhow::Error::msg)
    }

    /// The notifier's configuration, the notify file's groups added to `groups`; `None`
    /// without a notify file.
    ///
    /// # Errors
    /// The file is wrong (its line is named), a target is on a refused address, or the file
    /// sends something while `--public-url` is not given.
    pub fn to_config(
        &self,
        groups: &mut Groups,
        public_url: Option<&str>,
    ) -> anyhow::Result<Option<NotifyConfig>> {
        let Some(path) = &self.notify else {
            return Ok(None);
        };
        let settings =
            NotifySettings::load(path, groups, &FromEnv::read()).map_err(anyhow::Error::msg)?;
        if settings.sends() && public_url.is_none() {
            bail!(
                "--notify {}: the file sends notifications, whose links people follow: give \
                 --public-url, the address people reach the gateway at (the listen address \
                 rarely is)",
                path.display()
            );
        }
        if !self.notify_allow_private {
            for webhook in settings.webhooks.values() {
                if let Some(why) = refused_address(&webhook.url) {
                    bail!(
                        "{}:{}: webhooks.{}.url: {why}; such targets are refused unless \
                         --notify-allow-private",
                        path.display(),
                        webhook.line,
                        webhook.name
                    );
                }
            }
        }
        if let Some(slack) = &settings.slack {
            check_slack_api_url(slack, self.notify_allow_private).map_err(|why| {
                anyhow::anyhow!("{}:{}: slack.api_url: {why}", path.display(), slack.line)
            })?;
        }
        let vapid_key = match &self.vapid_key_file {
            None => None,
            Some(file) => {
                let pem = std::fs::read_to_string(file).map_err(|e| {
                    anyhow::anyhow!("--vapid-key-file {}: cannot be read: {e}", file.display())
                })?;
                let key = crate::notify::web_push::VapidKey::from_pem(&pem)
                    .map_err(|e| anyhow::anyhow!("--vapid-key-file {}: {e}", file.display()))?;
                Some(key)
            }
        };
        if vapid_key.is_some() && settings.push.is_none() {
            bail!(
                "--vapid-key-file is given, but the notify file {} has no [push]: nothing would be pushed",
                path.display()
            );
        }
        Ok(Some(NotifyConfig {
            vapid_key,
            settings,
            retry_for: Duration::from_secs(self.notify_retry_for_s),
            allow_private: self.notify_allow_private,
        }))
    }
}

/// Whether Slack's Web API may be called at `api_url`: over https, at an address that is
/// not refused (as a webhook's); plain http only to a loopback stand-in with
/// `--notify-allow-private`, since the bot token travels with every call.
fn check_slack_api_url(
    slack: &crate::notify::settings::SlackSettings,
    allow_private: bool,
) -> Result<(), String> {
    let url = &slack.api_url;
    let loopback = crate::notify::address::is_loopback_host(url);
    if url.scheme() != "https" && !(allow_private && loopback) {
        return Err(format!(
            "{url} must be https:// (plain http only to a loopback stand-in, with \
             --notify-allow-private): the bot token goes with every call"
        ));
    }
    if !allow_private && let Some(why) = refused_address(url) {
        return Err(format!(
            "{why}; such targets are refused unless --notify-allow-private"
        ));
    }
    Ok(())
}

/// Why `url`'s host is refused: an address written in it, or one its name resolves to now.
/// A name that does not resolve now is let through (it is judged again at every send).
fn refused_address(url: &url::Url) -> Option<String> {
    if let Some((ip, why)) = crate::notify::address::refused_literal(url) {
        return Some(format!("{ip} is {why}"));
    }
    let name = url.host_str()?;
    let port = url.port_or_known_default().unwrap_or(443);
    let addresses = (name, port).to_socket_addrs().ok()?;
    addresses.into_iter().find_map(|address| {
        refused_because(address.ip())
            .map(|why| format!("{name} resolves to {}, which is {why}", address.ip()))
    })
}
