//! The in-memory store: nothing survives a restart. For tests and throwaway runs.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

use askgate_protocol::{RequestId, SessionId};

use super::{
    KeptField, KeptTable, Store, StoreError, StoreFuture, StoreOp, StoredDelivery, StoredRequest,
    Trails,
};
use crate::audit::{Note, seal_after};
use crate::clock::now_ms;

/// One session's audit trail.
#[derive(Debug, Default)]
struct Trail {
    lines: Vec<String>,
    head_hash: String,
    last_at_ms: u64,
}

#[derive(Debug, Default)]
struct Kept {
    requests: HashMap<(SessionId, RequestId), StoredRequest>,
    trails: HashMap<SessionId, Trail>,
    deliveries: HashMap<String, StoredDelivery>,
    followers: BTreeSet<(SessionId, String)>,
    /// The kept tables: (table, key) → field → value.
    tables: BTreeMap<(KeptTable, String), BTreeMap<String, String>>,
}

/// Keeps requests and trails in maps.
#[derive(Debug, Default)]
pub struct MemoryStore {
    // A std Mutex: every critical section is a few map operations, never held across an await.
    kept: Mutex<Kept>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn kept(&self) -> Result<MutexGuard<'_, Kept>, StoreError> {
        self.kept
            .lock()
            .map_err(|_| StoreError::internal("memory store poisoned"))
    }

    /// How many requests it holds.
    pub fn len(&self) -> usize {
        self.kept().map_or(0, |k| k.requests.len())
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Kept {
    fn record(&mut self, note: &Note<'_>) {
        let trail = self.trails.entry(note.session.clone()).or_default();
        let head = (!trail.lines.is_empty())
            .then_some((trail.lines.len() as u64, trail.head_hash.as_str()));
        let sealed = seal_after(head, note);
        trail.lines.push(sealed.line);
        trail.head_hash = sealed.hash;
        trail.last_at_ms = trail.last_at_ms.max(note.at_ms);
    }

    fn apply(&mut self, op: StoreOp) {
        if let Some(note) = Note::of(&op, now_ms()) {
            self.record(&note);
        }
        match op {
            StoreOp::Put(request) => {
                self.requests
                    .insert((request.session.clone(), request.id.clone()), request);
            }
            StoreOp::Resolve {
                session,
                id,
                resolution,
                ..
            } => {
                if let Some(request) = self.requests.get_mut(&(session, id)) {
                    request.resolution = Some(resolution);
                }
            }
            StoreOp::Delete { session, id, .. } => {
                self.requests.remove(&(session, id));
            }
            StoreOp::Note(_) => {}
            StoreOp::FollowedUp {
                session,
                id,
                follow_up,
                ..
            } => {
                if let Some(request) = self.requests.get_mut(&(session, id)) {
                    request.follow_ups.mark(follow_up);
                }
            }
            StoreOp::Notify { deliveries, .. } => {
                for delivery in deliveries {
                    self.deliveries.insert(delivery.id.clone(), delivery);
                }
            }
            StoreOp::Follow {
                session, user, on, ..
            } => {
                if on {
                    self.followers.insert((session, user));
                } else {
                    self.followers.remove(&(session, user));
                }
            }
            StoreOp::Delivered { id, .. } => {
                self.deliveries.remove(&id);
            }
            StoreOp::Keep {
                table,
                key,
                field,
                value,
            } => {
                let slot = (table, key);
                match value {
                    Some(value) => {
                        self.tables.entry(slot).or_default().insert(field, value);
                    }
                    None => {
                        if let Some(fields) = self.tables.get_mut(&slot) {
                            fields.remove(&field);
                            if fields.is_empty() {
                                self.tables.remove(&slot);
                            }
                        }
                    }
                }
            }
            StoreOp::Unkeep { table, key } => {
                self.tables.remove(&(table, key));
            }
            ref vote @ StoreOp::Vote { .. } => {
                if let Some(field) = vote.vote_field(now_ms()) {
                    self.tables
                        .entry((field.table, field.key))
                        .or_default()
                        .insert(field.field, field.value);
                }
            }
            StoreOp::DropStaleTrails { before_ms } => {
                self.trails.retain(|_, trail| trail.last_at_ms >= before_ms);
            }
        }
    }
}

impl Store for MemoryStore {
    fn commit(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, ()> {
        let result = self.kept().map(|mut kept| {
            for op in ops {
                kept.apply(op);
            }
        });
        Box::pin(async move { result })
    }

    fn load(&self) -> StoreFuture<'_, Vec<StoredRequest>> {
        let result = self
            .kept()
            .map(|kept| kept.requests.values().cloned().collect());
        Box::pin(async move { result })
    }

    fn followers(&self) -> StoreFuture<'_, Vec<(SessionId, String)>> {
        let result = self
            .kept()
            .map(|kept| kept.followers.iter().cloned().collect());
        Box::pin(async move { result })
    }

    fn deliveries(&self) -> StoreFuture<'_, Vec<StoredDelivery>> {
        let result = self
            .kept()
            .map(|kept| kept.deliveries.values().cloned().collect());
        Box::pin(async move { result })
    }

    fn kept(&self) -> StoreFuture<'_, Vec<KeptField>> {
        let result = self.kept().map(|kept| {
            kept.tables
                .iter()
                .flat_map(|((table, key), fields)| {
                    fields.iter().map(|(field, value)| KeptField {
                        table: *table,
                        key: key.clone(),
                        field: field.clone(),
                        value: value.clone(),
                    })
                })
                .collect()
        });
        Box::pin(async move { result })
    }

    fn trails(&self) -> &dyn Trails {
        self
    }
}

impl Trails for MemoryStore {
    fn audit(
        &self,
        session: &SessionId,
        after_seq: u64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<String>> {
        let result = self.kept().map(|kept| {
            kept.trails.get(session).map_or_else(Vec::new, |trail| {
                let from = usize::try_from(after_seq).unwrap_or(usize::MAX);
                trail.lines.iter().skip(from).take(limit).cloned().collect()
            })
        });
        Box::pin(async move { result })
    }

    fn recent_audit(&self, session: &SessionId, count: usize) -> StoreFuture<'_, Vec<String>> {
        let result = self.kept().map(|kept| {
            kept.trails.get(session).map_or_else(Vec::new, |trail| {
                let from = trail.lines.len().saturating_sub(count);
                trail.lines[from..].to_vec()
            })
        });
        Box::pin(async move { result })
    }

    fn audit_sessions(&self) -> StoreFuture<'_, Vec<SessionId>> {
        let result = self.kept().map(|kept| {
            let mut sessions: Vec<SessionId> = kept.trails.keys().cloned().collect();
            sessions.sort();
            sessions
        });
        Box::pin(async move { result })
    }
}
