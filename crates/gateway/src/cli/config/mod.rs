//! One config file for `askgate serve` (`--config FILE`, `ASKGATE_CONFIG`), and the `config`
//! command that checks one or writes an example.
//!
//! - [`command`]: `askgate config check FILE` and `askgate config example`.
//! - [`example`]: the example file, written from `serve`'s own flag definitions.
//! - [`file`](mod@file): a file's text read against the settings, each value judged by its flag's parser.
//! - [`keys`]: where each `serve` flag sits in the file (key, section, type), from clap.
//! - [`merge`]: the file's settings under the command line and the environment.

mod command;
mod example;
mod file;
mod keys;
mod merge;
#[cfg(test)]
mod tests;

pub use command::ConfigCommand;
pub(in crate::cli) use command::run;
pub use merge::{FromFile, Invalid};
pub(in crate::cli) use merge::{Refused, parse};
