//! The durable store: a write-ahead log, and redb (pure Rust, ACID, copy-on-write B-trees)
//! behind it, in the data directory.
//!
//! One writer thread owns the log ([`writer`]). Commits that arrive while it is busy are
//! grouped into its next record, so concurrent asks and answers share one `fdatasync` of an
//! append, and each caller waits for the record that holds its operations. A second thread,
//! the checkpointer ([`checkpoint`]), writes what the log holds to redb some milliseconds'
//! worth at a time and deletes log files redb holds all of; a reader of the trails or of the
//! requests asks it to catch up first. At start, whatever the log holds past what redb has is
//! replayed into redb ([`recovery`]) before anything is read. A commit used to be a redb
//! transaction of its own: each rewrote the B-trees' paths and the allocator's state and
//! synced them, most of the store's cost; the log's append is one write of the group's bytes.
//!
//! Layout: `log-NNNNNNNN.wal` ([`log`]); in `askgate.redb`, table `requests`, key
//! `(session, id)`, value the JSON of a [`StoredRequest`]; table `meta`, key `format`, value
//! [`FORMAT_VERSION`], and key `log_applied`, the last log record redb holds; the audit trails
//! in [`trails`]. A data directory written in another format is refused with a clear error
//! rather than misread; format 1 (redb alone, before the log) is taken and marked 2. (The
//! trail tables came later without a new format: a store without them simply has no trail
//! yet.)

mod checkpoint;
mod log;
mod logged;
mod recovery;
mod trails;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use redb::{Database, ReadableDatabase as _, ReadableTable as _, TableDefinition};
use tokio::sync::oneshot;

use askgate_protocol::SessionId;

use self::checkpoint::ToCheckpoint;
use self::writer::{Job, Writer};
use super::{Store, StoreError, StoreFuture, StoreOp, StoredRequest, Trails};
use crate::metrics::StoreWrites;
pub use checkpoint::CHECKPOINT_EVERY;

/// The on-disk format this build reads and writes.
pub const FORMAT_VERSION: u64 = 2;
/// The format before the log, read and marked [`FORMAT_VERSION`].
const FORMAT_WITHOUT_LOG: u64 = 1;
/// The database file inside the data directory.
pub const FILE_NAME: &str = "askgate.redb";
/// redb's own page cache. Its default, 1 GiB, would let the process grow by as much as the
/// audit trails' size, which only grows; the kernel's page cache still keeps the file's hot
/// pages, outside the process.
const CACHE_BYTES: usize = 16 * 1024 * 1024;

const REQUESTS: TableDefinition<'_, (&str, &str), &[u8]> = TableDefinition::new("requests");
const META: TableDefinition<'_, &str, u64> = TableDefinition::new("meta");

/// How the log is written.
#[derive(Clone, Copy, Debug)]
pub struct LogSettings {
    /// How long the log may hold what redb does not, while commits keep coming.
    pub checkpoint_every: Duration,
    /// A log file takes no more records once it holds this many bytes.
    pub rotate_at_bytes: u64,
}

impl Default for LogSettings {
    fn default() -> Self {
        LogSettings {
            checkpoint_every: CHECKPOINT_EVERY,
            rotate_at_bytes: log::ROTATE_AT_BYTES,
        }
    }
}

/// Held changes the checkpointer may be handed before the writer waits for it.
const CHECKPOINT_QUEUE: usize = 65_536;

/// Requests and outcomes in a log and a redb file, written with group commit.
pub struct DurableStore {
    db: Arc<Database>,
    /// Jobs for the writer thread; dropping it stops the thread.
    jobs: Option<std_mpsc::Sender<Job>>,
    /// The writer thread, joined on drop so the log is closed when the store is gone.
    writer: Option<std::thread::JoinHandle<()>>,
    /// Flushes for the checkpointer; once the writer's copy is gone too, it writes what it
    /// holds and stops.
    checkpoints: Option<std_mpsc::SyncSender<ToCheckpoint>>,
    /// The checkpointer thread, joined on drop after the writer.
    checkpointer: Option<std::thread::JoinHandle<()>>,
    /// Its transactions.
    counts: Arc<StoreWrites>,
    path: PathBuf,
}

impl Drop for DurableStore {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
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
    StoreError(format!("{context}: {error}"))
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

