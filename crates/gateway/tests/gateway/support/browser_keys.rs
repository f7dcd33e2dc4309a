//! What a browser makes when it subscribes to Web Push: a P-256 key pair and a 16-byte auth
//! secret. The public half and the secret go to the gateway (`keys.p256dh`, `keys.auth`); the
//! private half stays with the browser, here the tests' push service that decrypts.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::SecretKey;
use p256::elliptic_curve::sec1::ToEncodedPoint as _;
use rand::Rng;

/// One browser's subscription keys, base64url without padding.
pub struct BrowserKeys {
    /// The private scalar (the push service decrypts with it).
    pub private_b64: String,
    /// The public key, an uncompressed point: `keys.p256dh`.
    pub p256dh: String,
    /// The auth secret: `keys.auth`.
    pub auth: String,
}

impl BrowserKeys {
    /// New keys drawn from `rng`.
    pub fn new(rng: &mut impl Rng) -> BrowserKeys {
        let secret = loop {
            let scalar: [u8; 32] = rng.random();
            // Nearly every 32 bytes is a scalar; the few that are not are drawn again.
            if let Ok(secret) = SecretKey::from_slice(&scalar) {
                break secret;
            }
        };
        let auth: [u8; 16] = rng.random();
        BrowserKeys {
            private_b64: URL_SAFE_NO_PAD.encode(secret.to_bytes()),
            p256dh: URL_SAFE_NO_PAD.encode(secret.public_key().to_encoded_point(false)),
            auth: URL_SAFE_NO_PAD.encode(auth),
        }
    }
}
