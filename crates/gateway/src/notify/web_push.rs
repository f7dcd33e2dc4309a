//! Web Push's cryptography, with no I/O: the application server's identity ([`VapidKey`],
//! RFC 8292) and a message encrypted for one browser's subscription ([`encrypt`], RFC 8291 in
//! RFC 8188's `aes128gcm` content coding). The sender that posts the result lives elsewhere.
//!
//! A subscription carries the browser's P-256 public key (`keys.p256dh`) and a 16-byte secret
//! (`keys.auth`); every message gets a fresh ephemeral key pair and salt, so that no two
//! messages share an AES-GCM key and nonce.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use aes_gcm::aead::{Aead as _, KeyInit as _};
use aes_gcm::{Aes128Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hkdf::Hkdf;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use p256::elliptic_curve::sec1::ToEncodedPoint as _;
use p256::pkcs8::DecodePrivateKey as _;
use p256::{PublicKey, SecretKey};
use sha2::Sha256;

/// The record size written in every message's header: RFC 8291 asks for a single record,
/// and 4096 is both RFC 8188's default and the body size every push service must take.
pub const RECORD_SIZE: u32 = 4096;

/// The largest body a push service must accept (RFC 8030 section 7.2); larger ones may be
/// refused with 413, so [`encrypt`] never makes one.
pub const MAX_PUSH_BODY: usize = 4096;

/// The header before the ciphertext: salt (16), record size (4), key id length (1) and the
/// key id, the ephemeral public key as an uncompressed point (65).
pub const HEADER_LEN: usize = SALT_LEN + 4 + 1 + UNCOMPRESSED_POINT_LEN;

/// The longest payload [`encrypt`] takes: 3993 bytes, what is left of [`MAX_PUSH_BODY`] once
/// the header, the padding delimiter and the AES-GCM tag are paid for (RFC 8291 section 4).
/// The record itself could hold more (4096 - 16 - 1 = 4079 bytes), but a body past 4096
/// bytes may be refused by the push service, so the body's limit is the one enforced.
pub const MAX_PUSH_PAYLOAD: usize = MAX_PUSH_BODY - HEADER_LEN - PADDING_DELIMITER_LEN - TAG_LEN;

/// The longest a VAPID token may live ahead of now (RFC 8292 section 2).
pub const MAX_VAPID_LIFETIME_S: u64 = 24 * 3600;

const SALT_LEN: usize = 16;
const AUTH_SECRET_LEN: usize = 16;
const TAG_LEN: usize = 16;
const PADDING_DELIMITER_LEN: usize = 1;
const UNCOMPRESSED_POINT_LEN: usize = 65;
const SCALAR_LEN: usize = 32;

/// RFC 8188's delimiter for the last record, the only one a Web Push message has.
const LAST_RECORD_DELIMITER: u8 = 0x02;

/// The application server's VAPID identity (RFC 8292): an ECDSA P-256 key pair whose public
/// half a browser is given as `applicationServerKey` when it subscribes, and whose private half
/// signs the token every push request carries.
#[derive(Clone)]
pub struct VapidKey {
    signing: SigningKey,
}

impl fmt::Debug for VapidKey {
    // The secret scalar would otherwise reach logs through any `{:?}` of a settings struct.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VapidKey")
            .field("public", &self.public_key_base64url())
            .finish_non_exhaustive()
    }
}

impl VapidKey {
    /// A new key pair, drawn from the thread's cryptographically secure generator (seeded by
    /// the operating system).
    pub fn generate() -> VapidKey {
        VapidKey {
            signing: SigningKey::from(random_secret_key()),
        }
    }

    /// The key pair whose secret scalar is `bytes` (32 bytes, big-endian), as
    /// [`to_secret_bytes`](Self::to_secret_bytes) gave it.
    pub fn from_secret_bytes(bytes: &[u8]) -> Result<VapidKey, String> {
        if bytes.len() != SCALAR_LEN {
            return Err(format!(
                "VAPID private key: expected {SCALAR_LEN} bytes, got {}",
                bytes.len()
            ));
        }
        let secret = SecretKey::from_slice(bytes).map_err(|_| {
            "VAPID private key: not a P-256 private key (zero, or not below the group order)"
                .to_owned()
        })?;
        Ok(VapidKey {
            signing: SigningKey::from(secret),
        })
    }

    /// The key pair in a PEM file: a PKCS#8 `PRIVATE KEY` or a SEC1 `EC PRIVATE KEY` on P-256,
    /// as `openssl ecparam -genkey -name prime256v1` or `openssl genpkey` write them.
    pub fn from_pem(pem: &str) -> Result<VapidKey, String> {
        let label = pem
            .lines()
            .map(str::trim)
            .find_map(|line| {
                line.strip_prefix("-----BEGIN ")
                    .and_then(|rest| rest.strip_suffix("-----"))
            })
            .ok_or("VAPID key file: no PEM block (expected \"-----BEGIN PRIVATE KEY-----\" or \"-----BEGIN EC PRIVATE KEY-----\")")?;
        let secret = match label {
            "PRIVATE KEY" => SecretKey::from_pkcs8_pem(pem)
                .map_err(|e| format!("VAPID key file: not a PKCS#8 P-256 private key ({e})"))?,
            "EC PRIVATE KEY" => SecretKey::from_sec1_pem(pem)
                .map_err(|e| format!("VAPID key file: not a SEC1 P-256 private key ({e})"))?,
            other => {
                return Err(format!(
                    "VAPID key file: a PEM \"{other}\" block; expected \"PRIVATE KEY\" (PKCS#8) or \"EC PRIVATE KEY\" (SEC1)"
                ));
            }
        };
        Ok(VapidKey {
            signing: SigningKey::from(secret),
        })
    }

