//! A stand-in for Slack's Web API (`tests/oracle/slack_api.py`): Slack itself cannot be
//! reached from the tests, so this answers as its published contract says and prints every
//! call it took.

use std::time::Duration;

use serde_json::Value;

use crate::oracle_process::OracleProcess;

/// The running stand-in, killed when dropped.
pub struct SlackApi {
    process: OracleProcess,
    /// The port it listens on.
    pub port: u16,
}

impl SlackApi {
    /// A stand-in taking `token`, answering 429 (`Retry-After: retry_after_s`) to its first
    /// `rate_limit_first` posts.
    pub async fn start(token: &str, rate_limit_first: u32, retry_after_s: u32) -> SlackApi {
        let (limit, after) = (rate_limit_first.to_string(), retry_after_s.to_string());
        let args = [token, "--rate-limit-first", &limit, "--retry-after", &after];
        let process = OracleProcess::start("slack_api.py", &args).await;
        SlackApi {
            port: process.port,
            process,
        }
    }

    /// A stand-in taking `token` on `port`, answering every call.
    pub async fn start_on(token: &str, port: u16) -> SlackApi {
        let port = port.to_string();
        let process = OracleProcess::start("slack_api.py", &[token, "--port", &port]).await;
        SlackApi {
            port: process.port,
            process,
        }
    }

    /// `http://127.0.0.1:PORT/api/`, for the notify file's `api_url`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/api/", self.port)
    }

    /// The next call it took (waiting up to `within`): `method`, `authorized`, `status`,
    /// `body`, `answer`.
    pub async fn next(&mut self, within: Duration) -> Value {
        let line = self.process.line(within).await;
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?} is not JSON: {e}"))
    }

    /// Calls until one of `method`, which is returned; the others are returned too, before it.
    pub async fn until(&mut self, method: &str, within: Duration) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let call = self.next(within).await;
            if call["method"] == method {
                return (before, call);
            }
            before.push(call);
        }
    }
}
