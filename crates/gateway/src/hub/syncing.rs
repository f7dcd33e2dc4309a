//! Keeping this node's copy of shared sessions in step with the store (several nodes on
//! Redis); nothing here runs on a local store.
//!
//! A node holds a session while its own peers watch it. The first call on a session loads it
//! whole (after subscribing to its notices, so none fall between). Then each notice with the
//! next sequence number is applied; an older one is ignored (this node's own change, already
//! applied, or one a load already had), one past a gap loads the session again. Loads are
//! diffs applied through the same code as notices: tabs get `request` and `resolved` frames,
//! never a second snapshot, except when an open request vanished unannounced (then a fresh
//! snapshot is the only way to tell them). Every second the upkeep reads the store's sequence
//! numbers of every held session and loads again one still behind after two reads, loads again
//! what failed to load, and lets go of sessions nobody here watches.

use std::collections::HashSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use askgate_protocol::{QuestionSet, RequestId, SessionId};
use tokio::sync::Notify;

use super::Hub;
use super::entry::EntryState;
use super::hub_core::Sessions;
use super::restore::record_entry;
use super::session::Session;
use crate::metrics::gauge_add;
use crate::store::StoreError;
use crate::store::shared::{Change, Notice, Presence, SessionRecords};

/// How often the upkeep runs.
const UPKEEP_EVERY: Duration = Duration::from_secs(1);

