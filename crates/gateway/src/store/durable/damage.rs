//! Telling a crash from damage in the log.
//!
//! A crash mid-append leaves at most one record that does not pass its checks: the last one
//! appended, in the file being appended to, with nothing readable after it. Its callers were
//! never told it was kept. That is the *torn tail*: a record cut short or failing its check in
//! the last log file that holds anything (files made ready ahead of use, all zeros, do not
//! count), after which no record that passes its checks is found, at any byte. One more case
//! is a crash's too: a torn record at the end of an earlier file whose seq the next file's
//! first record carries again (the appender moved on after a failed write, and wrote that seq
//! anew there).
//!
//! A record that passes its CRC but not its MAC (a store with keyed chains), or carries none
//! where the log's records do, was written so, not torn: it is never a torn tail.
//!
//! Any other record that does not pass its checks is damage: records after it, acknowledged,
//! would be lost with it. The store then does not start ([`Corruption::refusal`]) unless told
//! to move the damaged files aside ([`super::recovery`]); `askgate store check` reports it
//! ([`super::read_only`]).

use std::path::{Path, PathBuf};

use super::log::{self, FileRead};
use super::{StoreError, err};
use crate::audit::chain::AuditKey;

/// The log files of a data directory, read: a summary of each (its records' seqs and places,
/// its damage), not their payloads, so that what a start holds is bounded by one file, read
/// again ([`reread`](LogScan::reread)) when it is replayed.
#[derive(Debug)]
pub(super) struct LogScan {
    /// By number: the file's number, path and records (without their payloads).
    pub(super) files: Vec<(u64, PathBuf, FileRead)>,
    /// The key the records' MACs were checked with.
    key: Option<AuditKey>,
    /// Whether every record must carry a MAC ([`demand_macs`](LogScan::demand_macs)).
    demanded: bool,
}

/// The first damage in a log that is not a torn tail.
#[derive(Debug)]
pub(super) struct Corruption {
    /// Which of [`LogScan::files`] holds it.
    pub(super) file: usize,
    pub(super) path: PathBuf,
    /// Where the record starts in its file, in bytes.
    pub(super) at: u64,
    pub(super) why: &'static str,
    /// The seq the record should carry: one past the record before it (none for the first
    /// record of the oldest file).
    pub(super) expected_seq: Option<u64>,
    /// Records after it, in its file and the later ones, that pass their checks.
    pub(super) after: usize,
    /// The seqs of the first and last of them.
    pub(super) after_seqs: Option<(u64, u64)>,
}

impl LogScan {
    /// Reads every log file in `dir` (nothing is written), checking the MACs of records that
    /// carry one with `key`, if given.
    pub(super) fn of(dir: &Path, key: Option<&AuditKey>) -> Result<Self, StoreError> {
        let listed = log::files(dir).map_err(|e| err(&format!("listing {}", dir.display()), e))?;
        let mut files = Vec::with_capacity(listed.len());
        for (number, path) in listed {
            let read = log::read(&path, key)
                .map_err(|e| err(&format!("reading {}", path.display()), e))?;
            files.push((number, path, read.summary()));
        }
        Ok(LogScan {
            files,
            key: key.cloned(),
            demanded: false,
        })
    }

    /// File `index` read again, with its payloads; it must read as it did.
    pub(super) fn reread(&self, index: usize) -> Result<FileRead, StoreError> {
        let (_, path, summary) = &self.files[index];
        let mut read = log::read(path, self.key.as_ref())
            .map_err(|e| err(&format!("reading {}", path.display()), e))?;
        if self.demanded {
            read.demand_macs();
        }
        if !read.same_shape(summary) {
            return Err(StoreError::refused(format!(
                "the store's log {} changed while the store was being opened: is another \
                 askgate using this data directory?",
                path.display()
            )));
        }
        Ok(read)
    }

    /// Reads every log file in `dir` as [`of`](Self::of) does; when any record carries a MAC,
    /// the log was written by a store whose chains are keyed, all of it (a start replays and
    /// deletes every log file before it writes a new one), so a record without one is damage.
    pub(super) fn of_store(dir: &Path, key: Option<&AuditKey>) -> Result<Self, StoreError> {
        let mut scan = Self::of(dir, key)?;
        let any_mac = scan.files.iter().any(|(_, _, read)| {
            let after = read.damage.iter().flat_map(|d| &d.after);
            read.records.iter().chain(after).any(|r| r.mac)
        });
        if any_mac {
            scan.demand_macs();
        }
        Ok(scan)
    }

