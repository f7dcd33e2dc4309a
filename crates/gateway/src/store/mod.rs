//! Where requests and outcomes are kept: the seam between the hub and durable storage.
//!
//! The hub calls [`Store::commit`] and waits for it before it announces anything: a request
//! is `accepted` only once the store has it, and a resolution is sent to tabs and the agent
//! only once the store has it. A store may group the operations of concurrent commits into
//! one transaction; each caller still learns whether its own operations are durable.

mod durable;
mod memory;

use std::future::Future;
use std::pin::Pin;

use askgate_protocol::{RequestId, SessionId, Settlement};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use durable::{DurableStore, FILE_NAME, FORMAT_VERSION};
pub use memory::MemoryStore;

/// A boxed future, so that `Store` can be used as a trait object.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A request as the store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredRequest {
    /// The session.
    pub session: SessionId,
    /// The request id.
    pub id: RequestId,
    /// `"harness"` or `"deepagents"`.
    pub dialect: askgate_protocol::Dialect,
    /// The normalised questions.
    pub questions: Value,
    /// The title, if any.
    pub title: Option<String>,
    /// When it was asked (Unix ms).
    pub asked_at_ms: u64,
    /// When it times out (Unix ms), if ever.
    pub deadline_ms: Option<u64>,
    /// How it ended, once it has.
    pub resolution: Option<StoredResolution>,
}

/// How a request ended, as kept until the agent acks it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredResolution {
    /// What the agent receives.
    pub settlement: Settlement,
    /// The tab that answered or declined.
    pub by: Option<String>,
    /// When it ended (Unix ms).
    pub at_ms: u64,
}

/// One change to the store.
#[derive(Clone, Debug, PartialEq)]
pub enum StoreOp {
    /// Keep a newly accepted request.
    Put(StoredRequest),
    /// Record how a request ended.
    Resolve {
        /// The session.
        session: SessionId,
        /// The request.
        id: RequestId,
        /// How it ended.
        resolution: StoredResolution,
    },
    /// Forget a request (acked, or its outcome expired).
    Delete {
        /// The session.
        session: SessionId,
        /// The request.
        id: RequestId,
    },
}

/// The store failed; the operation did not happen.
#[derive(Clone, Debug, thiserror::Error)]
#[error("store: {0}")]
pub struct StoreError(pub String);

/// Durable (or not) keeping of requests and outcomes.
pub trait Store: Send + Sync + 'static {
    /// Applies `ops` atomically; resolves once they are durable. The operations are handed
    /// over when `commit` is called, so commits apply in the order they are called, not the
    /// order their futures are first polled, and the future borrows nothing: whoever awaits
    /// it, the hub has already ordered the change.
    fn commit(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, ()>;

    /// Every request kept, open and resolved, for a restart.
    fn load(&self) -> StoreFuture<'_, Vec<StoredRequest>>;
}
