//! Where requests and outcomes are kept: the seam between the hub and durable storage.
//!
//! Every change is recorded in the session's audit trail ([`crate::audit`]) in the same
//! commit: [`Note::of`] says what entry it makes.
//!
//! The hub calls [`Store::decide`] and waits for it before it announces anything: a request
//! is `accepted` only once the store has it, and a resolution is sent to tabs and the agent
//! only once the store has it. A local store (memory, redb) only keeps what the hub's lock
//! already decided, and says [`Verdict::Done`]; a shared one (Redis) decides itself, between
//! every node, and says what it decided. A store may group the operations of concurrent
//! commits into one transaction; each caller still learns whether its own operations are kept.
//!
//! [`Store::decide_in_steps`] says it in two steps where the store has two: `taken` once a
//! crash of the gateway's process can no longer lose the change (the embedded store has
//! written it to its log, and the kernel holds it), `durable` once a crash of the machine
//! cannot either (the log is synced). A new request is shown to tabs at the first step and
//! `accepted` at the second; an ack's deletion promises nothing and waits for neither.
//!
//! - [`memory`]: a map. [`durable`]: a write-ahead log with group commits, and redb behind
//!   it. [`redis`]: several nodes.
//! - [`shared`]: what only a shared store has (sessions loaded one by one, notices, the sweep).

mod durable;
mod memory;
pub mod redis;
pub mod shared;

use std::future::Future;
use std::pin::Pin;

use askgate_protocol::{RequestId, SessionId, Settlement};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::audit::Note;
#[cfg(feature = "fuzzing")]
pub use durable::fuzzing as durable_decoders;
pub use durable::{
    CHECKPOINT_EVERY, DurableStore, FILE_NAME, FORMAT_VERSION, LogSettings, MOST_CHANGES_HELD,
    ReadOnlyTrails, StoreCheck, UNKEYED_FORMAT_VERSION, check as check_durable,
    holds_unkeyed_trails, remove_live_scratch_dirs,
};
pub use memory::MemoryStore;
pub use shared::Shared;

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
    /// Who alone may answer, as the ask named them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answerers: Option<Vec<String>>,
    /// Its reminder and escalation: when each is due, and whether it has happened. (Before
    /// `resolution`, which the embedded store relies on coming last.)
    #[serde(default, skip_serializing_if = "FollowUps::is_empty")]
    pub follow_ups: FollowUps,
    /// The answer given should the deadline pass with none (the ask's `default`, checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// For an approval that needs several people, how many (its votes are a kept table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<askgate_protocol::approval::Quorum>,
    /// The id of the agent key that asked it ([`crate::keys::AgentKey::id`]): whose an
    /// approval remembered `for this agent key` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<String>,
    /// Where its outcome is POSTed when it ends (the ask's `callback`, its secret included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback: Option<Box<askgate_protocol::wire::callback::Callback>>,
    /// For an approval some of whose calls rules approved when it was asked: each call's rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ruled: Option<Vec<Option<askgate_protocol::approval::rules::RuledCall>>>,
    /// Where an approval of it may be remembered (empty: nowhere).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remember: Vec<askgate_protocol::approval::rules::RuleScope>,
    /// Its votes so far, as a shared store holds them with the request (a local store keeps
    /// them in the `votes` kept table instead, and leaves this empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub votes: Vec<askgate_protocol::approval::Vote>,
    /// How it ended, once it has.
    pub resolution: Option<StoredResolution>,
}

/// A request's reminder and escalation, as the store keeps them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FollowUps {
    /// When the same people are told again (Unix ms), if ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_at_ms: Option<u64>,
    /// Whether they have been.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reminded: bool,
    /// When more people are added and told (Unix ms), if ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_at_ms: Option<u64>,
    /// Whom (people and `group:NAME`s).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalate_to: Vec<String>,
    /// Whether it has escalated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub escalated: bool,
}

impl FollowUps {
    /// Whether there is none, done or not.
    pub fn is_empty(&self) -> bool {
        self.remind_at_ms.is_none() && self.escalate_at_ms.is_none()
    }

