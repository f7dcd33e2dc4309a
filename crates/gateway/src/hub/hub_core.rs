//! The hub itself: construction, the lock, peers arriving and leaving, and housekeeping.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use askgate_protocol::{RequestId, SessionId, TabId, close};

use super::peers::links::{AgentHandle, Link, TabHandle};
use super::peers::queued::{Budgets, TabBudget};
use super::peers::tab_slots::TabSlot;
use super::refusals::Tallies;
use super::replica::Replica;
use super::request::Ledger;
use super::session::Session;
use crate::config::Limits;
use crate::keys::ViewerKeys;
use crate::metrics::{Metrics, gauge_add};
use crate::notify::Notifier;
use crate::people::{IssuedLink, People, Person, issue_link};
use crate::scope::SessionScope;
use crate::store::{Store, StoreError};

/// Why a tab was turned away, as a close code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JoinRefused {
    /// The session already has as many tabs as allowed.
    #[error("this session already has the most tabs allowed")]
    TooManyTabs,
    /// The gateway holds as many sessions as allowed.
    #[error("the gateway holds the most sessions allowed")]
    TooManySessions,
    /// Tabs are joining the session faster than allowed.
    #[error("tabs are joining this session too fast")]
    TooManyJoins,
}

impl JoinRefused {
    /// The close code to send.
    pub fn close_code(self) -> u16 {
        close::TRY_AGAIN_LATER
    }

    /// The close frame's reason.
    pub fn reason(self) -> &'static str {
        match self {
            JoinRefused::TooManyTabs => "this session has the most tabs allowed; try again later",
            JoinRefused::TooManySessions => "the gateway holds the most sessions allowed",
            JoinRefused::TooManyJoins => {
                "tabs are joining this session too fast; try again shortly"
            }
        }
    }
}

/// Every session by id. Boxed: the map keeps room for a value in each of its slots, used or
/// not, and a session is a few hundred bytes where its box is one pointer.
pub(super) type Sessions = HashMap<SessionId, Box<Session>>;

/// A forgotten request whose record is to be deleted, and whether its agent acknowledged it
/// (recorded in the audit trail as `acked`) rather than its retention running out.
pub(super) type Forgotten = (SessionId, RequestId, bool);

/// Sessions, requests and the peers attached to them.
pub struct Hub {
    /// Every session. A std Mutex: held only for map updates and `try_send`s, never across an
    /// `.await`, so it is cheaper than an async one and cannot be held by a stalled task.
    sessions: Mutex<Sessions>,
    pub(super) store: Arc<dyn Store>,
    /// This node's side of a store several nodes share: sessions are then loaded as this
    /// node's peers come to them, and kept in step by notices. `None` on a local store.
    pub(super) replica: Option<Replica>,
    pub(super) limits: Limits,
    pub(super) keys: ViewerKeys,
    /// Who may answer: identity required or not, and the operator's groups.
    pub(super) people: People,
    pub(super) metrics: Arc<Metrics>,
    next_link: AtomicU64,
    /// Every agent connection, so it can be closed from outside (tests, operators).
    agents: Mutex<HashMap<u64, Link>>,
    /// Forgotten requests whose deletion the store failed: tried again at the next sweep.
    pub(super) undeleted: Mutex<Vec<Forgotten>>,
    /// Bytes queued to every tab and not yet written out.
    queued_total: Arc<AtomicUsize>,
    /// What every session's requests count into, and the hub their timers time them out
    /// through.
    pub(super) ledger: Arc<Ledger>,
    /// The bytes of `history` frames every session keeps (see [`history_cache`]).
    ///
    /// [`history_cache`]: super::shown::history_cache
    pub(super) history_bytes_total: Arc<AtomicUsize>,
    /// Who is told of requests, when a notify file is given.
    pub(super) notifier: Option<Arc<Notifier>>,
    /// Remembered approvals, on a local store (a shared one is read at each ask).
    pub(super) rule_book: super::rules::RuleBook,
    /// The people `--operators` lists, set once at start ([`Hub::set_operators`]).
    pub(super) operators: std::sync::OnceLock<std::collections::HashSet<String>>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").finish_non_exhaustive()
    }
}

impl Hub {
    /// A hub writing through `store`.
    pub fn new(
        store: Arc<dyn Store>,
        limits: Limits,
        keys: ViewerKeys,
        people: People,
        metrics: Arc<Metrics>,
        notifier: Option<Arc<Notifier>>,
    ) -> Arc<Self> {
        let replica = Replica::of(&*store, &metrics);
        // On a shared store every node judges from the store's presence whether a request's
        // agent waits on some node (`Session::judge_agents`).
        let orphans_here = true;
        Arc::new_cyclic(|hub| Hub {
            ledger: Arc::new(
                Ledger::new(Arc::clone(&metrics), Weak::clone(hub)).with_orphans(
                    orphans_here,
                    limits.agent_grace,
                    limits.orphan_withdraw_after,
                ),
            ),
            sessions: Mutex::new(HashMap::new()),
            replica,
            store,
            limits,
            keys,
            people,
            metrics,
            next_link: AtomicU64::new(1),
            agents: Mutex::new(HashMap::new()),
            undeleted: Mutex::new(Vec::new()),
            queued_total: Arc::new(AtomicUsize::new(0)),
            history_bytes_total: Arc::new(AtomicUsize::new(0)),
            notifier,
            rule_book: super::rules::RuleBook::default(),
            operators: std::sync::OnceLock::new(),
        })
    }

