//! The write-ahead log: what the store has kept that redb may not hold yet.
//!
//! Files `log-NNNNNNNN.wal` in the data directory, numbered up from 1, each a run of records:
//! `[payload length: u32 LE][CRC-32 of seq and payload: u32 LE][seq: u64 LE][payload]`. On a
//! store whose audit chains are keyed, the length's top bit is set and the payload is followed
//! by its MAC, HMAC-SHA256 under the audit key of [`MAC_CONTEXT`], seq and payload (the CRC-32
//! then covers the MAC too): a record rewritten by someone without the key, which would be
//! sealed into the keyed chain when replayed, fails it. A record is one group commit; `seq` counts them across files, and redb's `meta` table says up
//! to which one it holds. A file is written through with zeros when it is started; a header of
//! zeros ends it. A crash mid-append leaves at most one record cut short or failing its check,
//! at the end of what was appended, with nothing but zeros (or nothing) after it; so reading
//! does not stop at a record that does not pass its checks, but looks for records past it, at
//! every byte: what it finds tells a torn tail from damage ([`super::damage`]).

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::audit::chain::AuditKey;

/// A file name's parts around its number.
const PREFIX: &str = "log-";
const SUFFIX: &str = ".wal";
/// A file made ready ahead of its use by askgate before 0.1's format 3, not yet a log file.
const SPARE_PREFIX: &str = "spare-log-";
/// Bytes before a record's payload.
const HEADER_BYTES: usize = 16;
/// Set in a record's length field when a MAC follows its payload.
const MAC_FLAG: u32 = 1 << 31;
/// Bytes of a record's MAC.
const MAC_BYTES: usize = 32;
/// What a record's MAC covers first, so that it is never the MAC of anything else keyed
/// with the audit key (a chain's hash, a checkpoint's seed).
const MAC_CONTEXT: &[u8] = b"askgate log record v1\n";
/// Why a record that passes its CRC is not taken: its MAC does not hold under the key. A
/// crash does not do that (it tears a record, which fails its CRC): it is never a torn tail.
pub(super) const FAILS_MAC: &str = "fails its MAC (it was not written with this store's audit key)";
/// Why a record is not taken on a store whose records are keyed: it carries no MAC. Never a
/// torn tail either.
pub(super) const NO_MAC: &str = "carries no MAC, on a store whose log records carry one";
/// A file is closed for appends, and a new one started, once it holds this much (unless
/// set); the checkpointer deletes it once redb holds all of it.
pub(super) const ROTATE_AT_BYTES: u64 = 8 * 1024 * 1024;
/// Most zeros a new file is written through with (its whole size up to this).
pub(super) const PREFILL_MAX_BYTES: u64 = ROTATE_AT_BYTES;
/// A longer payload is read as damage, not allocated (a group is at most 4,096 commits of
/// frames of at most a few MiB each).
const MAX_PAYLOAD_BYTES: u32 = 1 << 30;

/// The path of log file `number` in `dir`.
pub(super) fn path_of(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{PREFIX}{number:08}{SUFFIX}"))
}

/// Deletes the spare files an earlier askgate left in `dir` (next log files are made ready under
/// their own names now: a log file that holds nothing is read as such).
pub(super) fn delete_spares(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(SPARE_PREFIX))
        {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Every log file in `dir`, by number.
pub(super) fn files(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let number = name
            .to_str()
            .and_then(|name| name.strip_prefix(PREFIX))
            .and_then(|rest| rest.strip_suffix(SUFFIX))
            .and_then(|digits| digits.parse::<u64>().ok());
        if let Some(number) = number {
            found.push((number, entry.path()));
        }
    }
    found.sort_unstable();
    Ok(found)
}

/// One record read back.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Record {
    pub(super) seq: u64,
    pub(super) payload: Vec<u8>,
    /// Where it starts in its file, in bytes.
    pub(super) at: u64,
    /// Whether it carries a MAC (checked when read with the key).
    pub(super) mac: bool,
}