    /// Whether records failed their MAC and none held it: read with another key than the
    /// log's, rather than rewritten.
    pub(super) fn no_mac_holds(&self) -> bool {
        let mut records = self.files.iter().flat_map(|(_, _, read)| {
            let after = read.damage.iter().flat_map(|d| &d.after);
            read.records.iter().chain(after)
        });
        let failed = self.files.iter().any(|(_, _, read)| {
            read.damage
                .as_ref()
                .is_some_and(|d| d.why == log::FAILS_MAC)
        });
        failed && !records.any(|r| r.mac)
    }

    /// Whether a record that passes its checks carries no MAC.
    pub(super) fn any_without_mac(&self) -> bool {
        self.files
            .iter()
            .any(|(_, _, read)| read.records.iter().any(|r| !r.mac))
    }

    /// Takes every record without a MAC as damage: the store's records carry one.
    pub(super) fn demand_macs(&mut self) {
        self.demanded = true;
        for (_, _, read) in &mut self.files {
            read.demand_macs();
        }
    }

    /// Whether the damage in file `index` is a torn tail (see the module's comment).
    fn is_torn_tail(&self, index: usize) -> bool {
        let (_, _, read) = &self.files[index];
        let Some(damage) = &read.damage else {
            return false;
        };
        // A crash tears a record, which then fails its CRC; a record that passes it but not
        // its MAC, or lacks one, was written so.
        if !damage.after.is_empty() || is_written_so(damage.why) {
            return false;
        }
        let next = self.files[index + 1..]
            .iter()
            .map(|(_, _, read)| read)
            .find(|read| !read.is_blank());
        match next {
            None => true,
            Some(next) => {
                let first = next.records.first().map(|r| r.seq);
                first.is_some() && first == self.seq_before(index).map(|seq| seq + 1)
            }
        }
    }

    /// The seq of the last record that passes its checks before file `index`'s damage.
    fn seq_before(&self, index: usize) -> Option<u64> {
        let (_, _, read) = &self.files[index];
        read.records.last().map(|r| r.seq).or_else(|| {
            self.files[..index]
                .iter()
                .rev()
                .find_map(|(_, _, read)| read.last_seq())
        })
    }

    /// Whether `corruption`, and any damage after it, lies only in records redb already holds
    /// (up to seq `applied`): the records after it that pass their checks start at most one
    /// past `applied`, those past `applied` follow each other without a gap, and the log does
    /// not end in a record written so (a MAC that fails, or none): it may end torn by a crash,
    /// which was never acknowledged. Nothing is lost then, and the log can be replayed past it.
    pub(super) fn already_applied(&self, corruption: &Corruption, applied: u64) -> bool {
        let Some((first, _)) = corruption.after_seqs else {
            // Nothing after it to tell which seqs it held.
            return false;
        };
        let mut past_applied = self
            .lost_records(corruption.file)
            .map(|record| record.seq)
            .filter(|seq| *seq > applied);
        let without_gaps = past_applied
            .by_ref()
            .zip(applied + 1..)
            .all(|(seq, wanted)| seq == wanted);
        let ends_written_so = self
            .files
            .iter()
            .rev()
            .map(|(_, _, read)| read)
            .find(|read| !read.is_blank())
            .and_then(|read| read.damage.as_ref())
            .and_then(|damage| match damage.ends_damaged {
                Some(why) => Some(why),
                None if damage.after.is_empty() => Some(damage.why),
                None => None,
            })
            .is_some_and(is_written_so);
        first <= applied.saturating_add(1) && without_gaps && !ends_written_so
    }

    /// The torn tail, if the log ends in one: its file and where.
    pub(super) fn torn_tail(&self) -> Option<(&Path, u64, &'static str)> {
        (0..self.files.len())
            .rev()
            .find(|index| self.is_torn_tail(*index))
            .and_then(|index| {
                let (_, path, read) = &self.files[index];
                read.damage.as_ref().map(|d| (path.as_path(), d.at, d.why))
            })
    }

    /// The first damage that is not a torn tail, if there is one.
    pub(super) fn corruption(&self) -> Option<Corruption> {
        let file = (0..self.files.len())
            .find(|index| self.files[*index].2.damage.is_some() && !self.is_torn_tail(*index))?;
        let (_, path, read) = &self.files[file];
        let damage = read.damage.as_ref()?;
        let after: Vec<u64> = self.lost_records(file).map(|record| record.seq).collect();
        Some(Corruption {
            file,
            path: path.clone(),
            at: damage.at,
            why: damage.why,
            expected_seq: self.seq_before(file).map(|seq| seq + 1),
            after: after.len(),
            after_seqs: after.first().zip(after.last()).map(|(a, b)| (*a, *b)),
        })
    }