    /// Issues `user` a personal link to `session` (see [`issue_link`]).
    ///
    /// # Errors
    /// As [`issue_link`]'s.
    pub async fn issue_link(
        &self,
        session: &SessionId,
        user: &str,
        ttl_s: Option<&serde_json::Value>,
    ) -> Result<IssuedLink, Vec<askgate_protocol::FieldError>> {
        issue_link(&*self.store, &self.keys, session, user, ttl_s).await
    }

    /// Makes sure this node holds `session` as the shared store has it, when several nodes
    /// share one (see [`replica`](super::replica)): the door the verbs go through before they
    /// look at a session. A local store's hub has nothing to do.
    ///
    /// # Errors
    /// The shared store could not be reached; the session stays held, and is loaded later.
    pub async fn synced(self: &Arc<Self>, session: &SessionId) -> Result<(), StoreError> {
        match self.replica {
            Some(_) => self.load_shared(session).await,
            None => Ok(()),
        }
    }

    /// The ask of request `id` of `session` is finished (stored, or not: `kept`): on a shared
    /// store, the other nodes' changes to it that came meanwhile are applied, or dropped.
    pub(super) fn ask_finished(&self, session: &mut Session, id: &RequestId, kept: bool) {
        if self.replica.is_some() {
            self.release_held_back_changes(session, id, kept);
        }
    }

    /// The viewer keys (for checking a tab's `hello`).
    pub fn keys(&self) -> &ViewerKeys {
        &self.keys
    }

    /// The notifier, when a notify file is given.
    pub fn notifier(&self) -> Option<&Arc<Notifier>> {
        self.notifier.as_ref()
    }

