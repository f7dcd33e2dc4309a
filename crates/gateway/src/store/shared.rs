//! What a store shared by several nodes has beyond [`Store`](super::Store): sessions loaded one
//! at a time (a node holds only those its own peers watch), notices of other nodes' changes,
//! the deadline sweep every node takes part in, and whether the store can be reached.
//!
//! Notices are at most once: the hub checks their sequence numbers and loads a session again
//! on a gap, after every resubscription, and when its sequence number runs ahead.

use std::time::Duration;

use askgate_protocol::{RequestId, SessionId};
use tokio::sync::mpsc;

use super::{KeptTable, StoreFuture, StoredRequest, StoredResolution};

/// One session as the store holds it.
#[derive(Clone, Debug, Default)]
pub struct SessionRecords {
    /// The sequence number of its last change.
    pub seq: u64,
    /// Every request, oldest first.
    pub requests: Vec<StoredRequest>,
    /// Who follows it.
    pub followers: Vec<String>,
}

/// A change made by some node (this one included: its own come back too).
#[derive(Clone, Debug)]
pub enum Change {
    /// A request was asked.
    Put(Box<StoredRequest>),
    /// A request ended.
    Resolved {
        /// The request.
        id: RequestId,
        /// How.
        resolution: Box<StoredResolution>,
    },
    /// A request's follow-up happened (its escalation widens who may answer).
    FollowedUp {
        /// The request.
        id: RequestId,
        /// Which.
        follow_up: super::FollowUp,
    },
    /// A person's vote on a request with a quorum was kept: its votes are these now.
    Voted {
        /// The request.
        id: RequestId,
        /// Who voted.
        user: String,
        /// Every vote, in the order cast.
        votes: Vec<askgate_protocol::approval::Vote>,
    },
    /// A request was forgotten (acknowledged, or kept past its retention).
    Forgot {
        /// The request.
        id: RequestId,
    },
    /// A person follows the session now, or no longer (not a change of state: it has no
    /// sequence number of its own; a node that misses it reads the followers again with the
    /// session).
    Followers {
        /// Who.
        user: String,
        /// Following or not.
        on: bool,
    },
    /// Some node's presence in the session changed (not a change of state: it has no
    /// sequence number of its own).
    Presence,
}

/// Who is on a session: tabs watching, and whether an agent waits on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Presence {
    /// Tabs watching.
    pub tabs: usize,
    /// Whether an agent waits.
    pub agent_online: bool,
}

/// What the store tells the hub.
#[derive(Clone, Debug)]
pub enum Notice {
    /// A session changed.
    Change {
        /// The session.
        session: SessionId,
        /// Its sequence number after the change.
        seq: u64,
        /// What changed.
        change: Change,
    },
    /// Notices may have been missed (the subscription was made again): every held session
    /// must be loaded again.
    Resubscribed,
    /// A request of `session` is for `name` (a person or `group:NAME`), or `name` follows
    /// `session` now: a node with an inbox of theirs loads the session.
    Addressed {
        /// The session.
        session: SessionId,
        /// Whom it is for.
        name: String,
    },
}

/// An entry of the deadline index this node has claimed for a while.
#[derive(Clone, Debug)]
pub struct DueClaim {
    /// The session.
    pub session: SessionId,
    /// The request.
    pub id: RequestId,
    /// The claim's score (its end), which settling it checks.
    pub claimed_until_ms: u64,
    /// The store's clock when it was claimed.
    pub now_ms: u64,
}

/// A notification this node has claimed for a while (see [`Shared::claim_deliveries`]).
#[derive(Clone, Debug)]
pub struct ClaimedDelivery {
    /// The notification.
    pub delivery: super::StoredDelivery,
    /// The claim's end (Unix ms), which settling it checks.
    pub claimed_until_ms: u64,
}

/// A follow-up of the store's index this node has claimed for a while.
#[derive(Clone, Debug)]
pub struct FollowClaim {
    /// The session.
    pub session: SessionId,
    /// The request.
    pub id: RequestId,
    /// Which follow-up.
    pub follow_up: super::FollowUp,
    /// The claim's end, which settling it checks.
    pub claimed_until_ms: u64,
}

/// How long a node holds a notification it made or claimed before the other nodes may claim
/// it: longer than a send takes (10 s at most), so that a live node is not raced by another.
pub const NOTIFY_LEASE: Duration = Duration::from_secs(30);

/// How many sessions each person's (or group's) inbox index keeps, the newest: what an inbox
/// opening on a node loads at most for each name, so that a person named in many sessions
/// over time costs a bounded load. Older ones are dropped as new ones come.
pub const INBOX_INDEX_SESSIONS: usize = 256;

/// How many sessions, the newest asked in, the store's index keeps for the operator's listing
/// of requests (`GET /v1/requests`) on a shared store; a local store's hub holds them all.
pub const LISTED_SESSIONS: usize = 10_000;

/// The presence entries' lifetime unless `--presence-ttl-s` says otherwise.
pub const DEFAULT_PRESENCE_TTL: Duration = Duration::from_secs(20);

/// The shortest `--presence-ttl-s`: a node's upkeep runs every second, and writes its entries
/// every quarter of their lifetime, so each is written again well before it lapses.
pub const MIN_PRESENCE_TTL: Duration = Duration::from_secs(4);