    /// [`open`](Self::open), counting the writer's group commits into `counts`.
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
        std::fs::create_dir_all(data_dir).map_err(|e| {
            err(
                &format!("creating the data directory {}", data_dir.display()),
                e,
            )
        })?;
        let path = data_dir.join(FILE_NAME);
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(&path)
            .map_err(|e| err(&format!("opening the store {}", path.display()), e))?;
        check_format(&db, &path)?;
        let resumed = recovery::recover(&db, data_dir)?;
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
        let spares_made = checkpoint::Spares {
            dir: data_dir.to_owned(),
            prefill_bytes,
            ready,
        };
        let checkpointer = std::thread::Builder::new()
            .name("askgate-checkpoint".into())
            .spawn(move || {
                checkpoint::give_way();
                spares_made.make_ready();
                checkpoint::checkpoint_loop(
                    &checkpoint_db,
                    &checkpoint_queue,
                    settings.checkpoint_every,
                    &spares_made,
                    &checkpoint_counts,
                );
            })
            .map_err(|e| err("starting the store's checkpointer thread", e))?;
        let (jobs, queue) = std_mpsc::channel::<Job>();
        let writer = Writer {
            dir: data_dir.to_owned(),
            file,
            next_seq: resumed.last_seq + 1,
            checkpointer: checkpoints.clone(),
            broken: false,
            rotate_at_bytes: settings.rotate_at_bytes,
            spares,
        };
        let writer_counts = Arc::clone(&counts);
        let writer = std::thread::Builder::new()
            .name("askgate-store".into())
            .spawn(move || writer.run(&queue, &writer_counts))
            .map_err(|e| err("starting the store's writer thread", e))?;
        Ok(DurableStore {
            db,
            jobs: Some(jobs),
            writer: Some(writer),
            checkpoints: Some(checkpoints),
            checkpointer: Some(checkpointer),
            counts,
            path,
        })
    }

    /// Runs `read` on redb once the checkpointer has written every commit made so far.
    fn read_flushed<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Database) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        let db = Arc::clone(&self.db);
        let checkpoints = self.checkpoints.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let stopped = || StoreError("the store's checkpointer has stopped".into());
                let (reply, flushed) = oneshot::channel();
                checkpoints
                    .ok_or_else(stopped)?
                    .send(ToCheckpoint::Flush(reply))
                    .map_err(|_| stopped())?;
                flushed.blocking_recv().map_err(|_| stopped())??;
                read(&db)
            })
            .await
            .map_err(|e| err("reading the store", e))?
        })
    }

    /// The writer's transactions so far.
    pub fn writes(&self) -> &StoreWrites {
        &self.counts
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Writes the format version into a new store, or checks an existing one.
fn check_format(db: &Database, path: &Path) -> Result<(), StoreError> {
    let txn = db
        .begin_write()
        .map_err(|e| err("starting a transaction", e))?;
    {
        let mut meta = txn
            .open_table(META)
            .map_err(|e| err("opening the meta table", e))?;
        let found = meta
            .get("format")
            .map_err(|e| err("reading the format version", e))?
            .map(|v| v.value());
        match found {
            Some(FORMAT_VERSION) => {}
            Some(FORMAT_WITHOUT_LOG) | None => {
                meta.insert("format", FORMAT_VERSION)
                    .map_err(|e| err("writing the format version", e))?;
            }
            Some(other) => {
                return Err(StoreError(format!(
                    "{} holds askgate store format {other}; this askgate reads format \
                     {FORMAT_VERSION}. Use the askgate version that wrote it, or another \
                     --data-dir",
                    path.display()
                )));
            }
        }
        txn.open_table(REQUESTS)
            .map_err(|e| err("opening the requests table", e))?;
    }
    txn.commit()
        .map_err(|e| err(&format!("writing to {}", path.display()), e))
}

impl Store for DurableStore {
    fn commit(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, ()> {
        let (done, committed) = oneshot::channel();
        let sent = match &self.jobs {
            Some(jobs) => jobs.send(Job { ops, done }).map_err(|_| ()),
            None => Err(()),
        };
        Box::pin(async move {
            sent.map_err(|_| StoreError("the store's writer thread has stopped".into()))?;
            committed
                .await
                .map_err(|_| StoreError("the store's writer thread has stopped".into()))?
        })
    }

    fn load(&self) -> StoreFuture<'_, Vec<StoredRequest>> {
        self.read_flushed(read_all)
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

fn read_all(db: &Database) -> Result<Vec<StoredRequest>, StoreError> {
    let txn = db.begin_read().map_err(|e| err("starting a read", e))?;
    let table = txn
        .open_table(REQUESTS)
        .map_err(|e| err("opening the requests table", e))?;
    let mut out = Vec::new();
    for row in table.iter().map_err(|e| err("reading requests", e))? {
        let (key, value) = row.map_err(|e| err("reading a request", e))?;
        match serde_json::from_slice::<StoredRequest>(value.value()) {
            Ok(request) => out.push(request),
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
