//! Sealing entries onto a session's chain, and reading sealed lines back. The Redis store's
//! scripts do the same in Lua (`chain.lua`); the tests hold the two to one another.

use std::sync::Arc;

use hmac::{Hmac, Mac as _};
use sha2::{Digest as _, Sha256};

/// The `prev` of a session's first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What closes every line: `,"prev":"<64 hex>","hash":"<64 hex>"}`.
const SUFFIX_LEN: usize = r#","prev":""#.len() + 64 + r#"","hash":""#.len() + 64 + r#""}"#.len();

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(64);
    push_sha256_hex(&mut out, bytes);
    out
}

/// The secret an audit chain is keyed with (HMAC-SHA256): 32 bytes the store does not hold.
#[derive(Clone, PartialEq, Eq)]
pub struct AuditKey([u8; 32]);

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditKey(..)")
    }
}

impl AuditKey {
    /// The key of these bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> AuditKey {
        AuditKey(bytes)
    }

    /// Reads a key from its text: exactly 64 hex digits, optionally followed by one newline.
    ///
    /// # Errors
    /// Anything else, and what is wrong with it.
    pub fn parse(text: &[u8]) -> Result<AuditKey, String> {
        let digits = text.strip_suffix(b"\n").unwrap_or(text);
        if digits.len() != 64 {
            return Err(format!(
                "expected 64 hex digits (32 bytes), optionally followed by a newline; found {} \
                 bytes{}",
                digits.len(),
                if digits.ends_with(b"\n") || digits.ends_with(b"\r") {
                    " (more than one line end)"
                } else {
                    ""
                }
            ));
        }
        let mut key = [0u8; 32];
        for (at, pair) in digits.chunks(2).enumerate() {
            let digit = |offset: usize| {
                let byte = pair[offset];
                char::from(byte)
                    .to_digit(16)
                    .map(|d| d as u8)
                    .ok_or_else(|| {
                        format!(
                            "byte {} is {:?}, not a hex digit",
                            2 * at + offset + 1,
                            char::from(byte)
                        )
                    })
            };
            key[at] = digit(0)? << 4 | digit(1)?;
        }
        Ok(AuditKey(key))
    }

    /// A new random key.
    pub fn random() -> AuditKey {
        AuditKey(rand::random())
    }

    /// Its text, as a key file holds it (without the newline).
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// The SHA-256 states an HMAC under this key starts its inner and its outer hash from:
    /// each hash's first block is the key padded to 64 bytes and XORed with 0x36 (inner) or
    /// 0x5c (outer), whatever the message, so it is compressed once here rather than on
    /// every entry. 128 hex digits: the inner state's eight words, then the outer's, each
    /// big-endian. The Redis scripts finish each HMAC from them (`chain.lua`), which spares
    /// Redis's one thread two of the six SHA-256 blocks of an entry's seal.
    pub fn hmac_states_hex(&self) -> String {
        let state_after = |pad: u8| {
            let mut block = [pad; 64];
            for (byte, key) in block.iter_mut().zip(self.0) {
                *byte ^= key;
            }
            let mut state = SHA256_INITIAL_STATE;
            sha2::compress256(&mut state, &[block.into()]);
            state
        };
        let mut text = String::with_capacity(128);
        for word in state_after(0x36).iter().chain(&state_after(0x5c)) {
            text.push_str(&format!("{word:08x}"));
        }
        text
    }

    /// HMAC-SHA256 of `bytes` under this key.
    pub fn mac(&self, bytes: &[u8]) -> [u8; 32] {
        self.mac_of(&[bytes])
    }

    /// HMAC-SHA256 of `parts`, one after the other, under this key (without copying them
    /// into one buffer first).
    pub fn mac_of(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        for part in parts {
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }
}

/// SHA-256's initial state (FIPS 180-4, 5.3.3).
const SHA256_INITIAL_STATE: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// How a chain's entries are hashed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ChainKey {
    /// Plain SHA-256, as trails were sealed before keyed chains: it shows accidental damage
    /// only, since anyone who can write the store can hash again.
    #[default]
    Unkeyed,
    /// HMAC-SHA256 under a key the store does not hold.
    Keyed(Arc<AuditKey>),
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

