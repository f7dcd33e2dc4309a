//! The audit trails in redb: table `audit`, key `(session, seq)`, value the sealed lines of
//! entries `seq`, `seq + 1`… of that session, one line each, joined by newlines (a sealed line
//! is JSON on one line): all a checkpoint sealed onto the session, written as one row, since
//! a row costs redb a B-tree insert and a page written whatever it holds. Table
//! `audit_heads`, key `session`, value `"{seq} {last at_ms} {hash}"` (the newest entry's
//! number and hash, to seal the next one onto, and the time the retention counts from).
//! Sealed when redb takes the change each entry records, in the same transaction, from what
//! the log kept of it (its time and members), so a replay after a crash seals the same line.

use std::collections::HashMap;

use redb::{ReadableDatabase, ReadableTable as _, TableDefinition};

use askgate_protocol::SessionId;

use super::err;
use crate::audit::chain::{ChainKey, seal_with};
use crate::audit::{GENESIS, read_line};
use crate::store::StoreError;

pub(super) const AUDIT: TableDefinition<'_, (&str, u64), &str> = TableDefinition::new("audit");
pub(super) const HEADS: TableDefinition<'_, &str, &str> = TableDefinition::new("audit_heads");

/// The trail tables, open in one write transaction. What is sealed is kept here and written
/// once for each session, by [`TrailTables::write_sealed`]: a checkpoint seals thousands of
/// entries onto some hundreds of chains.
pub(super) struct TrailTables<'t> {
    pub(super) entries: redb::Table<'t, (&'static str, u64), &'static str>,
    pub(super) heads: redb::Table<'t, &'static str, &'static str>,
    /// Each chain sealed onto in this transaction.
    sealed: HashMap<String, Sealing>,
    /// How entries are hashed.
    chain: ChainKey,
}

/// What a transaction has sealed onto one chain.
struct Sealing {
    /// The head: seq, newest time, hash.
    head: (u64, u64, String),
    /// The seq of the first line below.
    first_seq: u64,
    /// The sealed lines, joined by newlines.
    lines: String,
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
    pub(super) fn open(txn: &'t redb::WriteTransaction, chain: &ChainKey) -> Result<Self, String> {
        Ok(TrailTables {
            entries: txn
                .open_table(AUDIT)
                .map_err(|e| format!("opening the audit table: {e}"))?,
            heads: txn
                .open_table(HEADS)
                .map_err(|e| format!("opening the audit heads: {e}"))?,
            sealed: HashMap::new(),
            chain: chain.clone(),
        })
    }

