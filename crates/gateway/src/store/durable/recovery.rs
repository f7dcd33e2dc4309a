//! At start: what the log holds past what redb has is written into redb, file by file, and
//! the log files are deleted; the appender then starts a new one. A log damaged other than by
//! a crash ([`super::damage`]) stops the start, unless the store is told to recover: then the
//! records before the damage are replayed, the damaged file and every later one are moved
//! aside into `damaged-<time>/`, and what they held past the damage is logged as lost.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use redb::{Database, ReadableDatabase as _};

use super::checkpoint::{APPLIED_KEY, commit_groups};
use super::damage::{Corruption, LogScan};
use super::logged::Logged;
use super::{META, StoreError, err, log};
use crate::audit::chain::ChainKey;

/// Requests named one by one in the log of what a recovery lost; past this, a count.
const LOST_NAMED_AT_MOST: usize = 100;

/// Where the appender resumes.
pub(super) struct Resumed {
    /// The seq of the last record kept.
    pub(super) last_seq: u64,
    /// The number of the log file to start.
    pub(super) next_file: u64,
}

/// Replays the log files of `scan` (those of `dir`) into `db`, then deletes them; with damage,
/// refuses, or with `recover_damaged`, replays what comes before it and moves the rest aside.
pub(super) fn recover(
    db: &Database,
    dir: &Path,
    scan: &LogScan,
    recover_damaged: bool,
    chain: &ChainKey,
) -> Result<Resumed, StoreError> {
    let mut last_seq = applied(db)?;
    let corruption = scan.corruption();
    let applied_damage = corruption
        .as_ref()
        .is_some_and(|c| scan.already_applied(c, last_seq));
    if let Some(corruption) = &corruption
        && !recover_damaged
        && !applied_damage
    {
        return Err(corruption.refusal(dir));
    }
    if let Some((path, at, why)) = scan.torn_tail() {
        // Cut short by a crash mid-append: that group's callers were never told it was kept,
        // and nothing after it was written.
        tracing::warn!(path = %path.display(), at, why, "the store's log ends in a record torn by a crash mid-append; its commit was never acknowledged");
    }
    if applied_damage {
        return replay_past_applied_damage(db, dir, scan, chain, last_seq);
    }
    let replayed = corruption
        .as_ref()
        .map_or(scan.files.len(), |corruption| corruption.file + 1);
    for (index, (_, path, _)) in scan.files[..replayed].iter().enumerate() {
        let read = scan.reread(index)?;
        replay(db, path, read.records.iter(), &mut last_seq, chain)?;
    }
    let mut deleted = scan.files.as_slice();
    if let Some(corruption) = &corruption {
        let lost = Lost::of(scan, corruption, last_seq)?;
        let moved_to = move_aside(
            dir,
            scan.files[corruption.file..]
                .iter()
                .map(|(_, path, _)| path.as_path()),
        )?;
        lost.report(corruption, &moved_to);
        deleted = &scan.files[..corruption.file];
    }
    for (_, path, _) in deleted {
        std::fs::remove_file(path)
            .map_err(|e| err(&format!("deleting the replayed log {}", path.display()), e))?;
    }
    finish(dir, scan, last_seq)
}

/// Deletes the spare files and syncs `dir` once the log files of `scan` are gone.
fn finish(dir: &Path, scan: &LogScan, last_seq: u64) -> Result<Resumed, StoreError> {
    log::delete_spares(dir)
        .map_err(|e| err(&format!("deleting spare logs in {}", dir.display()), e))?;
    if !scan.files.is_empty() {
        log::sync_dir(dir).map_err(|e| err(&format!("syncing {}", dir.display()), e))?;
    }
    Ok(Resumed {
        last_seq,
        next_file: scan.files.last().map_or(1, |(number, _, _)| number + 1),
    })
}