/// How often a node writes its presence in each session it holds, changed or not.
const PRESENCE_EVERY: Duration = Duration::from_secs(5);

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
    /// Makes sure this node holds `session` as the shared store has it (a no-op on a local
    /// store, or when already held). An error leaves the session held but unloaded: the
    /// upkeep tries again.
    pub async fn synced(self: &Arc<Self>, session: &SessionId) -> Result<(), StoreError> {
        let Some(shared) = self.shared.clone() else {
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
        loading
            .await
            .unwrap_or_else(|error| Err(StoreError(format!("loading a session failed: {error}"))))
    }

    /// Applies a finished load of `session` (held, its `loading` set by the caller).
    fn finish_load(
        &self,
        session: &SessionId,
        loaded: Result<SessionRecords, StoreError>,
    ) -> Result<(), StoreError> {
        let mut sessions = self.lock();
        let Some(state) = sessions.get_mut(session) else {
            if let Some(shared) = &self.shared {
                shared.unwatch(session);
            }
            return loaded.map(drop);
        };
        let Some(sync) = state.sync.as_mut() else {
            return loaded.map(drop);
        };
        let loading = sync.loading.take();
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
        result
    }

    /// Makes `state` what the store holds: requests new here are added (and shown), ones
    /// resolved there are announced, ones gone there are dropped.
    fn apply_records(&self, state: &mut Session, records: SessionRecords) {
        let mut kept = HashSet::with_capacity(records.requests.len());
        for record in records.requests {
            kept.insert(record.id.clone());
            match state.requests.get(&record.id).map(|entry| &entry.state) {
                None => self.add_record(state, record),
                Some(EntryState::Open | EntryState::Resolving) => {
                    if let Some(resolution) = record.resolution {
                        self.announce_resolution(state, &record.id, resolution);
                    }
                }
                // Asked anew after a forgetting this node did not hear of.
                Some(EntryState::Resolved(_)) if record.resolution.is_none() => {
                    let id = record.id.clone();
                    self.drop_entry(state, &id);
                    self.add_record(state, record);
                }
                Some(EntryState::Committing | EntryState::Resolved(_)) => {}
            }
        }
        let gone: Vec<_> = state
            .requests
            .values()
            .filter(|entry| !kept.contains(&entry.id))
            .filter(|entry| matches!(entry.state, EntryState::Open | EntryState::Resolved(_)))
            .map(|entry| (entry.id.clone(), matches!(entry.state, EntryState::Open)))
            .collect();
        let mut vanished_open = false;
        for (id, open) in gone {
            vanished_open |= open;
            self.drop_entry(state, &id);
        }
        if vanished_open {
            // Ended and forgotten elsewhere, both unheard: only a snapshot can tell the tabs.
            let max = self.limits.max_frame_bytes;
            let tabs: Vec<_> = state
                .tabs
                .iter()
                .map(|(link, slot)| (link, slot.tab.clone(), self.people.you(&slot.person)))
                .collect();
            for (link, tab, you) in tabs {
                let snapshot = state.snapshot(&tab, &you, max);
                state.send_to(link, snapshot, &self.metrics);
            }
        }
    }

    /// A request another node asked (or this node missed): held and shown to the tabs here.
    fn add_record(&self, state: &mut Session, record: crate::store::StoredRequest) {
        let questions = match QuestionSet::validate(record.dialect, &record.questions) {
            Ok(questions) => Arc::new(questions),
            Err(errors) => {
                tracing::error!(session = %record.session, request = %record.id, %errors, "a shared request does not validate here; not shown");
                return;
            }
        };
        let seq = state.next_seq;
        state.next_seq += 1;
        let id = record.id.clone();
        let entry = record_entry(state, record, questions, seq);
        let open = matches!(entry.state, EntryState::Open);
        let frame = open.then(|| entry.encoded.frame.clone());
        gauge_add(
            if open {
                &self.metrics.open_requests
            } else {
                &self.metrics.kept_outcomes
            },
            1,
        );
        state.finished.remove(&id);
        state.requests.insert(id, entry);
        if let Some(frame) = frame {
            state.broadcast(&frame, &self.metrics);
        }
    }

    /// Drops a request the store no longer has.
    fn drop_entry(&self, state: &mut Session, id: &RequestId) {
        let Some(entry) = state.forget(id) else {
            return;
        };
        if let Some(timer) = &entry.timer {
            timer.abort();
        }
        match entry.state {
            EntryState::Open => {
                state.uncount_open(entry.encoded.view.len());
                gauge_add(&self.metrics.open_requests, -1);
            }
            _ => gauge_add(&self.metrics.kept_outcomes, -1),
        }
        entry.resolved.notify_waiters();
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
                    self.drop_entry(state, &record.id);
                    self.add_record(state, *record);
                }
                Some(_) => {}
            },
            Change::Resolved { ref id, .. } | Change::Forgot { ref id } if committing(id) => {
                if let Some(sync) = state.sync.as_mut() {
                    sync.held_back.push(change);
                }
            }
            change => self.apply_change(state, change),
        }
        None
    }

    /// Applies a change to a request this node is not storing.
    fn apply_change(&self, state: &mut Session, change: Change) {
        match change {
            Change::Resolved { id, resolution } => {
                self.announce_resolution(state, &id, *resolution);
            }
            Change::Forgot { id } => {
                if matches!(
                    state.requests.get(&id).map(|e| &e.state),
                    Some(EntryState::Resolved(_))
                ) {
                    self.drop_entry(state, &id);
                }
            }
            Change::Put(_) | Change::Presence => {}
        }
    }

    /// The ask of `id` is finished here (stored or not): the changes to it that arrived
    /// meanwhile are applied now (`keep`), or dropped with it.
    pub(super) fn release_held_back(&self, state: &mut Session, id: &RequestId, keep: bool) {
        let Some(sync) = state.sync.as_mut() else {
            return;
        };
        if sync.held_back.is_empty() {
            return;
        }
        let (mine, others): (Vec<Change>, Vec<Change>) = std::mem::take(&mut sync.held_back)
            .into_iter()
            .partition(|change| match change {
                Change::Resolved { id: of, .. } | Change::Forgot { id: of } => of == id,
                _ => false,
            });
        sync.held_back = others;
        if keep {
            for change in mine {
                self.apply_change(state, change);
            }
        }
    }

    /// Handles one notice from the store.
    fn on_notice(self: &Arc<Self>, notice: Notice) {
        match notice {
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
        let Some(shared) = self.shared.clone() else {
            return;
        };
        {
            let mut sessions = self.lock();
            let Some(sync) = sessions.get_mut(&session).and_then(|s| s.sync.as_mut()) else {
                return;
            };
            if sync.loading.is_some() {
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

    /// Starts what keeps shared sessions in step: the notice reader, the upkeep and the sweep.
    /// They hold the hub weakly, and end with it.
    pub fn start_shared(self: &Arc<Self>) {
        let Some(shared) = self.shared.clone() else {
            return;
        };
        if let Some(mut notices) = shared.take_notices() {
            let hub = Arc::downgrade(self);
            tokio::spawn(async move {
                while let Some(notice) = notices.recv().await {
                    let Some(hub) = hub.upgrade() else { return };
                    hub.on_notice(notice);
                }
            });
        }
        tokio::spawn(upkeep(Arc::downgrade(self)));
        tokio::spawn(super::sweeping::sweep_deadlines(Arc::downgrade(self)));
    }

    /// One round of upkeep.
    async fn upkeep_once(self: &Arc<Self>) {
        let Some(shared) = self.shared.clone() else {
            return;
        };
        let mut polled = Vec::new();
        let mut failed = Vec::new();
        {
            let mut sessions = self.lock();
            let idle: Vec<SessionId> = sessions
                .values()
                .filter(|s| s.sync.is_some() && s.is_idle())
                .map(|s| s.id.clone())
                .collect();
            for id in idle {
                self.forget_session(&mut sessions, &id);
            }
            for state in sessions.values() {
                let Some(sync) = &state.sync else { continue };
                match (sync.loaded, sync.loading.is_some()) {
                    (_, true) => {}
                    (true, false) => polled.push((state.id.clone(), sync.seq)),
                    (false, false) => failed.push(state.id.clone()),
                }
            }
        }
        for session in failed {
            self.spawn_reload(session, Reload::Failed);
        }
        self.share_presence(&shared).await;
        let ids: Vec<SessionId> = polled.iter().map(|(id, _)| id.clone()).collect();
        let Ok(seqs) = shared.sequences(ids).await else {
            return;
        };
        let mut behind = Vec::new();
        {
            let mut sessions = self.lock();
            for ((id, seq_when_asked), store_seq) in polled.iter().zip(seqs) {
                let Some(sync) = sessions.get_mut(id).and_then(|s| s.sync.as_mut()) else {
                    continue;
                };
                if store_seq < *seq_when_asked {
                    // Behind what this node had applied before it asked: the store lost
                    // changes (a restart without a synced log), and it is the truth. (Behind
                    // only what was applied since is notices outrunning the poll's reply.)
                    behind.push(id.clone());
                } else if store_seq <= sync.seq {
                    sync.behind = None;
                } else {
                    match sync.behind {
                        Some(seen) if sync.seq < seen => behind.push(id.clone()),
                        _ => sync.behind = Some(store_seq),
                    }
                }
            }
        }
        for id in behind {
            self.spawn_reload(id, Reload::Behind);
        }
    }

    /// Lets go of a session nobody here watches (the store keeps it).
    pub(super) fn forget_session(&self, sessions: &mut Sessions, id: &SessionId) {
        let Some(state) = sessions.remove(id) else {
            return;
        };
        gauge_add(&self.metrics.sessions, -1);
        for entry in state.requests.values() {
            if let Some(timer) = &entry.timer {
                timer.abort();
            }
            match entry.state {
                EntryState::Open => gauge_add(&self.metrics.open_requests, -1),
                EntryState::Resolved(_) => gauge_add(&self.metrics.kept_outcomes, -1),
                _ => {}
            }
        }
        if let Some(shared) = &self.shared {
            shared.unwatch(id);
            // This node no longer counts there.
            if state
                .sync
                .as_ref()
                .is_some_and(|sync| sync.written.is_some())
            {
                let clearing = shared.presence(id, Presence::default());
                tokio::spawn(async move {
                    let _ = clearing.await;
                });
            }
        }
    }

    /// Writes this node's presence in each held session whose presence changed, or is due
    /// again, or whose other nodes' changed; tells the tabs here when what they show changes.
    async fn share_presence(&self, shared: &Arc<dyn crate::store::Shared>) {
        let now = tokio::time::Instant::now();
        let due: Vec<(SessionId, Presence)> = {
            let sessions = self.lock();
            sessions
                .values()
                .filter_map(|state| {
                    let sync = state.sync.as_ref()?;
                    let here = state.presence_here();
                    let needed = match sync.written {
                        None => here != Presence::default() || sync.presence_stale,
                        Some((written, until)) => {
                            written != here || now >= until || sync.presence_stale
                        }
                    };
                    needed.then(|| (state.id.clone(), here))
                })
                .collect()
        };
        for (session, here) in due {
            let Ok(others) = shared.presence(&session, here).await else {
                continue;
            };
            let mut sessions = self.lock();
            let Some(state) = sessions.get_mut(&session) else {
                continue;
            };
            if let Some(sync) = state.sync.as_mut() {
                sync.others = others;
                sync.written = Some((here, now + PRESENCE_EVERY));
                sync.presence_stale = false;
            }
            state.refresh_presence();
        }
    }
}

/// Runs the upkeep every second, for as long as the hub lives.
async fn upkeep(hub: Weak<Hub>) {
    let mut every = tokio::time::interval(UPKEEP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let Some(hub) = hub.upgrade() else { return };
        hub.upkeep_once().await;
    }
}
