//! Calls to Slack's Web API: a JSON body POSTed to `{api_url}{method}` with the bot token,
//! and what the answer means for the delivery queue.
//!
//! Slack answers most refusals with HTTP 200 and `ok: false` and an error code: those are
//! not tried again (the same call would be refused the same way), but `ratelimited` is. An
//! HTTP 429 is tried again after its `Retry-After`; any other status but a 2xx, or no
//! answer, like a failed webhook.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::Request;
use serde_json::Value;

use crate::notify::SendError;
use crate::notify::address;
use crate::notify::delivery::{self, chain, retry_after_header};
use crate::notify::settings::SlackSettings;
use crate::notify::webhook::{Client, SEND_TIMEOUT};

/// The most bytes of an answer read: Slack's answers to these methods are small.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Slack's Web API as the notify file's `[slack]` reaches it.
#[derive(Clone)]
pub struct Api {
    client: Client,
    settings: SlackSettings,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Api {
    /// The API of `settings`, called with `client`.
    pub fn new(client: Client, settings: SlackSettings) -> Api {
        Api { client, settings }
    }

    /// The signing secret interactions are checked with.
    pub fn signing_secret(&self) -> &str {
        &self.settings.signing_secret
    }

    /// Calls `method` with `args`, within `timeout`; Slack's answer when it is `ok`.
    ///
    /// # Errors
    /// See the module's notes.
    pub async fn call(
        &self,
        method: &str,
        args: &Value,
        timeout: Duration,
    ) -> Result<Value, SendError> {
        let url = self
            .settings
            .api_url
            .join(method)
            .map_err(|e| SendError::Failed(format!("slack {method}: {e}")))?;
        let request = Request::post(url.as_str())
            .header("content-type", "application/json; charset=utf-8")
            .header(
                "authorization",
                format!("Bearer {}", self.settings.bot_token),
            )
            .header("user-agent", concat!("askgate/", env!("CARGO_PKG_VERSION")))
            .body(Full::new(Bytes::from(args.to_string())))
            .map_err(|e| SendError::Failed(format!("slack {method}: {e}")))?;
        let exchange = async {
            let response = self.client.request(request).await?;
            let status = response.status();
            let retry_after = retry_after_header(response.headers());
            let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .map(http_body_util::Collected::to_bytes)
                .ok();
            Ok::<_, hyper_util::client::legacy::Error>((status, retry_after, body))
        };
        let (status, retry_after, body) = match tokio::time::timeout(timeout, exchange).await {
            Err(_) => {
                return Err(SendError::Failed(format!(
                    "slack {method}: no answer within {} ms",
                    timeout.as_millis()
                )));
            }
            Ok(Err(error)) if address::is_refused(&error) => {
                return Err(SendError::Refused(format!(
                    "slack {method}: {}",
                    chain(&error)
                )));
            }
            Ok(Err(error)) => {
                return Err(SendError::Failed(format!(
                    "slack {method}: {}",
                    chain(&error)
                )));
            }
            Ok(Ok(answer)) => answer,
        };
        if status.as_u16() == 429 {
            return Err(throttled(method, retry_after));
        }
        if !status.is_success() {
            return Err(SendError::Failed(format!(
                "slack {method} answered {status}"
            )));
        }
        let answer: Value = body
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(|| SendError::Failed(format!("slack {method}: the answer is not JSON")))?;
        if answer["ok"].as_bool() == Some(true) {
            return Ok(answer);
        }
        let code = answer["error"].as_str().unwrap_or("no error code");
        if code == "ratelimited" {
            return Err(throttled(method, retry_after));
        }
        Err(SendError::Rejected(format!("slack {method}: {code}")))
    }

    /// [`Api::call`] with the time a delivery's try has.
    ///
    /// # Errors
    /// As [`Api::call`]'s.
    pub async fn send(&self, method: &str, args: &Value) -> Result<Value, SendError> {
        self.call(method, args, SEND_TIMEOUT).await
    }
}

fn throttled(method: &str, retry_after: Option<Duration>) -> SendError {
    delivery::throttled(format!("slack {method}: rate limited"), retry_after)
}
