//! `askgate` commands run to their end: how they exited and what they said; and `askgate
//! serve` expected to stop before it listens.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use super::TIMEOUT;

/// How a command ended, and what it said.
pub struct Ran {
    /// Whether it exited 0.
    pub ok: bool,
    /// Its standard output.
    pub stdout: String,
    /// Its standard output, then its standard error.
    pub said: String,
}

impl std::fmt::Display for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "(exit ok: {}) {}", self.ok, self.said)
    }
}

/// `askgate ARGS --data-dir DATA`, to its end.
pub fn askgate(args: &[&str], data: &Path) -> Ran {
    let output = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .output()
        .expect("askgate runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    Ran {
        ok: output.status.success(),
        said: format!("{stdout}{}", String::from_utf8_lossy(&output.stderr)),
        stdout,
    }
}

/// `askgate serve --data-dir DATA ARGS` (embedded store unless ARGS say), expected to stop
/// without listening: how it ended and what it said. Should it listen instead, the test fails
/// (and the process is killed).
pub fn serve_refused(data: &Path, args: &[&str]) -> Ran {
    let mut child = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data)
        .args(args)
        .env("RUST_LOG", "info")
        // Text, the format these tests read (a pipe would get JSON).
        .env("ASKGATE_LOG_FORMAT", "text")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("askgate serve runs");
    match until_listening(&mut child) {
        Ok((_, said)) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the gateway started: {said}");
        }
        Err(said) => {
            let status = child.wait().expect("it ended");
            Ran {
                ok: status.success(),
                stdout: String::new(),
                said,
            }
        }
    }
}

/// Reads a started `askgate serve`'s standard error (piped) until it says where it listens:
/// the address and what it said before; or, if it stops first, everything it said. A gateway
/// that does neither within [`TIMEOUT`] is killed and fails the test.
pub fn until_listening(child: &mut Child) -> Result<(SocketAddr, String), String> {
    let stderr = child.stderr.take().expect("stderr is piped");
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut said = String::new();
    loop {
        match lines.recv_timeout(TIMEOUT) {
            Ok(line) => {
                if let Some(addr) = line.strip_prefix("askgate listening on http://") {
                    return Ok((addr.trim().parse().expect("an address"), said));
                }
                said.push_str(&line);
                said.push('\n');
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(said),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("the gateway neither started nor stopped: {said}");
            }
        }
    }
}
