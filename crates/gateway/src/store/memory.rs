//! The in-memory store: nothing survives a restart. For tests and throwaway runs.

use std::collections::HashMap;
use std::sync::Mutex;

use askgate_protocol::{RequestId, SessionId};

use super::{Store, StoreError, StoreFuture, StoreOp, StoredRequest};

/// Keeps requests in a map.
#[derive(Debug, Default)]
pub struct MemoryStore {
    // A std Mutex: every critical section is a few map operations, never held across an await.
    requests: Mutex<HashMap<(SessionId, RequestId), StoredRequest>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    /// How many requests it holds.
    pub fn len(&self) -> usize {
        self.requests.lock().map_or(0, |r| r.len())
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Store for MemoryStore {
    fn commit(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, ()> {
        let result = self
            .requests
            .lock()
            .map_err(|_| StoreError("memory store poisoned".into()))
            .map(|mut requests| {
                for op in ops {
                    match op {
                        StoreOp::Put(request) => {
                            requests.insert((request.session.clone(), request.id.clone()), request);
                        }
                        StoreOp::Resolve {
                            session,
                            id,
                            resolution,
                            ..
                        } => {
                            if let Some(request) = requests.get_mut(&(session, id)) {
                                request.resolution = Some(resolution);
                            }
                        }
                        StoreOp::Delete { session, id } => {
                            requests.remove(&(session, id));
                        }
                    }
                }
            });
        Box::pin(async move { result })
    }

    fn load(&self) -> StoreFuture<'_, Vec<StoredRequest>> {
        let result = self
            .requests
            .lock()
            .map_err(|_| StoreError("memory store poisoned".into()))
            .map(|requests| requests.values().cloned().collect());
        Box::pin(async move { result })
    }
}
