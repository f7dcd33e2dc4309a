//! Keeping this node's copy of shared sessions in step with the store (several nodes on
//! Redis); nothing here runs on a local store.
//!
//! A node holds a session while its own peers watch it. The first call on a session loads it
//! whole (after subscribing to its notices, so none fall between). Then each notice with the
//! next sequence number is applied; an older one is ignored (this node's own change, already
//! applied, or one a load already had), one past a gap loads the session again. Loads are
//! diffs applied through the same code as notices: tabs get `request` and `resolved` frames,
//! never a second snapshot, except when an open request vanished unannounced (then a fresh
//! snapshot is the only way to tell them); how records and changes are applied is in
//! [`applying`](super::applying). Every second the [`upkeep`](super::upkeep) reads the store's
//! sequence numbers of every held session and loads again one still behind after two reads,
//! loads again what failed to load, and lets go of sessions nobody here watches.

use std::sync::Arc;
use std::time::Duration;

use askgate_protocol::{RequestId, SessionId};
use tokio::sync::Notify;

use super::super::Hub;
use super::super::request::EntryState;
use super::super::session::Session;
use crate::store::StoreError;
use crate::store::shared::{Change, Notice, SessionRecords};

/// How long a caller waits for another's load of the same session before trying itself.
const LOAD_WAIT: Duration = Duration::from_secs(5);

/// Notices kept while a session loads; past this they are dropped, and the gap they leave is
/// found like any other.
const BUFFERED_NOTICES: usize = 1024;

/// Why a session is loaded again.
#[derive(Clone, Copy, Debug)]
pub(super) enum Reload {
    Gap,
    Resubscribed,
    Behind,
    Failed,
}

impl Hub {
    /// Makes sure this node holds `session` as the shared store has it (a no-op when already
    /// held). An error leaves the session held but unloaded: the upkeep tries again.
    pub(in crate::hub) async fn load_shared(
        self: &Arc<Self>,
        session: &SessionId,
    ) -> Result<(), StoreError> {
        let Some(shared) = self.shared() else {
            return Ok(());
        };
        loop {
            let waiter = {
                let mut sessions = self.lock();
                let Some(state) = self.session_entry(&mut sessions, session) else {
                    // The session limit: the caller's own check says so.
                    return Ok(());
                };
                let sync = state.sync.get_or_insert_with(Box::default);
                // Loaded once is enough: a reload under way only brings the copy up to date.
                if sync.loaded {
                    return Ok(());
                }
                match &sync.loading {
                    Some(loading) => Arc::clone(loading).notified_owned(),
                    None => {
                        sync.loading = Some(Arc::new(Notify::new()));
                        break;
                    }
                }
            };
            let _ = tokio::time::timeout(LOAD_WAIT, waiter).await;
            let sessions = self.lock();
            if let Some(sync) = sessions.get(session).and_then(|s| s.sync.as_ref())
                && sync.loaded
            {
                return Ok(());
            }
        }
        // In a task of its own: a caller dropped midway (an HTTP client gone) must not leave
        // the session marked as loading, with everyone behind it waiting for good.
        let hub = Arc::clone(self);
        let session = session.clone();
        let loading = tokio::spawn(async move {
            let loaded = async {
                shared.watch(&session).await?;
                shared.load_session(&session).await
            }
            .await;
            hub.finish_load(&session, loaded)
        });
        loading.await.unwrap_or_else(|error| {
            Err(StoreError::internal(format!(
                "loading a session failed: {error}"
            )))
        })
    }

    /// Applies a finished load of `session` (held, its `loading` set by the caller), and
    /// starts the load a resubscription asked for meanwhile.
    fn finish_load(
        self: &Arc<Self>,
        session: &SessionId,
        loaded: Result<SessionRecords, StoreError>,
    ) -> Result<(), StoreError> {
        let (result, again) = self.apply_load(session, loaded);
        if again {
            self.spawn_reload(session.clone(), Reload::Resubscribed);
        }
        result
    }

