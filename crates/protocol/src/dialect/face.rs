//! The traits every dialect implements.

use std::any::Any;
use std::fmt::Debug;
use std::sync::Arc;

use serde_json::Value;

use super::{Outcome, Settlement};
use crate::error::ValidationErrors;

/// A dialect: how one framework asks, and what it takes back.
pub trait DialectFace: Debug + Send + Sync + 'static {
    /// The wire name, as an ask's `dialect` carries it.
    fn name(&self) -> &'static str;

    /// The ask's fields that hold the dialect's request (and the request view's fields that
    /// show it to tabs): `questions` for the question dialects, `calls` for approvals, a
    /// form's `message`, `schema`... (see [`request`](super::request)).
    fn fields(&self) -> &'static [&'static str] {
        &["questions"]
    }

    /// Validates the request gathered from [`fields`](Self::fields) (one field's value, or an
    /// object of several), with askgate's bounds; error paths start with a field's name.
    ///
    /// # Errors
    /// Every problem found, each with its path.
    fn validate(&self, request: &Value) -> Result<Arc<dyn Validated>, ValidationErrors>;

    /// Reads back a request a store kept (normalised by this askgate or an older one): as
    /// [`validate`](Self::validate), but what the ask-time policy has refused only since
    /// (a rule that protects the person asked, not the gateway) is accepted, so an upgrade
    /// never strands a request its agent waits on. What the dialect works out itself (a
    /// form's `host`) is worked out again.
    ///
    /// # Errors
    /// Every problem found, each with its path.
    fn read_back(&self, request: &Value) -> Result<Arc<dyn Validated>, ValidationErrors> {
        self.validate(request)
    }

    /// The tool definition the framework sends the model, or `None` when the dialect is not a
    /// tool the model calls (approvals judge other tools' calls).
    fn tool_definition(&self) -> Option<Value>;

    /// For a dialect that is not a tool the model calls but a request made by other means (a
    /// form: an MCP server's elicitation), the JSON Schema of its request, the ask's
    /// [`fields`](Self::fields) as [`validate`](Self::validate) reads them; `None` for the
    /// others.
    fn request_schema(&self) -> Option<Value> {
        None
    }
}

/// A request one dialect accepted, in its normalised form.
pub trait Validated: Debug + Send + Sync + 'static {
    /// The normalised request, as tabs receive it in the dialect's
    /// [`fields`](DialectFace::fields).
    fn to_json(&self) -> Value;

    /// Checks a tab's `answer` against the request and builds what the agent receives.
    ///
    /// # Errors
    /// Why the answer does not fit, with paths starting `response`; the request stays open.
    fn settle_answer(&self, response: &Value) -> Result<Settlement, ValidationErrors>;

    /// What the agent receives when the request ends with nobody's answer: `Declined`,
    /// `TimedOut` or `Withdrawn` (most dialects hand back nothing for a withdrawal:
    /// [`Settlement::withdrawn`]).
    fn settle_unanswered(&self, outcome: Outcome) -> Settlement;

    /// What the agent receives when the person put the request aside without refusing it (a
    /// decline with `dismiss`). A dialect whose framework has no such ending settles it as a
    /// decline.
    fn settle_dismissed(&self) -> Settlement {
        self.settle_unanswered(Outcome::Declined)
    }

    /// Checks an ask's `default` (the answer given should the deadline pass with none) and
    /// builds what the agent then receives. A default is what a tab would answer, so most
    /// dialects settle it as an answer; one whose tabs also end the request otherwise (a
    /// form's decline) reads that from the default too.
    ///
    /// # Errors
    /// Why the default does not fit, with paths starting `response` (the caller says where
    /// the default was).
    fn settle_default(&self, default: &Value) -> Result<Settlement, ValidationErrors> {
        self.settle_answer(default)
    }

    /// The concrete type, for tests and tools that know which dialect they hold.
    fn as_any(&self) -> &dyn Any;
}
