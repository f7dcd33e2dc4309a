//! A webhook receiver of the test's own: `tests/oracle/webhook_receiver.py`, which checks
//! every signature with the `standardwebhooks` package from PyPI (not askgate's code).

use std::time::Duration;

use serde_json::Value;

use crate::oracle_process::OracleProcess;

/// A running receiver, killed when dropped.
pub struct WebhookReceiver {
    process: OracleProcess,
    /// The port it listens on.
    pub port: u16,
}

impl WebhookReceiver {
    /// A receiver verifying with `secrets`, on a free port or `port`, answering 500 to its
    /// first `fail_first` requests.
    pub async fn start(secrets: &[&str], port: Option<u16>, fail_first: u32) -> WebhookReceiver {
        let fail_first = fail_first.to_string();
        let port_text = port.map(|p| p.to_string());
        let mut args: Vec<&str> = secrets.to_vec();
        args.extend(["--fail-first", &fail_first]);
        if let Some(port) = &port_text {
            args.extend(["--port", port]);
        }
        let process = OracleProcess::start("webhook_receiver.py", &args).await;
        WebhookReceiver {
            port: process.port,
            process,
        }
    }

    /// `http://127.0.0.1:PORT/hook`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }

    /// The next request it got (waiting up to `within`): its `id`, the `status` it answered,
    /// which secrets `verified` it, its `signature` header and `body` (parsed).
    pub async fn next(&mut self, within: Duration) -> Value {
        let line = self.process.line(within).await;
        let mut got: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?} is not JSON: {e}"));
        let body: Value =
            serde_json::from_str(got["body"].as_str().expect("a body")).expect("the body is JSON");
        got["body"] = body;
        got
    }
}
