//! A webhook receiver of the test's own: `tests/oracle/webhook_receiver.py`, which checks
//! every signature with the `standardwebhooks` package from PyPI (not askgate's code), in
//! `.venv/notify` (`scripts/setup-test-env.sh`).

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use serde_json::Value;

use super::TIMEOUT;

/// A running receiver, killed when dropped.
pub struct Receiver {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// The port it listens on.
    pub port: u16,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

impl Receiver {
    /// A receiver verifying with `secrets`, on a free port or `port`, answering 500 to its
    /// first `fail_first` requests.
    pub fn start(secrets: &[&str], port: Option<u16>, fail_first: u32) -> Receiver {
        let root = repo_root();
        let python = root.join(".venv/notify/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run scripts/setup-test-env.sh",
            python.display()
        );
        let mut child = Command::new(python)
            .arg(root.join("tests/oracle/webhook_receiver.py"))
            .args(secrets)
            .args(["--fail-first", &fail_first.to_string()])
            .args(
                port.map(|p| ["--port".to_owned(), p.to_string()])
                    .into_iter()
                    .flatten(),
            )
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the webhook receiver starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let first = lines
            .recv_timeout(TIMEOUT)
            .expect("the receiver says where it listens");
        let port = first
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the receiver said {first:?}"));
        Receiver { child, lines, port }
    }

    /// `http://127.0.0.1:PORT/hook`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }

    /// The next request it got (waiting up to `within`): its id, the status it answered,
    /// which secrets verified it, its signature header and body (parsed).
    pub fn next(&self, within: std::time::Duration) -> Value {
        let line = self
            .lines
            .recv_timeout(within)
            .unwrap_or_else(|_| panic!("no webhook arrived within {within:?}"));
        let mut got: Value = serde_json::from_str(&line).expect("a JSON line");
        let body: Value =
            serde_json::from_str(got["body"].as_str().expect("a body")).expect("the body is JSON");
        got["body"] = body;
        got
    }
}