    /// The store, for reading what it keeps (the audit trail).
    pub fn store_handle(&self) -> Arc<dyn Store> {
        Arc::clone(&self.store)
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The metrics, shared (for the accept loop, which outlives no hub but holds its own).
    pub fn shared_metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.metrics)
    }

    /// The bytes of every session's open requests, as tabs receive them (what
    /// `--max-open-bytes` bounds), kept current by the hub.
    pub fn open_bytes(&self) -> usize {
        self.ledger.open_bytes_total.load(Ordering::Relaxed)
    }

    /// Whether the hub can decide asks and answers: its store is local, or the shared one
    /// answers; why not, if not.
    pub fn ready(&self) -> Result<(), String> {
        self.replica
            .as_ref()
            .map_or(Ok(()), |replica| replica.shared.ready())
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Sessions> {
        // A panic while holding the lock would be a bug; the map itself stays consistent
        // enough to keep serving, so recover the guard rather than take the gateway down.
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn assign_id(&self, mut link: Link) -> Link {
        link.id = self.next_link.fetch_add(1, Ordering::Relaxed);
        link
    }

    /// The session, created if new and the session limit allows.
    pub(super) fn session_entry<'a>(
        &self,
        sessions: &'a mut Sessions,
        id: &SessionId,
    ) -> Option<&'a mut Session> {
        if !sessions.contains_key(id) {
            if sessions.len() >= self.limits.max_sessions {
                return None;
            }
            let mut session = self.new_session(id.clone());
            if self.replica.is_some() {
                // Not loaded yet: the first call loads it, or else the upkeep does.
                session.sync = Some(Box::default());
            }
            sessions.insert(id.clone(), Box::new(session));
            gauge_add(&self.metrics.sessions, 1);
        }
        sessions.get_mut(id).map(|session| &mut **session)
    }

    /// An empty session, counted into the gateway-wide totals.
    pub(super) fn new_session(&self, id: SessionId) -> Session {
        Session::new(
            id,
            self.limits.joins_per_session_per_second,
            Arc::clone(&self.ledger),
        )
    }

    /// Drops `id` if nothing is left in it.
    pub(super) fn drop_if_idle(&self, sessions: &mut Sessions, id: &SessionId) {
        if sessions.get(id).is_some_and(|session| session.is_idle()) {
            if self.replica.is_some() {
                self.forget_session(sessions, id);
            } else {
                sessions.remove(id);
                gauge_add(&self.metrics.sessions, -1);
            }
        }
    }

    /// Attaches an agent connection admitted by a key of `scope`: its frames may name only the
    /// sessions of that scope. It detaches when the handle drops.
    pub fn attach_agent(self: &Arc<Self>, link: Link, scope: SessionScope) -> AgentHandle {
        self.attach_agent_as(link, scope, crate::keys::LOCAL_KEY_ID)
    }

    /// [`attach_agent`](Self::attach_agent), for the agent key whose id is `key_id`: its
    /// asks are that key's.
    pub fn attach_agent_as(
        self: &Arc<Self>,
        link: Link,
        scope: SessionScope,
        key_id: &str,
    ) -> AgentHandle {
        gauge_add(&self.metrics.agents, 1);
        let link = self.assign_id(link);
        self.agent_links().insert(link.id, link.clone());
        AgentHandle {
            hub: Arc::clone(self),
            link,
            scope,
            key_id: key_id.to_owned(),
        }
    }

    /// Marks `agent` as present in `session` (tabs see it online).
    pub(super) fn attach_agent_to(&self, session: &mut Session, agent: &Link) {
        if session.agents.insert(agent.id) {
            session.refresh_presence();
        }
    }

    fn agent_links(&self) -> MutexGuard<'_, HashMap<u64, Link>> {
        self.agents
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn detach_agent(&self, agent: &Link) {
        gauge_add(&self.metrics.agents, -1);
        self.agent_links().remove(&agent.id);
        let mut sessions = self.lock();
        let mut idle = Vec::new();
        for session in sessions.values_mut() {
            session.forget_asker(agent.id);
            if session.agents.remove(&agent.id) {
                session.refresh_presence();
                idle.push(session.id.clone());
            }
        }
        for id in idle {
            self.drop_if_idle(&mut sessions, &id);
        }
    }

    /// A tab joins `session`: it gets the snapshot, the others a presence update.
    ///
    /// # Errors
    /// The session or the gateway is full, or tabs join the session too fast.
    pub fn join_tab(
        self: &Arc<Self>,
        session: SessionId,
        requested: Option<TabId>,
        person: Person,
        link: Link,
    ) -> Result<TabHandle, JoinRefused> {
        let link = self.assign_id(link);
        let mut sessions = self.lock();
        let entry = self
            .session_entry(&mut sessions, &session)
            .ok_or(JoinRefused::TooManySessions)?;
        if entry.tabs.len() >= self.limits.tabs_per_session {
            return Err(JoinRefused::TooManyTabs);
        }
        if !entry.joins.admit() {
            return Err(JoinRefused::TooManyJoins);
        }
        link.set_budget(TabBudget::new(
            Arc::clone(&entry.queued_bytes),
            Arc::clone(&self.queued_total),
            Budgets {
                per_session: self.limits.queued_bytes_per_session,
                total: self.limits.queued_bytes_total,
            },
        ));
        let tab = entry.tab_id_for(requested);
        let link_id = link.id;
        entry.tabs.insert(
            link_id,
            TabSlot {
                tab: tab.clone(),
                link: link.clone(),
                person: person.clone(),
                refusals: Tallies::default(),
            },
        );
        gauge_add(&self.metrics.tabs, 1);
        // The snapshot first, so the tab's view starts complete; then everyone hears of it.
        let mut you = self.people.you(&person);
        you.following = person
            .name()
            .is_some_and(|user| self.ledger.followers.follows(&session, user));
        let snapshot = entry.snapshot(&tab, &you, self.limits.max_frame_bytes);
        entry.send_to(link_id, snapshot, &self.metrics);
        entry.announce_presence_except(Some(link_id));
        Ok(TabHandle {
            hub: Arc::clone(self),
            session,
            tab,
            person,
            link_id,
        })
    }

    pub(super) fn leave_tab(&self, session: &SessionId, link_id: u64) {
        let mut sessions = self.lock();
        if let Some(entry) = sessions.get_mut(session)
            && entry.tabs.remove(link_id).is_some()
        {
            gauge_add(&self.metrics.tabs, -1);
            entry.announce_presence();
            if entry.tabs.is_empty() {
                // No one left to ask for it; the session itself may linger a while.
                entry.history = None;
            }
        }
        self.drop_if_idle(&mut sessions, session);
    }

    /// Closes every tab socket with `code` (they reconnect and resynchronise).
    pub fn kick_tabs(&self, code: u16) {
        for session in self.lock().values() {
            for slot in session.tabs.values() {
                slot.link.close(code);
            }
        }
    }

    /// Closes every agent socket with `code`; their requests stay open and their outcomes
    /// wait for them.
    pub fn kick_agents(&self, code: u16) {
        for link in self.agent_links().values() {
            link.close(code);
        }
    }

    /// How many sessions, tabs and requests (any state) the hub holds: for tests and leak
    /// checks (with the `testing` feature only).
    #[cfg(any(test, feature = "testing"))]
    pub fn census(&self) -> (usize, usize, usize) {
        let sessions = self.lock();
        let tabs = sessions.values().map(|s| s.tabs.len()).sum();
        let requests = sessions.values().map(|s| s.requests.len()).sum();
        (sessions.len(), tabs, requests)
    }
}
