//! Reading a data directory without changing it, for `askgate store check` and `askgate audit
//! verify`: redb opened read-only (never repaired) and the log read, not replayed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::{ReadOnlyDatabase, ReadableDatabase, ReadableTableMetadata as _};

use askgate_protocol::SessionId;

use super::checkpoint::APPLIED_KEY;
use super::damage::LogScan;
use super::scratch::ScratchDir;
use super::{DurableStore, FILE_NAME, FORMAT_VERSION, LogSettings, META, StoreError, err, trails};
use crate::audit::chain::AuditKey;
use crate::store::{StoreFuture, Trails};

/// redb's `log_applied`, read without writing; why not, if it could not be.
fn applied(db: &impl ReadableDatabase) -> Result<u64, StoreError> {
    let txn = db.begin_read().map_err(|e| err("starting a read", e))?;
    let meta = match txn.open_table(META) {
        Ok(meta) => meta,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(0),
        Err(e) => return Err(err("opening the meta table", e)),
    };
    Ok(meta
        .get(APPLIED_KEY)
        .map_err(|e| err("reading the log's place", e))?
        .map_or(0, |v| v.value()))
}

/// A store's redb, opened without changing it: read-only when it was closed cleanly, else a
/// copy in a scratch directory beside it, repaired there as a start would repair the store
/// (and deleted with this).
enum Unchanged {
    Clean(ReadOnlyDatabase),
    Repaired(redb::Database, ScratchDir),
}

impl Unchanged {
    /// The redb of the store in `data_dir`, if there is one.
    fn open(data_dir: &Path) -> Result<Option<Unchanged>, StoreError> {
        let path = data_dir.join(FILE_NAME);
        if !path.exists() {
            return Ok(None);
        }
        match ReadOnlyDatabase::open(&path) {
            Ok(db) => Ok(Some(Unchanged::Clean(db))),
            Err(redb::DatabaseError::RepairAborted) => {
                let scratch = ScratchDir::beside(data_dir).map_err(|e| {
                    err(
                        &format!("making a scratch directory beside {}", data_dir.display()),
                        e,
                    )
                })?;
                let copy = scratch.path().join(FILE_NAME);
                std::fs::copy(&path, &copy).map_err(|e| {
                    err(
                        &format!("copying {} to {}", path.display(), copy.display()),
                        e,
                    )
                })?;
                let db = redb::Database::open(&copy)
                    .map_err(|e| err(&format!("repairing a copy of {}", path.display()), e))?;
                Ok(Some(Unchanged::Repaired(db, scratch)))
            }
            Err(error) => Err(explain(&path, error)),
        }
    }
}

/// redb's place in the log of the store in `data_dir` (0: no store yet), read without
/// changing it ([`Unchanged`]).
pub(super) fn applied_without_writing(data_dir: &Path) -> Result<u64, StoreError> {
    match Unchanged::open(data_dir)? {
        None => Ok(0),
        Some(Unchanged::Clean(db)) => applied(&db),
        Some(Unchanged::Repaired(db, _scratch)) => applied(&db),
    }
}

/// The format mark of the store in `data_dir`, read without changing it ([`Unchanged`]).
pub(super) fn format_without_writing(data_dir: &Path) -> Result<Option<u64>, StoreError> {
    match Unchanged::open(data_dir)? {
        None => Ok(None),
        Some(Unchanged::Clean(db)) => format(&db),
        Some(Unchanged::Repaired(db, _scratch)) => format(&db),
    }
}

/// Whether the store in `data_dir` holds audit trails and is not marked keyed, read without
/// changing it ([`Unchanged`]).
pub(super) fn unkeyed_trails_without_writing(data_dir: &Path) -> Result<bool, StoreError> {
    fn unkeyed_trails(db: &impl ReadableDatabase) -> Result<bool, StoreError> {
        Ok(format(db)? != Some(FORMAT_VERSION) && holds_trails(db)?)
    }
    match Unchanged::open(data_dir)? {
        None => Ok(false),
        Some(Unchanged::Clean(db)) => unkeyed_trails(&db),
        Some(Unchanged::Repaired(db, _scratch)) => unkeyed_trails(&db),
    }
}