    /// [`Hub::finish_load`] under the lock: what the load came to, and whether to load again.
    fn apply_load(
        &self,
        session: &SessionId,
        loaded: Result<SessionRecords, StoreError>,
    ) -> (Result<(), StoreError>, bool) {
        let mut sessions = self.lock();
        let Some(state) = sessions.get_mut(session) else {
            if let Some(shared) = self.shared() {
                shared.unwatch(session);
            }
            return (loaded.map(drop), false);
        };
        let Some(sync) = state.sync.as_mut() else {
            return (loaded.map(drop), false);
        };
        let loading = sync.loading.take();
        let again = std::mem::take(&mut sync.reload_again);
        let buffered = std::mem::take(&mut sync.buffered);
        let result = match loaded {
            Ok(records) => {
                let seq = records.seq;
                let mut buffered = buffered;
                buffered.sort_by_key(|(seq, _)| *seq);
                let (held, newer): (Vec<_>, Vec<_>) =
                    buffered.into_iter().partition(|(at, _)| *at <= seq);
                // What the load also holds, applied first where it follows on: tabs then get
                // these as `resolved` frames, and the diff below finds nothing left to do.
                for (at, change) in held {
                    let _ = self.follow(state, at, change);
                }
                self.apply_records(state, records);
                if let Some(sync) = state.sync.as_mut() {
                    sync.seq = seq;
                    sync.loaded = true;
                    sync.behind = None;
                }
                for (at, change) in newer {
                    let _ = self.follow(state, at, change);
                }
                Ok(())
            }
            Err(error) => {
                tracing::warn!(%session, %error, "could not load a session from the store; trying again shortly");
                Err(error)
            }
        };
        if let Some(loading) = loading {
            loading.notify_waiters();
        }
        (result, again)
    }

    /// Applies change number `seq`, if it is the next one; asks for a load past a gap.
    fn follow(&self, state: &mut Session, seq: u64, change: Change) -> Option<Reload> {
        let sync = state.sync.as_mut()?;
        if matches!(change, Change::Presence) {
            sync.presence_stale = true;
            return None;
        }
        if sync.loading.is_some() {
            if sync.buffered.len() < BUFFERED_NOTICES {
                sync.buffered.push((seq, change));
            }
            return None;
        }
        if !sync.loaded || seq <= sync.seq {
            return None;
        }
        if seq > sync.seq + 1 {
            return Some(Reload::Gap);
        }
        sync.seq = seq;
        let committing = |id: &RequestId| {
            matches!(
                state.requests.get(id).map(|e| &e.state),
                Some(EntryState::Committing)
            )
        };
        match change {
            Change::Put(record) => match state.requests.get(&record.id).map(|e| &e.state) {
                None => self.add_record(state, *record),
                // Asked anew after a forgetting this node did not hear of.
                Some(EntryState::Resolved(_)) => {
                    state.discard(&record.id);
                    self.add_record(state, *record);
                }
                Some(_) => {}
            },
            Change::Resolved { ref id, .. }
            | Change::Voted { ref id, .. }
            | Change::Forgot { ref id }
                if committing(id) =>
            {
                if let Some(sync) = state.sync.as_mut() {
                    sync.held_back.push(change);
                }
            }
            change => self.apply_change(state, change),
        }
        None
    }

    /// Handles one notice from the store.
    pub(super) fn on_notice(self: &Arc<Self>, notice: Notice) {
        match notice {
            Notice::Change {
                change: Change::Followers { user, on },
                session,
                ..
            } => {
                // Decided by the store already: held here as it says, whatever the bound.
                if self.ledger.followers.hold(&session, &user, on) {
                    self.told_following(&session, &user, on);
                }
            }
            Notice::Change {
                session,
                seq,
                change,
            } => {
                let reload = {
                    let mut sessions = self.lock();
                    let Some(state) = sessions.get_mut(&session) else {
                        return;
                    };
                    self.follow(state, seq, change)
                };
                if let Some(cause) = reload {
                    self.spawn_reload(session, cause);
                }
            }
            Notice::Addressed { session, name } => self.inbox_addressed(&session, &name),
            Notice::Resubscribed => {
                let held: Vec<SessionId> = self.lock().keys().cloned().collect();
                for session in held {
                    self.spawn_reload(session, Reload::Resubscribed);
                }
            }
        }
    }

    /// Loads `session` again in a task of its own, unless a load is under way.
    pub(super) fn spawn_reload(self: &Arc<Self>, session: SessionId, cause: Reload) {
        let Some(shared) = self.shared() else {
            return;
        };
        {
            let mut sessions = self.lock();
            let Some(sync) = sessions.get_mut(&session).and_then(|s| s.sync.as_mut()) else {
                return;
            };
            if sync.loading.is_some() {
                if matches!(cause, Reload::Resubscribed) {
                    sync.reload_again = true;
                }
                return;
            }
            sync.loading = Some(Arc::new(Notify::new()));
        }
        let counter = match cause {
            Reload::Gap => Some(&self.metrics.shared.resnapshots_gap),
            Reload::Resubscribed => Some(&self.metrics.shared.resnapshots_resubscribed),
            Reload::Behind => Some(&self.metrics.shared.resnapshots_behind),
            Reload::Failed => None,
        };
        if let Some(counter) = counter {
            self.metrics.shared.count(counter);
        }
        let hub = Arc::clone(self);
        tokio::spawn(async move {
            let loaded = async {
                // A load that failed before may not have subscribed.
                if matches!(cause, Reload::Failed) {
                    shared.watch(&session).await?;
                }
                shared.load_session(&session).await
            }
            .await;
            let _ = hub.finish_load(&session, loaded);
        });
    }
}
