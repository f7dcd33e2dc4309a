//! A Python program of the tests' own (`tests/oracle/`), run in `.venv/notify`
//! (`scripts/setup-test-env.sh`): it prints `listening PORT` first, then one line per thing it
//! saw. The SMTP sink and the webhook receiver are two.

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::TIMEOUT;

/// A running program, killed when dropped.
pub struct OracleProcess {
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    /// The port it listens on.
    pub port: u16,
    /// Its file name, for messages.
    name: &'static str,
}

impl Drop for OracleProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

impl OracleProcess {
    /// `tests/oracle/{script}` with `args`, once it says where it listens.
    pub async fn start(script: &'static str, args: &[&str]) -> OracleProcess {
        let root = repo_root();
        let python = root.join(".venv/notify/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run scripts/setup-test-env.sh",
            python.display()
        );
        let mut child = Command::new(python)
            .arg(root.join("tests/oracle").join(script))
            .args(args)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{script} does not start: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut process = OracleProcess {
            child,
            lines,
            port: 0,
            name: script,
        };
        let first = process.line(TIMEOUT).await;
        process.port = first
            .strip_prefix("listening ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("{script} said {first:?}"));
        process
    }

    /// Its next line, waiting up to `within`.
    pub async fn line(&mut self, within: Duration) -> String {
        match tokio::time::timeout(within, self.lines.recv()).await {
            Ok(Some(line)) => line,
            Ok(None) => panic!("{} stopped", self.name),
            Err(_) => panic!("{} said nothing within {within:?}", self.name),
        }
    }
}