/// What one log file holds.
#[derive(Debug, Default)]
pub(super) struct FileRead {
    /// Its records, up to the first that could not be read (all of them, if none).
    pub(super) records: Vec<Record>,
    /// The first record that could not be read, if one could not.
    pub(super) damage: Option<Damage>,
}

/// A record that could not be read, and what passes its checks past it.
#[derive(Debug)]
pub(super) struct Damage {
    /// Where it starts in its file, in bytes.
    pub(super) at: u64,
    /// What is wrong with it: `cut short`, `fails its check`, ...
    pub(super) why: &'static str,
    /// The records past it that pass their checks, looked for at every byte after it.
    pub(super) after: Vec<Record>,
    /// Why bytes past the last of them do not pass their checks either (no record follows),
    /// if they do not: a second damage, or a torn tail after it.
    pub(super) ends_damaged: Option<&'static str>,
}

impl FileRead {
    /// The seq of the last record that passes its checks, before the damage or after it.
    pub(super) fn last_seq(&self) -> Option<u64> {
        let after = self.damage.as_ref().and_then(|d| d.after.last());
        after.or(self.records.last()).map(|r| r.seq)
    }

    /// Whether the file holds nothing at all: no record and no damage (a file made ready
    /// ahead of its use, all zeros).
    pub(super) fn is_blank(&self) -> bool {
        self.records.is_empty() && self.damage.is_none()
    }

    /// This read as a summary: every record's seq, place and MAC, and the damage, without the
    /// payloads (which are read again when needed, a file at a time).
    pub(super) fn summary(mut self) -> Self {
        let after = self.damage.iter_mut().flat_map(|d| d.after.iter_mut());
        for record in self.records.iter_mut().chain(after) {
            record.payload = Vec::new();
        }
        self
    }

    /// The bytes of payload it holds.
    #[cfg(test)]
    pub(super) fn payload_bytes(&self) -> usize {
        let after = self.damage.iter().flat_map(|d| &d.after);
        self.records
            .iter()
            .chain(after)
            .map(|r| r.payload.capacity())
            .sum()
    }

    /// The seqs of its records, before the damage and after it.
    fn seqs(&self) -> (Vec<u64>, Vec<u64>) {
        let after = self.damage.iter().flat_map(|d| &d.after);
        (
            self.records.iter().map(|r| r.seq).collect(),
            after.map(|r| r.seq).collect(),
        )
    }

    /// Whether `other` holds the same records and damage (payloads aside).
    pub(super) fn same_shape(&self, other: &FileRead) -> bool {
        let damage = |read: &FileRead| read.damage.as_ref().map(|d| (d.at, d.why));
        self.seqs() == other.seqs() && damage(self) == damage(other)
    }

    /// Takes a record without a MAC as damage ([`NO_MAC`]): on a store whose records carry
    /// one, it was written (or stripped of its MAC) by someone without the key.
    pub(super) fn demand_macs(&mut self) {
        let Some(first) = self.records.iter().position(|r| !r.mac) else {
            if let Some(damage) = &mut self.damage {
                damage.after.retain(|r| r.mac);
            }
            return;
        };
        let mut rest = self.records.split_off(first).into_iter();
        let at = rest.next().map_or(0, |r| r.at);
        let old = self.damage.take();
        // What was damage before is damage past this one now.
        let ends_damaged = old.as_ref().map(|d| d.why);
        let earlier = old.into_iter().flat_map(|d| d.after);
        let after = rest.chain(earlier).filter(|r| r.mac).collect();
        self.damage = Some(Damage {
            at,
            why: NO_MAC,
            after,
            ends_damaged,
        });
    }
}

/// Reads one log file: every record that passes its checks, and the first that does not. With
/// `key`, a record's MAC, if it carries one, is one of its checks.
pub(super) fn read(path: &Path, key: Option<&AuditKey>) -> io::Result<FileRead> {
    Ok(read_bytes(&std::fs::read(path)?, key))
}

