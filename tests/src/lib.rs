//! Shared helpers for askgate's integration tests.
//!
//! - [`server`]: a real gateway on port 0 for one test (its peers: `askgate_testkit`).
//! - [`gated_store`]: a store that holds commits, to act while the gateway waits on it.
//! - [`browser`]: headless Chromium through chromedriver, for the answer page.
//! - [`harness_gen`]: random harness `validate` lines biased to the rules' edges.
//! - [`deepagents_gen`]: the same for the deepagents dialect.
//! - [`oracle`]: the real Python packages as a subprocess, and the differential tests' seeds.

pub mod browser;
pub mod deepagents_gen;
pub mod form_gen;
pub mod gated_store;
pub mod harness_gen;
pub mod oracle;
pub mod server;
