//! The audit trails in redb: table `audit`, key `(session, seq)`, value the sealed line; table
//! `audit_heads`, key `session`, value `"{seq} {last at_ms} {hash}"` (the newest entry's
//! number and hash, to seal the next one onto, and the time the retention counts from).
//! Sealed when redb takes the change each entry records, in the same transaction, from what
//! the log kept of it (its time and members), so a replay after a crash seals the same line.

use redb::{ReadableDatabase as _, ReadableTable as _, TableDefinition};

use askgate_protocol::SessionId;

use super::err;
use crate::audit::{GENESIS, seal};
use crate::store::StoreError;

pub(super) const AUDIT: TableDefinition<'_, (&str, u64), &str> = TableDefinition::new("audit");
pub(super) const HEADS: TableDefinition<'_, &str, &str> = TableDefinition::new("audit_heads");

/// The trail tables, open in one write transaction.
pub(super) struct TrailTables<'t> {
    pub(super) entries: redb::Table<'t, (&'static str, u64), &'static str>,
    pub(super) heads: redb::Table<'t, &'static str, &'static str>,
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

impl TrailTables<'_> {
    /// Seals the entry of `session` at `at_ms` whose members after `seq` and `at_ms` are
    /// `tail` onto the session's chain.
    pub(super) fn record(&mut self, session: &str, at_ms: u64, tail: &str) -> Result<(), String> {
        let head = self
            .heads
            .get(session)
            .map_err(|e| format!("reading an audit head: {e}"))?
            .map(|v| v.value().to_owned());
        let parsed = match head.as_deref() {
            None => None,
            Some(text) => Some(
                read_head(text)
                    .ok_or_else(|| format!("the audit head of session {session} is damaged"))?,
            ),
        };
        let (seq, prev) = parsed.map_or((1, GENESIS), |(seq, _, hash)| (seq + 1, hash));
        let sealed = seal(prev, seq, at_ms, tail);
        let last_at = parsed.map_or(at_ms, |(_, at, _)| at.max(at_ms));
        self.entries
            .insert((session, sealed.seq), sealed.line.as_str())
            .map_err(|e| format!("writing an audit entry: {e}"))?;
        let head = format!("{} {last_at} {}", sealed.seq, sealed.hash);
        self.heads
            .insert(session, head.as_str())
            .map_err(|e| format!("writing an audit head: {e}"))?;
        Ok(())
    }

    /// Drops, whole, every trail whose newest entry is older than `before_ms`.
    pub(super) fn drop_stale(&mut self, before_ms: u64) -> Result<(), String> {
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
