//! What the process-level tests share: Redis servers of their own, a TCP proxy a test can cut,
//! `askgate serve` processes, and WebSocket peers whose every receive has a timeout.
#![allow(dead_code, unreachable_pub)]

pub mod cli;
pub mod crash_load;
pub mod nodes;
pub mod ops;
pub mod peer;
pub mod proxy;
pub mod redis;

use std::time::Duration;

/// How long anything a test waits for may take.
pub const TIMEOUT: Duration = Duration::from_secs(20);

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
