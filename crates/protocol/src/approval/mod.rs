//! Tool-call approvals: an agent is about to run tools, and a person approves each call,
//! edits its arguments, rejects it (with a reason, perhaps) or responds in its place.
//!
//! OpenAI Agents' `needs_approval`, LangChain's `HumanInTheLoopMiddleware`, pydantic-ai's
//! deferred approvals and AG-UI's `tool_call` interrupts all pause a run on this; the Python
//! adapters turn the [`Decision`]s askgate returns into each framework's own objects.
//!
//! - [`calls`]: an ask's `calls`, validated ([`Call`]), and what each allows.
//! - [`schema`]: the part of JSON Schema tool argument schemas use, for checking edits.
//! - [`decisions`]: a tab's decisions, checked, and what the agent receives.
//! - `face`: approvals behind the dialects' common face ([`ApprovalFace`]).
//! - [`quorum`]: approvals that need several people: votes and their tally.
//! - [`rules`]: remembered approvals: what an approval asks to remember, and which calls a
//!   rule covers.
//!
//! # Decisions
//! - A decline of the whole request, and a timeout, reach the agent as every call rejected,
//!   with [`DECLINED_MESSAGE`] or [`TIMED_OUT_MESSAGE`], so an adapter needs one mapping.
//! - The agent's original arguments are not judged against its own schema: the model wrote
//!   them, and the person decides on what it wrote. Only edits are checked.

pub mod calls;
pub mod decisions;
mod face;
pub mod quorum;
pub mod rules;
pub mod schema;

pub use calls::{Call, DecisionKind, EditCheck, validate_calls};
pub use decisions::{DECLINED_MESSAGE, Decision, TIMED_OUT_MESSAGE, check_decisions};
pub use face::{ApprovalCalls, ApprovalFace};
pub use quorum::{CallTally, Quorum, Vote};

/// Most calls in one request.
pub const MAX_CALLS: usize = 20;
/// Longest tool name, in characters.
pub const MAX_NAME_CHARS: usize = 256;
/// Longest tool description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 10_000;
/// Longest reject or respond message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 10_000;
