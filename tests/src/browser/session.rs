//! The one Chromium this test process shares: chromedriver and a WebDriver session started on
//! first use, a tokio runtime of its own that every command runs on, and the lock that makes
//! each command go to the window of the test that sent it.
//!
//! Why a runtime of its own: each `#[tokio::test]` has its own runtime, gone when the test
//! ends, and an HTTP client's pooled connections die with the runtime that made them. The
//! session's client lives on this runtime instead, which lives as long as the process.
//!
//! Why a lock: a WebDriver session sends commands to its "current window", one at a time.
//! A command takes the lock, switches to its test's window if another was current, and runs;
//! a test that fails or panics meanwhile releases the lock (tokio's does not poison), so the
//! other tests go on.
//!
//! Nothing outlives the process: chromedriver runs under a small shell that holds the read end
//! of a pipe this process writes to. When this process exits, however it exits, the pipe
//! closes and the shell kills chromedriver's process group (Chromium with it) and removes the
//! profile.

use std::future::Future;
use std::io::{BufRead as _, BufReader};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock, PoisonError, mpsc};

use serde_json::{Value, json};
use thirtyfour::error::WebDriverResult;
use thirtyfour::{WebDriver, WindowHandle};
use tokio::runtime::Runtime;

use super::{CHROMIUM_ARGS, COMMAND_TIMEOUT, DRIVER_START_TIMEOUT, SETUP_HINT};

/// Kills chromedriver's process group and removes the profile once this process is gone (its
/// end of the shell's stdin closed). `setsid` makes chromedriver a group leader, so Chromium,
/// started by it, is in its group. The profile is removed once the group is empty (at most
/// 10 s on), so that no dying Chromium writes into it again.
const WATCHDOG: &str = r#"setsid "$0" --port="$1" </dev/null &
driver=$!
read -r _
kill -KILL -"$driver"
wait "$driver"
tries=0
while kill -0 -"$driver" 2>/dev/null && [ "$tries" -lt 100 ]; do
  sleep 0.1
  tries=$((tries + 1))
done
rm -rf "$2""#;

/// The shared browser; see the module's notes.
pub(super) struct Shared {
    runtime: Runtime,
    driver: WebDriver,
    /// The window the session was created with. It stays open, blank, so that the session
    /// lives on when every test's windows are closed, and new windows are opened from it.
    pub(super) base: WindowHandle,
    /// Which window commands go to now; `None` after a window was closed.
    focused: tokio::sync::Mutex<Option<WindowHandle>>,
    /// The browser's console errors not yet claimed by a test (the log is the session's, and
    /// reading it empties it).
    pub(super) console: Mutex<Vec<String>>,
    /// The watchdog shell; its stdin is held open for the life of the process.
    _watchdog: Child,
}

static SHARED: OnceLock<Shared> = OnceLock::new();

