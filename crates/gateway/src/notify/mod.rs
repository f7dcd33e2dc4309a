//! Telling people about requests on channels they read, so a question reaches them without
//! a tab open.
//!
//! - [`settings`]: `--notify FILE`: people's addresses, groups, webhooks, mail.
pub mod settings;

pub use settings::{EventKind, NotifySettings};
