//! Headless Chromium driven through chromedriver (WebDriver), for the answer page's tests.
//!
//! Each [`Browser`] owns one chromedriver (on a free port, ready once it prints its start
//! line) and one Chromium session; dropping it ends the session and kills chromedriver, so
//! a failing test leaves no browser behind. Every wait polls with a deadline
//! ([`WAIT_TIMEOUT`]) and fails with what it last saw; nothing sleeps to wait for readiness.
//!
//! WebDriver is plain JSON over HTTP/1.1, spoken here over a tokio `TcpStream` (one
//! connection per command). fantoccini was the first choice, but without its TLS features it
//! can only be built from a `hyper_util` connector, which this crate does not depend on.
//!
//! Chromium and chromedriver come from `scripts/setup-test-env.sh`; when either is missing the
//! test fails with that advice, never skips. `ASKGATE_CHROMIUM` / `ASKGATE_CHROMEDRIVER`
//! override where they are looked for.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// How long any wait on the page lasts before the test fails.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a wait looks again.
const POLL_EVERY: Duration = Duration::from_millis(50);

/// How long chromedriver may take to print its start line.
const DRIVER_START_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one WebDriver command may take (starting Chromium is the slowest).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// The key under which WebDriver returns an element reference.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Chromium's flags: headless, and quiet on a machine without internet (without the
/// background-networking flags it floods the log with refused connections).
const CHROMIUM_ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--window-size=1280,900",
];

const SETUP_HINT: &str = "run scripts/setup-test-env.sh to install Chromium and chromedriver";

/// A WebDriver window handle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window(String);

/// An element reference, valid until the element leaves the page.
#[derive(Clone, Debug)]
pub struct Element(String);

/// A WebDriver command that failed: the HTTP status and WebDriver's error object.
#[derive(Debug)]
pub struct CommandError(String);

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One headless Chromium, through its own chromedriver.
pub struct Browser {
    driver: Driver,
    session: String,
    profile: PathBuf,
}