    /// The follow-ups still to come, each with when it is due.
    pub fn pending(&self) -> Vec<(FollowUp, u64)> {
        let mut pending = Vec::new();
        if let (Some(at), false) = (self.remind_at_ms, self.reminded) {
            pending.push((FollowUp::Remind, at));
        }
        if let (Some(at), false) = (self.escalate_at_ms, self.escalated) {
            pending.push((FollowUp::Escalate, at));
        }
        pending
    }

    /// `follow_up` has happened.
    pub fn mark(&mut self, follow_up: FollowUp) {
        match follow_up {
            FollowUp::Remind => self.reminded = true,
            FollowUp::Escalate => self.escalated = true,
        }
    }
}

/// One of a request's follow-ups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FollowUp {
    /// The same people told again.
    Remind,
    /// More people added and told.
    Escalate,
}

/// How a request ended, as kept until the agent acks it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredResolution {
    /// What the agent receives.
    pub settlement: Settlement,
    /// The tab that answered or declined.
    pub by: Option<String>,
    /// The person who did, if the gateway knew them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// How the gateway knew who the tab was (absent for endings without a tab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<askgate_protocol::wire::Via>,
    /// For a quorum's ending, every voter and their vote (`[{user, decisions}]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voters: Option<Value>,
    /// When it ended (Unix ms).
    pub at_ms: u64,
}

impl StoredResolution {
    /// An ending no tab made (a timeout, a withdrawal), at `at_ms`.
    pub fn untouched(settlement: Settlement, at_ms: u64) -> Self {
        StoredResolution {
            settlement,
            by: None,
            user: None,
            via: None,
            voters: None,
            at_ms,
        }
    }
}

/// Where a notification goes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryTarget {
    /// The webhook of this name in the notify file.
    Webhook(String),
    /// This person's mail (their address is in the notify file).
    Email(String),
    /// A direct message from the Slack app to this person (their `slack` id is in the
    /// notify file).
    SlackPerson(String),
    /// One post to this group's Slack channel (`slack_channel` in the notify file).
    SlackChannel(String),
    /// Every Slack message the request caused, updated in place to say how it ended.
    SlackUpdate,
    /// A Web Push to each device this person subscribed.
    Push(String),
    /// The request's own `callback`, as its ask gave it.
    Callback(Box<askgate_protocol::wire::callback::Callback>),
}

/// A table of what the channels remember between notifications (see [`StoreOp::Keep`]): a
/// few fields under each key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeptTable {
    /// The Slack messages a request caused, to update when it ends: under `session/id`, a
    /// field per message (its target), the channel and message timestamp.
    SlackMessages,
    /// Web Push subscriptions: under the person's name, a field per push endpoint.
    PushSubscriptions,
    /// The votes on a request with a quorum: under `session/id`, a field per voter, their
    /// vote (`{"at_ms", "approve": [true|false|null, ...]}`); deleted with the request.
    Votes,
    /// Remembered approvals: under `session:{session}` or `key:{key id}`, a field per rule
    /// (its id), the rule's JSON.
    Rules,
}

impl KeptTable {
    /// Every table.
    pub const ALL: [KeptTable; 4] = [
        KeptTable::SlackMessages,
        KeptTable::PushSubscriptions,
        KeptTable::Votes,
        KeptTable::Rules,
    ];

    /// Its name in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            KeptTable::SlackMessages => "slack_messages",
            KeptTable::PushSubscriptions => "push_subscriptions",
            KeptTable::Votes => "votes",
            KeptTable::Rules => "rules",
        }
    }

    /// How long a shared store keeps a key of the table after a write of `field`, if not for
    /// ever: a request's Slack messages are kept past the longest a link works (90 days), in
    /// case the update that forgets them never comes (given up, or shed); once updated, only
    /// the mark of the update ([`SLACK_ENDED_FIELD`]) stays, for an hour.
    pub fn expires_after(self, field: &str) -> Option<std::time::Duration> {
        match self {
            KeptTable::SlackMessages if field == SLACK_ENDED_FIELD => {
                Some(std::time::Duration::from_secs(3600))
            }
            KeptTable::SlackMessages => Some(std::time::Duration::from_secs(91 * 86_400)),
            // A rule's own `expires_ms` ends it (making one clears those past it); a key's
            // rules have all ended a year and a day after its last write (the longest
            // `--approval-rule-ttl-s`), and it goes then.
            KeptTable::Rules => Some(std::time::Duration::from_secs(366 * 86_400)),
            KeptTable::PushSubscriptions | KeptTable::Votes => None,
        }
    }

    /// The table named `name` in the store.
    pub fn parse(name: &str) -> Option<KeptTable> {
        KeptTable::ALL
            .into_iter()
            .find(|table| table.as_str() == name)
    }
}