/// Zeros where a header should be, with bytes other than zeros after them: the end of what
/// was appended (a torn write can leave its later blocks and not its first), unless a record
/// follows.
const ZEROS_THEN_MORE: &str = "a header of zeros with records after it";

/// What is at one place in a file.
enum Next {
    /// Nothing was appended from here: the file ends, or zeros follow.
    End,
    /// A record that passes its checks, and where the next one starts.
    Record(Record, usize),
    /// A record that does not, and why.
    Bad(&'static str),
}

fn next_at(bytes: &[u8], at: usize, key: Option<&AuditKey>) -> Next {
    let rest = &bytes[at..];
    let Some(header) = rest.get(..HEADER_BYTES) else {
        return if rest.iter().all(|byte| *byte == 0) {
            Next::End
        } else {
            Next::Bad("cut short")
        };
    };
    if header.iter().all(|byte| *byte == 0) {
        // The zeros a file is written through with: nothing was appended past here.
        return Next::End;
    }
    let (len, crc, seq) = header_fields(header);
    let (len, mac) = split_length(len);
    if len > MAX_PAYLOAD_BYTES {
        return Next::Bad("longer than any group");
    }
    let body_len = len as usize + if mac { MAC_BYTES } else { 0 };
    let Some(body) = rest.get(HEADER_BYTES..HEADER_BYTES + body_len) else {
        return Next::Bad("cut short");
    };
    if checksum(seq, body) != crc {
        return Next::Bad("fails its check");
    }
    let payload = &body[..len as usize];
    if mac && key.is_some_and(|key| !mac_holds(key, seq, payload, &body[len as usize..])) {
        return Next::Bad(FAILS_MAC);
    }
    let record = Record {
        seq,
        payload: payload.to_vec(),
        at: at as u64,
        mac,
    };
    Next::Record(record, at + HEADER_BYTES + body_len)
}

/// A length field's payload length, and whether a MAC follows the payload.
fn split_length(field: u32) -> (u32, bool) {
    (field & !MAC_FLAG, field & MAC_FLAG != 0)
}

fn mac_of(key: &AuditKey, seq: u64, payload: &[u8]) -> [u8; MAC_BYTES] {
    key.mac_of(&[MAC_CONTEXT, &seq.to_le_bytes(), payload])
}

fn mac_holds(key: &AuditKey, seq: u64, payload: &[u8], mac: &[u8]) -> bool {
    mac_of(key, seq, payload)[..] == *mac
}

fn header_fields(header: &[u8]) -> (u32, u32, u64) {
    let word = |at: usize| {
        u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let seq = u64::from(word(8)) | (u64::from(word(12)) << 32);
    (word(0), word(4), seq)
}

/// The first place from `from` on where a record starts that passes its checks and comes after
/// record `after_seq`. Records are found past damage this way, whatever it did to the lengths;
/// only a header whose seq and length fit is checksummed, so a file is read about once.
fn find_record(bytes: &[u8], from: usize, after_seq: u64, key: Option<&AuditKey>) -> Option<usize> {
    let last_start = bytes.len().checked_sub(HEADER_BYTES)?;
    let mut at = from;
    while at <= last_start {
        // A header holds a seq of at least 1, so a byte other than zero within its 16: runs
        // of zeros (the rest of a file after a torn record) are stepped over at once.
        let nonzero = at + bytes[at..].iter().position(|byte| *byte != 0)?;
        at = at.max(nonzero.saturating_sub(HEADER_BYTES - 1));
        if at > last_start {
            return None;
        }
        let (field, crc, seq) = header_fields(&bytes[at..at + HEADER_BYTES]);
        let (len, mac) = split_length(field);
        let body_len = len as usize + if mac { MAC_BYTES } else { 0 };
        let start = at + HEADER_BYTES;
        if seq > after_seq
            && len <= MAX_PAYLOAD_BYTES
            && bytes.len() - start >= body_len
            && checksum(seq, &bytes[start..start + body_len]) == crc
            && !(mac
                && key.is_some_and(|key| {
                    let payload = &bytes[start..start + len as usize];
                    !mac_holds(
                        key,
                        seq,
                        payload,
                        &bytes[start + len as usize..start + body_len],
                    )
                }))
        {
            return Some(at);
        }
        at += 1;
    }
    None
}

fn read_bytes(bytes: &[u8], key: Option<&AuditKey>) -> FileRead {
    let mut read = FileRead::default();
    let mut at = 0usize;
    while at <= bytes.len() {
        let why = match next_at(bytes, at, key) {
            Next::Record(record, next) => {
                match &mut read.damage {
                    Some(damage) => damage.after.push(record),
                    None => read.records.push(record),
                }
                at = next;
                continue;
            }
            Next::End if bytes[at..].iter().all(|byte| *byte == 0) => break,
            // Zeros, and something after them: if a record follows, the zeros are damage
            // (a block lost), not the end.
            Next::End => ZEROS_THEN_MORE,
            Next::Bad(why) => why,
        };
        let had_damage = read.damage.is_some();
        let found = find_record(bytes, at + 1, read.last_seq().unwrap_or(0), key);
        if found.is_some() || why != ZEROS_THEN_MORE {
            let damage = read.damage.get_or_insert(Damage {
                at: at as u64,
                why,
                after: Vec::new(),
                ends_damaged: None,
            });
            if had_damage && found.is_none() {
                damage.ends_damaged = Some(why);
            }
        }
        match found {
            Some(next) => at = next,
            None => break,
        }
    }
    read
}

fn checksum(seq: u64, body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&seq.to_le_bytes());
    hasher.update(body);
    hasher.finalize()
}

/// The file being appended to.
pub(super) struct LogFile {
    file: File,
    /// The same file, for the syncer to wait for the disk on while records are appended.
    synced_by: Arc<File>,
    number: u64,
    len: u64,
    /// A record's bytes, kept between appends.
    buffer: Vec<u8>,
}

impl LogFile {
    /// Creates log file `number` in `dir` (it must not exist), durably: the directory is
    /// synced, so the file is there after a crash. Made ahead of its use, it holds nothing
    /// until then, and a reader finds no record in it.
    pub(super) fn create(dir: &Path, number: u64, prefill_bytes: u64) -> io::Result<Self> {
        Self::create_at(&path_of(dir, number), number, prefill_bytes)
    }

