//! The durable store: a write-ahead log, and redb (pure Rust, ACID, copy-on-write B-trees)
//! behind it, in the data directory.
//!
//! Each commit is written to the log as one record by its caller, under a lock
//! ([`appender`]): once written, a crash of the process cannot lose it, and what it holds may be
//! shown. A thread of its own, the syncer ([`syncer`]), waits for the disk once for every
//! record written meanwhile (group commit) and then tells their callers, so concurrent asks
//! and answers share one `fdatasync`. A second thread, the checkpointer ([`checkpoint`]),
//! writes what the log holds to redb some milliseconds' worth at a time and deletes log files
//! redb holds all of; a reader of the trails or of the requests asks it to catch up first. At
//! start, whatever the log holds past what redb has is replayed into redb ([`recovery`])
//! before anything is read; a log damaged other than by a crash's torn tail ([`damage`]) stops
//! the start instead. [`read_only`] reads a store without writing to it (`store check`,
//! `audit verify` and `audit export`), in a [`scratch`] directory beside it when it must
//! repair a copy; [`logged`] is what the log keeps of a commit and how redb takes it. A commit
//! used to be a redb transaction of its own: each rewrote
//! the B-trees' paths and the allocator's state and synced them, most of the store's cost; a
//! record is one write of its bytes.
//!
//! Layout: `log-NNNNNNNN.wal` ([`log`]); in `askgate.redb`, table `requests`, key
//! `(session, id)`, value the JSON of a [`StoredRequest`]; table `meta`, key `format`, value
//! [`FORMAT_VERSION`] (keyed audit chains) or [`UNKEYED_FORMAT_VERSION`], and key
//! `log_applied`, the last log record redb holds; the audit trails in [`trails`]. A data
//! directory written in another format is refused with a clear error rather than misread;
//! format 1 (redb alone, before the log) and 2 (an audit entry a row, which format 3 reads as
//! rows of one line) are taken and marked 3 or 4: an askgate that reads format 2 would take a
//! row of several entries for one. (The trail tables came later without
//! a new format: a store without them simply has no trail yet.)
//!
//! With the `fuzzing` feature only, module `fuzzing` lets the fuzz targets reach the
//! decoders of the log and of its records.

mod appender;
mod checkpoint;
mod damage;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod log;
mod logged;
mod read_only;
mod recovery;
mod scratch;
mod syncer;
mod trails;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redb::{
    Database, ReadableDatabase as _, ReadableTable as _, ReadableTableMetadata as _,
    TableDefinition,
};
use tokio::sync::oneshot;

use askgate_protocol::SessionId;

use self::appender::{Appender, Durable};
use self::checkpoint::ToCheckpoint;
use self::syncer::{SyncQueue, Syncer, ToSync};
use super::{
    Durability, FollowUp, KeptField, KeptTable, Steps, Store, StoreError, StoreFuture, StoreOp,
    StoredDelivery, StoredRequest, Trails, Verdict,
};
use crate::audit::chain::{AuditKey, ChainKey};
use crate::metrics::StoreWrites;
pub use checkpoint::{CHECKPOINT_EVERY, MOST_CHANGES_HELD};
pub use read_only::{ReadOnlyTrails, StoreCheck, check};
pub use scratch::remove_live_scratch_dirs;

/// The on-disk format this build writes when its audit chains are keyed (HMAC-SHA256 under
/// the audit key): format 3 with keyed chains. An askgate that reads format 3 only refuses it,
/// rather than seal unkeyed entries onto keyed chains.
pub const FORMAT_VERSION: u64 = 4;
/// The format whose audit chains are unkeyed SHA-256: kept by a store that holds trails sealed
/// so (they still verify, and go on unkeyed), and written when no audit key is given.
pub const UNKEYED_FORMAT_VERSION: u64 = 3;
/// Earlier formats, read and marked 3 or 4: redb alone, before the log; and one audit entry a
/// row, before a row held what a checkpoint sealed onto its session.
const FORMATS_TAKEN: [u64; 2] = [1, 2];
/// The database file inside the data directory.
pub const FILE_NAME: &str = "askgate.redb";
/// redb's own page cache. Its default, 1 GiB, would let the process grow by as much as the
/// audit trails' size, which only grows; the kernel's page cache still keeps the file's hot
/// pages, outside the process. Small, because what it holds stays after the requests that
/// filled it have ended: at 16 MiB, 1,488 ended requests of 64 KiB left the gateway at 43 MB
/// against 13 MB at start; at 4 MiB, 29-33 MB (bench/memory-return.py,
/// bench/history/*-memory-redb-cache.txt). The gateway reads the store at start and for
/// history frames (themselves cached), so a small cache costs it little.
const CACHE_BYTES: usize = 4 * 1024 * 1024;