/// Appends the lowercase hex SHA-256 of `bytes` to `out`. By table rather than through
/// `fmt`: every entry of every trail is hashed twice, and formatting 32 bytes one by one cost
/// three times the hashing.
fn push_sha256_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for byte in Sha256::digest(bytes) {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
}

/// The hash of an entry in an unkeyed chain: its place in the chain (`prev`, `seq`), its time,
/// and what it says.
pub fn link_hash(prev: &str, seq: u64, at_ms: u64, tail: &str) -> String {
    link_hash_with(&ChainKey::Unkeyed, prev, seq, at_ms, tail)
}

/// The hash of an entry in a chain keyed with `key`: over the same text as [`link_hash`], with
/// HMAC-SHA256 under the key in place of SHA-256.
pub fn link_hash_with(key: &ChainKey, prev: &str, seq: u64, at_ms: u64, tail: &str) -> String {
    link_hash_by(key, prev, seq, at_ms, |text| {
        push_sha256_hex(text, tail.as_bytes());
    })
}

/// [`link_hash_with`] of a tail whose SHA-256 is `digest` (lowercase hex), known already.
pub fn link_hash_of_digest(
    key: &ChainKey,
    prev: &str,
    seq: u64,
    at_ms: u64,
    digest: &str,
) -> String {
    link_hash_by(key, prev, seq, at_ms, |text| text.push_str(digest))
}

fn link_hash_by(
    key: &ChainKey,
    prev: &str,
    seq: u64,
    at_ms: u64,
    push_digest: impl FnOnce(&mut String),
) -> String {
    use std::fmt::Write as _;
    // `prev \n seq \n at_ms \n sha256(tail)`: 64 + 3 newlines + two numbers of at most 20
    // digits + 64.
    let mut text = String::with_capacity(64 + 3 + 20 + 20 + 64);
    text.push_str(prev);
    let _ = write!(text, "\n{seq}\n{at_ms}\n");
    push_digest(&mut text);
    match key {
        ChainKey::Unkeyed => sha256_hex(text.as_bytes()),
        ChainKey::Keyed(key) => hex(&key.mac(text.as_bytes())),
    }
}

/// An entry sealed onto its chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sealed {
    /// Its number in the session, from 1.
    pub seq: u64,
    /// The line as kept and exported.
    pub line: String,
    /// Its hash: the next entry's `prev`.
    pub hash: String,
}

/// Seals `tail` as entry `seq` at `at_ms`, after the entry whose hash is `prev`, in an unkeyed
/// chain.
pub fn seal(prev: &str, seq: u64, at_ms: u64, tail: &str) -> Sealed {
    seal_with(&ChainKey::Unkeyed, prev, seq, at_ms, tail)
}