    fn create_at(path: &Path, number: u64, prefill_bytes: u64) -> io::Result<Self> {
        let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
        // Written through with zeros first: an append that neither grows the file nor fills
        // a hole is synced without a journal commit (its `fdatasync` flushes the data alone).
        prefill(&mut file, prefill_bytes)?;
        if let Some(dir) = path.parent() {
            sync_dir(dir)?;
        }
        Ok(LogFile {
            synced_by: Arc::new(file.try_clone()?),
            file,
            number,
            len: 0,
            buffer: Vec::new(),
        })
    }

    /// The file, for waiting on the disk (`fdatasync`) from another thread.
    pub(super) fn synced_by(&self) -> &Arc<File> {
        &self.synced_by
    }

    pub(super) fn number(&self) -> u64 {
        self.number
    }

    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Writes record `seq` after the last one, with its MAC under `key` if given, without
    /// waiting for the disk: once this returns, a crash of the process no longer loses it (the
    /// kernel holds it); a crash of the machine may, until the file is synced. On failure the
    /// file is cut back to where it was, so the next record does not follow a torn one;
    /// `Err(true)` if even that failed and no more may be written here.
    pub(super) fn write_record(
        &mut self,
        seq: u64,
        payload: &[u8],
        key: Option<&AuditKey>,
    ) -> Result<(), (io::Error, bool)> {
        let len = u32::try_from(payload.len())
            .ok()
            .filter(|len| *len <= MAX_PAYLOAD_BYTES)
            .ok_or_else(|| {
                let error = io::Error::new(io::ErrorKind::InvalidInput, "a group too large");
                (error, false)
            })?;
        self.buffer.clear();
        let field = if key.is_some() { len | MAC_FLAG } else { len };
        self.buffer.extend_from_slice(&field.to_le_bytes());
        self.buffer.extend_from_slice(&[0; 4]);
        self.buffer.extend_from_slice(&seq.to_le_bytes());
        self.buffer.extend_from_slice(payload);
        if let Some(key) = key {
            self.buffer.extend_from_slice(&mac_of(key, seq, payload));
        }
        let crc = checksum(seq, &self.buffer[HEADER_BYTES..]);
        self.buffer[4..8].copy_from_slice(&crc.to_le_bytes());
        match self.file.write_all(&self.buffer) {
            Ok(()) => {
                self.len += self.buffer.len() as u64;
                Ok(())
            }
            Err(error) => {
                // Zeros over whatever part of the record was written, then back to its start.
                let restored = (|| {
                    use std::io::Seek as _;
                    self.file.seek(io::SeekFrom::Start(self.len))?;
                    self.file.write_all(&vec![0u8; self.buffer.len()])?;
                    self.file.sync_data()?;
                    self.file.seek(io::SeekFrom::Start(self.len)).map(drop)
                })();
                Err((error, restored.is_err()))
            }
        }
    }