const REQUESTS: TableDefinition<'_, (&str, &str), &[u8]> = TableDefinition::new("requests");
const META: TableDefinition<'_, &str, u64> = TableDefinition::new("meta");
/// Notifications not yet sent, by session and id: each a [`StoredDelivery`]'s JSON.
const OUTBOX: TableDefinition<'_, (&str, &str), &[u8]> = TableDefinition::new("outbox");
/// The follow-ups done of each request that has had one, by session and id: a bit each
/// (`logged::follow_up_bit`). Kept apart from the request's row, which is written once per
/// checkpoint as its changes leave it.
const FOLLOW_UPS: TableDefinition<'_, (&str, &str), u8> = TableDefinition::new("follow_ups");
/// Who follows each session, by session and person (the value means nothing).
const FOLLOWERS: TableDefinition<'_, (&str, &str), u8> = TableDefinition::new("followers");
/// The kept tables ([`KeptTable`]), by table name, key and field: each field's value.
const KEPT: TableDefinition<'_, (&str, &str, &str), &str> = TableDefinition::new("kept");

/// How the log is written, and read back at start.
#[derive(Clone, Copy, Debug)]
pub struct LogSettings {
    /// Start even if the log is damaged (not only torn by a crash): replay the records before
    /// the damage, move the damaged files aside and log what they held
    /// (`--recover-damaged-log`). Otherwise the store does not open.
    pub recover_damaged_log: bool,
    /// How long the log may hold what redb does not, while commits keep coming.
    pub checkpoint_every: Duration,
    /// A log file takes no more records once it holds this many bytes.
    pub rotate_at_bytes: u64,
    /// Under load, the shortest time from one wait for the disk to the next.
    pub sync_at_most_every: Duration,
    /// The longest a record nobody waits on stays written but not synced.
    pub sync_lazily_within: Duration,
    /// How often redb's written pages are sent to the disk between durable checkpoints.
    pub writeback_every: Duration,
}

impl Default for LogSettings {
    fn default() -> Self {
        LogSettings {
            recover_damaged_log: false,
            checkpoint_every: CHECKPOINT_EVERY,
            rotate_at_bytes: log::ROTATE_AT_BYTES,
            sync_at_most_every: syncer::SYNC_AT_MOST_EVERY,
            sync_lazily_within: syncer::SYNC_LAZILY_WITHIN,
            writeback_every: checkpoint::WRITEBACK_EVERY,
        }
    }
}

/// Batches of changes the checkpointer may be handed before the syncer waits for it.
const CHECKPOINT_QUEUE: usize = 65_536;

/// Requests and outcomes in a log and a redb file, written with group commit.
pub struct DurableStore {
    db: Arc<Database>,
    /// The log, written by committing callers; `None` once the store is being dropped.
    appender: Mutex<Option<Appender>>,
    /// What the syncer makes durable (and flushes, which it passes on to the checkpointer
    /// once what was written before them is durable); closed on drop.
    to_sync: Arc<SyncQueue>,
    /// The syncer thread, joined on drop so every record written is durable when the store
    /// is gone.
    syncer: Option<std::thread::JoinHandle<()>>,
    /// Once the syncer's copy is gone too, the checkpointer writes what it holds and stops.
    checkpoints: Option<std_mpsc::SyncSender<ToCheckpoint>>,
    /// The checkpointer thread, joined on drop after the syncer.
    checkpointer: Option<std::thread::JoinHandle<()>>,
    /// Its records, syncs and checkpoints.
    counts: Arc<StoreWrites>,
    path: PathBuf,
    /// Whether its audit chains are keyed.
    keyed: bool,
    /// The damage in its log that opening it recovered past (with `recover_damaged_log`).
    recovered_damage: Option<String>,
}