    /// The records that pass their checks after the damage in file `index`: past it in that
    /// file, then every later file's.
    pub(super) fn lost_records(&self, index: usize) -> impl Iterator<Item = &log::Record> {
        let (_, _, read) = &self.files[index];
        let in_file = read.damage.iter().flat_map(|d| d.after.iter());
        let later = self.files[index + 1..].iter().flat_map(|(_, _, read)| {
            let after = read.damage.iter().flat_map(|d| d.after.iter());
            read.records.iter().chain(after)
        });
        in_file.chain(later)
    }
}

/// Whether a record failed for a reason a crash does not give: it was written so.
fn is_written_so(why: &str) -> bool {
    [log::FAILS_MAC, log::NO_MAC].contains(&why)
}

impl std::fmt::Display for Corruption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the store's log {} is damaged at byte {}: the record there {}",
            self.path.display(),
            self.at,
            self.why
        )?;
        match self.expected_seq {
            Some(seq) => write!(f, " (it should be record seq {seq})")?,
            None => write!(f, " (the first record of the oldest log file)")?,
        }
        match self.after_seqs {
            Some((first, last)) => write!(
                f,
                "; {} records after it pass their checks (seq {first} to {last})",
                self.after
            ),
            None => write!(f, "; no record after it passes its checks"),
        }
    }
}

