//! The flags about people: who a tab is behind an identity-aware proxy, whether anonymous
//! tabs may answer, and the groups an ask may name.

use std::path::PathBuf;

use anyhow::{anyhow, bail};
use axum::http::HeaderName;
use clap::Args;

use crate::config::PeopleSettings;
use crate::people::Groups;
use crate::people::proxy::Network;

/// Flags of `askgate serve` about people.
#[derive(Debug, Args)]
pub struct PeopleArgs {
    /// Take a tab's person from this request header (`X-Forwarded-Email`,
    /// `X-Pomerium-Claim-Email`, `Cf-Access-Authenticated-User-Email`, `Tailscale-User-Login`),
    /// set by an identity-aware proxy. Counted only on connections from a --trusted-proxy
    /// address; from anywhere else it is ignored and logged. A request with it more than
    /// once, or as a comma-separated list, is refused (400, no upgrade) from any address.
    #[arg(
        long,
        hide_env_values = true,
        env = "ASKGATE_USER_HEADER",
        value_name = "NAME"
    )]
    pub user_header: Option<String>,

    /// An address or network (`10.0.0.5`, `10.0.0.0/8`, `fd00::/8`) the proxy connects from.
    /// Repeat for several; in the environment, separate them with commas.
    #[arg(
        long = "trusted-proxy",
        hide_env_values = true,
        env = "ASKGATE_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_name = "CIDR"
    )]
    pub trusted_proxies: Vec<String>,

    /// Tabs the gateway cannot name (the plain session link, no proxy header) watch only:
    /// they see every question and outcome; an answer or decline from them is refused with
    /// `forbidden`.
    #[arg(long, hide_env_values = true, env = "ASKGATE_REQUIRE_IDENTITY")]
    pub require_identity: bool,

    /// A JSON file of groups, `{"reviewers": ["alice@example.com", ...]}`, so an ask may let
    /// `group:reviewers` answer. Read at start; give every node the same file.
    #[arg(
        long,
        hide_env_values = true,
        env = "ASKGATE_GROUPS",
        value_name = "FILE"
    )]
    pub groups: Option<PathBuf>,
}

impl PeopleArgs {
    /// The settings these flags describe.
    ///
    /// # Errors
    /// A header name or network does not parse, one of --user-header and --trusted-proxy is
    /// given without the other, or the groups file cannot be read.
    pub fn to_settings(&self) -> anyhow::Result<PeopleSettings> {
        let user_header = match self.user_header.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(name) => Some(
                HeaderName::try_from(name)
                    .map_err(|_| anyhow!("--user-header {name:?} is not an HTTP header name"))?,
            ),
        };
        let trusted_proxies = self
            .trusted_proxies
            .iter()
            .map(|text| text.trim())
            .filter(|text| !text.is_empty())
            .map(|text| Network::parse(text).map_err(|e| anyhow!("--trusted-proxy: {e}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        match (&user_header, trusted_proxies.is_empty()) {
            (Some(_), true) => bail!(
                "--user-header needs at least one --trusted-proxy: without one, anybody could \
                 send the header and be taken for anyone"
            ),
            (None, false) => {
                bail!(
                    "--trusted-proxy is given without --user-header: which header names the person?"
                )
            }
            _ => {}
        }
        let groups = match &self.groups {
            Some(path) => Groups::load(path).map_err(anyhow::Error::msg)?,
            None => Groups::default(),
        };
        Ok(PeopleSettings {
            user_header,
            trusted_proxies,
            require_identity: self.require_identity,
            groups,
        })
    }
}