    /// Writes record `seq` and waits for the disk (tests; the store's syncer waits for it).
    #[cfg(test)]
    pub(super) fn append(&mut self, seq: u64, payload: &[u8]) -> Result<(), (io::Error, bool)> {
        self.append_keyed(seq, payload, None)
    }

    /// [`append`](Self::append), with its MAC under `key` if given.
    #[cfg(test)]
    pub(super) fn append_keyed(
        &mut self,
        seq: u64,
        payload: &[u8],
        key: Option<&AuditKey>,
    ) -> Result<(), (io::Error, bool)> {
        self.write_record(seq, payload, key)?;
        self.file.sync_data().map_err(|error| (error, true))
    }
}

/// Bytes a zero-filling write covers: one page. The kernel caches a file in blocks ("folios")
/// sized after the writes that made them (ext4 from Linux 6.16 on), an append dirties its
/// whole block, and `fdatasync` writes every dirty block out whole: a file filled 1 MiB at a
/// time had every sync of a 600-byte record write 1 MiB (500 MB/s under 2,000 asks a second,
/// which held up redb's syncs and the log's own).
const PREFILL_WRITE_BYTES: usize = 4096;

/// Writes `bytes` zeros at the start of `file`, a page at a time, syncs them, and seeks back
/// to the start.
fn prefill(file: &mut File, bytes: u64) -> io::Result<()> {
    use std::io::Seek as _;
    if bytes == 0 {
        return Ok(());
    }
    let zeros = [0u8; PREFILL_WRITE_BYTES];
    let mut left = bytes;
    while left > 0 {
        let chunk = left.min(zeros.len() as u64) as usize;
        file.write_all(&zeros[..chunk])?;
        left -= chunk as u64;
    }
    file.sync_data()?;
    file.seek(io::SeekFrom::Start(0)).map(drop)
}

/// Syncs directory `dir`, so that files created or removed in it stay so after a crash.
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A new directory for one test's files.
    pub(in crate::store::durable) fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "askgate-log-{name}-{}-{}",
            std::process::id(),
            rand::random::<u64>()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn written(dir: &Path, records: &[(u64, &[u8])]) -> PathBuf {
        let mut log = LogFile::create(dir, 1, 0).unwrap();
        for (seq, payload) in records {
            log.append(*seq, payload).unwrap();
        }
        path_of(dir, 1)
    }

    fn seqs(records: &[Record]) -> Vec<u64> {
        records.iter().map(|r| r.seq).collect()
    }