impl Corruption {
    /// Why the store does not start, and what to do.
    pub(super) fn refusal(&self, dir: &Path) -> StoreError {
        StoreError::damaged(format!(
            "{self}. A crash mid-append leaves a damaged record only at the end of the last \
             log file, so this is damage, and records after it were acknowledged: askgate does \
             not start, and every file is left as it is. `askgate store check --data-dir {dir}` \
             reports what can be recovered; `askgate serve --recover-damaged-log` starts with \
             the records before the damage, moving the damaged files aside",
            dir = dir.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::durable::log::LogFile;
    use crate::store::durable::log::tests::temp_dir;

    /// Writes files numbered from 1 with records `seqs` each, then applies `damage` to the
    /// bytes of file `file` (1-based).
    fn logged(
        name: &str,
        seqs: &[&[u64]],
        file: u64,
        damage: impl FnOnce(&mut Vec<u8>),
    ) -> PathBuf {
        let dir = temp_dir(name);
        for (number, seqs) in (1..).zip(seqs) {
            let mut log = LogFile::create(&dir, number, 4096).unwrap();
            for seq in *seqs {
                log.append(*seq, b"[]").unwrap();
            }
        }
        let path = log::path_of(&dir, file);
        let mut bytes = std::fs::read(&path).unwrap();
        damage(&mut bytes);
        std::fs::write(&path, &bytes).unwrap();
        dir
    }

    /// Records of `[]` are 18 bytes: record `n` of a file (from 0) starts at `18 n`.
    fn torn_at(bytes: &mut [u8], record: usize) {
        bytes[18 * record..18 * record + 4].copy_from_slice(&9u32.to_le_bytes());
    }

    /// Whether there is a torn tail; the corruption's file, byte, expected seq and records
    /// after it.
    type Judged = (bool, Option<(usize, u64, Option<u64>, usize)>);

    fn judged(dir: &Path) -> Judged {
        let scan = LogScan::of(dir, None).unwrap();
        let corruption = scan
            .corruption()
            .map(|c| (c.file, c.at, c.expected_seq, c.after));
        std::fs::remove_dir_all(dir).unwrap();
        (scan.torn_tail().is_some(), corruption)
    }

    #[test]
    fn a_bad_last_record_with_only_blank_files_after_it_is_a_torn_tail() {
        let dir = logged("tail", &[&[1, 2, 3], &[]], 1, |b| torn_at(b, 2));
        assert_eq!(judged(&dir), (true, None));
    }

    #[test]
    fn a_bad_record_with_a_good_one_after_it_is_damage_even_in_the_last_file() {
        let dir = logged("middle", &[&[1, 2, 3]], 1, |b| b[18 + 17] ^= 1);
        assert_eq!(judged(&dir), (false, Some((0, 18, Some(2), 1))));
    }

    #[test]
    fn a_bad_record_at_the_end_of_an_earlier_file_is_damage() {
        let dir = logged("earlier", &[&[1, 2], &[3, 4]], 1, |b| torn_at(b, 1));
        assert_eq!(judged(&dir), (false, Some((0, 18, Some(2), 2))));
    }

    /// Whether the corruption in `dir` lies in records redb holds when it holds up to each
    /// of `applied`.
    fn applied_judged(dir: &Path, applied: &[u64]) -> Vec<bool> {
        let scan = LogScan::of(dir, None).unwrap();
        let corruption = scan.corruption().expect("damage");
        let judged = applied
            .iter()
            .map(|seq| scan.already_applied(&corruption, *seq))
            .collect();
        std::fs::remove_dir_all(dir).unwrap();
        judged
    }

    #[test]
    fn damage_is_already_applied_only_when_redb_holds_every_record_it_may_have_held() {
        // Record 2 of 1..=4 damaged: redb must hold 2 (the records after it start at 3).
        let dir = logged("applied", &[&[1, 2, 3, 4]], 1, |b| b[18 + 17] ^= 1);
        assert_eq!(
            applied_judged(&dir, &[0, 1, 2, 4, 9]),
            [false, false, true, true, true]
        );
        // A second damaged record (5) after it: lost whatever redb holds, unless it holds 5.
        let dir = logged("applied-twice", &[&[1, 2, 3, 4, 5, 6]], 1, |b| {
            b[18 + 17] ^= 1;
            b[4 * 18 + 17] ^= 1;
        });
        assert_eq!(applied_judged(&dir, &[2, 4, 5]), [false, false, true]);
        // ...even at the end of its file, when a later file holds records.
        let dir = logged("applied-then-end", &[&[1, 2, 3, 4], &[5, 6]], 1, |b| {
            b[18 + 17] ^= 1;
            b[3 * 18 + 17] ^= 1;
        });
        assert_eq!(applied_judged(&dir, &[2, 4]), [false, true]);
        // A torn tail after it, in the last file, was never acknowledged.
        let dir = logged("applied-then-torn", &[&[1, 2, 3, 4]], 1, |b| {
            b[18 + 17] ^= 1;
            torn_at(b, 3);
        });
        assert_eq!(applied_judged(&dir, &[1, 2]), [false, true]);
        // Damage at the end of an earlier file: the next file says which seqs it held.
        let dir = logged("applied-earlier", &[&[1, 2], &[3, 4]], 1, |b| torn_at(b, 1));
        assert_eq!(applied_judged(&dir, &[1, 2]), [false, true]);
    }

    #[test]
    fn a_scan_holds_no_payload_and_a_file_is_read_again_whole_when_replayed() {
        let dir = temp_dir("summary");
        let payload = vec![b'x'; 64 * 1024];
        for (number, seqs) in [(1, 1..=4), (2, 5..=8), (3, 9..=12)] {
            let mut log = LogFile::create(&dir, number, 0).unwrap();
            for seq in seqs {
                log.append(seq, &payload).unwrap();
            }
        }
        let scan = LogScan::of(&dir, None).unwrap();
        // 768 KiB of payloads in the files; none in what the scan keeps.
        let held: usize = scan.files.iter().map(|(_, _, r)| r.payload_bytes()).sum();
        assert_eq!(held, 0);
        assert_eq!(scan.files[2].2.last_seq(), Some(12));
        let read = scan.reread(1).unwrap();
        assert_eq!(read.payload_bytes(), 4 * payload.len());
        assert!(read.records.iter().all(|r| r.payload == payload));
        // A file changed since it was scanned is not replayed as something else.
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(log::path_of(&dir, 3))
            .unwrap();
        std::io::Write::write_all(&mut log, &[1; 40]).unwrap();
        let changed = scan.reread(2).expect_err("refused");
        assert_eq!(changed.kind, crate::store::StoreErrorKind::Refused);
        let changed = changed.message;
        assert!(
            changed.contains("changed while the store was being opened"),
            "{changed}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_last_record_that_fails_its_mac_is_damage_not_a_torn_tail() {
        let key = AuditKey::from_bytes([3; 32]);
        let dir = temp_dir("forged-tail");
        let mut log = LogFile::create(&dir, 1, 4096).unwrap();
        for seq in 1..=3 {
            log.append_keyed(seq, b"[]", Some(&key)).unwrap();
        }
        // Written with another key: it passes its CRC, not its MAC.
        log.append_keyed(4, b"[]", Some(&AuditKey::from_bytes([4; 32])))
            .unwrap();
        let scan = LogScan::of_store(&dir, Some(&key)).unwrap();
        assert!(scan.torn_tail().is_none());
        let corruption = scan.corruption().expect("damage");
        assert_eq!(
            (corruption.at, corruption.why, corruption.expected_seq),
            (3 * (16 + 2 + 32), log::FAILS_MAC, Some(4))
        );
        assert!(!scan.no_mac_holds(), "the others hold: not another key");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_torn_record_whose_seq_the_next_file_writes_again_is_a_crash() {
        // The appender moved on after failing to write record 2, and wrote 2 anew.
        let dir = logged("rewritten", &[&[1, 2], &[2, 3]], 1, |b| torn_at(b, 1));
        assert_eq!(judged(&dir), (true, None));
    }
}
