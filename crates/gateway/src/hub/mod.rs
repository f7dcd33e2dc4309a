//! The hub: which tabs and agents watch which session, which requests are open, who wins.
//!
//! It knows nothing of sockets: each peer is a [`Link`] to its inbox (a bounded queue of
//! encoded frames, a tab's latest presence, a close code), and every change is committed to
//! the [`Store`] before it is announced. One std `Mutex` guards all sessions; critical
//! sections are map operations and queue pushes, never an `.await`, and the store is awaited
//! with the lock released.
//!
//! [`Store`]: crate::store::Store

mod acting; // operators known by name, and who an HTTP call acts as, for the audit trail
mod agent_side; // an agent connection's calls, with typed results the transport encodes
mod asking; // an ask: admitted, committed to the store, shown to tabs, accepted
mod auditing; // refusals counted by each tab into the audit trail; the history frame
mod by_link; // answers from mail links, without a tab, through the same first-wins ending
mod committing; // handing changes to the store, in order, finished whatever the caller does
mod ending; // how a request ends: the first ending wins, is committed, announced or reopened
mod followers; // who follows each session: kept in the store, told to their tabs and inboxes
mod following_up; // a request's reminder and escalation, each once while it is open
mod hub_core; // the hub: construction, the lock, peers arriving and leaving
mod inboxes; // who holds an inbox: one person's open requests across sessions, told live
mod listing; // what is open, for an operator: every session's requests, filtered, a page at a time
mod notifying; // what a request is, told to the notifier; whether it is still open
mod outcomes; // the agent's side after asking: withdraw, long-poll, ack, the retention sweep
mod peers; // who holds the other end: links, inboxes, tab slots, queued bytes, frames
mod refusals; // the refusals a tab keeps getting, counted rather than each recorded
mod replica; // this node's copy of a shared (Redis) session, behind one door
mod request; // a request's life: its states, and every transition with its bookkeeping
mod restore; // requests brought back from the store at a restart
mod rules; // remembered approvals: made from an approval, matched at an ask, listed, revoked
mod session; // one session: its tabs, agents and requests; fan-out and presence
mod shown; // what tabs are sent: snapshot, ending frames, finished list, history
mod voting; // approvals that need several people: each vote kept, the deciding one ends it

pub use acting::{Acting, acting, acting_as};
pub use asking::AskReply;
pub use by_link::{EndedAs, LinkRefused, LinkState, LinkedRequest};
pub use ending::Rejected;
pub use followers::{FollowRefused, Followed, MAX_FOLLOWERS};
pub use hub_core::{Hub, JoinRefused};
pub use inboxes::{INBOXES_PER_PERSON, InboxHandle, InboxRefused, MAX_INBOXES};
pub use listing::{DEFAULT_LISTED, ListCursor, ListFilter, ListState, Listed, MAX_LISTED};
pub use outcomes::AckReply;
pub use outcomes::{Lookup, Withdrawal};
pub use peers::frame::{FRAGMENT_BYTES, Frame};
pub use peers::inbox::{Delivery, Queue};
pub use peers::links::{AgentHandle, Link, TabHandle};
pub use restore::Restored;
pub use rules::Revoker;
pub use session::generated_session_id;