/// Writes `records` of the log file `path` past `last_seq` into `db`, moving `last_seq` on.
fn replay<'a>(
    db: &Database,
    path: &Path,
    records: impl Iterator<Item = &'a log::Record>,
    last_seq: &mut u64,
    chain: &ChainKey,
) -> Result<(), StoreError> {
    let mut groups = Vec::new();
    for record in records {
        if record.seq <= *last_seq {
            continue;
        }
        let changes: Vec<Logged> = serde_json::from_slice(&record.payload).map_err(|e| {
            StoreError::damaged(format!(
                "record {} of the store's log {} cannot be read ({e}); it was written by \
                 another askgate version or damaged. Use the version that wrote it, or move \
                 the file away to start without it",
                record.seq,
                path.display()
            ))
        })?;
        *last_seq = record.seq;
        groups.push((record.seq, changes));
    }
    if !groups.is_empty() {
        tracing::info!(path = %path.display(), groups = groups.len(), "replaying the store's log");
    }
    commit_groups(db, &groups, true, chain)
        .map_err(|e| StoreError::io(format!("replaying {}: {e}", path.display())))
}

/// Replays a log whose damage lies only in records redb already holds
/// ([`LogScan::already_applied`]): every record past redb's place, in the damaged file too;
/// the damaged file is then kept aside in `damaged-<time>/` and the others deleted.
fn replay_past_applied_damage(
    db: &Database,
    dir: &Path,
    scan: &LogScan,
    chain: &ChainKey,
    mut last_seq: u64,
) -> Result<Resumed, StoreError> {
    let torn = scan.torn_tail().map(|(path, _, _)| path.to_owned());
    for (index, (_, path, _)) in scan.files.iter().enumerate() {
        let read = scan.reread(index)?;
        let after = read.damage.iter().flat_map(|d| &d.after);
        replay(
            db,
            path,
            read.records.iter().chain(after),
            &mut last_seq,
            chain,
        )?;
    }
    let (damaged, clean): (Vec<_>, Vec<_>) = scan.files.iter().partition(|(_, path, read)| {
        read.damage.is_some() && torn.as_deref() != Some(path.as_path())
    });
    let damaged: Vec<&(u64, PathBuf, log::FileRead)> = damaged;
    let moved_to = move_aside(dir, damaged.iter().map(|(_, path, _)| path.as_path()))?;
    for (_, path, read) in &damaged {
        let damage = read.damage.as_ref().map_or((0, ""), |d| (d.at, d.why));
        tracing::warn!(
            path = %path.display(),
            at = damage.0,
            why = damage.1,
            kept_in = %moved_to.display(),
            "the store's log is damaged only in records redb already holds: already applied, nothing lost; the damaged file is kept aside, not deleted, and the gateway starts"
        );
    }
    for (_, path, _) in clean {
        std::fs::remove_file(path)
            .map_err(|e| err(&format!("deleting the replayed log {}", path.display()), e))?;
    }
    finish(dir, scan, last_seq)
}

/// Moves `files` into a new folder `damaged-<time>` of `dir`, durably; the folder.
fn move_aside<'a>(
    dir: &Path,
    files: impl Iterator<Item = &'a Path>,
) -> Result<PathBuf, StoreError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut folder = dir.join(format!("damaged-{}", utc_stamp(now.as_secs())));
    // Two recoveries in one second: the second folder gets the milliseconds too.
    if folder.exists() {
        folder = dir.join(format!(
            "damaged-{}-{}",
            utc_stamp(now.as_secs()),
            now.subsec_millis()
        ));
    }
    std::fs::create_dir(&folder).map_err(|e| err(&format!("creating {}", folder.display()), e))?;
    for path in files {
        let to = folder.join(path.file_name().unwrap_or_default());
        std::fs::rename(path, &to)
            .map_err(|e| err(&format!("moving {} to {}", path.display(), to.display()), e))?;
    }
    log::sync_dir(&folder).map_err(|e| err(&format!("syncing {}", folder.display()), e))?;
    log::sync_dir(dir).map_err(|e| err(&format!("syncing {}", dir.display()), e))?;
    Ok(folder)
}

