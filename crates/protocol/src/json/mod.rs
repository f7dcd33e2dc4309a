//! JSON read and written by hand, for the paths where building a `serde_json::Value` costs
//! too much, and for what serde_json cannot read.
//!
//! - [`scan`]: a strict reader over borrowed text that reads what serde_json reads, or gives up.
//! - [`node`]: a borrowed tree built by [`scan`], for validating without allocating.
//! - [`write`](mod@write): escaping and writing strings and lists exactly as serde_json does.
//! - [`lenient`]: reading JSON that carries lone surrogates, as Python hosts can write.
//! - [`mutate`]: damaging JSON text, for the tests that hold these readers to serde_json's
//!   verdicts.

pub mod lenient;
pub mod mutate;
pub mod node;
pub mod scan;
pub mod write;
