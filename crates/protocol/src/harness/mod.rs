//! The pydantic-ai-harness 0.62 dialect: the `ask_user_question` tool.
//!
//! - [`limits`]: the harness's bounds (1–10 questions, 2–6 options, header ≤ 25 characters...).
//! - [`types`]: questions, options, answers and responses; [`HarnessQuestions`] is the proof
//!   that a question set passed validation.
//! - [`validate`]: the tool arguments judged exactly as pydantic-ai judges a model's call.
//! - `fast_path`: arguments judged on one pass over the JSON text ([`check_args_json`]); a
//!   valid call's strings stay borrowed, an invalid one's errors are listed there and then.
//! - `refusals`: what the fast path finds wrong, put in the full validator's order.
//! - `field_errors`: the errors both validators report, worded once.
//! - [`check`]: `check_response`, with the harness's order of checks and its exact messages.
//! - [`render`]: `ask_user_result` and what the model reads (`DECLINED`, `TIMED_OUT`, JSON).
//! - [`schema`]: the tool definition pydantic-ai sends the model.
//! - `face`: the harness behind the dialects' common face ([`HarnessFace`]).

pub mod check;
mod face;
mod fast_path;
mod field_errors;
pub mod limits;
mod refusals;
pub mod render;
mod rules;
pub mod schema;
pub mod types;
pub mod validate;

pub use check::{ResponseError, check_response};
pub use face::HarnessFace;
pub use fast_path::{
    CheckedArgs, check_args_at, check_args_json, check_args_json_fully, validate_args_json,
    validate_node,
};
pub use render::{DECLINED, ResultText, TIMED_OUT, ToolResult, ask_user_result};
pub use schema::{INSTRUCTIONS, TOOL_NAME, tool_definition};
pub use types::{
    AskUserAnswer, AskUserResponse, HarnessQuestions, Question, QuestionOption, ResponseRef,
};
pub use validate::{TopLevelExtras, validate_args, validate_questions};
