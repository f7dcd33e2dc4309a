//! The hub: which tabs and agents watch which session, which requests are open, who wins.
//!
//! It knows nothing of sockets: each peer is a [`Link`] to its inbox (a bounded queue of
//! encoded frames, a tab's latest presence, a close code), and every change is committed to
//! the [`Store`] before it is announced. One std `Mutex` guards all sessions; critical
//! sections are map operations and queue pushes, never an `.await`, and the store is awaited
//! with the lock released.
//!
//! [`Store`]: crate::store::Store

mod agent_side;
mod asking;
mod auditing;
mod committing;
mod ending;
mod ending_frames;
mod finished;
mod frame;
mod history_cache;
mod hub_core;
mod inbox;
mod issuing;
mod links;
mod outcomes;
mod queued;
mod refusals;
mod replica;
mod request;
mod restore;
mod session;
mod snapshot;
mod tab_slots;

pub use asking::AskReply;
pub use ending::Rejected;
pub use frame::{FRAGMENT_BYTES, Frame};
pub use hub_core::{Hub, JoinRefused};
pub use inbox::{Delivery, Queue};
pub use issuing::IssuedLink;
pub use links::{AgentHandle, Link, TabHandle};
pub use outcomes::AckReply;
pub use outcomes::{Lookup, Withdrawal};
pub use restore::Restored;
