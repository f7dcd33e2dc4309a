//! The Claude Agent SDK's `AskUserQuestion` tool, answered through `can_use_tool`: the host
//! returns the tool's input with the person's answers added, keyed by question text.
//!
//! - [`questions`]: the tool's questions, validated as its schema does (1–4 questions, a
//!   header of at most 12 characters, 2–4 options each, texts and labels unique; keys the
//!   schema does not name are kept and passed back).
//! - [`answers`]: a tab's answers, checked, and the `updated_input` the host returns.
//! - `face`: `AskUserQuestion` behind the dialects' common face ([`ClaudeFace`]).

pub mod answers;
mod face;
pub mod questions;

pub use answers::{DECLINED_MESSAGE, TIMED_OUT_MESSAGE, check_answers};
pub use face::ClaudeFace;
pub use questions::{ClaudeQuestions, validate_questions};

/// Most questions in one call.
pub const MAX_QUESTIONS: usize = 4;
/// Longest header, in characters.
pub const MAX_HEADER_CHARS: usize = 12;
/// Fewest options a question offers.
pub const MIN_OPTIONS: usize = 2;
/// Most options a question offers.
pub const MAX_OPTIONS: usize = 4;
/// askgate's bound on a question, label, description, preview or typed answer, in
/// characters (the tool sets none).
pub const MAX_TEXT_CHARS: usize = 10_000;