/// How often a node writes its presence in each session it holds, changed or not: a quarter
/// of the entries' lifetime (5 s at the default 20), so a live node's entry never lapses and
/// one that dies stops counting within `ttl` (others notice at their next write, within a
/// quarter more).
pub fn presence_refresh(ttl: Duration) -> Duration {
    ttl / 4
}

/// How often a node writes its report (its gauges, last hour and notification errors) for
/// the other nodes' operator endpoints; a node is shown alive while its report is younger than
/// [`ALIVE_FOR_INTERVALS`](crate::metrics::node_report::ALIVE_FOR_INTERVALS) of these.
pub const NODE_REPORT_EVERY: Duration = Duration::from_secs(5);

/// How long a node's report is kept, and listed, after it was written: a node that died
/// shows as not alive this long, then drops out.
pub const NODE_REPORT_KEPT: Duration = Duration::from_secs(600);

/// The most node reports read at once (the newest): what one summary or history reads at
/// most, however many nodes came and went within [`NODE_REPORT_KEPT`].
pub const MAX_REPORTED_NODES: usize = 256;

/// The shared side of a store several nodes use.
pub trait Shared: Send + Sync + 'static {
    /// One session, whole, with the sequence number it matches.
    fn load_session(&self, session: &SessionId) -> StoreFuture<'static, SessionRecords>;

    /// The sequence numbers of `sessions`, in order.
    fn sequences(&self, sessions: Vec<SessionId>) -> StoreFuture<'static, Vec<u64>>;

    /// Starts receiving notices of `session`; resolves once the subscription is in place, so
    /// that loading the session afterwards leaves no notice in between.
    fn watch(&self, session: &SessionId) -> StoreFuture<'static, ()>;

    /// Stops receiving notices of `session`.
    fn unwatch(&self, session: &SessionId);

    /// The notices, once: whoever takes them is the one receiver.
    fn take_notices(&self) -> Option<mpsc::Receiver<Notice>>;

    /// Claims deadline-index entries that are due.
    fn claim_due(&self) -> StoreFuture<'static, Vec<DueClaim>>;

    /// Ends a claim: the entry is due again at `next_ms`, or removed (`None`).
    fn settle_claim(&self, claim: DueClaim, next_ms: Option<u64>) -> StoreFuture<'static, ()>;

    /// Writes this node's presence in `session` (kept for a while, so that a node that dies
    /// stops counting), with the requests whose agent waits here (`held`), and returns the
    /// other nodes' that are still live, and the requests they hold.
    fn presence(
        &self,
        session: &SessionId,
        here: Presence,
        held: Vec<RequestId>,
    ) -> StoreFuture<'static, (Presence, Vec<RequestId>)>;

    /// How long a presence entry counts after it was written.
    fn presence_ttl(&self) -> Duration;

    /// Claims notifications that are due (made by a node that has not sent them in time, or
    /// due for another try), for [`NOTIFY_LEASE`].
    fn claim_deliveries(&self) -> StoreFuture<'static, Vec<ClaimedDelivery>>;

    /// Ends this node's claim on notification `id` of `session` (held until
    /// `claimed_until_ms`): it is due again at `due_ms`.
    fn retry_delivery(
        &self,
        session: &SessionId,
        id: &str,
        claimed_until_ms: u64,
        due_ms: u64,
    ) -> StoreFuture<'static, ()>;

    /// Claims follow-ups that are due, for a lease (as deadlines are claimed).
    fn claim_follow_ups(&self) -> StoreFuture<'static, Vec<FollowClaim>>;

    /// Ends a follow-up claim: the entry is removed (the follow-up was made, or is no longer
    /// to be).
    fn settle_follow_up(&self, claim: FollowClaim) -> StoreFuture<'static, ()>;

    /// Whether request `id` of `session` is open, as the store holds it.
    fn is_open(&self, session: &SessionId, id: &RequestId) -> StoreFuture<'static, bool>;

    /// Whether the store answered lately; why not, if not.
    fn ready(&self) -> Result<(), String>;

    /// Every field under `key` of a kept table, with its value, sorted by field.
    fn kept(&self, table: KeptTable, key: &str) -> StoreFuture<'static, Vec<(String, String)>>;

    /// Notes that `session` holds a request for each of `names` (people and `group:NAME`s),
    /// or that they follow it, where inboxes on other nodes find it, and tells every node.
    fn addressed(&self, session: &SessionId, names: Vec<String>) -> StoreFuture<'static, ()>;

    /// The sessions where requests were for any of `names`, or that they follow: the newest
    /// [`INBOX_INDEX_SESSIONS`] of each.
    fn inbox_sessions(&self, names: Vec<String>) -> StoreFuture<'static, Vec<SessionId>>;

    /// The sessions asked in lately (the store notes each with its ask), newest first: at
    /// most [`LISTED_SESSIONS`].
    fn asked_sessions(&self) -> StoreFuture<'static, Vec<SessionId>>;

    /// Writes this node's report (`text`, made at `at_ms`), kept for [`NODE_REPORT_KEPT`].
    fn report_node(&self, at_ms: u64, text: String) -> StoreFuture<'static, ()>;

    /// The reports of the nodes that wrote one since `since_ms` (this one's too), newest
    /// first: at most [`MAX_REPORTED_NODES`].
    fn node_reports(&self, since_ms: u64) -> StoreFuture<'static, Vec<String>>;
}