impl Browser {
    /// Starts chromedriver and a Chromium session (1280×900) with a fresh profile.
    pub async fn start() -> Self {
        let chromium = find_chromium();
        // Waiting for chromedriver's start line blocks; keep it off the runtime's workers.
        let driver = tokio::task::spawn_blocking(Driver::start)
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        let profile = std::env::temp_dir().join(format!(
            "askgate-chromium-{}-{:016x}",
            std::process::id(),
            rand::random::<u64>()
        ));
        std::fs::create_dir_all(&profile).expect("create the Chromium profile directory");
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| (*a).to_owned()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
            "timeouts": {"script": 10_000, "pageLoad": 15_000},
        }}});
        let mut browser = Browser {
            driver,
            session: String::new(),
            profile,
        };
        let created = request(browser.driver.port, "POST", "/session", Some(&capabilities))
            .await
            .unwrap_or_else(|e| panic!("starting Chromium through chromedriver: {e}"));
        browser.session = created["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        browser
    }

    /// Runs one command on this session; panics if it fails.
    async fn command(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        self.try_command(method, path, body)
            .await
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"))
    }

    async fn try_command(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, CommandError> {
        let path = format!("/session/{}{path}", self.session);
        request(self.driver.port, method, &path, body).await
    }

    /// Opens `url` in the current window and waits for it to load.
    pub async fn goto(&self, url: &str) {
        self.command("POST", "/url", Some(&json!({"url": url})))
            .await;
    }

    /// Reloads the current window.
    pub async fn reload(&self) {
        self.command("POST", "/refresh", Some(&json!({}))).await;
    }

    /// Resizes the window (outer size; headless has no browser chrome around the page).
    pub async fn set_window_size(&self, width: u32, height: u32) {
        self.command(
            "POST",
            "/window/rect",
            Some(&json!({"width": width, "height": height})),
        )
        .await;
    }

    /// Makes the page's viewport exactly `width`×`height` CSS pixels at a device pixel ratio
    /// of 1 (Chromium's device emulation: a window cannot be narrower than 500 px).
    pub async fn set_viewport_size(&self, width: u32, height: u32) {
        let params = json!({"width": width, "height": height, "deviceScaleFactor": 1,
                            "mobile": false});
        let body = json!({"cmd": "Emulation.setDeviceMetricsOverride", "params": params});
        self.command("POST", "/goog/cdp/execute", Some(&body)).await;
        self.wait_until(
            "return window.innerWidth === arguments[0] && window.innerHeight === arguments[1];",
            json!([width, height]),
        )
        .await;
    }

    /// The current window.
    pub async fn window(&self) -> Window {
        let handle = self.command("GET", "/window", None).await;
        Window(handle.as_str().expect("a window handle").to_owned())
    }

    /// Opens a new window (not a tab: both stay visible, so neither is throttled) and
    /// switches to it.
    pub async fn new_window(&self) -> Window {
        let opened = self
            .command("POST", "/window/new", Some(&json!({"type": "window"})))
            .await;
        let window = Window(opened["handle"].as_str().expect("a handle").to_owned());
        self.switch_to(&window).await;
        window
    }

    /// Makes `window` the one commands go to.
    pub async fn switch_to(&self, window: &Window) {
        self.command("POST", "/window", Some(&json!({"handle": window.0})))
            .await;
    }

    /// `[type, value, label text]` of each input `selector` matches, in document order.
    pub async fn inputs(&self, selector: &str) -> Value {
        self.execute(
            "return [...document.querySelectorAll(arguments[0])].map(\
             (i) => [i.type, i.value, i.labels[0].textContent]);",
            json!([selector]),
        )
        .await
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and returns its result.
    pub async fn execute(&self, script: &str, args: Value) -> Value {
        self.try_execute(script, &args)
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    async fn try_execute(&self, script: &str, args: &Value) -> Result<Value, CommandError> {
        let body = json!({"script": script, "args": args});
        self.try_command("POST", "/execute/sync", Some(&body)).await
    }

    /// Polls `script` until it returns something truthy (not `false`, `null`, `0` or `""`)
    /// and returns that; fails after [`WAIT_TIMEOUT`] with the last result or error. Errors
    /// while polling (a page mid-navigation) count as "not yet".
    pub async fn wait_until(&self, script: &str, args: Value) -> Value {
        let deadline = Instant::now() + WAIT_TIMEOUT;
        loop {
            let last = match self.try_execute(script, &args).await {
                Ok(value) if truthy(&value) => return value,
                Ok(value) => format!("it returned {value}"),
                Err(e) => format!("it failed: {e}"),
            };
            if Instant::now() >= deadline {
                panic!(
                    "waited {WAIT_TIMEOUT:?} for the page; {last}\nscript: {script}\nargs: {args}"
                );
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// Waits for an element matching `css`.
    pub async fn wait_for(&self, css: &str) -> Element {
        self.wait_until("return document.querySelector(arguments[0]);", json!([css]))
            .await;
        self.find(css).await
    }

    /// Waits until no element matches `css`.
    pub async fn wait_gone(&self, css: &str) {
        self.wait_until(
            "return document.querySelector(arguments[0]) === null;",
            json!([css]),
        )
        .await;
    }

    /// Waits until the first element matching `css` has `text` in its `textContent`.
    pub async fn wait_for_text(&self, css: &str, text: &str) {
        let script = "const el = document.querySelector(arguments[0]); \
                      return el !== null && el.textContent.includes(arguments[1]);";
        let deadline = Instant::now() + WAIT_TIMEOUT;
        loop {
            if let Ok(Value::Bool(true)) = self.try_execute(script, &json!([css, text])).await {
                return;
            }
            if Instant::now() >= deadline {
                let seen = self.text_of(css).await;
                panic!(
                    "waited {WAIT_TIMEOUT:?} for {css:?} to contain {text:?}; it holds {seen:?}"
                );
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// The `textContent` of the first element matching `css`, or `None` if there is none.
    pub async fn text_of(&self, css: &str) -> Option<String> {
        let script = "const el = document.querySelector(arguments[0]); \
                      return el === null ? null : el.textContent;";
        self.try_execute(script, &json!([css]))
            .await
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
    }

    /// The attribute `name` of the first element matching `css` (`None` if absent).
    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        let script = "const el = document.querySelector(arguments[0]); \
                      if (el === null) throw new Error('no element matches ' + arguments[0]); \
                      return el.getAttribute(arguments[1]);";
        let value = self.execute(script, json!([css, name])).await;
        value.as_str().map(str::to_owned)
    }

    /// The element matching `css` now; panics if there is none.
    pub async fn find(&self, css: &str) -> Element {
        let body = json!({"using": "css selector", "value": css});
        let found = self
            .try_command("POST", "/element", Some(&body))
            .await
            .unwrap_or_else(|e| panic!("no element matches {css:?}: {e}"));
        Element(
            found[ELEMENT_KEY]
                .as_str()
                .expect("an element id")
                .to_owned(),
        )
    }

    /// Clicks the element matching `css` the way a person would (scrolled into view, at its
    /// centre; WebDriver refuses if something covers it).
    pub async fn click(&self, css: &str) {
        let element = self.wait_for(css).await;
        self.command(
            "POST",
            &format!("/element/{}/click", element.0),
            Some(&json!({})),
        )
        .await;
    }

    /// Types `text` into the element matching `css`, key by key.
    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.wait_for(css).await;
        let body = json!({"text": text});
        self.command(
            "POST",
            &format!("/element/{}/value", element.0),
            Some(&body),
        )
        .await;
    }

    /// Saves a PNG of the window's viewport to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let encoded = self.command("GET", "/screenshot", None).await;
        let png = decode_base64(encoded.as_str().expect("base64 PNG"));
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create the screenshot's directory");
        }
        std::fs::write(path, png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// The console's errors (and failed loads) since the last call, as Chromium words them.
    pub async fn console_errors(&self) -> Vec<String> {
        let entries = self
            .command("POST", "/se/log", Some(&json!({"type": "browser"})))
            .await;
        entries
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["level"] == "SEVERE")
            .map(|e| e["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Quitting the session closes Chromium; only then is chromedriver (in Driver's drop)
        // killed. If quitting fails, Driver kills the whole process group instead.
        if !self.session.is_empty() {
            let path = format!("/session/{}", self.session);
            self.driver.session_closed = blocking_delete(self.driver.port, &path);
        }
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// A chromedriver child process, in a process group of its own so that Chromium (its child)
/// can be killed with it.
struct Driver {
    child: Child,
    port: u16,
    /// Whether the browser session was quit cleanly (then only chromedriver is left).
    session_closed: bool,
}

impl Driver {
    /// Starts chromedriver on a free port; retries if another process took the port between
    /// choosing it and chromedriver binding it.
    fn start() -> Self {
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

/// One WebDriver command: an HTTP/1.1 request on a fresh connection; returns `value`.
async fn request(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<Value, CommandError> {
    let exchange = async {
        let body = body.map(Value::to_string).unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
             Content-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            body.len()
        );
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).await?;
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        // chromedriver keeps the connection open despite `Connection: close`, so the
        // response ends where its length says.
        let mut response = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        while !is_complete(&response) {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            response.extend_from_slice(&chunk[..n]);
        }
        Ok::<_, std::io::Error>(response)
    };
    let response = tokio::time::timeout(COMMAND_TIMEOUT, exchange)
        .await
        .map_err(|_| CommandError(format!("no answer within {COMMAND_TIMEOUT:?}")))?
        .map_err(|e| CommandError(format!("chromedriver connection: {e}")))?;
    parse_response(&response)
}

/// Whether `response` holds a whole HTTP response: its head and as much body as
/// `Content-Length` says (or a chunked body's last chunk).
fn is_complete(response: &[u8]) -> bool {
    let Some(end) = response.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&response[..end]).to_ascii_lowercase();
    let body = &response[end + 4..];
    let length = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        (name.trim() == "content-length").then(|| value.trim().parse::<usize>().ok())?
    });
    match length {
        Some(length) => body.len() >= length,
        None if head.contains("transfer-encoding: chunked") => body.ends_with(b"0\r\n\r\n"),
        None => false,
    }
}

/// Splits an HTTP response into its status and JSON body; a non-2xx status is an error.
fn parse_response(response: &[u8]) -> Result<Value, CommandError> {
    let text = String::from_utf8_lossy(response);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| CommandError(format!("not an HTTP response: {text:?}")))?;
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| CommandError(format!("no status line: {head:?}")))?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    let json: Value = serde_json::from_str(&body)
        .map_err(|e| CommandError(format!("HTTP {status}, body not JSON ({e}): {body:?}")))?;
    if (200..300).contains(&status) {
        Ok(json["value"].clone())
    } else {
        let value = &json["value"];
        Err(CommandError(format!(
            "HTTP {status} {}: {}",
            value["error"].as_str().unwrap_or("error"),
            value["message"].as_str().unwrap_or_default()
        )))
    }
}

/// The payload of a chunked body.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// `DELETE path` without an async runtime (for `Drop`); whether it succeeded.
fn blocking_delete(port: u16, path: &str) -> bool {
    let attempt = || -> std::io::Result<Vec<u8>> {
        let mut stream = std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
        stream.set_read_timeout(Some(COMMAND_TIMEOUT))?;
        write!(
            stream,
            "DELETE {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n"
        )?;
        let mut response = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        while !is_complete(&response) {
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            response.extend_from_slice(&chunk[..n]);
        }
        Ok(response)
    };
    attempt().is_ok_and(|response| parse_response(&response).is_ok())
}

/// JavaScript's truthiness for a JSON value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// Standard base64 (WebDriver's screenshots); panics on a character outside the alphabet.
fn decode_base64(text: &str) -> Vec<u8> {
    let sextet = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {:?}", char::from(c)),
        }
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let bits = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &c)| acc | (sextet(c) << (18 - 6 * i)));
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_every_padding() {
        assert_eq!(decode_base64("aGk="), b"hi");
        assert_eq!(decode_base64("aGV5"), b"hey");
        assert_eq!(decode_base64("aA=="), b"h");
        assert_eq!(decode_base64("iVBORw0KGgo="), b"\x89PNG\r\n\x1a\n");
    }

    #[test]
    fn a_response_is_complete_when_its_length_has_arrived() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length:11\r\n\r\n";
        assert!(!is_complete(b"HTTP/1.1 200 OK\r\nContent-Le"));
        assert!(!is_complete(&[&head[..], b"{\"value\""].concat()));
        assert!(is_complete(&[&head[..], b"{\"value\":1}"].concat()));
        assert!(is_complete(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
        ));
    }

    #[test]
    fn chunked_bodies_are_joined() {
        assert_eq!(dechunk("4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n"), "{\"a\":1}");
    }

    #[test]
    fn webdriver_errors_carry_their_message() {
        let response = b"HTTP/1.1 404 Not Found\r\nContent-Length:56\r\n\r\n\
                         {\"value\":{\"error\":\"no such element\",\"message\":\"gone\"}}";
        let err = parse_response(response).unwrap_err();
        assert_eq!(err.to_string(), "HTTP 404 no such element: gone");
    }
}
