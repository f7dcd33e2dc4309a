//! What the process-level tests share: Redis servers of their own, a TCP proxy a test can cut,
//! `askgate serve` processes and their peers (`askgate_testkit`, every receive with a
//! timeout), the switch between a soak test's short and long forms, and seeded random numbers.
#![allow(dead_code, unreachable_pub)]

/// A browser's Web Push subscription keys.
pub mod browser_keys;
/// `askgate` commands run to their end, and `serve` expected to stop before it listens.
pub mod cli;
/// The crash tests' load and the ledger of what their peers saw.
pub mod crash_load;
/// `askgate serve` processes and their agents, tabs and HTTP calls.
pub mod nodes;
/// Store changes for the tests that drive a store directly.
pub mod ops;
/// A TCP proxy in front of Redis that a test can cut, slow or make deaf.
pub mod proxy;
/// A `redis-server` of the test's own.
pub mod redis;

use rand::SeedableRng as _;
use rand::rngs::StdRng;

/// How long anything a test waits for may take (the peers' bound too).
pub use askgate_testkit::TIMEOUT;

/// A fresh temporary directory named after `name`.
pub fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "askgate-{name}-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// Removes a scratch directory made by [`tempdir`] once its owner is done, unless the test is
/// failing: then it stays, with the logs a failure points to.
pub fn remove_scratch(dir: &std::path::Path) {
    if !std::thread::panicking() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The audit key file every Redis node of these tests is given (a Redis store needs one, the
/// same on every node): a fixed key, written once per test process.
pub fn test_audit_key_file() -> std::path::PathBuf {
    static WRITTEN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    WRITTEN
        .get_or_init(|| {
            let path = std::env::temp_dir().join(format!(
                "askgate-test-audit-key-{}-{}",
                std::process::id(),
                rand::random::<u32>()
            ));
            std::fs::write(&path, format!("{}\n", "5a".repeat(32))).expect("a key file");
            path
        })
        .clone()
}

/// A loopback port nothing listens on right now (the caller binds it soon after; a clash is
/// retried by whoever starts the server).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port")
}

pub use askgate_testkit::soak_or;

/// The random numbers of a randomized test: seeded from `ASKGATE_TEST_SEED` when it is set,
/// from a fresh seed otherwise; the seed is printed (shown with a failure) so that a failing
/// run's choices can be made again. Crash rounds also depend on how the processes are
/// scheduled, so a seed repeats the choices, not every interleaving.
pub fn seeded_rng(test: &str) -> StdRng {
    let seed = match std::env::var("ASKGATE_TEST_SEED") {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("ASKGATE_TEST_SEED={text:?}: expected a number")),
        Err(_) => rand::random(),
    };
    eprintln!("{test}: seed {seed} (ASKGATE_TEST_SEED={seed} makes the same choices)");
    StdRng::seed_from_u64(seed)
}
