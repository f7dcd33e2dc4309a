//! Webhooks as the Standard Webhooks specification has them: the body POSTed as JSON, with
//! `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,` and the base64 of
//! HMAC-SHA256 over `id.timestamp.body`, one for each secret while keys rotate).

use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use hmac::{Hmac, Mac as _};
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use hyper_util::client::legacy::connect::HttpConnector;
use sha2::Sha256;

use super::SendError;
use super::address;
use super::delivery::chain;
use super::settings::Webhook;
use crate::store::StoredDelivery;

/// How long one send may take, connecting included. A slower target fails the try (it is
/// tried again later) and holds up nothing but its own queue.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// The signatures of one body: `v1,{base64}` per secret, separated by spaces.
pub fn signature(secrets: &[Vec<u8>], id: &str, timestamp: u64, body: &str) -> String {
    secrets
        .iter()
        .map(|secret| {
            // HMAC takes a key of any length: this cannot fail.
            let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("any key length");
            mac.update(id.as_bytes());
            mac.update(b".");
            mac.update(timestamp.to_string().as_bytes());
            mac.update(b".");
            mac.update(body.as_bytes());
            let tag = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
            format!("v1,{tag}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The gateway's HTTP client: HTTP/1 over plain TCP or rustls, through the guarded resolver.
pub type Client = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<HttpConnector<address::GuardedResolver>>,
    Full<Bytes>,
>;

/// The HTTP client webhooks are sent with: the system's roots, a connect timeout, the guarded
/// resolver (unless private addresses are allowed), no redirects followed (the client follows
/// none: a redirect could lead past the address guard, and a receiver should be given its
/// final URL).
///
/// # Errors
/// The system's roots cannot be read.
pub fn client(allow_private: bool) -> Result<Client, String> {
    let mut http = HttpConnector::new_with_resolver(address::GuardedResolver { allow_private });
    http.enforce_http(false);
    http.set_connect_timeout(Some(SEND_TIMEOUT));
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(provider)
        .map_err(|e| format!("reading the system's TLS roots for webhooks: {e}"))?
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(https),
    )
}

/// POSTs `delivery` to `webhook`, signed at `now_s` (Unix seconds), within [`SEND_TIMEOUT`].
///
/// # Errors
/// It was not answered with a 2xx in time.
pub async fn send(
    client: &Client,
    webhook: &Webhook,
    delivery: &StoredDelivery,
    now_s: u64,
    allow_private: bool,
) -> Result<(), SendError> {
    let post = Post {
        what: &format!("webhook {:?}", webhook.name),
        url: &webhook.url,
        secrets: &webhook.secrets,
        headers: &[],
        id: &delivery.id,
        final_statuses: &[],
        body: &delivery.body,
    };
    post.send(client, now_s, allow_private).await
}

/// One signed POST: what it is (for errors), where, signed with which secrets (none: not
/// signed), with which other headers.
pub struct Post<'a> {
    /// What is posted to, for errors: `webhook "ops"`, `callback to https://...`.
    pub what: &'a str,
    /// Where.
    pub url: &'a url::Url,
    /// What it is signed with (`webhook-signature`: one signature each; none: unsigned).
    pub secrets: &'a [Vec<u8>],
    /// Headers besides the content type and the Standard Webhooks ones.
    pub headers: &'a [(&'a str, &'a str)],
    /// The `webhook-id`, the same on every try.
    pub id: &'a str,
    /// Statuses that say the target will never take it (tried again, it would answer the
    /// same): a [`SendError::Rejected`], not tried again.
    pub final_statuses: &'a [u16],
    /// The JSON body.
    pub body: &'a str,
}

impl Post<'_> {
    /// Sends it, signed at `now_s` (Unix seconds), within [`SEND_TIMEOUT`].
    ///
    /// # Errors
    /// It was not answered with a 2xx in time.
    pub async fn send(
        &self,
        client: &Client,
        now_s: u64,
        allow_private: bool,
    ) -> Result<(), SendError> {
        let what = self.what;
        if !allow_private && let Some((ip, why)) = address::refused_literal(self.url) {
            return Err(SendError::Refused(format!(
                "{what}: {ip} is {why} (refused without --notify-allow-private)"
            )));
        }
        let mut request = Request::post(self.url.as_str())
            .header("content-type", "application/json")
            .header("user-agent", concat!("askgate/", env!("CARGO_PKG_VERSION")))
            .header("webhook-id", self.id)
            .header("webhook-timestamp", now_s.to_string());
        if !self.secrets.is_empty() {
            let signed = signature(self.secrets, self.id, now_s, self.body);
            request = request.header("webhook-signature", signed);
        }
        for (name, value) in self.headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Full::new(Bytes::from(self.body.to_owned())))
            .map_err(|e| SendError::Failed(format!("{what}: {e}")))?;
        let exchange = async {
            let response = client.request(request).await?;
            let status = response.status();
            // Read (and drop) what it answered, within the same timeout, so the connection
            // can be used again.
            let _ = response.into_body().collect().await;
            Ok::<_, hyper_util::client::legacy::Error>(status)
        };
        match tokio::time::timeout(SEND_TIMEOUT, exchange).await {
            Err(_) => Err(SendError::Failed(format!(
                "{what}: no answer within {} s",
                SEND_TIMEOUT.as_secs()
            ))),
            Ok(Ok(status)) if status.is_success() => Ok(()),
            Ok(Ok(status)) if self.final_statuses.contains(&status.as_u16()) => Err(
                SendError::Rejected(format!("{what} answered {status}, which will not change")),
            ),
            Ok(Ok(status)) => Err(SendError::Failed(format!("{what} answered {status}"))),
            Ok(Err(error)) if address::is_refused(&error) => {
                Err(SendError::Refused(format!("{what}: {}", chain(&error))))
            }
            Ok(Err(error)) => Err(SendError::Failed(format!("{what}: {}", chain(&error)))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example in the Standard Webhooks specification's test vectors (the same secret,
    /// id, timestamp and body in its reference libraries' tests).
    #[test]
    fn the_signature_matches_the_specifications_example() {
        let secret = base64::engine::general_purpose::STANDARD
            .decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .unwrap();
        let signed = signature(
            &[secret],
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(signed, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    fn webhook(url: &str) -> Webhook {
        Webhook {
            name: "ops".into(),
            url: url::Url::parse(url).unwrap(),
            secrets: vec![vec![1; 24]],
            events: crate::notify::settings::Events::ALL,
            sessions: String::new(),
            line: 1,
        }
    }

    fn delivery() -> StoredDelivery {
        StoredDelivery {
            session: askgate_protocol::SessionId::parse("s").unwrap(),
            request: askgate_protocol::RequestId::parse("r").unwrap(),
            id: "msg_1".into(),
            event: "request.opened".into(),
            target: crate::store::DeliveryTarget::Webhook("ops".into()),
            body: "{}".into(),
            created_ms: 0,
        }
    }

    /// Refused at send time, without a connection: a loopback address written in the URL,
    /// and a name that resolves to one (what a name resolving elsewhere after start meets).
    #[tokio::test]
    async fn a_target_on_a_refused_address_is_not_called() {
        let guarded = client(false).unwrap();
        for url in ["http://127.0.0.1:9/hook", "http://localhost:9/hook"] {
            let sent = send(&guarded, &webhook(url), &delivery(), 0, false).await;
            match sent {
                Err(SendError::Refused(why)) => {
                    assert!(why.contains("loopback"), "{url}: {why}");
                    assert!(why.contains("--notify-allow-private"), "{url}: {why}");
                }
                other => panic!("{url}: {other:?}"),
            }
        }
        // Allowed, the same name is called (nothing listens there: a plain failure).
        let open = client(true).unwrap();
        let sent = send(
            &open,
            &webhook("http://localhost:9/hook"),
            &delivery(),
            0,
            true,
        )
        .await;
        assert!(matches!(sent, Err(SendError::Failed(_))), "{sent:?}");
    }

    #[test]
    fn every_secret_signs_during_a_rotation() {
        let signed = signature(&[vec![1; 24], vec![2; 24]], "msg_1", 5, "{}");
        let parts: Vec<&str> = signed.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| p.starts_with("v1,")));
        assert_ne!(parts[0], parts[1]);
    }
}