/// The shared browser, started by the first test that needs it. A start that fails panics in
/// that test and leaves the next test to try again.
pub(super) fn shared() -> &'static Shared {
    // The start blocks (waiting for chromedriver's line, creating the session on a runtime of
    // its own): a thread without a runtime does it, whatever the calling test runs on.
    SHARED.get_or_init(|| {
        std::thread::spawn(Shared::start)
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}

impl Shared {
    fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("chromium-commands")
            .enable_all()
            .build()
            .expect("a runtime for the browser's commands");
        let chromium = find_chromium();
        let profile = std::env::temp_dir().join(format!(
            "askgate-chromium-{}-{:016x}",
            std::process::id(),
            rand::random::<u64>()
        ));
        std::fs::create_dir_all(&profile).expect("create the Chromium profile directory");
        let (watchdog, port) = start_chromedriver(&profile);
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| (*a).to_owned()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
            "timeouts": {"script": 10_000, "pageLoad": 15_000},
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!("a JSON object")
        };
        let (driver, base) = runtime.block_on(async {
            let driver = WebDriver::builder(format!("http://127.0.0.1:{port}"), capabilities)
                .request_timeout(COMMAND_TIMEOUT)
                .await
                .unwrap_or_else(|e| panic!("starting Chromium through chromedriver: {e}"));
            let base = driver.window().await.expect("the first window's handle");
            (driver, base)
        });
        Shared {
            runtime,
            driver,
            base,
            focused: tokio::sync::Mutex::new(None),
            console: Mutex::new(Vec::new()),
            _watchdog: watchdog,
        }
    }

    /// Runs `op` on the session with `window` current, on the browser's runtime. A panic in
    /// `op` is raised again in the calling test.
    pub(super) async fn on<T, F, Fut>(
        &'static self,
        window: &WindowHandle,
        op: F,
    ) -> WebDriverResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&'static WebDriver) -> Fut + Send + 'static,
        Fut: Future<Output = WebDriverResult<T>> + Send,
    {
        let window = window.clone();
        let task = self.runtime.spawn(async move {
            let mut focused = self.focused.lock().await;
            if focused.as_ref() != Some(&window) {
                *focused = None;
                self.driver.switch_to_window(window.clone()).await?;
                *focused = Some(window);
            }
            op(&self.driver).await
        });
        task.await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
    }

    /// Closes `windows`, without waiting (a test's browser is dropped when the test ends,
    /// perhaps while it panics).
    pub(super) fn close(&'static self, windows: Vec<WindowHandle>) {
        self.runtime.spawn(async move {
            let mut focused = self.focused.lock().await;
            *focused = None;
            for window in windows {
                if self.driver.switch_to_window(window).await.is_ok() {
                    let _ = self.driver.close_window().await;
                }
            }
        });
    }

    /// Moves the browser's new console errors (of every window: the log is the session's)
    /// into [`console`](Self::console).
    pub(super) async fn collect_console(
        &'static self,
        window: &WindowHandle,
    ) -> WebDriverResult<()> {
        let entries = self
            .on(window, |d| async move { d.browser_log().await })
            .await?;
        self.console
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(
                entries
                    .into_iter()
                    .filter(|e| e.level == "SEVERE")
                    .map(|e| e.message),
            );
        Ok(())
    }
}

/// Starts chromedriver (under [`WATCHDOG`]) on a free port, once it prints its start line;
/// retries if another process took the port between choosing it and chromedriver binding it.
fn start_chromedriver(profile: &Path) -> (Child, u16) {
    let binary = find_in_path("ASKGATE_CHROMEDRIVER", &["chromedriver"])
        .unwrap_or_else(|| panic!("chromedriver not found: {SETUP_HINT}"));
    let mut failures = Vec::new();
    for _ in 0..3 {
        match try_start_chromedriver(&binary, profile) {
            Ok(started) => return started,
            Err(e) => failures.push(e),
        }
    }
    panic!("chromedriver did not start: {failures:?}");
}

fn try_start_chromedriver(binary: &Path, profile: &Path) -> Result<(Child, u16), String> {
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(WATCHDOG)
        .arg(binary)
        .arg(port.to_string())
        .arg(profile)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
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
    let outcome = match started.recv_timeout(DRIVER_START_TIMEOUT) {
        Ok(Ok(())) => return Ok((child, port)),
        Ok(Err(output)) => format!("chromedriver exited: {output}"),
        Err(_) => format!("chromedriver printed no start line within {DRIVER_START_TIMEOUT:?}"),
    };
    // Closing the shell's stdin makes it kill what it started.
    drop(child.stdin.take());
    let _ = child.wait();
    Err(outcome)
}

/// The Chromium binary: `$ASKGATE_CHROMIUM`, Debian's real binary (its `/usr/bin/chromium` is
/// a wrapper script), or the first browser on `PATH`.
fn find_chromium() -> PathBuf {
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
fn find_in_path(env: &str, names: &[&str]) -> Option<PathBuf> {
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
