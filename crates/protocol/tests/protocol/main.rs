//! The protocol crate's integration tests, in one test binary: the rules of each dialect with
//! the paths their errors name, and properties that hold for every input.
//!
//! The property tests are proptest's: a failing case is saved beside its module's source
//! (`<module>.proptest-regressions`, run again first on every run), and proptest's own
//! variables reproduce or widen a run: `PROPTEST_RNG_SEED` for a fixed seed, `PROPTEST_CASES`
//! for another number of cases.

mod support;

/// The approval dialect's properties.
mod approval_properties;
/// The approval dialect's rules and error paths.
mod approval_rules;
/// The claude dialect's rules, error paths and `updated_input`.
mod claude_rules;
/// The deepagents dialect's bounds, answers and outcomes.
mod deepagents_answers;
/// The deepagents dialect's properties and tool schema.
mod deepagents_properties;
/// What holds for every registered dialect.
mod every_dialect;
/// The form dialect's rules and error paths.
mod form_rules;
/// The harness dialect's properties.
mod properties;
/// The frozen Unicode tables against CPython 3.11's.
mod unicode_tables;
