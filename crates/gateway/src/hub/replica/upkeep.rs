//! What keeps shared sessions in step, started once: the notice reader, the deadline sweep,
//! and the upkeep, every second, which loads again what failed to load or is still behind the
//! store after two reads of its sequence numbers, writes this node's presence where it changed
//! or is due, and lets go of sessions nobody here watches.
use std::sync::{Arc, Weak};
use std::time::Duration;

use askgate_protocol::{RequestId, SessionId};
use futures_util::StreamExt as _;

use super::super::Hub;
use super::super::hub_core::Sessions;
use super::loading::Reload;
use crate::metrics::gauge_add;
use crate::store::shared::{Presence, Shared, presence_refresh};

/// How often the upkeep runs.
const UPKEEP_EVERY: Duration = Duration::from_secs(1);
/// Presence writes the upkeep has in flight at once (each a script on the shared store).
const PRESENCE_WRITES_AT_ONCE: usize = 32;

impl Hub {
    /// Starts what keeps shared sessions in step: the notice reader, the upkeep and the sweep;
    /// and this node's reports to the others.
    /// They hold the hub weakly, and end with it.
    pub fn start_shared(self: &Arc<Self>) {
        let Some(shared) = self.shared() else {
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
        tokio::spawn(super::sweep::sweep_deadlines(Arc::downgrade(self)));
        self.start_reporting();
    }

    /// One round of upkeep.
    async fn upkeep_once(self: &Arc<Self>) {
        let Some(shared) = self.shared() else {
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
    pub(in crate::hub) fn forget_session(&self, sessions: &mut Sessions, id: &SessionId) {
        let Some(state) = sessions.remove(id) else {
            return;
        };
        gauge_add(&self.metrics.sessions, -1);
        state.let_go();
        if let Some(shared) = self.shared() {
            shared.unwatch(id);
            // This node no longer counts there.
            if state
                .sync
                .as_ref()
                .is_some_and(|sync| sync.written.is_some())
            {
                let clearing = shared.presence(id, Presence::default(), Vec::new());
                tokio::spawn(async move {
                    let _ = clearing.await;
                });
            }
        }
    }

    /// Writes this node's presence in each held session whose presence changed, or is due
    /// again, or whose other nodes' changed; tells the tabs here when what they show changes.
    async fn share_presence(&self, shared: &Arc<dyn Shared>) {
        let now = tokio::time::Instant::now();
        let due: Vec<(SessionId, Presence, Vec<RequestId>)> = {
            let sessions = self.lock();
            sessions
                .values()
                .filter_map(|state| {
                    let sync = state.sync.as_ref()?;
                    let here = state.presence_here();
                    let held = state.held_here();
                    let needed = match sync.written {
                        None => {
                            here != Presence::default() || !held.is_empty() || sync.presence_stale
                        }
                        Some((written, until)) => {
                            written != here
                                || held != sync.written_held
                                || now >= until
                                || sync.presence_stale
                        }
                    };
                    needed.then(|| (state.id.clone(), here, held))
                })
                .collect()
        };
        // Many at once. One at a time, each waiting for its reply (which Redis sends after its
        // append-only file's sync), five nodes holding 19,000 idle sessions each wrote 5,900 a
        // second between them where 17,000 were due, and read each session's sequence number
        // every 19 s, not every second (`bench/history/*-idle-nodes.txt`). Unanswered, one is written
        // again at the next upkeep.
        futures_util::stream::iter(due)
            .map(|(session, here, held)| async move {
                let _ = self.write_presence(shared, &session, here, held, now).await;
            })
            .buffer_unordered(PRESENCE_WRITES_AT_ONCE)
            .for_each(|()| async {})
            .await;
    }

    /// On a shared store: writes this node's presence in `session` now, and takes the other
    /// nodes' back (whose agents wait where, judged again). `false` if the store could not be
    /// asked; `true` too on a local store, which has nothing to ask.
    pub(in crate::hub) async fn share_presence_of(&self, session: &SessionId) -> bool {
        let Some(shared) = self.shared() else {
            return true;
        };
        let (here, held) = {
            let sessions = self.lock();
            let Some(state) = sessions.get(session) else {
                return true;
            };
            (state.presence_here(), state.held_here())
        };
        let now = tokio::time::Instant::now();
        self.write_presence(&shared, session, here, held, now).await
    }

    /// Writes this node's presence `here` in `session` and takes the other nodes' back.
    async fn write_presence(
        &self,
        shared: &Arc<dyn Shared>,
        session: &SessionId,
        here: Presence,
        held: Vec<RequestId>,
        now: tokio::time::Instant,
    ) -> bool {
        let Ok((others, others_held)) = shared.presence(session, here, held.clone()).await else {
            return false;
        };
        let mut sessions = self.lock();
        let Some(state) = sessions.get_mut(session) else {
            return true;
        };
        if let Some(sync) = state.sync.as_mut() {
            sync.others = others;
            sync.written = Some((here, now + presence_refresh(shared.presence_ttl())));
            sync.written_held = held;
            sync.set_others_held(others_held);
            sync.presence_stale = false;
        }
        state.refresh_presence();
        // Whose agent is where may have changed: every open request judged again.
        state.judge_agents();
        true
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