    /// The secret scalar, 32 bytes big-endian: what a store keeps to sign with the same key
    /// after a restart.
    pub fn to_secret_bytes(&self) -> [u8; SCALAR_LEN] {
        self.signing.to_bytes().into()
    }

    /// The public key as a browser's `applicationServerKey` takes it: the uncompressed point
    /// (65 bytes), base64url without padding.
    pub fn public_key_base64url(&self) -> String {
        let point = self.signing.verifying_key().to_encoded_point(false);
        URL_SAFE_NO_PAD.encode(point.as_bytes())
    }

    /// The `Authorization` header for a push to `endpoint_url`:
    /// `vapid t=<JWT>, k=<public key>`, the JWT signed with ES256 and claiming the endpoint's
    /// origin (`aud`), `expires_at_s` (`exp`, Unix seconds, at most 24 hours from now) and
    /// `subject` (`sub`, a `mailto:` or `https:` contact for the push service's operator).
    pub fn authorization(
        &self,
        endpoint_url: &str,
        subject: &str,
        expires_at_s: u64,
    ) -> Result<String, String> {
        let now_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        self.authorization_at(endpoint_url, subject, expires_at_s, now_s)
    }

    /// [`authorization`](Self::authorization) as of `now_s`, so that tests can pin the clock.
    fn authorization_at(
        &self,
        endpoint_url: &str,
        subject: &str,
        expires_at_s: u64,
        now_s: u64,
    ) -> Result<String, String> {
        let audience = endpoint_origin(endpoint_url)?;
        if !(subject.starts_with("mailto:") || subject.starts_with("https:")) {
            return Err(format!(
                "VAPID subject {subject:?}: expected a mailto: or https: URI (RFC 8292 section 2.1)"
            ));
        }
        if expires_at_s <= now_s {
            return Err(format!(
                "VAPID expiry {expires_at_s}: not after now ({now_s})"
            ));
        }
        if expires_at_s - now_s > MAX_VAPID_LIFETIME_S {
            return Err(format!(
                "VAPID expiry {expires_at_s}: {} s from now, more than the {MAX_VAPID_LIFETIME_S} s (24 h) RFC 8292 allows",
                expires_at_s - now_s
            ));
        }
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({ "aud": audience, "exp": expires_at_s, "sub": subject });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signing_input = format!("{header}.{claims}");
        // JOSE's ES256 is the fixed 64-byte r || s, not the DER a TLS stack would write.
        let signature: Signature = self.signing.sign(signing_input.as_bytes());
        let signature = URL_SAFE_NO_PAD.encode(signature.to_bytes());
        Ok(format!(
            "vapid t={signing_input}.{signature}, k={}",
            self.public_key_base64url()
        ))
    }
}

/// `scheme://host[:port]` of a push endpoint, the audience its push service expects.
fn endpoint_origin(endpoint_url: &str) -> Result<String, String> {
    let url = url::Url::parse(endpoint_url)
        .map_err(|e| format!("push endpoint {endpoint_url:?}: not a URL ({e})"))?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(format!(
            "push endpoint {endpoint_url:?}: expected an https (or http) URL, got scheme {:?}",
            url.scheme()
        ));
    }
    Ok(url.origin().ascii_serialization())
}

/// `payload` encrypted for the subscription whose keys are `subscription_p256dh_b64url`
/// (`keys.p256dh`) and `subscription_auth_b64url` (`keys.auth`): the body of a push request
/// sent with `Content-Encoding: aes128gcm`. Payloads longer than [`MAX_PUSH_PAYLOAD`] are
/// refused.
pub fn encrypt(
    payload: &[u8],
    subscription_p256dh_b64url: &str,
    subscription_auth_b64url: &str,
) -> Result<Vec<u8>, String> {
    check_payload_len(payload)?;
    let ua_public = decode_p256dh(subscription_p256dh_b64url)?;
    let auth_secret = decode_auth(subscription_auth_b64url)?;
    let ephemeral = random_secret_key();
    let salt: [u8; SALT_LEN] = rand::random();
    encrypt_with(payload, &ua_public, &auth_secret, &ephemeral, &salt)
}

