//! Operators known by name: the people `--operators` and the notify file's `operators` list,
//! whom a trusted proxy's identity header admits to the operator endpoints as an operator key
//! would; and who an HTTP call acts as while it is handled, so that what it changes (a
//! withdrawal, a revoked rule) is audited as that person's doing rather than only as an
//! operator's.
//!
//! The person travels with the call in a task-local, set by the transport around the handler
//! (a call is handled within one task, the store's commit awaited in it), read where the
//! ending or the revocation is made: the endpoints' signatures stay those of the operator key.

use std::collections::HashSet;
use std::future::Future;

use super::Hub;

tokio::task_local! {
    /// The person a trusted proxy named for the call being handled.
    static ACTING: Acting;
}

/// Who a call comes from, as the identity header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acting {
    /// The person the trusted proxy named.
    pub person: String,
    /// Whether they are an operator.
    pub operator: bool,
}

/// Runs `call` as `acting`: [`acting`] and [`acting_operator`] say who, within it.
pub async fn acting_as<F: Future>(acting: Acting, call: F) -> F::Output {
    ACTING.scope(acting, call).await
}

/// Who the call being handled comes from, if a trusted proxy named them.
pub fn acting() -> Option<Acting> {
    ACTING.try_with(Clone::clone).ok()
}

/// The person the call being handled comes from, for an operator's act: the one a trusted
/// proxy named, whether admitted by the operator lists or by the operator key they presented
/// (the audit names who did it either way).
pub(crate) fn acting_operator() -> Option<String> {
    acting().map(|a| a.person)
}

impl Hub {
    /// Names the operators `--operators` lists (once, at start; the notify file's come with
    /// the notifier).
    pub fn set_operators(&self, people: Vec<String>) {
        let _ = self.operators.set(people.into_iter().collect());
    }

    /// Whether `person` is an operator: listed by `--operators` or in the notify file's
    /// `operators`.
    pub fn is_operator(&self, person: &str) -> bool {
        self.operators
            .get()
            .is_some_and(|listed: &HashSet<String>| listed.contains(person))
            || self
                .notifier
                .as_ref()
                .is_some_and(|notifier| notifier.operators().iter().any(|p| p == person))
    }
}
