//! JSON that serde_json cannot read.
//!
//! - [`lenient`]: reading JSON that carries lone surrogates, as Python hosts can write.

pub mod lenient;
