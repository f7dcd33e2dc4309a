//! Slack's request signing: `X-Slack-Signature` is `v0=` and the hex HMAC-SHA256, under the
//! app's signing secret, of `v0:{X-Slack-Request-Timestamp}:{raw body}`. A request older (or
//! newer) than [`MAX_SKEW_S`] is refused, so that a captured one cannot be replayed later.

use hmac::{Hmac, Mac as _};
use sha2::Sha256;

/// How far a request's timestamp may be from the gateway's clock, in seconds: Slack's own
/// advice.
pub const MAX_SKEW_S: u64 = 300;

/// Why a request was not taken as Slack's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unsigned {
    /// A header is missing or not what Slack sends.
    Malformed(&'static str),
    /// The timestamp is too far from now.
    Stale,
    /// The signature does not match.
    Mismatch,
}

impl Unsigned {
    /// What to log.
    pub fn reason(&self) -> String {
        match self {
            Unsigned::Malformed(what) => format!("not signed as Slack signs: {what}"),
            Unsigned::Stale => {
                format!("its timestamp is more than {MAX_SKEW_S} s from this gateway's clock")
            }
            Unsigned::Mismatch => "its signature does not match the signing secret".to_owned(),
        }
    }
}

/// The signature Slack would send for `body` at `timestamp`, under `secret`.
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let tag = mac(secret, timestamp, body).finalize().into_bytes();
    let mut out = String::from("v0=");
    for byte in tag {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

fn mac(secret: &str, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length: this cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    mac
}

/// Checks that `body` came from Slack: `timestamp` and `signature` are its headers, `now_s`
/// the gateway's clock (Unix seconds). The comparison takes the same time whatever the
/// signature.
///
/// # Errors
/// Why it is not taken.
pub fn verify(
    secret: &str,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now_s: u64,
) -> Result<(), Unsigned> {
    let timestamp = timestamp.ok_or(Unsigned::Malformed("no X-Slack-Request-Timestamp"))?;
    let at: u64 = timestamp
        .parse()
        .map_err(|_| Unsigned::Malformed("X-Slack-Request-Timestamp is not a number"))?;
    if at.abs_diff(now_s) > MAX_SKEW_S {
        return Err(Unsigned::Stale);
    }
    let signature = signature.ok_or(Unsigned::Malformed("no X-Slack-Signature"))?;
    let hex = signature.strip_prefix("v0=").ok_or(Unsigned::Malformed(
        "X-Slack-Signature does not start with v0=",
    ))?;
    let tag = decode_hex(hex).ok_or(Unsigned::Malformed("X-Slack-Signature is not hex"))?;
    mac(secret, timestamp, body)
        .verify_slice(&tag)
        .map_err(|_| Unsigned::Mismatch)
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example in Slack's guide to verifying requests (its secret, timestamp, body and
    /// signature).
    #[test]
    fn the_signature_matches_slacks_example() {
        let secret = "8f742231b10e8888abcd99yyyzzz85a5";
        let timestamp = "1531420618";
        let body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let expected = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        assert_eq!(sign(secret, timestamp, body.as_bytes()), expected);
        assert_eq!(
            verify(
                secret,
                Some(timestamp),
                Some(expected),
                body.as_bytes(),
                1_531_420_618
            ),
            Ok(())
        );
    }

    #[test]
    fn a_changed_body_an_old_timestamp_or_a_bad_header_is_refused() {
        let secret = "s3cret";
        let signed = sign(secret, "1000", b"payload=x");
        assert_eq!(
            verify(secret, Some("1000"), Some(&signed), b"payload=y", 1000),
            Err(Unsigned::Mismatch)
        );
        assert_eq!(
            verify(
                secret,
                Some("1000"),
                Some(&signed),
                b"payload=x",
                1000 + MAX_SKEW_S + 1
            ),
            Err(Unsigned::Stale)
        );
        assert_eq!(
            verify(
                secret,
                Some("1000"),
                Some(&signed),
                b"payload=x",
                1000 + MAX_SKEW_S
            ),
            Ok(())
        );
        assert!(matches!(
            verify(secret, None, Some(&signed), b"payload=x", 1000),
            Err(Unsigned::Malformed(_))
        ));
        assert!(matches!(
            verify(secret, Some("1000"), Some("v1=00"), b"payload=x", 1000),
            Err(Unsigned::Malformed(_))
        ));
        assert!(matches!(
            verify(secret, Some("1000"), Some("v0=zz"), b"payload=x", 1000),
            Err(Unsigned::Malformed(_))
        ));
        assert!(matches!(
            verify(secret, Some("10x0"), Some(&signed), b"payload=x", 1000),
            Err(Unsigned::Malformed(_))
        ));
    }
}