impl Drop for DurableStore {
    fn drop(&mut self) {
        self.appender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        self.to_sync.close();
        if let Some(syncer) = self.syncer.take() {
            let _ = syncer.join();
        }
        self.checkpoints.take();
        if let Some(checkpointer) = self.checkpointer.take() {
            let _ = checkpointer.join();
        }
    }
}

impl std::fmt::Debug for DurableStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn err(context: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::io(format!("{context}: {error}"))
}

impl DurableStore {
    /// Opens (or creates) the store in `data_dir`.
    ///
    /// # Errors
    /// The directory cannot be created or written, the file is not an askgate store, or it
    /// holds another format version.
    pub fn open(data_dir: &Path) -> Result<Self, StoreError> {
        Self::open_counted(data_dir, Arc::default())
    }

    /// [`open`](Self::open), counting its records, syncs and checkpoints into `counts`.
    ///
    /// # Errors
    /// As for [`open`](Self::open).
    pub fn open_counted(data_dir: &Path, counts: Arc<StoreWrites>) -> Result<Self, StoreError> {
        Self::open_with(data_dir, counts, LogSettings::default())
    }

    /// [`open_counted`](Self::open_counted) with `settings` for its log (tests make checkpoints
    /// rare, to find the log alone holding their commits, and files small).
    ///
    /// # Errors
    /// As for [`open`](Self::open); also a log record that cannot be read back.
    pub fn open_with(
        data_dir: &Path,
        counts: Arc<StoreWrites>,
        settings: LogSettings,
    ) -> Result<Self, StoreError> {
        Self::open_keyed(data_dir, counts, settings, None)
    }