/// The field of a request's Slack messages that says they were updated at its end, holding
/// the `request.resolved` body: on a shared store, a message posted by another node as the
/// update ran finds it and is updated to match.
pub const SLACK_ENDED_FIELD: &str = "ended";

/// One field of a kept table.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeptField {
    /// The table.
    pub table: KeptTable,
    /// The key it is under.
    pub key: String,
    /// The field's name.
    pub field: String,
    /// Its value.
    pub value: String,
}

/// A notification waiting to be sent. It is kept in the same commit as the change it tells
/// of, and until it is sent or given up, so that neither a restart nor (on Redis) the death
/// of the node that made it loses it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredDelivery {
    /// The session of the request it is about.
    pub session: SessionId,
    /// The request.
    pub request: RequestId,
    /// Unique, and the same on every try, so that receivers can drop repeats (`webhook-id`).
    pub id: String,
    /// What happened (`request.opened`, ...).
    pub event: String,
    /// Where it goes.
    pub target: DeliveryTarget,
    /// The webhook body, JSON; a mail is written from it too.
    pub body: String,
    /// When it was made (Unix ms): it is given up `--notify-retry-for-s` after this.
    pub created_ms: u64,
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
        /// For an answer or a decline of a request with a deadline: how it ends instead if the
        /// store's clock says the deadline has passed (its default, or the timeout; the store
        /// sets its time). A shared store judges this; a local one, whose hub times requests
        /// out itself, ignores it.
        if_late: Option<StoredResolution>,
    },
    /// Forget a request (acked, or its outcome expired).
    Delete {
        /// The session.
        session: SessionId,
        /// The request.
        id: RequestId,
        /// Whether its agent acknowledged it (recorded as `acked`); else its retention ran out.
        acked: bool,
    },
    /// Record an event that changes nothing else (a refusal, a link issued).
    Note(Note<'static>),
    /// Drop the audit trails whose newest entry is older than `before_ms`, whole.
    DropStaleTrails {
        /// The cut-off (Unix ms).
        before_ms: u64,
    },
    /// Keep notifications to send, about the change of the operation before it in the same
    /// commit: a store that decides (Redis) keeps them only if that change is made (a new
    /// request created, an ending that won).
    Notify {
        /// The notifications.
        deliveries: Vec<StoredDelivery>,
        /// After a `Resolve` with an `if_late`: the notifications kept instead should the
        /// store find the ending late (a local store, whose hub times requests out itself,
        /// ignores them).
        if_late: Vec<StoredDelivery>,
    },
    /// A follow-up of an open request happened (recorded as `reminded` or `escalated`): kept
    /// once, so that it happens once, also across restarts.
    FollowedUp {
        /// The session.
        session: SessionId,
        /// The request.
        id: RequestId,
        /// Which.
        follow_up: FollowUp,
        /// For an escalation: whom it added (people and `group:NAME`s).
        to: Vec<String>,
        /// When (Unix ms).
        at_ms: u64,
    },
    /// A person follows a session, or stops (recorded as `followed` or `unfollowed`). A
    /// local store keeps it as asked; the hub has already checked it against the limit.
    Follow {
        /// The session.
        session: SessionId,
        /// Who.
        user: String,
        /// Following from now on, or no longer.
        on: bool,
        /// When (Unix ms).
        at_ms: u64,
    },
    /// Set a field of a kept table (`value`), or delete it (`None`).
    Keep {
        /// The table.
        table: KeptTable,
        /// The key.
        key: String,
        /// The field.
        field: String,
        /// Its new value, or `None` to delete it.
        value: Option<String>,
    },
    /// Keep a person's vote on a request with a quorum (recorded as `voted`): `votes` is every
    /// vote with theirs, counted on `counted_on`, the votes as the node held them. A local store
    /// keeps the voter's vote in the `votes` kept table. A shared store keeps `votes` only if it
    /// still holds `counted_on` (else [`Verdict::Stale`] with what it holds, and the operations
    /// after this one in the commit are not made), so that votes on several nodes at once are
    /// each counted once; at or after the deadline, by its clock, it keeps none
    /// ([`Verdict::Early`], `left_ms` 0).
    Vote {
        /// The session.
        session: SessionId,
        /// The request.
        id: RequestId,
        /// Who voted.
        user: String,
        /// Every vote, theirs included, in the order cast.
        votes: Vec<askgate_protocol::approval::Vote>,
        /// The votes the count started from.
        counted_on: Vec<askgate_protocol::approval::Vote>,
    },
    /// Delete every field under a key of a kept table.
    Unkeep {
        /// The table.
        table: KeptTable,
        /// The key.
        key: String,
    },
    /// A notification is done with: sent, given up, or no longer worth sending.
    Delivered {
        /// The session of its request.
        session: SessionId,
        /// Its id.
        id: String,
    },
}

