//! # askgate
//!
//! The gateway between AI agents that ask people structured questions and the people who
//! answer them in a browser. This crate holds the `askgate` command line and, as it grows,
//! the server around the pure [`askgate_protocol`] core.
//!
//! # Layout
//! - [`cli`]: the `askgate` command line: `validate` and `schema`.

pub mod cli;