    /// [`open_with`](Self::open_with), sealing audit entries with HMAC-SHA256 under
    /// `audit_key` when given. Without one, a store that holds trails sealed unkeyed (format
    /// 3) goes on unkeyed, with a warning.
    ///
    /// # Errors
    /// As for [`open_with`](Self::open_with); also a keyed store (format 4) opened without a
    /// key, and a store marked unkeyed that holds trails opened with one.
    pub fn open_keyed(
        data_dir: &Path,
        counts: Arc<StoreWrites>,
        settings: LogSettings,
        audit_key: Option<Arc<AuditKey>>,
    ) -> Result<Self, StoreError> {
        std::fs::create_dir_all(data_dir).map_err(|e| {
            err(
                &format!("creating the data directory {}", data_dir.display()),
                e,
            )
        })?;
        // Read before redb is opened (which may write to it): a damaged log leaves every file
        // as it was.
        let mut scan = damage::LogScan::of_store(data_dir, audit_key.as_deref())?;
        if audit_key.is_some()
            && scan.any_without_mac()
            && read_only::format_without_writing(data_dir)? == Some(FORMAT_VERSION)
        {
            // Every record of a keyed store's log carries a MAC: these were stripped of it.
            scan.demand_macs();
        }
        if audit_key.is_some() && scan.no_mac_holds() {
            return Err(StoreError::refused(format!(
                "no record's MAC in the store's log in {} holds under the audit key given: the \
                 log and the trails were sealed with another audit key than the one given; give \
                 the key they were sealed with (--audit-key-file, or <data-dir>/audit-key)",
                data_dir.display()
            )));
        }
        if let Some(corruption) = scan.corruption()
            && !settings.recover_damaged_log
            && !scan.already_applied(&corruption, read_only::applied_without_writing(data_dir)?)
        {
            return Err(corruption.refusal(data_dir));
        }
        let path = data_dir.join(FILE_NAME);
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(&path)
            .map_err(|e| err(&format!("opening the store {}", path.display()), e))?;
        let (chain, keyed_before) = check_format(&db, &path, audit_key)?;
        check_key(&db, &path, &chain)?;
        let keyed = matches!(chain, ChainKey::Keyed(_));
        if keyed_before {
            // Its records were written with their MACs: one without was written (or stripped)
            // by someone without the key. (A store keyed only now has a log written unkeyed.)
            scan.demand_macs();
        }
        let recovered_damage = scan
            .corruption()
            .filter(|c| !scan.already_applied(c, recovery::applied(&db).unwrap_or(0)))
            .map(|c| c.to_string());
        let resumed =
            recovery::recover(&db, data_dir, &scan, settings.recover_damaged_log, &chain)?;
        drop(scan);
        let prefill_bytes = settings.rotate_at_bytes.min(log::PREFILL_MAX_BYTES);
        let file =
            log::LogFile::create(data_dir, resumed.next_file, prefill_bytes).map_err(|e| {
                err(
                    &format!("starting the store's log in {}", data_dir.display()),
                    e,
                )
            })?;
        let db = Arc::new(db);
        let (checkpoints, checkpoint_queue) = std_mpsc::sync_channel(CHECKPOINT_QUEUE);
        let checkpoint_db = Arc::clone(&db);
        let checkpoint_counts = Arc::clone(&counts);
        let (ready, spares) = std_mpsc::sync_channel(1);
        let first_file = resumed.next_file;
        let spares_made = checkpoint::Spares {
            dir: data_dir.to_owned(),
            prefill_bytes,
            ready,
        };
        let mut writeback = checkpoint::Writeback::open(&path, settings.writeback_every)
            .map_err(|e| err(&format!("opening {} for its writeback", path.display()), e))?;
        let chain_for_log = chain.clone();
        let checkpointer = std::thread::Builder::new()
            .name("askgate-checkpoint".into())
            .spawn(move || {
                checkpoint::give_way();
                spares_made.make_ready(first_file + 1);
                checkpoint::checkpoint_loop(
                    &checkpoint_db,
                    &checkpoint_queue,
                    settings.checkpoint_every,
                    &spares_made,
                    &mut writeback,
                    &checkpoint_counts,
                    &chain,
                );
            })
            .map_err(|e| err("starting the store's checkpointer thread", e))?;
        let to_sync = Arc::new(SyncQueue::default());
        let sync_queue = Arc::clone(&to_sync);
        let failed_file = Arc::new(AtomicU64::new(0));
        let syncing = Syncer {
            at_most_every: settings.sync_at_most_every,
            lazily_within: settings.sync_lazily_within,
            checkpointer: checkpoints.clone(),
            failed_file: Arc::clone(&failed_file),
            counts: Arc::clone(&counts),
        };
        let syncer = std::thread::Builder::new()
            .name("askgate-sync".into())
            .spawn(move || syncing.run(&sync_queue))
            .map_err(|e| err("starting the store's syncer thread", e))?;
        let appender = Appender {
            dir: data_dir.to_owned(),
            file,
            next_seq: resumed.last_seq + 1,
            broken: false,
            rotate_at_bytes: settings.rotate_at_bytes,
            spares,
            to_sync: Arc::clone(&to_sync),
            failed_file,
            payload: Vec::new(),
            counts: Arc::clone(&counts),
            key: match &chain_for_log {
                ChainKey::Keyed(key) => Some(Arc::clone(key)),
                ChainKey::Unkeyed => None,
            },
        };
        Ok(DurableStore {
            db,
            appender: Mutex::new(Some(appender)),
            to_sync,
            syncer: Some(syncer),
            checkpoints: Some(checkpoints),
            checkpointer: Some(checkpointer),
            counts,
            path,
            keyed,
            recovered_damage,
        })
    }

    /// Writes `ops` to the log; the receiver hears once they are durable.
    fn append(&self, ops: Vec<StoreOp>, durability: Durability) -> Result<Durable, StoreError> {
        self.appender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            .ok_or_else(|| StoreError::unavailable("the store is closing"))?
            .append(ops, durability)
    }

