//! An SMTP server of the test's own: `tests/oracle/smtp_sink.py` (aiosmtpd, and Python's
//! `email` package reading each message), in `.venv/notify` (`scripts/setup-test-env.sh`), on
//! a free port of 127.0.0.1. The gateway's mail is read by code that is not askgate's.

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use crate::TIMEOUT;

/// A running sink, killed when dropped.
pub struct SmtpSink {
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    /// The port it listens on.
    pub port: u16,
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

impl SmtpSink {
    /// A sink that defers (451) the first `refuse_first` messages and takes the rest.
    pub async fn start(refuse_first: u32) -> SmtpSink {
        Self::start_with(&["--refuse-first", &refuse_first.to_string()]).await
    }

    /// A sink that offers STARTTLS with the PEM certificate `cert` and key `key`, and takes
    /// mail only over it.
    pub async fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> SmtpSink {
        let (cert, key) = (cert.display().to_string(), key.display().to_string());
        Self::start_with(&["--starttls", &cert, &key]).await
    }

    async fn start_with(args: &[&str]) -> SmtpSink {
        let root = repo_root();
        let python = root.join(".venv/notify/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run scripts/setup-test-env.sh",
            python.display()
        );
        let mut child = Command::new(python)
            .arg(root.join("tests/oracle/smtp_sink.py"))
            .args(args)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the SMTP sink starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut sink = SmtpSink {
            child,
            lines,
            port: 0,
        };
        let first = sink.line(TIMEOUT).await;
        sink.port = first
            .strip_prefix("listening ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("the SMTP sink said {first:?}"));
        sink
    }

    /// `smtp://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    async fn line(&mut self, within: Duration) -> String {
        match tokio::time::timeout(within, self.lines.recv()).await {
            Ok(Some(line)) => line,
            Ok(None) => panic!("the SMTP sink stopped"),
            Err(_) => panic!("the SMTP sink said nothing within {within:?}"),
        }
    }

    /// The next thing the sink reports (waiting up to `within`): a message it took (`from`,
    /// `to`, `data`, `parsed`), or `{"refused": N}` for one it deferred.
    pub async fn next(&mut self, within: Duration) -> Value {
        let line = self.line(within).await;
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?} is not JSON: {e}"))
    }

    /// The next message the sink took, past any it deferred.
    pub async fn next_message(&mut self, within: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let got = self.next(left).await;
            if got.get("refused").is_none() {
                return got;
            }
        }
    }
}

/// The body of the part of `message` (as [`SmtpSink::next`] gives it) of MIME type
/// `content_type`.
pub fn part<'m>(message: &'m Value, content_type: &str) -> &'m str {
    message["parsed"]["parts"]
        .as_array()
        .and_then(|parts| {
            parts
                .iter()
                .find(|part| part["type"] == content_type)
                .and_then(|part| part["body"].as_str())
        })
        .unwrap_or_else(|| panic!("no {content_type} part in {message}"))
}

/// Every `href="..."` of an HTML text, `&amp;` read back.
pub fn hrefs(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|href| href.replace("&amp;", "&"))
        .collect()
}
