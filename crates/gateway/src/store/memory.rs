//! The in-memory store: nothing survives a restart. For tests and throwaway runs.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

use askgate_protocol::{RequestId, SessionId};

use super::{
    KeptField, KeptTable, Store, StoreError, StoreFuture, StoreOp, StoredDelivery, StoredRequest,
    Trails,
};
use crate::audit::{GENESIS, Note, seal, tail};
use crate::clock::now_ms;

/// One session's audit trail. Entries are sealed when the trail is first read after them, not
/// as they are recorded: the chain comes out the same (each entry's time and tail are fixed
/// when it is recorded), and a trail nobody reads costs no hashing (a quarter of the memory
/// store's commit under the fan-out benchmark was sealing).
#[derive(Debug, Default)]
struct Trail {
    /// Sealed lines, oldest first.
    lines: Vec<String>,
    /// The newest sealed line's hash.
    head_hash: String,
    /// Entries recorded after `lines`, not sealed yet: (at_ms, tail), oldest first.
    unsealed: Vec<(u64, String)>,
    last_at_ms: u64,
}

impl Trail {
    /// Seals every entry recorded since the last read.
    fn seal_pending(&mut self) {
        for (at_ms, tail) in std::mem::take(&mut self.unsealed) {
            let prev = if self.lines.is_empty() {
                GENESIS
            } else {
                self.head_hash.as_str()
            };
            let sealed = seal(prev, self.lines.len() as u64 + 1, at_ms, &tail);
            self.lines.push(sealed.line);
            self.head_hash = sealed.hash;
        }
    }
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
        let trail = match self.trails.get_mut(&note.session) {
            Some(trail) => trail,
            None => self.trails.entry(note.session.clone()).or_default(),
        };
        trail.unsealed.push((note.at_ms, tail(note)));
        trail.last_at_ms = trail.last_at_ms.max(note.at_ms);
    }

    /// `session`'s trail with every entry sealed, if it has one.
    fn sealed_trail(&mut self, session: &SessionId) -> Option<&Trail> {
        let trail = self.trails.get_mut(session)?;
        trail.seal_pending();
        Some(trail)
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
        let result = self.kept().map(|mut kept| {
            kept.sealed_trail(session).map_or_else(Vec::new, |trail| {
                let from = usize::try_from(after_seq).unwrap_or(usize::MAX);
                trail.lines.iter().skip(from).take(limit).cloned().collect()
            })
        });
        Box::pin(async move { result })
    }

    fn recent_audit(&self, session: &SessionId, count: usize) -> StoreFuture<'_, Vec<String>> {
        let result = self.kept().map(|mut kept| {
            kept.sealed_trail(session).map_or_else(Vec::new, |trail| {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::Event;
    use crate::audit::verify::ChainCheck;

    /// A note whose tail differs with `at_ms`, so a line sealed out of place shows.
    fn followed(session: &str, at_ms: u64) -> StoreOp {
        let user = format!("user{at_ms}@example.com");
        let note = Note {
            session: SessionId::parse(session).unwrap(),
            id: None,
            at_ms,
            event: Event::Followed { user },
        };
        StoreOp::Note(note)
    }

    async fn lines(store: &MemoryStore, session: &str) -> Vec<String> {
        let session = SessionId::parse(session).unwrap();
        store.trails().audit(&session, 0, 1000).await.unwrap()
    }

    /// Entries are sealed when read, in batches however reads fall between commits: the
    /// chain is whole, numbered from 1, and each line is what sealing it at once would give.
    #[tokio::test]
    async fn a_trail_sealed_as_it_is_read_is_the_chain_sealed_at_once() {
        let store = MemoryStore::new();
        let mut read = Vec::new();
        for (at_ms, read_after) in [(1, false), (2, true), (3, false), (4, false), (5, true)] {
            store.commit(vec![followed("s", at_ms)]).await.unwrap();
            store.commit(vec![followed("other", at_ms)]).await.unwrap();
            if read_after {
                read = lines(&store, "s").await;
            }
        }
        assert_eq!(read.len(), 5);
        let mut check = ChainCheck::new("s");
        let mut prev = GENESIS.to_owned();
        for (at, line) in read.iter().enumerate() {
            check
                .next(line)
                .unwrap_or_else(|e| panic!("line {}: {e:?}", at + 1));
            let at_ms = at as u64 + 1;
            let StoreOp::Note(note) = followed("s", at_ms) else {
                unreachable!()
            };
            let sealed = seal(&prev, at_ms, at_ms, &tail(&note));
            assert_eq!(*line, sealed.line);
            prev = sealed.hash;
        }
        let recent = {
            let session = SessionId::parse("s").unwrap();
            store.trails().recent_audit(&session, 2).await.unwrap()
        };
        assert_eq!(recent, read[3..]);
        assert_eq!(lines(&store, "other").await.len(), 5);
    }
}
