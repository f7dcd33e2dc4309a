//! One face for every dialect: what the gateway, `askgate validate`, the page and the tests
//! know of the frameworks askgate answers for.
//!
//! A dialect is a folder of its own behind [`DialectFace`] (validate a request into its
//! normalised form, check a tab's answer against it, settle an outcome into what the
//! framework expects, the tool schema) and one line in [`registry`]. Nothing outside a
//! dialect's folder names it: the gateway stores a [`QuestionSet`], checks an answer with
//! [`QuestionSet::settle_answer`] and hands the agent the [`Settlement`] it produces.
//!
//! - [`face`]: the two traits, [`DialectFace`] (a dialect) and [`Validated`] (a request it
//!   accepted).
//! - [`registry`]: every dialect, and [`Dialect`], a handle on one of them by name.
//! - [`request`]: which fields of an ask hold a dialect's request, and how the view shows
//!   them.
//! - [`question_set`]: [`QuestionSet`], a validated request of any dialect.
//! - [`outcome`]: how a request ends ([`Outcome`]) and what the agent receives
//!   ([`Settlement`]).

pub mod face;
pub mod outcome;
pub mod question_set;
pub mod registry;
pub mod request;

pub use face::{DialectFace, Validated};
pub use outcome::{Outcome, Settlement};
pub use question_set::QuestionSet;
pub use registry::Dialect;
