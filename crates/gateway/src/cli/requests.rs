//! `askgate requests list` and `askgate requests withdraw`: what is open across every session,
//! and withdrawing one request, against a running gateway with an operator key.

use std::io::Write as _;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{Method, Request};
use serde_json::Value;

use super::NotFound;

/// How long one call to the gateway may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// `askgate requests`.
#[derive(Debug, clap::Subcommand)]
pub enum RequestsCommand {
    /// List requests across every session, newest first: a line each (session, id, age,
    /// state, title), or JSON lines with --json. Follows the listing's pages to the end.
    List {
        /// Which: open, orphaned (open, their agent gone) or ended (outcome still kept).
        #[arg(long, default_value = "open")]
        state: String,
        /// Only sessions whose ids start with this.
        #[arg(long)]
        session_prefix: Option<String>,
        /// One JSON object per line, as `GET /v1/requests` gives each.
        #[arg(long)]
        json: bool,
        /// The gateway and the key.
        #[command(flatten)]
        gateway: GatewayArgs,
    },
    /// Withdraw request ID of SESSION: its agent gets `withdrawn`, the trail records it as the
    /// operator's.
    Withdraw {
        /// The session.
        session: String,
        /// The request id.
        id: String,
        /// The gateway and the key.
        #[command(flatten)]
        gateway: GatewayArgs,
    },
}

/// Where the gateway is, and the operator key to present.
#[derive(clap::Args)]
pub struct GatewayArgs {
    /// The gateway's base URL, e.g. http://127.0.0.1:8080.
    #[arg(long, env = "ASKGATE_URL")]
    url: String,
    /// An operator key (`serve --operator-key`).
    #[arg(long, env = "ASKGATE_OPERATOR_KEY", hide_env_values = true)]
    key: String,
}

/// The key is a secret: never shown.
impl std::fmt::Debug for GatewayArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayArgs")
            .field("url", &self.url)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// Runs `command`, printing to stdout.
///
/// # Errors
/// The gateway could not be reached, or refused the call (its message is given).
pub async fn run(command: RequestsCommand) -> anyhow::Result<()> {
    match command {
        RequestsCommand::List {
            state,
            session_prefix,
            json,
            gateway,
        } => list(&gateway, &state, session_prefix.as_deref(), json).await,
        RequestsCommand::Withdraw {
            session,
            id,
            gateway,
        } => {
            let path = format!("/v1/sessions/{}/requests/{}", encode(&session), encode(&id));
            let ended = match call(&gateway, Method::DELETE, &path).await {
                Err(error) if error.downcast_ref::<Missing>().is_some() => {
                    return Err(NotFound(format!(
                        "there is no request {id} in session {session}: {error}"
                    ))
                    .into());
                }
                called => called?,
            };
            let outcome = ended["outcome"].as_str().unwrap_or("?");
            let via = ended["via"].as_str().unwrap_or("?");
            writeln!(
                super::Stdout::new(),
                "{session} {id}: {}",
                if outcome == "withdrawn" {
                    format!("withdrawn (by the {via})")
                } else {
                    format!("had already ended: {outcome}")
                }
            )?;
            Ok(())
        }
    }
}

async fn list(
    gateway: &GatewayArgs,
    state: &str,
    session_prefix: Option<&str>,
    json: bool,
) -> anyhow::Result<()> {
    let mut cursor: Option<String> = None;
    let mut out = super::Stdout::new();
    let mut listed = 0_usize;
    loop {
        let mut query = format!("state={}&limit=1000", encode(state));
        if let Some(prefix) = session_prefix {
            query.push_str(&format!("&session_prefix={}", encode(prefix)));
        }
        if let Some(cursor) = &cursor {
            query.push_str(&format!("&cursor={}", encode(cursor)));
        }
        let page = call(gateway, Method::GET, &format!("/v1/requests?{query}")).await?;
        let requests = page["requests"]
            .as_array()
            .ok_or_else(|| anyhow!("the gateway's listing had no `requests`: {page}"))?;
        let now = crate::clock::now_ms();
        listed += requests.len();
        for request in requests {
            if json {
                writeln!(out, "{request}")?;
            } else {
                writeln!(out, "{}", line(request, now))?;
            }
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    // Nothing on stdout is the listing (a script reads it), but a person should not have to
    // wonder whether the command did anything: stderr says what matched nothing.
    if listed == 0 {
        let within = session_prefix
            .map(|prefix| format!(" in sessions starting {prefix:?}"))
            .unwrap_or_default();
        eprintln!("no {state} requests{within}");
    }
    Ok(())
}

/// The gateway answered 404: what was named does not exist.
#[derive(Debug)]
struct Missing(String);

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Missing {}

/// One request as a line: session, id, how long ago it was asked, its state, its title.
fn line(request: &Value, now_ms: u64) -> String {
    let age_s = now_ms.saturating_sub(request["asked_at_ms"].as_u64().unwrap_or(now_ms)) / 1000;
    let state = match request["outcome"].as_str() {
        Some(outcome) => outcome.to_owned(),
        None if request["orphaned"] == true => "orphaned".to_owned(),
        None => "open".to_owned(),
    };
    format!(
        "{}\t{}\t{}s\t{state}\t{}",
        request["session"].as_str().unwrap_or_default(),
        request["id"].as_str().unwrap_or_default(),
        age_s,
        request["title"].as_str().unwrap_or_default()
    )
}

/// Percent-encodes what goes into a path segment or query value.
fn encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// Calls the gateway: the JSON it answered with, or its refusal as an error.
async fn call(gateway: &GatewayArgs, method: Method, path: &str) -> anyhow::Result<Value> {
    let base = gateway.url.trim_end_matches('/');
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        bail!("--url must start with http:// or https://, got {base:?}");
    }
    let client = crate::notify::webhook::client(true).map_err(|e| anyhow!(e))?;
    let request = Request::builder()
        .method(method)
        .uri(format!("{base}{path}"))
        .header("authorization", format!("Bearer {}", gateway.key))
        .body(Full::new(Bytes::new()))
        .context("building the request")?;
    let exchange = async {
        let response = client.request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        Ok::<_, anyhow::Error>((status, body))
    };
    let (status, body) = tokio::time::timeout(CALL_TIMEOUT, exchange)
        .await
        .map_err(|_| anyhow!("{base} did not answer within {} s", CALL_TIMEOUT.as_secs()))?
        .with_context(|| format!("calling {base}"))?;
    let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if !status.is_success() {
        let message = value["errors"]
            .as_array()
            .and_then(|errors| errors.first())
            .map(|error| {
                let path = error["path"].as_str().unwrap_or_default();
                let message = error["message"].as_str().unwrap_or_default();
                if path.is_empty() {
                    message.to_owned()
                } else {
                    format!("{path}: {message}")
                }
            })
            .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
        if status == hyper::StatusCode::NOT_FOUND {
            return Err(Missing(format!("the gateway answered {status}: {message}")).into());
        }
        bail!("the gateway answered {status}: {message}");
    }
    Ok(value)
}
