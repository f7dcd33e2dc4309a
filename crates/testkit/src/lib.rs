//! What askgate's two integration-test binaries share: the gateway's own
//! (`crates/gateway/tests/gateway`, gateways started as processes) and the cross-crate one
//! (`tests/tests/integration`, a gateway in the test's process). It knows nothing of the
//! gateway's types, only its wire, so both can depend on it.
//!
//! - [`ws`]: one WebSocket peer, an agent or a tab, every receive bounded by [`TIMEOUT`].
//! - [`frames`]: the `ask` and `answer` frames most tests send.
//! - [`frame_schema`]: the WebSocket frames' JSON Schemas in `docs/`, held against every frame
//!   a [`ws`] peer exchanges.
//! - [`http`]: one HTTP exchange through reqwest, or written by hand for tests about its bytes.
//! - [`openapi`]: each response checked against `docs/openapi.json`, the HTTP API's description.
//! - [`oracle_process`]: a Python program of the tests' own, reporting what it saw a line at
//!   a time.
//! - [`smtp`]: an SMTP server of the test's own (aiosmtpd), reporting each message it takes.
//! - [`webhooks`]: a webhook receiver checking every signature with `standardwebhooks`.
//! - [`soak`], [`soak_or`]: whether the soak-length forms run (`bench/soak.sh`).

pub mod frame_schema;
pub mod frames;
pub mod http;
pub mod openapi;
pub mod oracle_process;
pub mod slack;
pub mod smtp;
pub mod webhooks;
pub mod ws;

use std::time::Duration;

/// How long anything a test waits for may take before the test fails: generous, because the
/// tests share two cores with their builds and each other.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// Whether the soak-length forms run: `ASKGATE_SOAK=1` (what `bench/soak.sh` sets). The
/// default run takes the short form of each: a few crash rounds, fewer sockets, fewer lines
/// for the differential tests.
pub fn soak() -> bool {
    std::env::var_os("ASKGATE_SOAK").is_some_and(|value| !value.is_empty() && value != "0")
}

/// `short` in the default run, `long` under [`soak`].
pub fn soak_or<T>(short: T, long: T) -> T {
    if soak() { long } else { short }
}
