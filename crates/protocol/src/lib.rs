//! # askgate-protocol
//!
//! The pure core of askgate: the types agents and browser tabs exchange, validation that
//! judges a question set exactly as the agent's framework would, and rendering of answers
//! into the exact text the model reads. No I/O and no async runtime: everything here is a
//! function of its input, so the gateway, the clients and the tests share one truth.
//!
//! # Layout
//! - `field_paths`: error paths into what agents and tabs send, and their text fields.
//! - [`error`]: [`FieldError`] (path, code, message) and
//!   [`ValidationErrors`].
//! - [`unicode`]: the character rules, frozen at Unicode 14.0 (CPython 3.11): printable,
//!   whitespace, the uniqueness fold, Python's `repr`.
//! - [`harness`]: the pydantic-ai-harness `ask_user_question` dialect: validation,
//!   `check_response`, `ask_user_result`, the tool schema.
//! - [`deepagents`]: the deepagents-code `ask_user` dialect: validation, the interrupt and
//!   resume payloads, `_parse_answers`, the `Q:`/`A:` transcript, the tool schema, and
//!   askgate's stricter check of answers from tabs.
//! - [`json`]: JSON with lone surrogates, as Python hosts can write it.
//! - [`approval`]: tool-call approvals (OpenAI Agents, LangChain, pydantic-ai, AG-UI): the
//!   calls, what each allows, the person's decisions, and edits checked against the tool's
//!   schema.
//! - [`claude`]: the Claude Agent SDK's `AskUserQuestion`, answered with the tool's input and
//!   the person's answers keyed by question text.
//! - [`form`]: MCP elicitation: a form from a flat JSON Schema, or a URL to open, answered
//!   with MCP's `ElicitResult`.
//! - [`ids`]: session, request and tab ids, checked where they enter.
//! - [`dialect`]: the face every dialect shows, the registry of dialects, and a validated
//!   request of any of them.
//! - [`wire`]: the frames agents and tabs exchange with the gateway.
//! - [`people`]: who a tab is, and the names an ask lets answer.
//! - [`close`]: WebSocket close codes and whether to reconnect after each.
//! - [`reply`]: the codes a refused call gets back, whether to retry, and each one's HTTP
//!   status.

pub mod approval;
pub mod claude;
pub mod close;
pub mod deepagents;
pub mod dialect;
pub mod error;
mod field_paths;
pub mod form;
pub mod harness;
pub mod ids;
pub mod json;
pub mod people;
pub mod reply;
pub mod unicode;
pub mod wire;

pub use dialect::{Dialect, Outcome, QuestionSet, Settlement};
pub use error::{ErrorCode, FieldError, ValidationErrors};
pub use ids::{RequestId, SessionId, TabId};
pub use reply::ReplyCode;