    /// Seals the entry of `session` at `at_ms` whose members after `seq` and `at_ms` are
    /// `tail` onto the session's chain.
    pub(super) fn record(&mut self, session: &str, at_ms: u64, tail: &str) -> Result<(), String> {
        let head = match self.sealed.get(session) {
            Some(sealing) => Some(sealing.head.clone()),
            None => self.stored_head(session)?,
        };
        let (seq, prev) = head
            .as_ref()
            .map_or((1, GENESIS), |(seq, _, hash)| (seq + 1, hash.as_str()));
        let sealed = seal_with(&self.chain, prev, seq, at_ms, tail);
        let last_at = head.map_or(at_ms, |(_, at, _)| at.max(at_ms));
        let head = (sealed.seq, last_at, sealed.hash);
        match self.sealed.get_mut(session) {
            Some(sealing) => {
                sealing.lines.push('\n');
                sealing.lines.push_str(&sealed.line);
                sealing.head = head;
            }
            None => {
                let sealing = Sealing {
                    head,
                    first_seq: sealed.seq,
                    lines: sealed.line,
                };
                self.sealed.insert(session.to_owned(), sealing);
            }
        }
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

    /// Writes what was sealed since the last call: for each session, its lines as one row and
    /// its new head.
    pub(super) fn write_sealed(&mut self) -> Result<(), String> {
        for (session, sealing) in self.sealed.drain() {
            self.entries
                .insert(
                    (session.as_str(), sealing.first_seq),
                    sealing.lines.as_str(),
                )
                .map_err(|e| format!("writing audit entries: {e}"))?;
            let (seq, last_at, hash) = sealing.head;
            let head = format!("{seq} {last_at} {hash}");
            self.heads
                .insert(session.as_str(), head.as_str())
                .map_err(|e| format!("writing an audit head: {e}"))?;
        }
        Ok(())
    }

    /// Drops, whole, every trail whose newest entry is older than `before_ms`.
    pub(super) fn drop_stale(&mut self, before_ms: u64) -> Result<(), String> {
        self.write_sealed()?;
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
    db: &impl ReadableDatabase,
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
    let reading = |e| err("reading the audit trail", e);
    let mut lines = Vec::new();
    if newest {
        for row in table
            .range((id, 0)..=(id, u64::MAX))
            .map_err(reading)?
            .rev()
        {
            let (_, row) = row.map_err(reading)?;
            let left = limit - lines.len();
            lines.extend(row.value().rsplit('\n').take(left).map(str::to_owned));
            if lines.len() == limit {
                break;
            }
        }
        lines.reverse();
        return Ok(lines);
    }
    // The row holding entry `after_seq + 1` starts at or before it.
    let first = after_seq.saturating_add(1);
    let start = table
        .range((id, 0)..=(id, first))
        .map_err(reading)?
        .next_back()
        .transpose()
        .map_err(reading)?
        .map_or(first, |(key, _)| key.value().1);
    for row in table.range((id, start)..=(id, u64::MAX)).map_err(reading)? {
        let (_, row) = row.map_err(reading)?;
        for line in row.value().split('\n') {
            if lines.len() == limit {
                return Ok(lines);
            }
            let seq = read_line(line)
                .map_err(|why| StoreError::damaged(format!("session {id}'s audit trail: {why}")))?
                .seq;
            if seq > after_seq {
                lines.push(line.to_owned());
            }
        }
    }
    Ok(lines)
}

/// One session's newest entry (the first session with a trail), if any trail is kept.
pub(super) fn an_entry(db: &impl ReadableDatabase) -> Result<Option<String>, StoreError> {
    let head = {
        let txn = db.begin_read().map_err(|e| err("starting a read", e))?;
        let table = match txn.open_table(HEADS) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(err("opening the audit heads", e)),
        };
        let first = table
            .iter()
            .map_err(|e| err("reading audit heads", e))?
            .next()
            .transpose()
            .map_err(|e| err("reading an audit head", e))?;
        first.map(|(session, head)| (session.value().to_owned(), head.value().to_owned()))
    };
    let Some((session, head)) = head else {
        return Ok(None);
    };
    let (Ok(session), Some((seq, _, _))) = (SessionId::parse(&session), read_head(&head)) else {
        return Ok(None);
    };
    Ok(read(db, &session, seq.saturating_sub(1), 1, false)?
        .into_iter()
        .next())
}

/// Every session with a trail.
pub(super) fn sessions(db: &impl ReadableDatabase) -> Result<Vec<SessionId>, StoreError> {
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

#[cfg(test)]
mod tests {
    use redb::Database;

    use super::*;

    /// A trail sealed over three transactions of 5, 1 and 3 entries: rows of several lines.
    fn trail() -> (Database, Vec<String>) {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .unwrap();
        let mut at = 0;
        for entries in [5, 1, 3] {
            let txn = db.begin_write().unwrap();
            {
                let mut trails = TrailTables::open(&txn, &ChainKey::Unkeyed).unwrap();
                for _ in 0..entries {
                    at += 1;
                    let tail = format!(r#""session":"s","n":{at}"#);
                    trails.record("s", at, &tail).unwrap();
                    trails.record("other", at, &tail).unwrap();
                }
                trails.write_sealed().unwrap();
            }
            txn.commit().unwrap();
        }
        let all = read(&db, &SessionId::parse("s").unwrap(), 0, usize::MAX, false).unwrap();
        (db, all)
    }

    #[test]
    fn a_trail_reads_back_entry_by_entry_across_its_rows() {
        let (db, all) = trail();
        let seqs: Vec<u64> = all.iter().map(|l| read_line(l).unwrap().seq).collect();
        assert_eq!(seqs, (1..=9).collect::<Vec<u64>>());
        let session = SessionId::parse("s").unwrap();
        for after in 0..=10 {
            for limit in 0..=10 {
                let skip = usize::try_from(after).unwrap().min(all.len());
                let expected: Vec<String> = all[skip..].iter().take(limit).cloned().collect();
                let got = read(&db, &session, after, limit, false).unwrap();
                assert_eq!(got, expected, "after {after}, at most {limit}");
            }
        }
        for limit in 0..=10 {
            let expected = all[all.len().saturating_sub(limit)..].to_vec();
            let got = read(&db, &session, 0, limit, true).unwrap();
            assert_eq!(got, expected, "the newest {limit}");
        }
    }
}