/// What the store made of one operation.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Done as asked (a local store, whose hub already decided, always says this).
    Done,
    /// `Put`: created now, at these times on the store's clock.
    Created {
        /// When it was asked.
        asked_at_ms: u64,
        /// When it times out, if ever.
        deadline_ms: Option<u64>,
    },
    /// `Put`: the id was already asked with the same questions: the request as it stands.
    Exists(Box<StoredRequest>),
    /// `Put`: the id was already asked with other questions.
    Conflict,
    /// `Resolve`: this ending won, at this time on the store's clock.
    Won {
        /// When it ended.
        at_ms: u64,
    },
    /// `Resolve`: another ending had won (or the deadline passed first): that one.
    Lost(Box<StoredResolution>),
    /// `Resolve` of a timeout: by the store's clock the deadline is this far off.
    Early {
        /// Milliseconds left.
        left_ms: u64,
    },
    /// `Resolve` or `Delete`: no such request.
    Unknown,
    /// `Delete`: the request is open again (asked anew elsewhere); nothing was deleted.
    StillOpen,
    /// `Vote`: the votes changed since they were counted (another node's vote): these are
    /// the votes now; nothing was kept.
    Stale(Vec<askgate_protocol::approval::Vote>),
}

impl StoreOp {
    /// For a `Vote`, the field of the `votes` kept table a local store keeps: under
    /// `session/id`, the voter, their vote (`{"at_ms", "approve", "reasons"}`).
    pub fn vote_field(&self, at_ms: u64) -> Option<KeptField> {
        let StoreOp::Vote {
            session,
            id,
            user,
            votes,
            ..
        } = self
        else {
            return None;
        };
        let vote = votes.iter().find(|vote| vote.user == *user)?;
        Some(KeptField {
            table: KeptTable::Votes,
            key: format!("{session}/{id}"),
            field: user.clone(),
            value: serde_json::json!({"at_ms": at_ms, "approve": vote.approve, "reasons": vote.reasons})
                .to_string(),
        })
    }
}

/// Reading the audit trails a store keeps (it writes them in its commits).
pub trait Trails: Send + Sync {
    /// Entries of `session`'s audit trail after `after_seq`, oldest first, at most `limit`.
    fn audit(
        &self,
        session: &SessionId,
        after_seq: u64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<String>>;

    /// The newest `count` entries of `session`'s audit trail, oldest first.
    fn recent_audit(&self, session: &SessionId, count: usize) -> StoreFuture<'_, Vec<String>>;

    /// Every session with an audit trail.
    fn audit_sessions(&self) -> StoreFuture<'_, Vec<SessionId>>;
}

/// How soon a change's `durable` step is wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Someone waits to be promised it: the store waits for the disk at once.
    Prompt,
    /// Nothing is promised on it (an ack's deletion): it may wait to share the disk's next
    /// wait with other changes, for a bounded time.
    Lazy,
}

/// A commit's two steps (see the module's notes).
pub struct Steps {
    /// What the store decided of each op, once a crash of this process no longer loses them.
    pub taken: StoreFuture<'static, Vec<Verdict>>,
    /// Ready once a crash of the machine no longer loses them either.
    pub durable: StoreFuture<'static, ()>,
}

/// The store failed; the operation did not happen. What kind of failure it is, and what was
/// wrong, in words (shown as `store: {message}`).
#[derive(Clone, Debug, thiserror::Error)]
#[error("store: {message}")]
pub struct StoreError {
    /// What kind of failure.
    pub kind: StoreErrorKind,
    /// What was wrong, and where.
    pub message: String,
}