/// [`encrypt`] with the ephemeral application-server key and the salt given, which makes it
/// deterministic: RFC 8291's example can then be reproduced byte for byte.
fn encrypt_with(
    payload: &[u8],
    ua_public: &PublicKey,
    auth_secret: &[u8; AUTH_SECRET_LEN],
    as_secret: &SecretKey,
    salt: &[u8; SALT_LEN],
) -> Result<Vec<u8>, String> {
    check_payload_len(payload)?;
    let ua_point = ua_public.to_encoded_point(false);
    let as_point = as_secret.public_key().to_encoded_point(false);
    let keys = derive_keys(
        as_secret,
        ua_public,
        ua_point.as_bytes(),
        as_point.as_bytes(),
        auth_secret,
        salt,
    );

    let mut plaintext = Vec::with_capacity(payload.len() + PADDING_DELIMITER_LEN);
    plaintext.extend_from_slice(payload);
    plaintext.push(LAST_RECORD_DELIMITER);
    let cipher = Aes128Gcm::new(&keys.content_key.into());
    let ciphertext = cipher
        .encrypt(Nonce::from_slice(&keys.nonce), plaintext.as_slice())
        .map_err(|_| "web push: AES-128-GCM refused the record".to_owned())?;

    let mut body = Vec::with_capacity(HEADER_LEN + ciphertext.len());
    body.extend_from_slice(salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(UNCOMPRESSED_POINT_LEN as u8);
    body.extend_from_slice(as_point.as_bytes());
    body.extend_from_slice(&ciphertext);
    Ok(body)
}

fn check_payload_len(payload: &[u8]) -> Result<(), String> {
    if payload.len() > MAX_PUSH_PAYLOAD {
        return Err(format!(
            "web push payload of {} bytes: more than the {MAX_PUSH_PAYLOAD} that fit a {MAX_PUSH_BODY}-byte push body",
            payload.len()
        ));
    }
    Ok(())
}

/// The AES-128-GCM key and nonce of one message.
struct MessageKeys {
    content_key: [u8; 16],
    nonce: [u8; 12],
}

/// RFC 8291 section 3.3 (the auth secret mixed into the ECDH secret) and RFC 8188 section 2.2
/// (the salt making the key and nonce unique to the message).
fn derive_keys(
    as_secret: &SecretKey,
    ua_public: &PublicKey,
    ua_point: &[u8],
    as_point: &[u8],
    auth_secret: &[u8; AUTH_SECRET_LEN],
    salt: &[u8; SALT_LEN],
) -> MessageKeys {
    let ecdh = p256::ecdh::diffie_hellman(as_secret.to_nonzero_scalar(), ua_public.as_affine());
    let (_, prk_key) = Hkdf::<Sha256>::extract(Some(auth_secret), ecdh.raw_secret_bytes());
    let ikm: [u8; 32] = expand(&prk_key, &[b"WebPush: info\0", ua_point, as_point]);
    let (_, prk) = Hkdf::<Sha256>::extract(Some(salt), &ikm);
    MessageKeys {
        content_key: expand(&prk, &[b"Content-Encoding: aes128gcm\0"]),
        nonce: expand(&prk, &[b"Content-Encoding: nonce\0"]),
    }
}

fn expand<const N: usize>(prk: &Hkdf<Sha256>, info: &[&[u8]]) -> [u8; N] {
    let mut okm = [0; N];
    prk.expand_multi_info(info, &mut okm)
        .expect("every length asked for here is far below HKDF-SHA-256's 8160 bytes");
    okm
}

/// `keys.p256dh`: the browser's public key, an uncompressed P-256 point in base64url.
fn decode_p256dh(b64url: &str) -> Result<PublicKey, String> {
    let bytes = decode_base64url(b64url).map_err(|e| format!("keys.p256dh: {e}"))?;
    if bytes.len() != UNCOMPRESSED_POINT_LEN || bytes.first() != Some(&0x04) {
        return Err(format!(
            "keys.p256dh: expected an uncompressed P-256 point ({UNCOMPRESSED_POINT_LEN} bytes starting 0x04), got {} bytes",
            bytes.len()
        ));
    }
    PublicKey::from_sec1_bytes(&bytes).map_err(|_| "keys.p256dh: not a P-256 point".to_owned())
}

/// `keys.auth`: the subscription's 16-byte authentication secret in base64url.
fn decode_auth(b64url: &str) -> Result<[u8; AUTH_SECRET_LEN], String> {
    let bytes = decode_base64url(b64url).map_err(|e| format!("keys.auth: {e}"))?;
    <[u8; AUTH_SECRET_LEN]>::try_from(bytes.as_slice()).map_err(|_| {
        format!(
            "keys.auth: expected {AUTH_SECRET_LEN} bytes, got {}",
            bytes.len()
        )
    })
}

/// Browsers give subscription keys in base64url without padding; some libraries that store
/// them add the padding back, which is taken too.
fn decode_base64url(text: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .map_err(|e| format!("not base64url ({e})"))
}

/// A uniformly drawn P-256 secret scalar. Drawing bytes and rejecting the rare out-of-range
/// value keeps randomness on the `rand` the crate already uses rather than on p256's older
/// `rand_core`.
fn random_secret_key() -> SecretKey {
    loop {
        let bytes: [u8; SCALAR_LEN] = rand::random();
        if let Ok(secret) = SecretKey::from_slice(&bytes) {
            return secret;
        }
    }
}

#[cfg(test)]
mod tests;
