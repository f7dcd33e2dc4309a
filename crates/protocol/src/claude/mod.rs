//! The Claude Agent SDK's `AskUserQuestion` tool, answered through `can_use_tool`: the host
//! returns the tool's input with the person's answers added, keyed by question text.
//!
//! - [`questions`]: the tool's questions, validated as its schema does (1–4 questions, 2–4
//!   options each, question texts unique, labels unique within a question; `multiSelect`
//!   false when absent; keys the schema does not name are kept and passed back).
//! - [`answers`]: a tab's answers, checked as the tool admits a host's answer (a string each,
//!   or a list for a multi-select, of at most one entry more than its options), and the
//!   `updated_input` the host returns.
//! - `face`: `AskUserQuestion` behind the dialects' common face ([`ClaudeFace`]).

pub mod answers;
mod face;
pub mod questions;

pub use answers::{DECLINED_MESSAGE, TIMED_OUT_MESSAGE, check_answers};
pub use face::ClaudeFace;
pub use questions::{ClaudeQuestions, validate_questions};

/// Most questions in one call.
pub const MAX_QUESTIONS: usize = 4;
/// Fewest options a question offers.
pub const MIN_OPTIONS: usize = 2;
/// Most options a question offers.
pub const MAX_OPTIONS: usize = 4;
/// askgate's bound on a question, header, label, description or preview, in characters (the
/// tool sets none).
pub const MAX_TEXT_CHARS: usize = 10_000;
/// The tool's bound on one answer and on all answers with the free text together, in UTF-16
/// code units (JavaScript's string length), past which it refuses the host's answer.
pub const MAX_ANSWER_UNITS: usize = 32_768;