    #[test]
    fn records_read_back_as_appended() {
        let dir = temp_dir("roundtrip");
        let path = written(&dir, &[(1, b"one"), (2, b""), (3, b"three")]);
        let read = read(&path, None).unwrap();
        let seqs: Vec<(u64, &[u8])> = read
            .records
            .iter()
            .map(|r| (r.seq, r.payload.as_slice()))
            .collect();
        assert_eq!(seqs, [(1, &b"one"[..]), (2, &b""[..]), (3, &b"three"[..])]);
        assert!(read.damage.is_none());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_record_cut_short_ends_the_reading_at_the_one_before() {
        let dir = temp_dir("torn");
        let path = written(&dir, &[(1, b"kept"), (2, b"torn away")]);
        let whole = std::fs::metadata(&path).unwrap().len();
        for cut in [whole - 1, whole - 9, 16 + 4 + 3] {
            let file = OpenOptions::new().write(true).open(&path).unwrap();
            file.set_len(cut).unwrap();
            let read = read(&path, None).unwrap();
            assert_eq!(seqs(&read.records), [1], "cut at {cut}");
            let damage = read.damage.unwrap();
            assert_eq!((damage.at, damage.why), (20, "cut short"), "cut at {cut}");
            assert!(damage.after.is_empty());
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn records_past_a_damaged_one_are_found_and_counted() {
        let dir = temp_dir("damaged");
        let path = written(
            &dir,
            &[(1, b"kept"), (2, b"damaged"), (3, b"after"), (4, b"")],
        );
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[20 + 16 + 2] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let read = read(&path, None).unwrap();
        assert_eq!(seqs(&read.records), [1]);
        let damage = read.damage.as_ref().unwrap();
        assert_eq!((damage.at, damage.why), (20, "fails its check"));
        assert_eq!(seqs(&damage.after), [3, 4]);
        assert_eq!(read.last_seq(), Some(4));
        // A length past any group is damage too, not an allocation; and the records after it
        // are still found.
        bytes[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let read = super::read(&path, None).unwrap();
        let damage = read.damage.unwrap();
        assert_eq!(damage.why, "longer than any group");
        assert_eq!(seqs(&damage.after), [3, 4]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_keyed_record_is_taken_only_with_its_mac_under_the_key() {
        let key = AuditKey::from_bytes([7; 32]);
        let dir = temp_dir("keyed");
        let mut log = LogFile::create(&dir, 1, 4096).unwrap();
        for (seq, payload) in [(1, &b"one"[..]), (2, b"two"), (3, b"three")] {
            log.append_keyed(seq, payload, Some(&key)).unwrap();
        }
        let path = path_of(&dir, 1);
        let read = read(&path, Some(&key)).unwrap();
        assert_eq!(seqs(&read.records), [1, 2, 3]);
        assert!(read.records.iter().all(|r| r.mac) && read.damage.is_none());
        assert_eq!(read.records[1].payload, b"two");

        // Record 2 rewritten and its CRC made to match, as anyone who can write the file can:
        // its MAC does not hold, and that is said apart from a failed check.
        let mut bytes = std::fs::read(&path).unwrap();
        let second = 16 + 3 + MAC_BYTES;
        bytes[second + 16] = b'T';
        let crc = checksum(2, &bytes[second + 16..second + 16 + 3 + MAC_BYTES]);
        bytes[second + 4..second + 8].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let forged = super::read(&path, Some(&key)).unwrap();
        let damage = forged.damage.as_ref().unwrap();
        assert_eq!(
            (damage.at, damage.why, seqs(&damage.after)),
            (second as u64, FAILS_MAC, vec![3])
        );
        // Without the key it reads, MAC unchecked (the store then refuses a keyed format).
        assert_eq!(seqs(&super::read(&path, None).unwrap().records), [1, 2, 3]);
        // Under another key no record holds.
        let other = super::read(&path, Some(&AuditKey::from_bytes([8; 32]))).unwrap();
        assert_eq!((other.records.len(), other.damage.unwrap().at), (0, 0));

        // A record without a MAC, where the store's records carry one.
        let mut mixed = FileRead::default();
        for (seq, mac) in [(1, true), (2, false), (3, true)] {
            mixed.records.push(Record {
                seq,
                payload: Vec::new(),
                at: seq * 100,
                mac,
            });
        }
        mixed.demand_macs();
        let damage = mixed.damage.unwrap();
        assert_eq!(seqs(&mixed.records), [1]);
        assert_eq!(
            (damage.at, damage.why, seqs(&damage.after)),
            (200, NO_MAC, vec![3])
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_written_through_with_zeros_ends_at_its_last_record() {
        let dir = temp_dir("prefilled");
        let mut log = LogFile::create(&dir, 1, 4096).unwrap();
        log.append(1, b"one").unwrap();
        log.append(2, b"two").unwrap();
        let path = path_of(&dir, 1);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096);
        let read = read(&path, None).unwrap();
        assert_eq!(
            (seqs(&read.records), read.damage.is_none()),
            (vec![1, 2], true)
        );
        // A record torn over the zeros fails its check, with nothing after it.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[38..42].copy_from_slice(&9u32.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let read = super::read(&path, None).unwrap();
        assert_eq!(seqs(&read.records), [1, 2]);
        let damage = read.damage.unwrap();
        assert_eq!(
            (damage.at, damage.why, damage.after.len()),
            (38, "fails its check", 0)
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn zeros_over_a_record_with_records_after_them_are_damage() {
        let dir = temp_dir("zeroed");
        let mut log = LogFile::create(&dir, 1, 4096).unwrap();
        for seq in 1..=3 {
            log.append(seq, b"some").unwrap();
        }
        let path = path_of(&dir, 1);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[20..40].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let read = read(&path, None).unwrap();
        let damage = read.damage.unwrap();
        assert_eq!((damage.at, seqs(&damage.after)), (20, vec![3]));
        // Stray bytes past the zeros that make no record end the file, as a torn write may
        // leave them.
        bytes[40..80].fill(0);
        bytes[100] = 7;
        std::fs::write(&path, &bytes).unwrap();
        let read = super::read(&path, None).unwrap();
        assert_eq!(
            (seqs(&read.records), read.damage.is_none()),
            (vec![1], true)
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Bytes this thread has had written to storage so far, if the system says (Linux).
    fn bytes_written_by_this_thread() -> Option<u64> {
        let io = std::fs::read_to_string("/proc/thread-self/io").ok()?;
        io.lines()
            .find_map(|line| line.strip_prefix("write_bytes: "))?
            .parse()
            .ok()
    }

    #[test]
    fn a_synced_append_writes_about_its_own_page_not_a_block_of_the_zeros() {
        let dir = temp_dir("sync-cost");
        let mut log = LogFile::create(&dir, 1, PREFILL_MAX_BYTES).unwrap();
        let Some(before) = bytes_written_by_this_thread() else {
            return;
        };
        let appends = 64u64;
        for seq in 1..=appends {
            log.append(seq, &[b'x'; 600]).unwrap();
        }
        let per_sync = (bytes_written_by_this_thread().unwrap() - before) / appends;
        // A page, or two where a record straddles them; tmpfs counts none.
        assert!(
            per_sync <= 3 * PREFILL_WRITE_BYTES as u64,
            "each synced append wrote {per_sync} bytes"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn files_are_listed_by_number_and_others_ignored() {
        let dir = temp_dir("files");
        for number in [10, 2, 1] {
            LogFile::create(&dir, number, 0).unwrap();
        }
        std::fs::write(dir.join("log-x.wal"), b"").unwrap();
        std::fs::write(dir.join("askgate.redb"), b"").unwrap();
        let numbers: Vec<u64> = files(&dir).unwrap().into_iter().map(|f| f.0).collect();
        assert_eq!(numbers, [1, 2, 10]);
        assert!(
            LogFile::create(&dir, 2, 0).is_err(),
            "an existing file is not reused"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
