//! The audit trails on Redis: what the node hands a script to seal (an entry's tail and its
//! digest), reading trails back, and the index of sessions that have one.
//!
//! A trail is a list (`{session}:audit`) and its head (`{session}:audit:head`), both sealed
//! by `chain.lua` inside the script whose change they record, both expiring the retention
//! after the newest entry. The index (`{audit}`, scored by last write) is only for finding
//! trails (exports, `askgate audit verify`); it is written beside the scripts, and an entry
//! whose trail has expired is dropped from it by the sweep.

use askgate_protocol::SessionId;

use super::Inner;
use super::lua::Index;
use super::lua::redis_error;
use crate::audit::{Note, chain::sha256_hex, tail};
use crate::clock::now_ms;
use crate::store::{StoreError, StoreOp, Verdict};

/// Most sessions the index sweep looks at in one go.
const INDEX_SWEEP_BATCH: usize = 1000;

/// An entry as a script seals it: what it says, and that text's SHA-256.
#[derive(Debug, Default)]
pub(super) struct Entry {
    pub(super) tail: String,
    pub(super) digest: String,
}

impl Entry {
    pub(super) fn of(note: &Note<'_>) -> Entry {
        let tail = tail(note);
        Entry {
            digest: sha256_hex(tail.as_bytes()),
            tail,
        }
    }

    /// The entry store change `op` makes in its trail (empty if it makes none); the store's
    /// clock times it, so none is given here.
    pub(super) fn of_op(op: &StoreOp) -> Entry {
        Note::of(op, 0)
            .map(|note| Entry::of(&note))
            .unwrap_or_default()
    }
}

impl Inner {
    /// The trails index's entry for `session`, as of now.
    pub(super) fn trails_index(&self, session: &SessionId) -> Index {
        Index {
            key: self.keys.trails(),
            mode: "GT",
            score: now_ms(),
            member: session.as_str().to_owned(),
            keep_newest: None,
        }
    }

    /// Seals `note` onto its session's trail.
    pub(super) async fn note(&self, note: &Note<'_>) -> Result<Verdict, StoreError> {
        let entry = Entry::of(note);
        let session = &note.session;
        let _: String = self
            .index_then_run(
                "recording an audit entry",
                &[self.trails_index(session)],
                self.scripts
                    .note
                    .key(self.keys.trail(session))
                    .key(self.keys.trail_head(session))
                    .arg(&entry.tail)
                    .arg(&entry.digest)
                    .arg(self.audit_retention_ms)
                    .arg(self.seals.arg(session, &entry.digest).arg),
            )
            .await?;
        Ok(Verdict::Done)
    }

    /// Drops from the index the sessions not written since `before_ms` whose trail has
    /// expired (Redis dropped the trail itself); one whose trail lives on (its later entries
    /// did not touch the index) is given its head's time again.
    pub(super) async fn drop_stale_trails(&self, before_ms: u64) -> Result<Verdict, StoreError> {
        let mut conn = self.conn.clone();
        let stale: Vec<String> = redis::cmd("ZRANGE")
            .arg(self.keys.trails())
            .arg("-inf")
            .arg(format!("({before_ms}"))
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(0)
            .arg(INDEX_SWEEP_BATCH)
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_error("reading the audit index", &e))?;
        for member in stale {
            let Ok(session) = SessionId::parse(&member) else {
                continue;
            };
            let alive: bool = redis::cmd("EXISTS")
                .arg(self.keys.trail_head(&session))
                .query_async(&mut conn)
                .await
                .map_err(|e| redis_error("reading an audit head", &e))?;
            if alive {
                self.index(&self.trails_index(&session)).await?;
            } else {
                let () = redis::cmd("ZREM")
                    .arg(self.keys.trails())
                    .arg(&member)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| redis_error("updating the audit index", &e))?;
            }
        }
        Ok(Verdict::Done)
    }

    /// Entries `from..=to` of `session`'s trail (list positions, negative from the end).
    pub(super) async fn trail_range(
        &self,
        session: &SessionId,
        from: i64,
        to: i64,
    ) -> Result<Vec<String>, StoreError> {
        let mut conn = self.conn.clone();
        let started = std::time::Instant::now();
        let lines = redis::cmd("LRANGE")
            .arg(self.keys.trail(session))
            .arg(from)
            .arg(to)
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_error("reading an audit trail", &e));
        self.metrics.shared.round_trip(started.elapsed());
        lines
    }

    /// Every session the index lists whose trail is still there.
    pub(super) async fn trail_sessions(&self) -> Result<Vec<SessionId>, StoreError> {
        let mut conn = self.conn.clone();
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(self.keys.trails())
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_error("reading the audit index", &e))?;
        let mut sessions: Vec<SessionId> = members
            .iter()
            .filter_map(|member| SessionId::parse(member).ok())
            .collect();
        sessions.sort();
        Ok(sessions)
    }
}

/// List positions for entries after `after_seq`, at most `limit` (a trail's entries are
/// numbered from 1 with no gaps, so entry `seq` sits at position `seq - 1`).
pub(super) fn positions_after(after_seq: u64, limit: usize) -> (i64, i64) {
    let from = i64::try_from(after_seq).unwrap_or(i64::MAX);
    let count = i64::try_from(limit).unwrap_or(i64::MAX).max(1);
    (from, from.saturating_add(count - 1))
}
