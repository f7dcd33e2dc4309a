//! At start: what the log holds past what redb has is written into redb, file by file, and
//! the log files are deleted; the appender then starts a new one.

use std::path::Path;

use redb::{Database, ReadableDatabase as _};

use super::checkpoint::{APPLIED_KEY, commit_groups};
use super::logged::Logged;
use super::{META, StoreError, err, log};

/// Where the appender resumes.
pub(super) struct Resumed {
    /// The seq of the last record kept.
    pub(super) last_seq: u64,
    /// The number of the log file to start.
    pub(super) next_file: u64,
}

/// Replays every log file in `dir` into `db`, then deletes them.
pub(super) fn recover(db: &Database, dir: &Path) -> Result<Resumed, StoreError> {
    let mut last_seq = applied(db)?;
    let files = log::files(dir).map_err(|e| err(&format!("listing {}", dir.display()), e))?;
    for (_, path) in &files {
        let (records, stopped) =
            log::read(path).map_err(|e| err(&format!("reading {}", path.display()), e))?;
        if let Some(why) = stopped {
            // Cut short by a crash mid-append: that group's callers were never told it was
            // kept, and nothing after it was written.
            tracing::warn!(path = %path.display(), %why, "the store's log ends early; what follows was never acknowledged");
        }
        let mut groups = Vec::new();
        for record in records {
            if record.seq <= last_seq {
                continue;
            }
            let changes: Vec<Logged> = serde_json::from_slice(&record.payload).map_err(|e| {
                StoreError(format!(
                    "record {} of the store's log {} cannot be read ({e}); it was written by \
                     another askgate version or damaged. Use the version that wrote it, or \
                     move the file away to start without it",
                    record.seq,
                    path.display()
                ))
            })?;
            last_seq = record.seq;
            groups.push((record.seq, changes));
        }
        if !groups.is_empty() {
            tracing::info!(path = %path.display(), groups = groups.len(), "replaying the store's log");
        }
        commit_groups(db, &groups, true)
            .map_err(|e| StoreError(format!("replaying {}: {e}", path.display())))?;
    }
    for (_, path) in &files {
        std::fs::remove_file(path)
            .map_err(|e| err(&format!("deleting the replayed log {}", path.display()), e))?;
    }
    log::delete_spares(dir)
        .map_err(|e| err(&format!("deleting spare logs in {}", dir.display()), e))?;
    if !files.is_empty() {
        log::sync_dir(dir).map_err(|e| err(&format!("syncing {}", dir.display()), e))?;
    }
    Ok(Resumed {
        last_seq,
        next_file: files.last().map_or(1, |(number, _)| number + 1),
    })
}

/// The last log record redb holds (0: none yet).
fn applied(db: &Database) -> Result<u64, StoreError> {
    let txn = db.begin_read().map_err(|e| err("starting a read", e))?;
    let meta = txn
        .open_table(META)
        .map_err(|e| err("opening the meta table", e))?;
    Ok(meta
        .get(APPLIED_KEY)
        .map_err(|e| err("reading the log's place", e))?
        .map_or(0, |v| v.value()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::durable::{FILE_NAME, check_format};

    /// A record that passes its check but is not what this build writes is a clear error at
    /// start, naming the file and the record: it was acknowledged, so it is not skipped.
    #[test]
    fn a_record_this_build_cannot_read_stops_the_start() {
        let dir = log::tests::temp_dir("recovery");
        let path = dir.join(FILE_NAME);
        let db = Database::create(&path).unwrap();
        check_format(&db, &path).unwrap();
        let mut file = log::LogFile::create(&dir, 3, 64).unwrap();
        file.append(1, br#"[{"Put":{"session":"s"}}]"#).unwrap();
        let error = recover(&db, &dir).err().expect("refused").0;
        assert!(
            error.starts_with("record 1 of the store's log ")
                && error.contains("log-00000003.wal cannot be read (missing field `id`"),
            "{error}"
        );
        assert_eq!(
            log::files(&dir).unwrap().len(),
            1,
            "the log is left as it was"
        );
        drop(db);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