    /// Runs `read` on redb once the checkpointer has written every commit made so far.
    fn read_flushed<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Database) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        let db = Arc::clone(&self.db);
        let to_sync = Arc::clone(&self.to_sync);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let stopped = || StoreError::unavailable("the store's checkpointer has stopped");
                let (reply, flushed) = oneshot::channel();
                to_sync.send(ToSync::Flush(reply));
                flushed.blocking_recv().map_err(|_| stopped())??;
                read(&db)
            })
            .await
            .map_err(|e| err("reading the store", e))?
        })
    }

    /// Its records, syncs and checkpoints so far.
    pub fn writes(&self) -> &StoreWrites {
        &self.counts
    }

    /// Whether its audit chains are keyed (HMAC-SHA256), not plain SHA-256.
    pub fn keyed(&self) -> bool {
        self.keyed
    }

    /// The damage in its log that opening it recovered past, as `store check` says it.
    pub fn recovered_damage(&self) -> Option<&str> {
        self.recovered_damage.as_deref()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Writes the format version into a new store, or checks an existing one; how its audit
/// chains are hashed, and whether they were keyed before (not only from now on).
fn check_format(
    db: &Database,
    path: &Path,
    audit_key: Option<Arc<AuditKey>>,
) -> Result<(ChainKey, bool), StoreError> {
    let txn = db
        .begin_write()
        .map_err(|e| err("starting a transaction", e))?;
    let chain;
    let found;
    {
        let has_trails = !txn
            .open_table(trails::HEADS)
            .map_err(|e| err("opening the audit heads", e))?
            .is_empty()
            .map_err(|e| err("reading the audit heads", e))?;
        let mut meta = txn
            .open_table(META)
            .map_err(|e| err("opening the meta table", e))?;
        found = meta
            .get("format")
            .map_err(|e| err("reading the format version", e))?
            .map(|v| v.value());
        let marked = match (found, audit_key) {
            (Some(FORMAT_VERSION), Some(key)) => {
                chain = ChainKey::Keyed(key);
                None
            }
            (Some(FORMAT_VERSION), None) => {
                return Err(StoreError::refused(format!(
                    "{} seals its audit trails with a key (format {FORMAT_VERSION}); give it \
                     (--audit-key-file)",
                    path.display()
                )));
            }
            (Some(other), _)
                if other != UNKEYED_FORMAT_VERSION && !FORMATS_TAKEN.contains(&other) =>
            {
                return Err(StoreError::refused(format!(
                    "{} holds askgate store format {other}; this askgate reads format \
                     {FORMAT_VERSION}. Use the askgate version that wrote it, or another \
                     --data-dir",
                    path.display()
                )));
            }
            (found, Some(key)) if !has_trails => {
                // No entry sealed yet: every one to come can be keyed.
                chain = ChainKey::Keyed(key);
                (found != Some(FORMAT_VERSION)).then_some(FORMAT_VERSION)
            }
            (found, Some(_)) => return Err(unkeyed_with_a_key(path, found)),
            (found, None) => {
                if has_trails {
                    tracing::warn!(
                        store = %path.display(),
                        "this store's audit trails were sealed with unkeyed SHA-256 before audit keys, and go on so: they show accidental damage only, not a rewrite by someone who can write the store. A new data directory seals keyed trails"
                    );
                }
                chain = ChainKey::Unkeyed;
                (found != Some(UNKEYED_FORMAT_VERSION)).then_some(UNKEYED_FORMAT_VERSION)
            }
        };
        if let Some(format) = marked {
            meta.insert("format", format)
                .map_err(|e| err("writing the format version", e))?;
        }
        txn.open_table(REQUESTS)
            .map_err(|e| err("opening the requests table", e))?;
    }
    txn.commit()
        .map_err(|e| err(&format!("writing to {}", path.display()), e))?;
    Ok((chain, found == Some(FORMAT_VERSION)))
}

/// Why a store marked unkeyed that holds trails is not opened with a key. Taking it would let
/// whoever can write the store, without the key, undo the key: mark the store unkeyed and
/// re-hash every entry with plain SHA-256.
pub(crate) fn unkeyed_with_a_key(path: &Path, found: Option<u64>) -> StoreError {
    let marked = found.map_or_else(
        || "carries no format mark".to_owned(),
        |format| format!("is marked unkeyed (format {format})"),
    );
    StoreError::refused(format!(
        "{} {marked} and holds audit trails, but an audit key is given (--audit-key-file, or \
         <data-dir>/audit-key): its trails are not taken as unkeyed SHA-256 while a key is at \
         hand. If they were sealed before audit keys, use the store without a key (no \
         --audit-key-file, and move <data-dir>/audit-key away): they go on unkeyed. If they \
         were keyed, someone who can write the store has marked it unkeyed and may have \
         re-hashed its trails: check them against an export's checkpoint kept elsewhere \
         (`askgate audit verify --checkpoint FILE`, without the key)",
        path.display()
    ))
}

/// Whether the store in `data_dir` holds audit trails sealed unkeyed (SHA-256, format 3 or
/// earlier): such a store stays unkeyed, and no key is made for it. Read without changing the
/// store (a start refused for a damaged log leaves every file as it was).
///
/// # Errors
/// The store cannot be opened or read.
pub fn holds_unkeyed_trails(data_dir: &Path) -> Result<bool, StoreError> {
    read_only::unkeyed_trails_without_writing(data_dir)
}

/// Refuses a key other than the one the trails were sealed with: a session's newest entry must
/// hash under it, or every entry sealed from now on would break its chain.
fn check_key(db: &Database, path: &Path, chain: &ChainKey) -> Result<(), StoreError> {
    if matches!(chain, ChainKey::Unkeyed) {
        return Ok(());
    }
    let Some(line) = trails::an_entry(db)? else {
        return Ok(());
    };
    match crate::audit::read_line(&line) {
        Ok(read) if !read.hash_holds_with(chain) => Err(StoreError::refused(format!(
            "{}'s audit trails were sealed with another audit key than the one given (an \
             entry's hash does not hold under it): give the key it was sealed with \
             (--audit-key-file, or <data-dir>/audit-key)",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Waits for the syncer's word on a record.
fn made_durable(appended: Result<Durable, StoreError>) -> StoreFuture<'static, ()> {
    Box::pin(async move {
        appended?
            .await
            .map_err(|_| StoreError::unavailable("the store's syncer thread has stopped"))?
    })
}

impl Store for DurableStore {
    fn commit(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, ()> {
        made_durable(self.append(ops, Durability::Prompt))
    }

    fn decide_in_steps(&self, ops: Vec<StoreOp>, durability: Durability) -> Steps {
        let count = ops.len();
        let appended = self.append(ops, durability);
        let taken = match &appended {
            Ok(_) => Ok(vec![Verdict::Done; count]),
            Err(error) => Err(error.clone()),
        };
        Steps {
            taken: Box::pin(std::future::ready(taken)),
            durable: made_durable(appended),
        }
    }

    fn load(&self) -> StoreFuture<'_, Vec<StoredRequest>> {
        self.read_flushed(read_all)
    }

    fn deliveries(&self) -> StoreFuture<'_, Vec<StoredDelivery>> {
        self.read_flushed(read_outbox)
    }

    fn followers(&self) -> StoreFuture<'_, Vec<(SessionId, String)>> {
        self.read_flushed(read_followers)
    }

    fn kept(&self) -> StoreFuture<'_, Vec<KeptField>> {
        self.read_flushed(read_kept)
    }

    fn trails(&self) -> &dyn Trails {
        self
    }
}

impl Trails for DurableStore {
    fn audit(
        &self,
        session: &SessionId,
        after_seq: u64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<String>> {
        self.read_trail(session, after_seq, limit, false)
    }

    fn recent_audit(&self, session: &SessionId, count: usize) -> StoreFuture<'_, Vec<String>> {
        self.read_trail(session, 0, count, true)
    }

    fn audit_sessions(&self) -> StoreFuture<'_, Vec<SessionId>> {
        self.read_flushed(trails::sessions)
    }
}

impl DurableStore {
    fn read_trail(
        &self,
        session: &SessionId,
        after_seq: u64,
        limit: usize,
        newest: bool,
    ) -> StoreFuture<'_, Vec<String>> {
        let session = session.clone();
        self.read_flushed(move |db| trails::read(db, &session, after_seq, limit, newest))
    }
}