/// [`seal`] in a chain hashed as `key` says.
pub fn seal_with(key: &ChainKey, prev: &str, seq: u64, at_ms: u64, tail: &str) -> Sealed {
    use std::fmt::Write as _;
    let hash = link_hash_with(key, prev, seq, at_ms, tail);
    // Sized once: the tail carries the questions' digest and the answer, and a line grown
    // piece by piece is copied on each doubling.
    let head = r#"{"seq":,"at_ms":,"#.len() + 20 + 20;
    let mut line = String::with_capacity(head + tail.len() + SUFFIX_LEN);
    let _ = write!(line, r#"{{"seq":{seq},"at_ms":{at_ms},"#);
    line.push_str(tail);
    line.push_str(r#","prev":""#);
    line.push_str(prev);
    line.push_str(r#"","hash":""#);
    line.push_str(&hash);
    line.push_str(r#""}"#);
    Sealed { seq, line, hash }
}

/// A sealed line, read back into its parts (nothing checked but its shape).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadLine<'a> {
    /// `seq`.
    pub seq: u64,
    /// `at_ms`.
    pub at_ms: u64,
    /// What the event says, as sealed.
    pub tail: &'a str,
    /// `prev`.
    pub prev: &'a str,
    /// `hash`.
    pub hash: &'a str,
}

impl ReadLine<'_> {
    /// Whether `hash` is what its parts hash to, unkeyed.
    pub fn hash_holds(&self) -> bool {
        self.hash_holds_with(&ChainKey::Unkeyed)
    }

    /// Whether `hash` is what its parts hash to under `key`.
    pub fn hash_holds_with(&self, key: &ChainKey) -> bool {
        link_hash_with(key, self.prev, self.seq, self.at_ms, self.tail) == self.hash
    }
}

fn number(text: &str) -> Option<(u64, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 20 {
        return None;
    }
    Some((text[..digits].parse().ok()?, &text[digits..]))
}

fn is_hex64(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Reads a sealed line's parts.
///
/// # Errors
/// The line is not shaped as a sealed entry.
pub fn read_line(line: &str) -> Result<ReadLine<'_>, &'static str> {
    const SHAPE: &str =
        "not an audit entry (it must start {\"seq\":N,\"at_ms\":T, and end with prev and hash)";
    let rest = line.strip_prefix(r#"{"seq":"#).ok_or(SHAPE)?;
    let (seq, rest) = number(rest).ok_or(SHAPE)?;
    let rest = rest.strip_prefix(r#","at_ms":"#).ok_or(SHAPE)?;
    let (at_ms, rest) = number(rest).ok_or(SHAPE)?;
    let rest = rest.strip_prefix(',').ok_or(SHAPE)?;
    if rest.len() < SUFFIX_LEN || !rest.is_char_boundary(rest.len() - SUFFIX_LEN) {
        return Err(SHAPE);
    }
    let (tail, suffix) = rest.split_at(rest.len() - SUFFIX_LEN);
    let suffix = suffix.strip_prefix(r#","prev":""#).ok_or(SHAPE)?;
    let (prev, suffix) = suffix.split_at(64);
    let suffix = suffix.strip_prefix(r#"","hash":""#).ok_or(SHAPE)?;
    let (hash, end) = suffix.split_at(64);
    if end != r#""}"# || !is_hex64(prev) || !is_hex64(hash) {
        return Err(SHAPE);
    }
    Ok(ReadLine {
        seq,
        at_ms,
        tail,
        prev,
        hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAIL: &str = r#""session":"s","id":"r","event":"acked","user":null,"tab":null"#;
    const KEYED_VECTOR: &str = "bb2026f364218ba859fbb59fd36a0387abf0844caa164b3004c9eb580ff9f39e";

    #[test]
    fn a_sealed_line_reads_back_and_is_json() {
        let first = seal(GENESIS, 1, 1_000, TAIL);
        let read = read_line(&first.line).unwrap();
        assert_eq!((read.seq, read.at_ms, read.tail), (1, 1_000, TAIL));
        assert_eq!((read.prev, read.hash), (GENESIS, first.hash.as_str()));
        assert!(read.hash_holds());
        let value: serde_json::Value = serde_json::from_str(&first.line).unwrap();
        assert_eq!(value["event"], "acked");
        assert_eq!(value["hash"], first.hash.as_str());
        let second = seal(&first.hash, 2, 1_001, TAIL);
        assert_ne!(second.hash, first.hash);
    }

    #[test]
    fn any_changed_byte_breaks_the_hash_or_the_shape() {
        let sealed = seal(GENESIS, 7, 1_000, TAIL);
        for at in 0..sealed.line.len() {
            let mut bytes = sealed.line.clone().into_bytes();
            bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
            let Ok(changed) = String::from_utf8(bytes) else {
                continue;
            };
            if let Ok(read) = read_line(&changed) {
                assert!(!read.hash_holds(), "a change at byte {at} went unseen");
            }
        }
    }

    #[test]
    fn the_known_vector_holds() {
        // Fixed here so that the Lua side (chain.lua) is held to the same bytes.
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_keyed_entry_hashes_as_documented() {
        // HMAC-SHA256(key, "<prev>\n<seq>\n<at_ms>\n" + sha256_hex(tail)) with the key
        // 00 01 .. 1f, worked out apart from this code (Python's hmac and hashlib).
        let key = AuditKey::from_bytes(std::array::from_fn(|i| i as u8));
        let keyed = ChainKey::Keyed(Arc::new(key));
        assert_eq!(
            link_hash_with(&keyed, GENESIS, 7, 1_000, TAIL),
            KEYED_VECTOR
        );
        assert_ne!(KEYED_VECTOR, link_hash(GENESIS, 7, 1_000, TAIL));
    }

    /// SHA-256 finished from `state`, which has taken `before` bytes already (whole blocks),
    /// over `message`: what chain.lua's `sha256_continue` does.
    fn finish_sha256(mut state: [u32; 8], before: usize, message: &[u8]) -> [u8; 32] {
        let mut padded = message.to_vec();
        padded.push(0x80);
        while padded.len() % 64 != 56 {
            padded.push(0);
        }
        padded.extend_from_slice(&(((before + message.len()) * 8) as u64).to_be_bytes());
        for block in padded.chunks(64) {
            let block: [u8; 64] = block.try_into().unwrap();
            sha2::compress256(&mut state, &[block.into()]);
        }
        let mut digest = [0; 32];
        for (bytes, word) in digest.chunks_mut(4).zip(state) {
            bytes.copy_from_slice(&word.to_be_bytes());
        }
        digest
    }

    #[test]
    fn an_hmac_finished_from_the_key_states_is_the_keys_mac() {
        let states = |hex: &str| -> [u32; 8] {
            std::array::from_fn(|i| u32::from_str_radix(&hex[i * 8..i * 8 + 8], 16).unwrap())
        };
        for key in [
            AuditKey::from_bytes(std::array::from_fn(|i| i as u8)),
            AuditKey::from_bytes([0xff; 32]),
            AuditKey::random(),
        ] {
            let text = key.hmac_states_hex();
            assert_eq!(text.len(), 128);
            // An entry's text is 140-odd bytes; a block's worth either side of it as well.
            for message in [&b""[..], b"abc", &[b'x'; 55], &[b'y'; 147], &[b'z'; 200]] {
                let inner = finish_sha256(states(&text[..64]), 64, message);
                let outer = finish_sha256(states(&text[64..]), 64, &inner);
                assert_eq!(
                    outer,
                    key.mac(message),
                    "message of {} bytes",
                    message.len()
                );
            }
        }
    }

    #[test]
    fn a_key_file_is_64_hex_digits_and_perhaps_a_newline() {
        let digits = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";
        assert_eq!(
            AuditKey::parse(digits.as_bytes()).unwrap().to_hex(),
            digits.to_lowercase()
        );
        assert!(AuditKey::parse(format!("{digits}\n").as_bytes()).is_ok());
        let wrong = |text: &str| AuditKey::parse(text.as_bytes()).unwrap_err();
        assert!(wrong("").contains("found 0 bytes"), "{}", wrong(""));
        assert!(wrong(&digits[..63]).contains("found 63 bytes"));
        assert!(wrong(&format!("{digits}\n\n")).contains("more than one line end"));
        assert!(wrong(&format!("{digits} ")).contains("found 65 bytes"));
        let not_hex = format!("{}g", &digits[..63]);
        assert_eq!(wrong(&not_hex), "byte 64 is 'g', not a hex digit");
    }

    #[test]
    fn a_link_hashed_from_the_tail_s_digest_is_the_link_hashed_from_the_tail() {
        let keyed = ChainKey::Keyed(Arc::new(AuditKey::from_bytes([3; 32])));
        for key in [ChainKey::Unkeyed, keyed] {
            let digest = sha256_hex(TAIL.as_bytes());
            assert_eq!(
                link_hash_of_digest(&key, GENESIS, 9, 1_234, &digest),
                link_hash_with(&key, GENESIS, 9, 1_234, TAIL)
            );
        }
    }

    #[test]
    fn an_entry_hashes_as_documented() {
        // sha256("<prev>\n<seq>\n<at_ms>\n" + sha256_hex(tail)), worked out apart from this
        // code (Python's hashlib), largest numbers included.
        assert_eq!(
            link_hash(GENESIS, 7, 1_000, TAIL),
            "b7eca1c2c42883b3d4f6e9306762eb0ade407e31630c5dc9f63175a8da005bdc"
        );
        assert_eq!(
            link_hash(GENESIS, u64::MAX, u64::MAX, TAIL),
            "5cb51e0ab088ac329f97d0de2072b9124cbd0b0cdc113916c5222c48f6f6ba66"
        );
    }
}
