//! The audit trail: every event of every request, appended by the store in the same commit as
//! the change it records, one hash chain per session.
//!
//! An entry is one line of JSON: `{"seq":N,"at_ms":T,` then what the event says (its
//! [`tail`]: `"session"`, `"id"`, `"event"`, `"user"`, `"tab"` and the event's
//! own fields), then `,"prev":"…","hash":"…"}`. `hash` is
//! `HMAC-SHA256(audit key, prev "\n" seq "\n" at_ms "\n" SHA-256(tail))` in lowercase hex on a
//! keyed chain, plain `SHA-256` of the same text on an unkeyed one (stores from before audit
//! keys), and `prev` is the hash of the session's entry before (64 zeros for its first):
//! removing, reordering or editing an entry breaks the chain at that entry ([`verify`]), and
//! without the key it cannot be sealed again.
//!
//! - [`event`]: what is recorded, and the entry each store change makes.
//! - [`chain`]: sealing an entry onto its chain (unkeyed, or keyed with the audit key), and
//!   reading one back.
//! - [`checkpoint`]: a chain's last entry signed (Ed25519, derived from the audit key).
//! - [`verify`]: walking chains, naming the first broken entry.
//! - [`history`]: a session's recent ended requests, read back from its trail, for the page.

pub mod chain;
pub mod checkpoint;
pub mod event;
pub mod history;
pub mod verify;

pub use chain::{GENESIS, Sealed, read_line, seal};
pub use event::{Event, Note, RULE_BY_PREFIX, Who, questions_digest, tail};

/// How long a session's trail is kept after its newest entry, unless configured.
pub const DEFAULT_AUDIT_RETENTION_DAYS: u64 = 90;
