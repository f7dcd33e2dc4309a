//! The durable store: redb (pure Rust, ACID, copy-on-write B-trees) in the data directory.
//!
//! One writer thread owns all writes. Commits that arrive while it is busy are grouped into
//! the next transaction, so concurrent asks and answers share one fsync: on a 2-core machine
//! a durable commit costs about 170 µs, and grouping is what lifts throughput past thousands
//! of resolutions a second. Each caller still waits for the commit that holds its operations.
//!
//! Layout: table `requests`, key `(session, id)`, value the JSON of a [`StoredRequest`];
//! table `meta`, key `format`, value [`FORMAT_VERSION`]; the audit trails in [`trails`]. A
//! data directory written in another format is refused with a clear error rather than
//! misread. (The trail tables came later without a new format: a store without them simply
//! has no trail yet.)

mod trails;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;

use redb::{Database, ReadableDatabase as _, ReadableTable as _, TableDefinition};
use tokio::sync::oneshot;

use askgate_protocol::SessionId;

use self::writer::Job;
use super::{Store, StoreError, StoreFuture, StoreOp, StoredRequest, Trails};
use crate::metrics::StoreWrites;

/// The on-disk format this build reads and writes.
pub const FORMAT_VERSION: u64 = 1;
/// The database file inside the data directory.
pub const FILE_NAME: &str = "askgate.redb";
/// redb's own page cache. Its default, 1 GiB, would let the process grow by as much as the
/// audit trails' size, which only grows; the kernel's page cache still keeps the file's hot
/// pages, outside the process.
const CACHE_BYTES: usize = 16 * 1024 * 1024;

const REQUESTS: TableDefinition<'_, (&str, &str), &[u8]> = TableDefinition::new("requests");
const META: TableDefinition<'_, &str, u64> = TableDefinition::new("meta");

/// Requests and outcomes in a redb file, written with group commit.
pub struct DurableStore {
    db: Arc<Database>,
    /// Jobs for the writer thread; dropping it stops the thread.
    jobs: Option<std_mpsc::Sender<Job>>,
    /// The writer thread, joined on drop so the file is closed when the store is gone.
    writer: Option<std::thread::JoinHandle<()>>,
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

    /// [`open`](Self::open), counting the writer's transactions into `counts`.
    ///
    /// # Errors
    /// As for [`open`](Self::open).
    pub fn open_counted(data_dir: &Path, counts: Arc<StoreWrites>) -> Result<Self, StoreError> {
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
        let db = Arc::new(db);
        let (jobs, queue) = std_mpsc::channel::<Job>();
        let writer_db = Arc::clone(&db);
        let writer_counts = Arc::clone(&counts);
        let writer = std::thread::Builder::new()
            .name("askgate-store".into())
            .spawn(move || writer::write_loop(&writer_db, &queue, &writer_counts))
            .map_err(|e| err("starting the store's writer thread", e))?;
        Ok(DurableStore {
            db,
            jobs: Some(jobs),
            writer: Some(writer),
            counts,
            path,
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
            Some(other) => {
                return Err(StoreError(format!(
                    "{} holds askgate store format {other}; this askgate reads format \
                     {FORMAT_VERSION}. Use the askgate version that wrote it, or another \
                     --data-dir",
                    path.display()
                )));
            }
            None => {
                meta.insert("format", FORMAT_VERSION)
                    .map_err(|e| err("writing the format version", e))?;
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
        let db = Arc::clone(&self.db);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || read_all(&db))
                .await
                .map_err(|e| err("loading the store", e))?
        })
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
        let db = Arc::clone(&self.db);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || trails::sessions(&db))
                .await
                .map_err(|e| err("reading the audit trails", e))?
        })
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
        let db = Arc::clone(&self.db);
        let session = session.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                trails::read(&db, &session, after_seq, limit, newest)
            })
            .await
            .map_err(|e| err("reading the audit trail", e))?
        })
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
