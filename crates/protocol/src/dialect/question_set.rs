//! [`QuestionSet`]: a request of any dialect that passed its validation.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::{Dialect, Outcome, Settlement, Validated};
use crate::error::ValidationErrors;

/// A request that passed its dialect's validation: questions, or tool calls to approve.
#[derive(Clone)]
pub struct QuestionSet {
    dialect: Dialect,
    validated: Arc<dyn Validated>,
}

impl QuestionSet {
    /// Validates an ask's request (the dialect's [`fields`](super::DialectFace::fields));
    /// error paths start with that field's name.
    ///
    /// # Errors
    /// Every problem found.
    pub fn validate(dialect: Dialect, request: &Value) -> Result<Self, ValidationErrors> {
        let validated = dialect.face().validate(request)?;
        Ok(QuestionSet { dialect, validated })
    }

    /// Reads back a request a store kept, as [`DialectFace::read_back`](super::DialectFace::read_back)
    /// says: what an older askgate accepted is accepted.
    ///
    /// # Errors
    /// Every problem found.
    pub fn read_back(dialect: Dialect, request: &Value) -> Result<Self, ValidationErrors> {
        let validated = dialect.face().read_back(request)?;
        Ok(QuestionSet { dialect, validated })
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The normalised request, as tabs receive it.
    pub fn to_json(&self) -> Value {
        self.validated.to_json()
    }

    /// The dialect's own type of validated request, when it is `T`.
    pub fn downcast<T: 'static>(&self) -> Option<&T> {
        self.validated.as_any().downcast_ref()
    }

    /// An approval request's calls (none for the other dialects).
    pub fn approval_calls(&self) -> &[crate::approval::Call] {
        self.downcast::<crate::approval::ApprovalCalls>()
            .map_or(&[], |calls| calls.0.as_slice())
    }

    /// Checks a tab's `answer` against the request and builds what the agent receives.
    ///
    /// # Errors
    /// Why the answer does not fit (the dialect's own message, with a path); the request
    /// stays open.
    pub fn settle_answer(&self, response: &Value) -> Result<Settlement, ValidationErrors> {
        self.validated.settle_answer(response)
    }

    /// Checks an ask's `default` against the request and builds what the agent receives if
    /// the deadline passes with no answer (see [`Validated::settle_default`]).
    ///
    /// # Errors
    /// Why the default does not fit, each at its path under `default`.
    pub fn settle_default(&self, default: &Value) -> Result<Settlement, ValidationErrors> {
        self.validated.settle_default(default).map_err(|errors| {
            let moved = errors
                .into_vec()
                .into_iter()
                .map(|mut error| {
                    error.path = match error.path.strip_prefix("response") {
                        Some(rest) => format!("default{rest}"),
                        None => format!("default.{}", error.path)
                            .trim_end_matches('.')
                            .to_owned(),
                    };
                    error
                })
                .collect();
            ValidationErrors::from_vec(moved).expect("a refusal has at least one error")
        })
    }

    /// The settlement of a request that ended without an answer.
    pub fn settle_without_answer(&self, outcome: Outcome) -> Settlement {
        match outcome {
            Outcome::Answered => Settlement {
                outcome,
                ..Settlement::withdrawn()
            },
            _ => self.validated.settle_unanswered(outcome),
        }
    }

    /// The settlement of a request the person dismissed: a decline, in the dialect's words
    /// for "not now" where it has them.
    pub fn settle_dismissed(&self) -> Settlement {
        self.validated.settle_dismissed()
    }
}

/// Two sets are the same request when their dialects and normalised forms are.
impl PartialEq for QuestionSet {
    fn eq(&self, other: &Self) -> bool {
        self.dialect == other.dialect && self.to_json() == other.to_json()
    }
}

impl Eq for QuestionSet {}

impl fmt::Debug for QuestionSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuestionSet")
            .field("dialect", &self.dialect)
            .field("request", &self.validated)
            .finish()
    }
}
