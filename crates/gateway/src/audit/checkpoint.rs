//! Signed checkpoints: a chain's last entry (seq and hash), signed with Ed25519, so that a
//! trail cut short or rewritten since shows, and so that someone holding only the public key
//! can check a checkpoint without being able to make one.
//!
//! The signing key is derived from the audit key: its seed is
//! `HMAC-SHA256(audit key, "askgate audit checkpoint v1")`, so it needs no file of its own and
//! the same audit key always gives the same public key. A checkpoint is one line of JSON:
//! `{"checkpoint":"askgate audit checkpoint v1","session":S,"last_seq":N,"last_hash":H,
//! "at_ms":T,"public_key":K,"signature":G}`, K the 32-byte public key and G the 64-byte
//! signature in lowercase hex, over the UTF-8 text `askgate audit checkpoint v1\nS\nN\nH\nT`.

use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use serde::{Deserialize, Serialize};

use super::chain::{AuditKey, hex};

/// What every checkpoint says it is, and the first line of what it signs.
pub const CHECKPOINT_V1: &str = "askgate audit checkpoint v1";

/// A signed checkpoint of one session's chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Always [`CHECKPOINT_V1`].
    pub checkpoint: String,
    /// The session whose chain it is.
    pub session: String,
    /// The seq of its last entry.
    pub last_seq: u64,
    /// That entry's hash.
    pub last_hash: String,
    /// When it was signed (ms since the Unix epoch).
    pub at_ms: u64,
    /// The Ed25519 public key it is signed with, hex.
    pub public_key: String,
    /// The signature, hex.
    pub signature: String,
}

/// The Ed25519 key pair derived from `key`.
pub fn signing_key(key: &AuditKey) -> SigningKey {
    SigningKey::from_bytes(&key.mac(CHECKPOINT_V1.as_bytes()))
}

/// The public key checkpoints made with `key` carry, hex.
pub fn public_key_hex(key: &AuditKey) -> String {
    hex(signing_key(key).verifying_key().as_bytes())
}

fn signed_text(session: &str, last_seq: u64, last_hash: &str, at_ms: u64) -> String {
    format!("{CHECKPOINT_V1}\n{session}\n{last_seq}\n{last_hash}\n{at_ms}")
}

/// A checkpoint of `session`'s chain ending at `last_seq` with `last_hash`, signed now.
pub fn sign(
    key: &AuditKey,
    session: &str,
    last_seq: u64,
    last_hash: &str,
    at_ms: u64,
) -> Checkpoint {
    let signing = signing_key(key);
    let signature = signing.sign(signed_text(session, last_seq, last_hash, at_ms).as_bytes());
    Checkpoint {
        checkpoint: CHECKPOINT_V1.to_owned(),
        session: session.to_owned(),
        last_seq,
        last_hash: last_hash.to_owned(),
        at_ms,
        public_key: hex(signing.verifying_key().as_bytes()),
        signature: hex(&signature.to_bytes()),
    }
}

fn unhex<const N: usize>(text: &str, what: &str) -> Result<[u8; N], String> {
    let bytes = text.as_bytes();
    if bytes.len() != 2 * N {
        return Err(format!("{what} is not {} hex digits", 2 * N));
    }
    let mut out = [0u8; N];
    for (at, pair) in bytes.chunks(2).enumerate() {
        let digits = std::str::from_utf8(pair).ok();
        out[at] = digits
            .and_then(|d| u8::from_str_radix(d, 16).ok())
            .ok_or_else(|| format!("{what} is not hex"))?;
    }
    Ok(out)
}

impl Checkpoint {
    /// Checks the signature against the public key it names.
    ///
    /// # Errors
    /// It is not a v1 checkpoint, a key or signature is malformed, or the signature does not
    /// hold: the checkpoint was changed or not made with that key.
    pub fn check_signature(&self) -> Result<(), String> {
        if self.checkpoint != CHECKPOINT_V1 {
            return Err(format!(
                "not a checkpoint this askgate reads ({:?})",
                self.checkpoint
            ));
        }
        let public = VerifyingKey::from_bytes(&unhex::<32>(&self.public_key, "public_key")?)
            .map_err(|_| "public_key is not an Ed25519 public key".to_owned())?;
        let signature = Signature::from_bytes(&unhex::<64>(&self.signature, "signature")?);
        let text = signed_text(&self.session, self.last_seq, &self.last_hash, self.at_ms);
        public.verify(text.as_bytes(), &signature).map_err(|_| {
            "its signature does not hold: it was changed, or not signed with that public key"
                .to_owned()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> AuditKey {
        AuditKey::from_bytes([7; 32])
    }

    #[test]
    fn a_checkpoint_signed_with_the_key_holds_and_any_change_to_it_does_not() {
        let made = sign(&key(), "s", 12, &"ab".repeat(32), 1_000);
        assert_eq!(made.public_key, public_key_hex(&key()));
        made.check_signature().unwrap();
        let line = serde_json::to_string(&made).unwrap();
        let read: Checkpoint = serde_json::from_str(&line).unwrap();
        read.check_signature().unwrap();
        let mut shorter = made.clone();
        shorter.last_seq = 11;
        assert!(shorter.check_signature().is_err());
        let mut moved = made.clone();
        moved.session = "t".into();
        assert!(moved.check_signature().is_err());
        // Signed with another key and presented as this one's.
        let mut forged = sign(
            &AuditKey::from_bytes([8; 32]),
            "s",
            11,
            &"cd".repeat(32),
            1_000,
        );
        forged.public_key = made.public_key.clone();
        assert!(
            forged
                .check_signature()
                .unwrap_err()
                .contains("does not hold")
        );
    }

    #[test]
    fn the_same_audit_key_gives_the_same_public_key() {
        assert_eq!(
            public_key_hex(&key()),
            public_key_hex(&AuditKey::from_bytes([7; 32]))
        );
        assert_ne!(
            public_key_hex(&key()),
            public_key_hex(&AuditKey::from_bytes([8; 32]))
        );
    }
}
