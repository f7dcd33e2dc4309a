//! What a node proposes to seal. An entry's hash depends on the trail's head and on Redis's
//! clock when the script runs, so the script works it out (`chain.lua`), and SHA-256 in Lua
//! costs Redis ~45 µs a block, an entry four or five blocks: at a few hundred requests a
//! second that was most of Redis's time. The node hashes in about a microsecond, so with each
//! sealing script it sends the hashes the entry would get after the head it last heard of
//! (from the session's notices, which carry it) for each of the few milliseconds Redis's clock
//! is likely to read. The script takes one only when both hold; otherwise it hashes as before.
//! A wrong guess costs Redis the hashing, never the entry: its number, its time by Redis's
//! clock and its place in the chain are the script's either way.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, OnceLock};

use askgate_protocol::SessionId;

use crate::audit::chain::{AuditKey, ChainKey, link_hash_of_digest};
use crate::clock::now_ms;

/// Heads kept per generation: when the newer one fills, the older is dropped and the newer
/// takes its place, so at most twice this many are held, the ones heard of last.
const HEADS_PER_GENERATION: usize = 4096;

/// Milliseconds of Redis's clock a proposal covers: from one before the estimate to two after
/// (a loopback round trip is well under one; the estimate itself is a round trip old).
const CANDIDATES: u64 = 4;

/// The node's side of sealing on Redis.
#[derive(Default)]
pub(super) struct Seals {
    /// The audit key, and its HMAC states as the scripts take them; unset for an unkeyed chain.
    key: OnceLock<(ChainKey, String)>,
    heads: Mutex<Heads>,
    /// Redis's clock less this node's, in ms, as the last reply with Redis's time showed it
    /// (that time less when the node sent the script: so a round trip's delay is in it too).
    ahead_ms: AtomicI64,
}

/// The newest head heard of per session (the head key's text: `seq hash`; never empty), in
/// two generations.
#[derive(Default)]
struct Heads {
    newer: HashMap<SessionId, String>,
    older: HashMap<SessionId, String>,
}

impl Heads {
    fn get(&self, session: &SessionId) -> Option<&String> {
        self.newer.get(session).or_else(|| self.older.get(session))
    }

    fn note(&mut self, session: &SessionId, head: &str) {
        if let Some(kept) = self.newer.get_mut(session) {
            kept.clear();
            kept.push_str(head);
            return;
        }
        if self.newer.len() >= HEADS_PER_GENERATION {
            self.older = std::mem::take(&mut self.newer);
        }
        self.older.remove(session);
        self.newer.insert(session.clone(), head.to_owned());
    }
}

impl Seals {
    /// Seals with `key` from now on (set once, at start).
    pub(super) fn set_key(&self, key: &AuditKey) {
        let _ = self.key.set((
            ChainKey::Keyed(std::sync::Arc::new(key.clone())),
            key.hmac_states_hex(),
        ));
    }

    /// The audit key's HMAC states, or '' for an unkeyed chain.
    pub(super) fn key_states(&self) -> &str {
        self.key.get().map_or("", |(_, states)| states.as_str())
    }

    fn heads(&self) -> std::sync::MutexGuard<'_, Heads> {
        self.heads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes `head` (`seq hash`), read from a notice of `session`'s.
    pub(super) fn heard(&self, session: &SessionId, head: &str) {
        self.heads().note(session, head);
    }

    /// Notes `head` (`seq hash`, or '' for a session without a trail), read with `session`
    /// when it was loaded, unless a notice told a head already (which may be newer). A
    /// session without a trail is not noted: a node loads every session a tab opens, most
    /// never asked in (95,000 idle tabs over 5 nodes would keep 8,192 entries a node for
    /// nothing), so a session's first entry is hashed by Redis.
    pub(super) fn loaded(&self, session: &SessionId, head: &str) {
        if head.is_empty() {
            return;
        }
        let mut heads = self.heads();
        if heads.get(session).is_none() {
            heads.note(session, head);
        }
    }

    /// Notes what Redis's clock read (`redis_ms`) for a script sent at `sent_ms`.
    pub(super) fn clock_read(&self, sent_ms: u64, redis_ms: u64) {
        let ahead = i64::try_from(redis_ms).unwrap_or(i64::MAX)
            - i64::try_from(sent_ms).unwrap_or(i64::MAX);
        self.ahead_ms.store(ahead, Ordering::Relaxed);
    }

    /// The seal argument for an entry of `session`'s whose tail hashes to `digest`: the key's
    /// states, then the proposal when the node knows the trail's head (chain.lua says how it
    /// reads). `proposed` says which.
    pub(super) fn arg(&self, session: &SessionId, digest: &str) -> Seal {
        let unproposed = || Seal {
            arg: self.key_states().to_owned(),
            proposed: false,
        };
        if digest.is_empty() {
            return unproposed();
        }
        let Some(head) = self.heads().get(session).cloned() else {
            return unproposed();
        };
        let Some((seq, prev)) = head
            .split_once(' ')
            .and_then(|(seq, prev)| Some((seq.parse::<u64>().ok()?.checked_add(1)?, prev)))
        else {
            return unproposed();
        };
        let estimate = i64::try_from(now_ms())
            .unwrap_or(i64::MAX)
            .saturating_add(self.ahead_ms.load(Ordering::Relaxed));
        let Ok(first_at) = u64::try_from(estimate.saturating_sub(1)) else {
            return unproposed();
        };
        let (key, states) = self
            .key
            .get()
            .map_or((&ChainKey::Unkeyed, ""), |(key, states)| {
                (key, states.as_str())
            });
        let mut arg = String::with_capacity(states.len() + head.len() + 24 + 64 * 4);
        arg.push_str(states);
        arg.push('|');
        arg.push_str(&head);
        let _ = write!(arg, "|{first_at}|");
        for at in first_at..first_at + CANDIDATES {
            arg.push_str(&link_hash_of_digest(key, prev, seq, at, digest));
        }
        Seal {
            arg,
            proposed: true,
        }
    }
}

