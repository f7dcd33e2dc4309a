//! chromedriver: where it and Chromium are found, and starting it on a free port, ready once it
//! prints its start line.

use std::io::{BufRead as _, BufReader};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use super::{DRIVER_START_TIMEOUT, SETUP_HINT};

/// A chromedriver child process, in a process group of its own so that Chromium (its child)
/// can be killed with it.
pub(super) struct Driver {
    child: Child,
    pub(super) port: u16,
    /// Whether the browser session was quit cleanly (then only chromedriver is left).
    pub(super) session_closed: bool,
}

impl Driver {
    /// Starts chromedriver on a free port; retries if another process took the port between
    /// choosing it and chromedriver binding it.
    pub(super) fn start() -> Self {
        let binary = find_in_path("ASKGATE_CHROMEDRIVER", &["chromedriver"])
            .unwrap_or_else(|| panic!("chromedriver not found: {SETUP_HINT}"));
        let mut failures = Vec::new();
        for _ in 0..3 {
            match Self::try_start(&binary) {
                Ok(driver) => return driver,
                Err(e) => failures.push(e),
            }
        }
        panic!("chromedriver did not start: {failures:?}");
    }

    fn try_start(binary: &Path) -> Result<Self, String> {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let mut child = Command::new(binary)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("{}: {e} ({SETUP_HINT})", binary.display()))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (ready, started) = mpsc::channel();
        // Keeps reading after the start line, so chromedriver never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let mut seen = Vec::new();
            for line in lines.by_ref().map_while(Result::ok) {
                if line.contains("ChromeDriver was started successfully") {
                    let _ = ready.send(Ok(()));
                    break;
                }
                seen.push(line);
            }
            let _ = ready.send(Err(seen.join("\n")));
            lines.for_each(drop);
        });
        let driver = Driver {
            child,
            port,
            session_closed: false,
        };
        match started.recv_timeout(DRIVER_START_TIMEOUT) {
            Ok(Ok(())) => Ok(driver),
            Ok(Err(output)) => Err(format!("chromedriver exited: {output}")),
            Err(_) => Err(format!(
                "chromedriver printed no start line within {DRIVER_START_TIMEOUT:?}"
            )),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if !self.session_closed {
            // Chromium may still run: end the process group chromedriver leads (its id is
            // chromedriver's, which this process started).
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.child.id())])
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Chromium binary: `$ASKGATE_CHROMIUM`, Debian's real binary (its `/usr/bin/chromium` is
/// a wrapper script), or the first browser on `PATH`.
pub(super) fn find_chromium() -> PathBuf {
    if std::env::var_os("ASKGATE_CHROMIUM").is_none() {
        let debian = Path::new("/usr/lib/chromium/chromium");
        if debian.is_file() {
            return debian.to_owned();
        }
    }
    find_in_path(
        "ASKGATE_CHROMIUM",
        &["chromium", "chromium-browser", "google-chrome"],
    )
    .unwrap_or_else(|| panic!("Chromium not found: {SETUP_HINT}"))
}

/// `$env` if set (it must exist), else the first of `names` on `PATH`.
pub(super) fn find_in_path(env: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "${env} = {} does not exist ({SETUP_HINT})",
            path.display()
        );
        return Some(path);
    }
    let dirs: Vec<PathBuf> = std::env::split_paths(&std::env::var_os("PATH")?).collect();
    names
        .iter()
        .flat_map(|name| dirs.iter().map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
}
