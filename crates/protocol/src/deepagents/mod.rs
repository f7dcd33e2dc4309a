//! The deepagents-code 0.2.2 dialect: the `ask_user` tool, paused with a LangGraph interrupt
//! and resumed with the user's answers.
//!
//! # Contents
//! - [`limits`]: askgate's named bounds ([`Bounds::Gateway`]) on what deepagents leaves
//!   unbounded, and when they apply.
//! - [`types`]: questions and choices; [`DeepagentsQuestions`] is the proof that a question
//!   set passed validation, and builds the interrupt payload.
//! - [`validate`]: the tool arguments judged exactly as deepagents judges a model's call.
//! - [`rejection`]: why a request was refused, as deepagents' `ToolNode` message and as
//!   askgate's path-and-code errors.
//! - [`pyrepr`]: Python's `repr`/`str`, which deepagents shows the model.
//! - [`multi_select`]: the JSON-array-in-a-string answer, and deepagents' emptiness rule.
//! - [`transcript`]: the `Q:`/`A:` transcript and its display re-render.
//! - [`resume`]: `_parse_answers`, the tool's reading of any resume value.
//! - [`answer`]: askgate's own, stricter check of answers from browser tabs.
//! - [`settle`]: the resume payload and transcript an agent receives for each outcome.
//! - [`render`]: the rendering helpers on raw JSON, for `askgate validate`.
//! - [`schema`]: the tool definition, argument and interrupt schemas, system prompt.
//! - `face`: deepagents behind the dialects' common face ([`DeepagentsFace`]).
//!
//! # Decisions
//! - **Bounds.** deepagents limits nothing; the gateway accepts at most [`MAX_QUESTIONS`]
//!   questions, [`MAX_CHOICES`] choices per question and [`MAX_TEXT_CHARS`] characters per
//!   question or choice ([`Bounds::Gateway`]). `askgate validate` judges with
//!   [`Bounds::Framework`]: the real package's verdict and nothing more.
//! - **Tab answers** are `{"answers": [...]}`, one per question; a `multi_select` answer may
//!   be the encoded string or a list of strings, and always leaves askgate encoded exactly as
//!   the TUI encodes it (`json.dumps(values, ensure_ascii=False)`).
//! - **Forged blocks are refused** ([`answer`]): an answer with a line starting `Q:` (after
//!   its first line) would read to the model as another question, so askgate rejects it with
//!   a message and the request stays open, rather than silently rewriting the user's words.
//!   Answers that read as deepagents' own placeholders (`(cancelled)`...) are refused too.
//! - **Timeouts** ([`settle`]): deepagents has none; a timed-out request settles as an
//!   error resume, `{"status": "error", "error": "the user did not answer in time", ...}`,
//!   which the tool turns into `(error: the user did not answer in time)` answers with status
//!   `error`, and the run goes on.

pub mod answer;
mod face;
pub mod limits;
pub mod multi_select;
pub mod pyrepr;
pub mod rejection;
pub mod render;
pub mod resume;
pub mod schema;
pub mod settle;
pub mod transcript;
pub mod types;
pub mod validate;

pub use answer::check_tab_answer;
pub use face::DeepagentsFace;
pub use limits::{Bounds, MAX_CHOICES, MAX_QUESTIONS, MAX_TEXT_CHARS};
pub use rejection::{Loc, Problem, RequestError, RequestErrors};
pub use render::RenderOp;
pub use resume::{Identity, Receipt, ToolMessage, ToolStatus, parse_resume};
pub use schema::{SYSTEM_PROMPT, TOOL_DESCRIPTION, tool_definition};
pub use settle::TIMED_OUT_DETAIL;
pub use types::{Choice, DeepagentsQuestions, Question, QuestionType, TOOL_NAME};
pub use validate::{validate_args, validate_questions};
