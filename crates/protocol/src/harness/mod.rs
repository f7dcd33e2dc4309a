//! The pydantic-ai-harness 0.62 dialect: the `ask_user_question` tool.
//!
//! - [`limits`]: the harness's bounds (1–10 questions, 2–6 options, header ≤ 25 characters...).
//! - [`types`]: questions, options, answers and responses; [`HarnessQuestions`] is the proof
//!   that a question set passed validation.
//! - [`validate`]: the tool arguments judged exactly as pydantic-ai judges a model's call.
//! - `field_errors`: the errors the validator reports, worded once.
//! - `rules`: a string field's bounds, pydantic's lax boolean, uniqueness by fold.
//! - [`check`]: `check_response`, with the harness's order of checks and its exact messages.
//! - [`render`]: `ask_user_result` and what the model reads (`DECLINED`, `TIMED_OUT`, JSON).
//! - [`schema`]: the tool definition pydantic-ai sends the model.
//! - `face`: the harness behind the dialects' common face ([`HarnessFace`]).

pub mod check;
mod face;
mod field_errors;
pub mod limits;
pub mod render;
mod rules;
pub mod schema;
pub mod types;
pub mod validate;

pub use check::{ResponseError, check_response};
pub use face::HarnessFace;
pub use render::{DECLINED, TIMED_OUT, ToolResult, ask_user_result};
pub use schema::{INSTRUCTIONS, TOOL_NAME, tool_definition};
pub use types::{AskUserAnswer, AskUserResponse, HarnessQuestions, Question, QuestionOption};
pub use validate::{TopLevelExtras, validate_args, validate_args_json, validate_questions};
