//! A store that holds commits at a gate, so a test can act while the gateway waits on the
//! store: drop the caller, send a rival answer, or make the held commit fail. It can hold the
//! whole commit, or only its durable step (as the embedded store's `fdatasync`), the change
//! having been taken at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use askgate::store::{
    Durability, MemoryStore, Steps, Store, StoreError, StoreFuture, StoreOp, StoredRequest, Trails,
};
use askgate_protocol::SessionId;
use tokio::sync::{Notify, Semaphore};

use askgate_testkit::TIMEOUT;

/// A memory store that, while holding, keeps every commit but housekeeping waiting until a
/// permit is added (its operations are applied then, or refused if it was told to fail them).
pub struct GatedStore {
    inner: Arc<MemoryStore>,
    holding: AtomicBool,
    holding_durable: AtomicBool,
    failing: Arc<AtomicBool>,
    arrived: Arc<Notify>,
    gate: Arc<Semaphore>,
    /// Reads of a trail (both kinds).
    trail_reads: AtomicUsize,
    /// Bytes of the entries those reads returned.
    trail_bytes: Arc<AtomicUsize>,
}

impl Default for GatedStore {
    fn default() -> Self {
        GatedStore {
            inner: Arc::new(MemoryStore::new()),
            holding: AtomicBool::new(false),
            holding_durable: AtomicBool::new(false),
            failing: Arc::new(AtomicBool::new(false)),
            arrived: Arc::new(Notify::new()),
            gate: Arc::new(Semaphore::new(0)),
            trail_reads: AtomicUsize::new(0),
            trail_bytes: Arc::default(),
        }
    }
}

impl GatedStore {
    /// Whether commits from now on wait at the gate.
    pub fn hold(&self, holding: bool) {
        self.holding.store(holding, Ordering::SeqCst);
    }

    /// Whether commits made in two steps from now on are taken at once and wait at the gate
    /// to be durable.
    pub fn hold_durable(&self, holding: bool) {
        self.holding_durable.store(holding, Ordering::SeqCst);
    }

    /// Whether held commits, once released, fail instead of being applied.
    pub fn fail_held(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    /// Waits (up to [`TIMEOUT`]) until a commit is waiting at the gate.
    ///
    /// # Panics
    /// When none arrives in time.
    pub async fn wait_for_a_held_commit(&self) {
        tokio::time::timeout(TIMEOUT, self.arrived.notified())
            .await
            .expect("a commit reached the store in time");
    }

    /// Lets one held commit through.
    pub fn release_one(&self) {
        self.gate.add_permits(1);
    }

    /// How many times a session's trail has been read.
    pub fn trail_reads(&self) -> usize {
        self.trail_reads.load(Ordering::SeqCst)
    }

    /// How many bytes of entries those reads have returned.
    pub fn trail_bytes(&self) -> usize {
        self.trail_bytes.load(Ordering::SeqCst)
    }

    /// `read`, its entries' bytes counted.
    fn counted<'a>(&self, read: StoreFuture<'a, Vec<String>>) -> StoreFuture<'a, Vec<String>> {
        self.trail_reads.fetch_add(1, Ordering::SeqCst);
        let bytes = Arc::clone(&self.trail_bytes);
        Box::pin(async move {
            let lines = read.await?;
            bytes.fetch_add(lines.iter().map(String::len).sum(), Ordering::SeqCst);
            Ok(lines)
        })
    }
}

impl Trails for GatedStore {
    fn audit(
        &self,
        session: &SessionId,
        after_seq: u64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<String>> {
        self.counted(self.inner.audit(session, after_seq, limit))
    }

    fn recent_audit(&self, session: &SessionId, count: usize) -> StoreFuture<'_, Vec<String>> {
        self.counted(self.inner.recent_audit(session, count))
    }

    fn audit_sessions(&self) -> StoreFuture<'_, Vec<SessionId>> {
        self.inner.audit_sessions()
    }
}

impl Store for GatedStore {
    fn commit(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, ()> {
        // The gateway's own housekeeping (the trails' retention, dropped at start and hourly)
        // is never what a test holds: its commit could otherwise be the one a test takes for
        // the change it made, and be released in that change's place.
        let housekeeping = ops
            .iter()
            .all(|op| matches!(op, StoreOp::DropStaleTrails { .. }));
        if !self.holding.load(Ordering::SeqCst) || housekeeping {
            return self.inner.commit(ops);
        }
        let (inner, failing, arrived, gate) = (
            Arc::clone(&self.inner),
            Arc::clone(&self.failing),
            Arc::clone(&self.arrived),
            Arc::clone(&self.gate),
        );
        Box::pin(async move {
            at_the_gate(&arrived, &gate, &failing).await?;
            inner.commit(ops).await
        })
    }

    fn decide_in_steps(&self, ops: Vec<StoreOp>, _durability: Durability) -> Steps {
        if !self.holding_durable.load(Ordering::SeqCst) {
            return Steps {
                taken: self.decide(ops),
                durable: Box::pin(std::future::ready(Ok(()))),
            };
        }
        let taken = self.inner.decide(ops);
        let (failing, arrived, gate) = (
            Arc::clone(&self.failing),
            Arc::clone(&self.arrived),
            Arc::clone(&self.gate),
        );
        Steps {
            taken,
            durable: Box::pin(async move { at_the_gate(&arrived, &gate, &failing).await }),
        }
    }

    fn load(&self) -> StoreFuture<'_, Vec<StoredRequest>> {
        self.inner.load()
    }

    fn deliveries(&self) -> StoreFuture<'_, Vec<askgate::store::StoredDelivery>> {
        self.inner.deliveries()
    }

    fn kept(&self) -> StoreFuture<'_, Vec<askgate::store::KeptField>> {
        self.inner.kept()
    }

    fn followers(&self) -> StoreFuture<'_, Vec<(SessionId, String)>> {
        self.inner.followers()
    }

    fn trails(&self) -> &dyn Trails {
        self
    }
}

/// Says a commit has arrived, waits for a permit, then fails if told to.
async fn at_the_gate(
    arrived: &Notify,
    gate: &Semaphore,
    failing: &AtomicBool,
) -> Result<(), StoreError> {
    arrived.notify_one();
    if let Ok(permit) = gate.acquire().await {
        permit.forget();
    }
    if failing.load(Ordering::SeqCst) {
        return Err(StoreError::io("the disk is on fire (a test)"));
    }
    Ok(())
}
