//! The audit trails in redb: table `audit`, key `(session, seq)`, value the sealed line; table
//! `audit_heads`, key `session`, value `"{seq} {last at_ms} {hash}"` (the newest entry's
//! number and hash, to seal the next one onto, and the time the retention counts from).
//! Sealed when redb takes the change each entry records, in the same transaction, from what
//! the log kept of it (its time and members), so a replay after a crash seals the same line.

use std::collections::HashMap;

use redb::{ReadableDatabase as _, ReadableTable as _, TableDefinition};

use askgate_protocol::SessionId;

use super::err;
use crate::audit::{GENESIS, seal};
use crate::store::StoreError;

pub(super) const AUDIT: TableDefinition<'_, (&str, u64), &str> = TableDefinition::new("audit");
pub(super) const HEADS: TableDefinition<'_, &str, &str> = TableDefinition::new("audit_heads");

/// The trail tables, open in one write transaction. Heads sealed onto are kept here and
/// written once each, by [`TrailTables::write_heads`]: a checkpoint seals thousands of entries
/// onto a few hundred chains.
pub(super) struct TrailTables<'t> {
    pub(super) entries: redb::Table<'t, (&'static str, u64), &'static str>,
    pub(super) heads: redb::Table<'t, &'static str, &'static str>,
    /// Each chain's head as sealed onto in this transaction: seq, newest time, hash.
    pub(super) sealed_heads: HashMap<String, (u64, u64, String)>,
}

/// A head as kept: seq, the newest entry's time, hash.
fn read_head(text: &str) -> Option<(u64, u64, &str)> {
    let mut parts = text.splitn(3, ' ');
    Some((
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
        parts.next()?,
    ))
}

impl<'t> TrailTables<'t> {
    /// The trail tables of `txn`.
    pub(super) fn open(txn: &'t redb::WriteTransaction) -> Result<Self, String> {
        Ok(TrailTables {
            entries: txn
                .open_table(AUDIT)
                .map_err(|e| format!("opening the audit table: {e}"))?,
            heads: txn
                .open_table(HEADS)
                .map_err(|e| format!("opening the audit heads: {e}"))?,
            sealed_heads: HashMap::new(),
        })
    }

    /// Seals the entry of `session` at `at_ms` whose members after `seq` and `at_ms` are
    /// `tail` onto the session's chain.
    pub(super) fn record(&mut self, session: &str, at_ms: u64, tail: &str) -> Result<(), String> {
        let head = match self.sealed_heads.remove(session) {
            Some(head) => Some(head),
            None => self.stored_head(session)?,
        };
        let (seq, prev) = head
            .as_ref()
            .map_or((1, GENESIS), |(seq, _, hash)| (seq + 1, hash.as_str()));
        let sealed = seal(prev, seq, at_ms, tail);
        let last_at = head.map_or(at_ms, |(_, at, _)| at.max(at_ms));
        self.entries
            .insert((session, sealed.seq), sealed.line.as_str())
            .map_err(|e| format!("writing an audit entry: {e}"))?;
        self.sealed_heads
            .insert(session.to_owned(), (sealed.seq, last_at, sealed.hash));
        Ok(())
    }

    /// `session`'s head as the table keeps it.
    fn stored_head(&self, session: &str) -> Result<Option<(u64, u64, String)>, String> {
        let Some(text) = self
            .heads
            .get(session)
            .map_err(|e| format!("reading an audit head: {e}"))?
        else {
            return Ok(None);
        };
        let (seq, at, hash) = read_head(text.value())
            .ok_or_else(|| format!("the audit head of session {session} is damaged"))?;
        Ok(Some((seq, at, hash.to_owned())))
    }

    /// Writes the heads sealed onto since the last call.
    pub(super) fn write_heads(&mut self) -> Result<(), String> {
        for (session, (seq, last_at, hash)) in self.sealed_heads.drain() {
            let head = format!("{seq} {last_at} {hash}");
            self.heads
                .insert(session.as_str(), head.as_str())
                .map_err(|e| format!("writing an audit head: {e}"))?;
        }
        Ok(())
    }

    /// Drops, whole, every trail whose newest entry is older than `before_ms`.
    pub(super) fn drop_stale(&mut self, before_ms: u64) -> Result<(), String> {
        self.write_heads()?;
        let mut stale = Vec::new();
        for row in self
            .heads
            .iter()
            .map_err(|e| format!("reading audit heads: {e}"))?
        {
            let (session, head) = row.map_err(|e| format!("reading an audit head: {e}"))?;
            if read_head(head.value()).is_some_and(|(_, at, _)| at < before_ms) {
                stale.push(session.value().to_owned());
            }
        }
        for session in &stale {
            self.entries
                .retain_in(
                    (session.as_str(), 0)..=(session.as_str(), u64::MAX),
                    |_, _| false,
                )
                .map_err(|e| format!("dropping an audit trail: {e}"))?;
            self.heads
                .remove(session.as_str())
                .map_err(|e| format!("dropping an audit head: {e}"))?;
        }
        if !stale.is_empty() {
            tracing::info!(
                sessions = stale.len(),
                "dropped audit trails past their retention"
            );
        }
        Ok(())
    }
}

/// Entries of `session` after `after_seq`, at most `limit`; or with `newest`, the newest
/// `limit` (oldest first either way).
pub(super) fn read(
    db: &redb::Database,
    session: &SessionId,
    after_seq: u64,
    limit: usize,
    newest: bool,
) -> Result<Vec<String>, StoreError> {
    let txn = db.begin_read().map_err(|e| err("starting a read", e))?;
    let table = match txn.open_table(AUDIT) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(err("opening the audit table", e)),
    };
    let id = session.as_str();
    let range = table
        .range((id, after_seq.saturating_add(1))..=(id, u64::MAX))
        .map_err(|e| err("reading the audit trail", e))?;
    let rows: Box<dyn Iterator<Item = _>> = if newest {
        Box::new(range.rev().take(limit))
    } else {
        Box::new(range.take(limit))
    };
    let mut lines = rows
        .map(|row| {
            row.map(|(_, line)| line.value().to_owned())
                .map_err(|e| err("reading an audit entry", e))
        })
        .collect::<Result<Vec<String>, StoreError>>()?;
    if newest {
        lines.reverse();
    }
    Ok(lines)
}

/// Every session with a trail.
pub(super) fn sessions(db: &redb::Database) -> Result<Vec<SessionId>, StoreError> {
    let txn = db.begin_read().map_err(|e| err("starting a read", e))?;
    let table = match txn.open_table(HEADS) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(err("opening the audit heads", e)),
    };
    let mut out = Vec::new();
    for row in table.iter().map_err(|e| err("reading audit heads", e))? {
        let (session, _) = row.map_err(|e| err("reading an audit head", e))?;
        if let Ok(id) = SessionId::parse(session.value()) {
            out.push(id);
        }
    }
    Ok(out)
}