/// What kind of failure a [`StoreError`] is: whether trying again can help, and who must act.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreErrorKind {
    /// The store did not answer or is not there now (Redis unreachable, a timeout, the store
    /// closing): the same operation may succeed later.
    Unavailable,
    /// The disk refused a read or a write.
    Io,
    /// What the store holds cannot be read as askgate wrote it: damage, or another version.
    Damaged,
    /// The store is not one this gateway may use as configured (another audit key, another
    /// format, open in another gateway): an operator must act.
    Refused,
    /// A bug: the store panicked or answered what it never should.
    Internal,
}

impl StoreError {
    /// An error of `kind`.
    pub fn new(kind: StoreErrorKind, message: impl Into<String>) -> Self {
        StoreError {
            kind,
            message: message.into(),
        }
    }

    /// [`StoreErrorKind::Unavailable`].
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::Unavailable, message)
    }

    /// [`StoreErrorKind::Io`].
    pub fn io(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::Io, message)
    }

    /// [`StoreErrorKind::Damaged`].
    pub fn damaged(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::Damaged, message)
    }

    /// [`StoreErrorKind::Refused`].
    pub fn refused(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::Refused, message)
    }

    /// [`StoreErrorKind::Internal`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::Internal, message)
    }
}

/// Durable (or not) keeping of requests and outcomes.
pub trait Store: Send + Sync + 'static {
    /// Applies `ops` atomically; resolves once they are durable. The operations are handed
    /// over when `commit` is called, so commits apply in the order they are called, not the
    /// order their futures are first polled, and the future borrows nothing: whoever awaits
    /// it, the hub has already ordered the change.
    fn commit(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, ()>;

    /// Every request kept, open and resolved, for a restart.
    fn load(&self) -> StoreFuture<'_, Vec<StoredRequest>>;

    /// Applies `ops` as [`Store::commit`] does, and says what became of each, in order. A
    /// store that decides nothing itself (the hub's lock did) keeps the default: all `Done`.
    fn decide(&self, ops: Vec<StoreOp>) -> StoreFuture<'static, Vec<Verdict>> {
        let count = ops.len();
        let committing = self.commit(ops);
        Box::pin(async move {
            committing.await?;
            Ok(vec![Verdict::Done; count])
        })
    }

    /// Applies `ops` as [`Store::decide`] does, saying so in two steps (see the module's
    /// notes). A store whose decision is durable when it is made keeps the default: its
    /// `durable` step is ready with its `taken` one.
    fn decide_in_steps(&self, ops: Vec<StoreOp>, _durability: Durability) -> Steps {
        Steps {
            taken: self.decide(ops),
            durable: Box::pin(std::future::ready(Ok(()))),
        }
    }

    /// Who follows each session, for a restart (a local store; a shared one loads them with
    /// each session).
    fn followers(&self) -> StoreFuture<'_, Vec<(SessionId, String)>>;

    /// Every notification kept and not yet sent, for a restart (a local store; on a shared
    /// one, nodes claim due ones instead).
    fn deliveries(&self) -> StoreFuture<'_, Vec<StoredDelivery>>;

    /// Every field of the kept tables, for a restart (a local store; a shared one is read
    /// key by key, [`shared::Shared::kept`]).
    fn kept(&self) -> StoreFuture<'_, Vec<KeptField>>;

    /// The audit trails it keeps, for reading.
    fn trails(&self) -> &dyn Trails;

    /// The shared side of a store several nodes use at once; `None` for a local one.
    fn shared(&self) -> Option<std::sync::Arc<dyn Shared>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_error_reads_as_before_and_says_its_kind() {
        let error = StoreError::unavailable("redis at localhost:6379 did not answer");
        assert_eq!(
            error.to_string(),
            "store: redis at localhost:6379 did not answer"
        );
        assert_eq!(error.kind, StoreErrorKind::Unavailable);
        assert_eq!(StoreError::io("disk").kind, StoreErrorKind::Io);
        assert_eq!(StoreError::damaged("bad").kind, StoreErrorKind::Damaged);
        assert_eq!(StoreError::refused("key").kind, StoreErrorKind::Refused);
        assert_eq!(StoreError::internal("panic").kind, StoreErrorKind::Internal);
    }
}