fn read_outbox(db: &Database) -> Result<Vec<StoredDelivery>, StoreError> {
    let txn = db.begin_read().map_err(|e| err("starting a read", e))?;
    let table = match txn.open_table(OUTBOX) {
        Ok(table) => table,
        // A store from before notifications: nothing to send.
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(err("opening the notifications table", e)),
    };
    let mut out = Vec::new();
    for row in table.iter().map_err(|e| err("reading notifications", e))? {
        let (key, value) = row.map_err(|e| err("reading a notification", e))?;
        match serde_json::from_slice::<StoredDelivery>(value.value()) {
            Ok(delivery) => out.push(delivery),
            Err(error) => {
                let (session, id) = key.value();
                tracing::error!(%session, notification = %id, %error, "a stored notification could not be decoded; left in the store");
            }
        }
    }
    Ok(out)
}

fn read_followers(db: &Database) -> Result<Vec<(SessionId, String)>, StoreError> {
    let txn = db.begin_read().map_err(|e| err("starting a read", e))?;
    let table = match txn.open_table(FOLLOWERS) {
        Ok(table) => table,
        // A store from before followers: nobody follows anything.
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(err("opening the followers table", e)),
    };
    let mut out = Vec::new();
    for row in table.iter().map_err(|e| err("reading followers", e))? {
        let (key, _) = row.map_err(|e| err("reading a follower", e))?;
        let (session, user) = key.value();
        match SessionId::parse(session) {
            Ok(id) => out.push((id, user.to_owned())),
            Err(_) => {
                tracing::error!(%session, %user, "a stored follower names no valid session; left in the store");
            }
        }
    }
    Ok(out)
}