/// Why `path` could not be opened read-only, and what to do.
fn explain(path: &Path, error: redb::DatabaseError) -> StoreError {
    match error {
        redb::DatabaseError::RepairAborted => StoreError::refused(format!(
            "{} was not closed cleanly (its gateway stopped without closing it) and is not \
             repaired here; the gateway repairs it at its next start",
            path.display()
        )),
        redb::DatabaseError::DatabaseAlreadyOpen => StoreError::refused(format!(
            "{} is open in a running gateway: stop it first",
            path.display()
        )),
        other => err(&format!("opening {} read-only", path.display()), other),
    }
}

/// What `askgate store check` found.
#[derive(Debug)]
pub struct StoreCheck {
    /// One line per finding, for a person.
    pub report: String,
    /// Whether the log is damaged (not only torn by a crash): the gateway would not start.
    pub damaged: bool,
}

/// Checks the store in `data_dir`: redb's state and every log file, changing nothing; with
/// `key`, the MACs of the log's records too (a store with keyed chains writes them).
///
/// # Errors
/// The directory or a log file cannot be read.
pub fn check(data_dir: &Path, key: Option<&AuditKey>) -> Result<StoreCheck, StoreError> {
    let mut report = String::new();
    let path = data_dir.join(FILE_NAME);
    let mut keyed = false;
    let applied = if path.exists() {
        match ReadOnlyDatabase::open(&path)
            .map_err(|e| explain(&path, e))
            .and_then(|db| Ok((applied(&db)?, format(&db)?)))
        {
            Ok((seq, format)) => {
                let _ = writeln!(
                    report,
                    "{}: holds the log up to record seq {seq}",
                    path.display()
                );
                keyed = format == Some(FORMAT_VERSION);
                Some(seq)
            }
            Err(error) => {
                let _ = writeln!(report, "{}: not read: {error}", path.display());
                None
            }
        }
    } else {
        let _ = writeln!(report, "{}: none (no store here yet)", path.display());
        None
    };
    let mut scan = LogScan::of_store(data_dir, key)?;
    if applied.is_none() && scan.any_without_mac() && path.exists() {
        // Records without a MAC, and redb not read: whether they should carry one is in redb
        // (a writer could have stripped every record's).
        keyed = format_without_writing(data_dir)? == Some(FORMAT_VERSION);
    }
    if keyed {
        scan.demand_macs();
    }
    let macs = scan
        .files
        .iter()
        .any(|(_, _, read)| read.records.iter().any(|r| r.mac));
    if macs && key.is_none() {
        let _ = writeln!(
            report,
            "the log's records carry MACs, not checked here: no audit key (--audit-key-file, or \
             <data-dir>/audit-key)"
        );
    }
    let torn = scan.torn_tail().map(|(path, at, _)| (path.to_owned(), at));
    for (_, path, read) in &scan.files {
        let line = match (read.records.first(), read.records.last()) {
            (Some(first), Some(last)) if first.seq == last.seq => {
                format!("record seq {}", first.seq)
            }
            (Some(first), Some(last)) => format!("records seq {} to {}", first.seq, last.seq),
            _ => "no record".to_owned(),
        };
        let _ = write!(report, "{}: {line}", path.display());
        if let Some(damage) = &read.damage {
            if torn.as_ref() == Some(&(path.clone(), damage.at)) {
                let _ = write!(
                    report,
                    "; then a record torn by a crash mid-append at byte {} ({}): never \
                     acknowledged, nothing lost",
                    damage.at, damage.why
                );
            } else {
                let _ = write!(
                    report,
                    "; then a damaged record at byte {} ({}), and {} records after it that \
                     pass their checks",
                    damage.at,
                    damage.why,
                    damage.after.len()
                );
            }
        }
        report.push('\n');
    }
    let Some(corruption) = scan.corruption() else {
        let _ = writeln!(report, "clean: the gateway starts on this store as it is");
        return Ok(StoreCheck {
            report,
            damaged: false,
        });
    };
    // redb's place, even when it was not closed cleanly: damage it already holds loses nothing.
    let holds = match applied {
        Some(seq) => Some(seq),
        None => applied_without_writing(data_dir).ok(),
    };
    if let Some(holds) = holds
        && scan.already_applied(&corruption, holds)
    {
        let _ = writeln!(
            report,
            "damaged only in records redb already holds (up to seq {holds}): {corruption}; \
             already applied, nothing lost: the gateway starts on this store, keeping {} aside \
             in a damaged-<time> folder here",
            corruption.path.display()
        );
        return Ok(StoreCheck {
            report,
            damaged: false,
        });
    }
    let before: Vec<u64> = scan.files[..=corruption.file]
        .iter()
        .flat_map(|(_, _, read)| read.records.iter().map(|r| r.seq))
        .filter(|seq| applied.is_none_or(|applied| *seq > applied))
        .collect();
    let _ = writeln!(report, "DAMAGED: {corruption}");
    let _ = writeln!(
        report,
        "recoverable: {} records before the damage that redb does not hold yet{}",
        before.len(),
        before
            .first()
            .zip(before.last())
            .map(|(a, b)| format!(" (seq {a} to {b})"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        report,
        "the gateway does not start on this store; `askgate serve --recover-damaged-log` \
         starts with the records before the damage and moves {} and every later log file into \
         a damaged-<time> folder here, losing from the store the {} records after the damage \
         that pass their checks (they stay in the moved files)",
        corruption.path.display(),
        corruption.after
    );
    Ok(StoreCheck {
        report,
        damaged: true,
    })
}

/// A store's audit trails, read without writing to its data directory: from redb opened
/// read-only when it was closed cleanly and its log holds nothing redb does not; otherwise from
/// a copy of redb and the log in a private scratch directory beside the data directory
/// ([`ScratchDir`]), repaired and replayed there as the gateway does at start (entries the log
/// holds are sealed onto their chains when redb takes them), and removed afterwards.
pub struct ReadOnlyTrails {
    direct: Option<ReadOnlyDatabase>,
    copy: Option<(DurableStore, ScratchDir)>,
    /// Why a copy was read, if one was.
    pub copied_because: Option<String>,
    /// The log's damage, said as `askgate store check` says it.
    pub damage: Option<String>,
    /// Whether its audit chains are keyed (format 4).
    pub keyed: bool,
    path: PathBuf,
}

impl Drop for ReadOnlyTrails {
    fn drop(&mut self) {
        // The store's threads stop before its files go.
        if let Some((store, dir)) = self.copy.take() {
            drop(store);
            drop(dir);
        }
    }
}

impl std::fmt::Debug for ReadOnlyTrails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOnlyTrails")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl ReadOnlyTrails {
    /// Opens the store in `data_dir` without writing to it.
    ///
    /// # Errors
    /// There is no store, it is open in a gateway, or it or its copy cannot be read.
    pub fn open(data_dir: &Path, audit_key: Option<Arc<AuditKey>>) -> Result<Self, StoreError> {
        let path = data_dir.join(FILE_NAME);
        let mut scan = LogScan::of_store(data_dir, audit_key.as_deref())?;
        let unclean = match ReadOnlyDatabase::open(&path) {
            Ok(db) => {
                let applied = applied(&db)?;
                let pending = scan
                    .files
                    .iter()
                    .flat_map(|(_, _, read)| {
                        read.records
                            .iter()
                            .chain(read.damage.iter().flat_map(|d| &d.after))
                    })
                    .filter(|record| record.seq > applied)
                    .count();
                if pending == 0 {
                    let found = format(&db)?;
                    let keyed = found == Some(FORMAT_VERSION);
                    if !keyed && audit_key.is_some() && holds_trails(&db)? {
                        return Err(super::unkeyed_with_a_key(&path, found));
                    }
                    if keyed {
                        scan.demand_macs();
                    }
                    let damage = scan
                        .corruption()
                        .filter(|c| !scan.already_applied(c, applied))
                        .map(|c| c.to_string());
                    return Ok(ReadOnlyTrails {
                        direct: Some(db),
                        copy: None,
                        copied_because: None,
                        damage,
                        keyed,
                        path,
                    });
                }
                format!("its log holds {pending} commits redb does not yet")
            }
            Err(redb::DatabaseError::RepairAborted) => {
                "it was not closed cleanly (its gateway stopped without closing it)".to_owned()
            }
            Err(error) => return Err(explain(&path, error)),
        };
        let (store, dir) = open_copy(data_dir, &scan, audit_key)?;
        let keyed = store.keyed();
        // The copy read the log as the gateway would, and recovered past any damage there.
        let damage = store.recovered_damage().map(|d| {
            d.replace(
                &dir.path().display().to_string(),
                &data_dir.display().to_string(),
            )
        });
        let copied_because = format!(
            "{unclean}: read from a copy in {}, repaired and replayed there as the gateway does \
             at start, and removed when done; the store itself is not changed",
            dir.path().display()
        );
        Ok(ReadOnlyTrails {
            direct: None,
            copy: Some((store, dir)),
            copied_because: Some(copied_because),
            damage,
            keyed,
            path,
        })
    }
}

/// The store's format version, read without writing.
pub(super) fn format(db: &impl ReadableDatabase) -> Result<Option<u64>, StoreError> {
    let txn = db.begin_read().map_err(|e| err("starting a read", e))?;
    let meta = match txn.open_table(META) {
        Ok(meta) => meta,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(err("opening the meta table", e)),
    };
    Ok(meta
        .get("format")
        .map_err(|e| err("reading the format version", e))?
        .map(|v| v.value()))
}

/// Whether the store holds an audit trail, read without writing.
pub(super) fn holds_trails(db: &impl ReadableDatabase) -> Result<bool, StoreError> {
    let txn = db.begin_read().map_err(|e| err("starting a read", e))?;
    match txn.open_table(trails::HEADS) {
        Ok(heads) => Ok(!heads
            .is_empty()
            .map_err(|e| err("reading the audit heads", e))?),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(false),
        Err(e) => Err(err("opening the audit heads", e)),
    }
}

/// Copies redb and the log files of `data_dir` into a new scratch directory beside it and
/// opens the store there (recovering past damage, which is reported apart).
fn open_copy(
    data_dir: &Path,
    scan: &LogScan,
    audit_key: Option<Arc<AuditKey>>,
) -> Result<(DurableStore, ScratchDir), StoreError> {
    let dir = ScratchDir::beside(data_dir).map_err(|e| {
        err(
            &format!("making a scratch directory beside {}", data_dir.display()),
            e,
        )
    })?;
    let from = data_dir.join(FILE_NAME);
    let made = std::fs::copy(&from, dir.path().join(FILE_NAME))
        .map_err(|e| err(&format!("copying {}", from.display()), e))
        .and_then(|_| {
            for (_, path, _) in &scan.files {
                let to = dir.path().join(path.file_name().unwrap_or_default());
                std::fs::copy(path, &to)
                    .map_err(|e| err(&format!("copying {}", path.display()), e))?;
            }
            let settings = LogSettings {
                recover_damaged_log: true,
                ..LogSettings::default()
            };
            DurableStore::open_keyed(dir.path(), Arc::default(), settings, audit_key)
        });
    match made {
        Ok(store) => Ok((store, dir)),
        // What is wrong is wrong with the store: name it, not the copy.
        Err(error) => Err(StoreError::new(
            error.kind,
            error.message.replace(
                &dir.path().display().to_string(),
                &data_dir.display().to_string(),
            ),
        )),
    }
}

impl Trails for ReadOnlyTrails {
    fn audit(
        &self,
        session: &SessionId,
        after_seq: u64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<String>> {
        match (&self.direct, &self.copy) {
            (Some(db), _) => Box::pin(std::future::ready(trails::read(
                db, session, after_seq, limit, false,
            ))),
            (None, Some((store, _))) => store.audit(session, after_seq, limit),
            (None, None) => closed(),
        }
    }

    fn recent_audit(&self, session: &SessionId, count: usize) -> StoreFuture<'_, Vec<String>> {
        match (&self.direct, &self.copy) {
            (Some(db), _) => Box::pin(std::future::ready(trails::read(
                db, session, 0, count, true,
            ))),
            (None, Some((store, _))) => store.recent_audit(session, count),
            (None, None) => closed(),
        }
    }

    fn audit_sessions(&self) -> StoreFuture<'_, Vec<SessionId>> {
        match (&self.direct, &self.copy) {
            (Some(db), _) => Box::pin(std::future::ready(trails::sessions(db))),
            (None, Some((store, _))) => store.audit_sessions(),
            (None, None) => closed(),
        }
    }
}

fn closed<T: Send + 'static>() -> StoreFuture<'static, T> {
    Box::pin(std::future::ready(Err(StoreError::unavailable(
        "the store was closed",
    ))))
}
