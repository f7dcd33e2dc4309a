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
//!
//! - [`driver`]: finding Chromium and chromedriver, and starting chromedriver on a free port.
//! - [`wire`]: WebDriver's HTTP/1.1 exchanges, read and written by hand.
//! - [`axe`]: axe-core's accessibility rules, run on the page as it is.
//! - [`page`]: the answer page as its tests open, read and work it (a session's page, an
//!   asking agent and its outcome, cards' selectors and texts, the frames the page sent).

pub mod axe;
mod driver;
pub mod page;
mod wire;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use driver::{Driver, find_chromium};
use wire::{blocking_delete, decode_base64, request, truthy};

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

    /// Runs `script` in every document this window loads from now on, before the page's own
    /// scripts (to stand in for a gateway feature, e.g. by wrapping `WebSocket`).
    pub async fn run_before_each_load(&self, script: &str) {
        let body = json!({"cmd": "Page.addScriptToEvaluateOnNewDocument",
                          "params": {"source": script}});
        self.command("POST", "/goog/cdp/execute", Some(&body)).await;
    }

    /// Makes the page see `prefers-color-scheme: dark` (or light), as if the system had it.
    pub async fn set_color_scheme(&self, dark: bool) {
        self.emulate_media(dark, false).await;
    }

    /// Makes the page see `prefers-color-scheme: dark` (or light) and, when `reduce_motion`,
    /// `prefers-reduced-motion: reduce`, as if the system had them.
    pub async fn emulate_media(&self, dark: bool, reduce_motion: bool) {
        let scheme = if dark { "dark" } else { "light" };
        let motion = if reduce_motion {
            "reduce"
        } else {
            "no-preference"
        };
        let params = json!({"features": [
            {"name": "prefers-color-scheme", "value": scheme},
            {"name": "prefers-reduced-motion", "value": motion},
        ]});
        let body = json!({"cmd": "Emulation.setEmulatedMedia", "params": params});
        self.command("POST", "/goog/cdp/execute", Some(&body)).await;
        self.wait_until(
            "return matchMedia('(prefers-color-scheme: dark)').matches === arguments[0] \
                && matchMedia('(prefers-reduced-motion: reduce)').matches === arguments[1];",
            json!([dark, reduce_motion]),
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
    ///
    /// `text` is not empty: [`wait_for_no_text`](Self::wait_for_no_text) waits for that.
    pub async fn wait_for_text(&self, css: &str, text: &str) {
        assert!(
            !text.is_empty(),
            "every text contains \"\": use wait_for_no_text"
        );
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

    /// Waits until the element matching `css` is there and holds no text at all.
    pub async fn wait_for_no_text(&self, css: &str) {
        self.wait_until(
            "const el = document.querySelector(arguments[0]); \
             return el !== null && el.textContent === '';",
            json!([css]),
        )
        .await;
    }

    /// How many elements match `css` now.
    pub async fn find_all_count(&self, css: &str) -> u64 {
        let count = self
            .execute(
                "return document.querySelectorAll(arguments[0]).length;",
                json!([css]),
            )
            .await;
        count.as_u64().expect("a count")
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