fn read_kept(db: &Database) -> Result<Vec<KeptField>, StoreError> {
    let txn = db.begin_read().map_err(|e| err("starting a read", e))?;
    let table = match txn.open_table(KEPT) {
        Ok(table) => table,
        // A store from before the kept tables: nothing kept.
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(err("opening the kept table", e)),
    };
    let mut out = Vec::new();
    for row in table.iter().map_err(|e| err("reading the kept table", e))? {
        let (key, value) = row.map_err(|e| err("reading a kept field", e))?;
        let (table_name, key, field) = key.value();
        match KeptTable::parse(table_name) {
            Some(table) => out.push(KeptField {
                table,
                key: key.to_owned(),
                field: field.to_owned(),
                value: value.value().to_owned(),
            }),
            None => {
                tracing::error!(table = %table_name, %key, %field, "a kept field names no table this build knows; left in the store");
            }
        }
    }
    Ok(out)
}

fn read_all(db: &Database) -> Result<Vec<StoredRequest>, StoreError> {
    let txn = db.begin_read().map_err(|e| err("starting a read", e))?;
    let table = txn
        .open_table(REQUESTS)
        .map_err(|e| err("opening the requests table", e))?;
    let follow_ups = match txn.open_table(FOLLOW_UPS) {
        Ok(table) => Some(table),
        // A store from before follow-ups: none done.
        Err(redb::TableError::TableDoesNotExist(_)) => None,
        Err(e) => return Err(err("opening the follow-ups table", e)),
    };
    let mut out = Vec::new();
    for row in table.iter().map_err(|e| err("reading requests", e))? {
        let (key, value) = row.map_err(|e| err("reading a request", e))?;
        match serde_json::from_slice::<StoredRequest>(value.value()) {
            Ok(mut request) => {
                let done = match &follow_ups {
                    Some(table) => table
                        .get(key.value())
                        .map_err(|e| err("reading follow-ups", e))?
                        .map_or(0, |v| v.value()),
                    None => 0,
                };
                for follow_up in [FollowUp::Remind, FollowUp::Escalate] {
                    if done & logged::follow_up_bit(follow_up) != 0 {
                        request.follow_ups.mark(follow_up);
                    }
                }
                out.push(request);
            }
            // One damaged record must not keep every other one from coming back: it is left
            // in the store, for a person to look at, and the rest load.
            Err(error) => {
                let (session, request) = key.value();
                tracing::error!(%session, %request, %error, "a stored request could not be decoded; left in the store");
            }
        }
    }
    Ok(out)
}