/// `YYYYMMDDTHHMMSSZ` for `secs` after the Unix epoch (the civil calendar, proleptic
/// Gregorian, by Howard Hinnant's days-to-date method).
fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let of_day = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let of_era = z.rem_euclid(146_097);
    let year_of_era = (of_era - of_era / 1460 + of_era / 36_524 - of_era / 146_096) / 365;
    let of_year = of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * of_year + 2) / 153;
    let day = of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

/// What a recovery leaves out: the seqs past what was kept up to the last one known, and the
/// requests and sessions the readable ones name.
struct Lost {
    first: u64,
    last: u64,
    readable: usize,
    requests: BTreeSet<String>,
    sessions: BTreeSet<String>,
}

impl Lost {
    /// What the records past `kept_seq`, from the damage in `corruption` on, name; read again
    /// a file at a time (before the files are moved aside).
    fn of(scan: &LogScan, corruption: &Corruption, kept_seq: u64) -> Result<Self, StoreError> {
        let first = kept_seq + 1;
        let mut lost = Lost {
            first,
            last: corruption
                .after_seqs
                .map(|(_, last)| last)
                .max(corruption.expected_seq)
                .unwrap_or(first),
            readable: 0,
            requests: BTreeSet::new(),
            sessions: BTreeSet::new(),
        };
        for index in corruption.file..scan.files.len() {
            let read = scan.reread(index)?;
            let after = read.damage.iter().flat_map(|d| &d.after);
            // In the damaged file, only what follows the damage.
            let before = (index > corruption.file).then_some(&read.records);
            for record in before.into_iter().flatten().chain(after) {
                if record.seq >= first {
                    lost.readable += 1;
                    lost.name(&record.payload);
                }
            }
        }
        Ok(lost)
    }

    fn name(&mut self, payload: &[u8]) {
        let Ok(changes) = serde_json::from_slice::<Vec<Logged>>(payload) else {
            return;
        };
        for change in &changes {
            match change.names() {
                Some((session, Some(id))) => self.requests.insert(format!("{session}/{id}")),
                Some((session, None)) => self.sessions.insert(session.to_owned()),
                None => false,
            };
        }
    }

    /// Logs it, with the damage and where the files went.
    fn report(&self, corruption: &Corruption, moved_to: &Path) {
        let named: Vec<&str> = self
            .requests
            .iter()
            .take(LOST_NAMED_AT_MOST)
            .map(String::as_str)
            .collect();
        let unnamed = self.requests.len() - named.len();
        let sessions: Vec<&str> = self.sessions.iter().map(String::as_str).collect();
        let (first, last) = (self.first, self.last);
        let (lost_records, range) = if last >= first {
            (last - first + 1, format!("{first} to {last}"))
        } else {
            (0, "none".to_owned())
        };
        tracing::error!(
            damage = %corruption,
            moved_to = %moved_to.display(),
            lost_seqs = %range,
            lost_records,
            readable = self.readable,
            requests = %named.join(" "),
            more_requests = unnamed,
            sessions = %sessions.join(" "),
            "started with --recover-damaged-log: the records before the damage were replayed; \
             the damaged log file and every later one were moved aside, and the commits past the \
             damage (acknowledged) are lost from the store; the requests they name are listed \
             (session/request), and the sessions of their audit entries"
        );
    }
}

/// The last log record redb holds (0: none yet).
pub(super) fn applied(db: &Database) -> Result<u64, StoreError> {
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
        check_format(&db, &path, None).unwrap();
        let mut file = log::LogFile::create(&dir, 3, 64).unwrap();
        file.append(1, br#"[{"Put":{"session":"s"}}]"#).unwrap();
        let scan = LogScan::of(&dir, None).unwrap();
        let error = recover(&db, &dir, &scan, false, &ChainKey::Unkeyed)
            .err()
            .expect("refused");
        assert_eq!(error.kind, crate::store::StoreErrorKind::Damaged);
        let error = error.message;
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

    #[test]
    fn a_folder_is_stamped_with_the_utc_time() {
        // Worked out apart from this code (`date -u -d @SECS +%Y%m%dT%H%M%SZ`).
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
        assert_eq!(utc_stamp(1_796_524_212), "20261206T023012Z");
    }
}
