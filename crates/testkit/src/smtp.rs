//! An SMTP server of the test's own: `tests/oracle/smtp_sink.py` (aiosmtpd, and Python's
//! `email` package reading each message), in `.venv/notify` (`scripts/setup-test-env.sh`), on
//! a free port of 127.0.0.1. The gateway's mail is read by code that is not askgate's.

use std::time::Duration;

use serde_json::Value;

use crate::oracle_process::OracleProcess;

/// A running sink, killed when dropped.
pub struct SmtpSink {
    process: OracleProcess,
    /// The port it listens on.
    pub port: u16,
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
        let process = OracleProcess::start("smtp_sink.py", args).await;
        SmtpSink {
            port: process.port,
            process,
        }
    }

    /// `smtp://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// The next thing the sink reports (waiting up to `within`): a message it took (`from`,
    /// `to`, `data`, `parsed`), or `{"refused": N}` for one it deferred.
    pub async fn next(&mut self, within: Duration) -> Value {
        let line = self.process.line(within).await;
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
