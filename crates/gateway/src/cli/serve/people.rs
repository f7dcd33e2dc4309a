//! The flags about people: who a tab is behind an identity-aware proxy, whether anonymous
//! tabs may answer, the groups an ask may name, and the people who are operators.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail};
use askgate_protocol::people::check_user_name;
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

    /// A JSON file listing the people who are operators, `["alice@example.com", ...]`: named
    /// by the --user-header of a --trusted-proxy, they may call every operator endpoint
    /// (`/v1/requests`, `/v1/audit`, rules, withdrawing, `/v1/ops/*`) without the operator
    /// key, and what they change is audited under their name. Read at start; the notify
    /// file's `operators` list adds to it.
    #[arg(
        long,
        hide_env_values = true,
        env = "ASKGATE_OPERATORS",
        value_name = "FILE"
    )]
    pub operators: Option<PathBuf>,
}

/// The most people `--operators` may list.
pub(super) const MAX_OPERATORS: usize = 1_000;

/// Reads the `--operators` file at `path`: a JSON array of people's names.
///
/// # Errors
/// It cannot be read, is not such an array, or a name is not one (`FILE: [2]: ...`).
pub(super) fn load_operators(path: &Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow!("reading the operators file {}: {e}", path.display()))?;
    parse_operators(&text).map_err(|e| anyhow!("the operators file {}: {e}", path.display()))
}

/// Reads an `--operators` file's text.
fn parse_operators(text: &str) -> Result<Vec<String>, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let serde_json::Value::Array(list) = value else {
        return Err(
            "expected a JSON array of people's names, [\"alice@example.com\", ...]".to_owned(),
        );
    };
    if list.len() > MAX_OPERATORS {
        return Err(format!(
            "at most {MAX_OPERATORS} operators, got {}",
            list.len()
        ));
    }
    let mut operators = Vec::with_capacity(list.len());
    for (index, person) in list.into_iter().enumerate() {
        let serde_json::Value::String(person) = person else {
            return Err(format!("[{index}]: expected a string"));
        };
        check_user_name(&person).map_err(|e| format!("[{index}]: {e}"))?;
        operators.push(person);
    }
    Ok(operators)
}

impl PeopleArgs {
    /// The settings these flags describe.
    ///
    /// # Errors
    /// A header name or network does not parse, one of --user-header and --trusted-proxy is
    /// given without the other, the groups or operators file cannot be read, or operators are
    /// listed with no identity header to name them.
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
        let operators = match &self.operators {
            Some(path) => load_operators(path)?,
            None => Vec::new(),
        };
        if !operators.is_empty() && user_header.is_none() {
            bail!(
                "--operators is given without --user-header and --trusted-proxy: nothing could \
                 name an operator"
            );
        }
        Ok(PeopleSettings {
            user_header,
            trusted_proxies,
            require_identity: self.require_identity,
            groups,
            operators,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operators_file_is_a_list_of_names_and_its_faults_say_where() {
        assert_eq!(
            parse_operators(r#"["alice@example.com", "bob"]"#).unwrap(),
            vec!["alice@example.com", "bob"]
        );
        assert_eq!(parse_operators("[]").unwrap(), Vec::<String>::new());
        for (text, expected) in [
            ("{", "not JSON"),
            (r#"{"alice": true}"#, "expected a JSON array"),
            (r#"["alice", 3]"#, "[1]: expected a string"),
            (r#"["alice", ""]"#, "[1]: "),
        ] {
            let error = parse_operators(text).unwrap_err();
            assert!(error.starts_with(expected), "{text}: {error}");
        }
        let many = serde_json::to_string(&vec!["p"; MAX_OPERATORS + 1]).unwrap();
        assert!(
            parse_operators(&many)
                .unwrap_err()
                .starts_with("at most 1000")
        );
    }

    #[test]
    fn operators_without_a_header_to_name_them_are_refused() {
        let file =
            std::env::temp_dir().join(format!("askgate-operators-{}.json", std::process::id()));
        std::fs::write(&file, r#"["alice"]"#).unwrap();
        let args = |header: Option<&str>| PeopleArgs {
            user_header: header.map(str::to_owned),
            trusted_proxies: header.map(|_| "127.0.0.1".to_owned()).into_iter().collect(),
            require_identity: false,
            groups: None,
            operators: Some(file.clone()),
        };
        let error = args(None).to_settings().unwrap_err().to_string();
        assert!(
            error.starts_with("--operators is given without --user-header"),
            "{error}"
        );
        let settings = args(Some("X-Forwarded-Email")).to_settings().unwrap();
        assert_eq!(settings.operators, vec!["alice"]);
        let _ = std::fs::remove_file(&file);
    }

    #[test]
    fn a_missing_operators_file_is_named() {
        let error = load_operators(Path::new("/nonexistent/operators.json")).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("reading the operators file /nonexistent/operators.json"),
            "{error}"
        );
    }
}
