//! The gateway killed with SIGKILL at random moments under load, again and again: nothing it
//! announced is lost, and nothing resolves twice.
//!
//! Each round starts `askgate serve` on the same data directory, checks every claim the peers
//! recorded in earlier rounds (see `support/crash_load.rs`), then drives load and kills the
//! process once the round has seen 6–20 requests end. The default run makes 4 rounds; `ASKGATE_SOAK=1` (`bench/soak.sh`)
//! makes 20, and `ASKGATE_CRASH_ROUNDS` any number.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use support::TIMEOUT;
use support::crash_load::{Ledger, SERVER_FLAGS, load, verify};

fn rounds() -> usize {
    std::env::var("ASKGATE_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(support::soak_or(4, 20))
}

struct Gateway {
    child: Child,
    addr: String,
}

impl Drop for Gateway {
    /// A test that fails midway must not leave its gateway serving: a dropped `Child` is
    /// not killed.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(data_dir: &std::path::Path) -> Gateway {
    let mut child = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--store", "embedded"])
        .args(SERVER_FLAGS)
        .arg("--data-dir")
        .arg(data_dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("askgate serve starts");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("askgate listening on http://") {
                let _ = tx.send(addr.to_owned());
            }
        }
    });
    let addr = rx
        .recv_timeout(TIMEOUT)
        .expect("the gateway says where it listens");
    Gateway { child, addr }
}

fn gateway_kill(gateway: &Gateway) -> std::io::Result<()> {
    // `Child::kill` needs `&mut`; signal the pid directly instead (SIGKILL).
    Command::new("kill")
        .args(["-9", &gateway.child.id().to_string()])
        .status()
        .map(|_| ())
}

/// SIGKILLs under load, round after round; every claim checked after each restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_announced_is_lost_across_sigkill() {
    let data_dir = support::tempdir("crash");
    let mut ledger = Ledger::default();
    let mut rng = support::seeded_rng("nothing_announced_is_lost_across_sigkill");
    for round in 0..rounds() {
        let mut gateway = start(&data_dir);
        verify(&gateway.addr, &mut ledger).await;
        let addrs = [gateway.addr.clone()];
        load(&addrs, round, &mut ledger, &mut rng, || {
            let _ = gateway_kill(&gateway);
        })
        .await;
        let _ = gateway.child.wait();
    }
    let gateway = start(&data_dir);
    verify(&gateway.addr, &mut ledger).await;
    eprintln!(
        "{} rounds: {} requests accepted, {} resolutions announced, all intact",
        rounds(),
        ledger.accepted.len(),
        ledger.resolved.len()
    );
    assert!(
        ledger.resolved.len() > 10,
        "the load resolved too little to prove anything"
    );
    drop(gateway);
    support::remove_scratch(&data_dir);
}