/// A sealing script's seal argument.
pub(super) struct Seal {
    pub(super) arg: String,
    /// Whether it proposes hashes (or only gives the key's states).
    pub(super) proposed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::chain::sha256_hex;

    fn session(name: &str) -> SessionId {
        SessionId::parse(name).unwrap()
    }

    #[test]
    fn a_proposal_hashes_the_next_entry_after_the_head_heard_for_each_millisecond() {
        let seals = Seals::default();
        let key = AuditKey::from_bytes([7; 32]);
        seals.set_key(&key);
        let digest = sha256_hex(b"\"event\":\"asked\"");
        let unheard = seals.arg(&session("s"), &digest);
        assert!(!unheard.proposed);
        assert_eq!(unheard.arg, key.hmac_states_hex());

        let prev = "ab".repeat(32);
        seals.heard(&session("s"), &format!("41 {prev}"));
        let before = now_ms();
        let seal = seals.arg(&session("s"), &digest);
        let after = now_ms();
        assert!(seal.proposed);
        let parts: Vec<&str> = seal.arg.split('|').collect();
        assert_eq!(parts.len(), 4, "{}", seal.arg);
        assert_eq!(parts[0], key.hmac_states_hex());
        assert_eq!(parts[1], format!("41 {prev}"));
        let first: u64 = parts[2].parse().unwrap();
        assert!(
            first + 1 >= before && first < after,
            "{first} in {before}..={after}"
        );
        assert_eq!(parts[3].len(), 64 * 4);
        let chain = ChainKey::Keyed(std::sync::Arc::new(key));
        for (i, hash) in parts[3].as_bytes().chunks(64).enumerate() {
            let at = first + i as u64;
            assert_eq!(
                std::str::from_utf8(hash).unwrap(),
                link_hash_of_digest(&chain, &prev, 42, at, &digest)
            );
        }
        // An entry the script does not seal (no tail) gets no proposal.
        assert!(!seals.arg(&session("s"), "").proposed);
    }

    #[test]
    fn the_estimate_follows_redis_s_clock_and_a_newer_head_replaces_the_older() {
        let seals = Seals::default();
        let prev = "cd".repeat(32);
        seals.heard(&session("s"), &format!("1 {prev}"));
        seals.heard(&session("s"), &format!("2 {prev}"));
        let sent = now_ms();
        seals.clock_read(sent, sent + 60_000);
        let seal = seals.arg(&session("s"), &sha256_hex(b"x"));
        let parts: Vec<&str> = seal.arg.split('|').collect();
        assert_eq!(parts[0], "", "unkeyed: no states");
        assert_eq!(parts[1], format!("2 {prev}"));
        let first: u64 = parts[2].parse().unwrap();
        assert!(first + 1 >= sent + 60_000, "{first} follows Redis's clock");
    }

    #[test]
    fn a_loaded_head_is_noted_unless_empty_and_a_notice_outranks_a_load() {
        let seals = Seals::default();
        let digest = sha256_hex(b"x");
        seals.loaded(&session("new"), "");
        assert!(!seals.arg(&session("new"), &digest).proposed);
        assert!(seals.heads.lock().unwrap().newer.is_empty());
        seals.loaded(&session("read"), &format!("3 {}", "4".repeat(64)));
        assert!(seals.arg(&session("read"), &digest).proposed);

        let (heard, read) = (
            format!("9 {}", "1".repeat(64)),
            format!("8 {}", "2".repeat(64)),
        );
        seals.heard(&session("old"), &heard);
        seals.loaded(&session("old"), &read);
        let seal = seals.arg(&session("old"), &digest);
        assert_eq!(seal.arg.split('|').nth(1), Some(heard.as_str()));
    }

    #[test]
    fn heads_are_bounded_to_the_newest_two_generations() {
        let seals = Seals::default();
        let prev = "ef".repeat(32);
        let total = HEADS_PER_GENERATION * 2 + 10;
        for n in 0..total {
            seals.heard(&session(&format!("s{n}")), &format!("1 {prev}"));
        }
        let heads = seals.heads.lock().unwrap();
        assert!(heads.newer.len() + heads.older.len() <= 2 * HEADS_PER_GENERATION);
        let newest = session(&format!("s{}", total - 1));
        assert!(heads.newer.contains_key(&newest));
        assert!(
            !heads.newer.contains_key(&session("s0")) && !heads.older.contains_key(&session("s0"))
        );
        drop(heads);
        assert!(seals.arg(&newest, &sha256_hex(b"x")).proposed);
        assert!(!seals.arg(&session("s0"), &sha256_hex(b"x")).proposed);
    }
}
