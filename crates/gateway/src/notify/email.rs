//! Mail: one message per person per request (and per reminder), with links that answer as
//! that person, sent over SMTP with lettre.
//!
//! `smtp://` connects in the clear and upgrades with STARTTLS whenever the server offers it
//! (port 25 unless the URL says); `smtps://` speaks TLS from the first byte (port 465).
//! Certificates are checked against the system's roots, with rustls on ring as for webhooks.
//! Credentials in the URL (percent-encoded) are used to log in.
//!
//! - [`message`]: what a mail says (subject, text and HTML parts, the signed links).
//!
//! What the message says is [`message`]'s; this module addresses it, gives it
//! the notification's id as its `Message-ID` (a receiver can tell a retry from a new mail),
//! and sends it within [`SEND_TIMEOUT`]. Headers are made by lettre's builder from typed
//! values, so nothing an agent wrote can add one.

use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport as _, Message, Tokio1Executor};

pub mod message;

use super::SendError;
use super::delivery::chain;
use super::settings::EmailSettings;
use crate::keys::ViewerKeys;
use crate::store::StoredDelivery;
use message::compose;

/// How long one mail may take to send, connecting included: as long as a webhook's.
pub use super::webhook::SEND_TIMEOUT;

/// The port of `smtp://` when the URL names none.
pub const SMTP_PORT: u16 = 25;
/// The port of `smtps://` when the URL names none.
pub const SMTPS_PORT: u16 = 465;

/// How mail is sent: the server and the sender.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// The server, without its password, for messages.
    server: String,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailer")
            .field("server", &self.server)
            .field("from", &self.from.to_string())
            .finish_non_exhaustive()
    }
}

impl Mailer {
    /// A mailer for `settings`.
    ///
    /// # Errors
    /// The server's URL or the sender cannot be used.
    pub fn new(settings: &EmailSettings) -> Result<Mailer, String> {
        let url = &settings.smtp_url;
        let mut shown = url.clone();
        let _ = shown.set_password(None);
        let server = shown.to_string();
        let host = url
            .host_str()
            .ok_or_else(|| format!("email.smtp_url {server:?}: has no host"))?;
        // An IPv6 literal comes bracketed; the connection and the certificate want it bare.
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let tls = TlsParameters::new(host.to_owned())
            .map_err(|e| format!("email.smtp_url {server:?}: TLS for {host}: {e}"))?;
        let (tls, default_port) = match url.scheme() {
            "smtps" => (Tls::Wrapper(tls), SMTPS_PORT),
            "smtp" => (Tls::Opportunistic(tls), SMTP_PORT),
            other => {
                return Err(format!(
                    "email.smtp_url {server:?}: must be smtp:// or smtps://, not {other}://"
                ));
            }
        };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
            .port(url.port().unwrap_or(default_port))
            .tls(tls)
            .timeout(Some(SEND_TIMEOUT));
        if !url.username().is_empty() {
            let decode = |text: &str, what: &str| {
                percent_encoding_decode(text)
                    .ok_or_else(|| format!("email.smtp_url {server:?}: the {what} is not UTF-8"))
            };
            let user = decode(url.username(), "user name")?;
            let password = decode(url.password().unwrap_or_default(), "password")?;
            builder = builder.credentials(Credentials::new(user, password));
        }
        let from = settings
            .from
            .parse::<Mailbox>()
            .map_err(|e| format!("email.from {:?}: {e}", settings.from))?;
        Ok(Mailer {
            transport: builder.build(),
            from,
            server,
        })
    }
}

/// `%XX` sequences decoded, as URLs carry credentials; `None` if the result is not UTF-8.
fn percent_encoding_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[at], bytes.get(at + 1), bytes.get(at + 2)) {
            (b'%', Some(&high), Some(&low)) if hex(high).is_some() && hex(low).is_some() => {
                out.push((hex(high)? * 16 + hex(low)?) as u8);
                at += 3;
            }
            (byte, ..) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Sends `delivery` to `person` at `address`, its links signed with `keys`.
///
/// # Errors
/// The mail could not be made (a body this gateway did not write, an address the builder
/// refuses) or the server did not take it in time: [`SendError::Failed`], tried again later.
pub async fn send(
    mailer: &Mailer,
    keys: &ViewerKeys,
    delivery: &StoredDelivery,
    person: &str,
    address: &str,
) -> Result<(), SendError> {
    let failed = |why: String| SendError::Failed(format!("mail to {person} <{address}>: {why}"));
    let content = compose(keys, person, &delivery.body, delivery.created_ms).map_err(&failed)?;
    let to = address
        .parse::<Mailbox>()
        .map_err(|e| failed(format!("the address is refused: {e}")))?;
    let domain = url::Url::parse(keys.public_url())
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_else(|| "askgate.invalid".to_owned());
    let message = Message::builder()
        .from(mailer.from.clone())
        .to(to)
        .subject(content.subject)
        .message_id(Some(format!("<{}@{domain}>", delivery.id)))
        .multipart(MultiPart::alternative_plain_html(
            content.text,
            content.html,
        ))
        .map_err(|e| failed(format!("the message could not be built: {e}")))?;
    match tokio::time::timeout(SEND_TIMEOUT, mailer.transport.send(message)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(failed(format!("{}: {}", mailer.server, chain(&error)))),
        Err(_) => Err(failed(format!(
            "{}: no answer within {} s",
            mailer.server,
            SEND_TIMEOUT.as_secs()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(url: &str) -> EmailSettings {
        EmailSettings {
            smtp_url: url::Url::parse(url).unwrap(),
            from: "askgate <askgate@example.com>".into(),
        }
    }

    #[test]
    fn credentials_are_percent_decoded_and_never_shown() {
        assert_eq!(
            percent_encoding_decode("p%40ss%2Fw%zz").as_deref(),
            Some("p@ss/w%zz")
        );
        assert_eq!(percent_encoding_decode("%ff"), None);
        let mailer = Mailer::new(&settings("smtps://user:s3cret@mail.example.com")).unwrap();
        let shown = format!("{mailer:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("smtps://user@mail.example.com"), "{shown}");
    }

    /// Nothing listens on the port: the try fails (and is retried), naming where it went.
    #[tokio::test]
    async fn a_server_that_cannot_be_reached_fails_the_try() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let mailer = Mailer::new(&settings(&format!("smtp://127.0.0.1:{port}"))).unwrap();
        let keys = ViewerKeys::new(b"k", "http://gw");
        let body = serde_json::json!({"type": "request.opened", "data": {"session": "s",
            "id": "r", "dialect": "harness", "questions": [], "deadline_ms": null}});
        let delivery = StoredDelivery {
            session: askgate_protocol::SessionId::parse("s").unwrap(),
            request: askgate_protocol::RequestId::parse("r").unwrap(),
            id: "msg_1".into(),
            event: "request.opened".into(),
            target: crate::store::DeliveryTarget::Email("alice".into()),
            body: body.to_string(),
            created_ms: 0,
        };
        match send(&mailer, &keys, &delivery, "alice", "alice@example.com").await {
            Err(SendError::Failed(why)) => {
                assert!(why.contains("mail to alice <alice@example.com>"), "{why}");
                assert!(why.contains(&format!("127.0.0.1:{port}")), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_sender_the_builder_refuses_is_refused_at_start() {
        let mut bad = settings("smtp://mail.example.com");
        bad.from = "not an address".into();
        let error = Mailer::new(&bad).unwrap_err();
        assert!(
            error.starts_with("email.from \"not an address\""),
            "{error}"
        );
    }
}
