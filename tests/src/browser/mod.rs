//! Headless Chromium driven through chromedriver (WebDriver, with the thirtyfour crate), for
//! the answer page's tests.
//!
//! One Chromium serves the whole test process ([`session`]): it starts when the first test
//! needs it, and each [`Browser`] is a fresh window of it (its own page, `sessionStorage`,
//! device emulation and scripts run before each load), closed when the `Browser` is dropped,
//! so a failing test leaves nothing behind for the next. The tests run side by side; each
//! command goes to its own test's window.
//!
//! Every wait polls with a deadline ([`WAIT_TIMEOUT`]) and fails with what it last saw;
//! nothing sleeps to wait for readiness.
//!
//! Chromium and chromedriver come from `scripts/setup-test-env.sh`; when either is missing the
//! test fails with that advice, never skips. `ASKGATE_CHROMIUM` / `ASKGATE_CHROMEDRIVER`
//! override where they are looked for.
//!
//! - [`session`]: the shared chromedriver and Chromium, and the lock its windows take turns on.
//! - [`axe`]: axe-core's accessibility rules, run on the page as it is.
//! - [`page`]: the answer page as its tests open, read and work it (a session's page, an
//!   asking agent and its outcome, cards' selectors and texts, the frames the page sent).

pub mod axe;
pub mod page;
mod session;

use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use thirtyfour::error::WebDriverResult;
use thirtyfour::{By, WindowHandle};

use session::shared;

/// How long any wait on the page lasts before the test fails.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a wait looks again.
const POLL_EVERY: Duration = Duration::from_millis(50);

/// How long chromedriver may take to print its start line.
const DRIVER_START_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one WebDriver command may take (starting Chromium is the slowest).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Every test's window starts at this size, the one the tests were written for.
const WINDOW_SIZE: (u32, u32) = (1280, 900);

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

/// A window of the shared Chromium.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window(WindowHandle);

/// A test's view of the shared Chromium: the windows it opened (closed when it is dropped),
/// the one its commands go to, and the origins it loaded (whose console errors are its own).
pub struct Browser {
    windows: Mutex<Vec<WindowHandle>>,
    current: Mutex<WindowHandle>,
    origins: Mutex<Vec<String>>,
}

/// Locks `mutex`, whether or not a panicking test held it last.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Browser {
    /// A new window of the shared Chromium (started if this is the first), 1280×900, blank.
    pub async fn start() -> Self {
        let shared = shared();
        let window = open_window(&shared.base).await;
        Browser {
            windows: Mutex::new(vec![window.clone()]),
            current: Mutex::new(window),
            origins: Mutex::new(Vec::new()),
        }
    }

    /// Runs `op` with this browser's current window the session's, and returns its result.
    async fn try_on<T, F, Fut>(&self, op: F) -> WebDriverResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&'static thirtyfour::WebDriver) -> Fut + Send + 'static,
        Fut: Future<Output = WebDriverResult<T>> + Send,
    {
        let window = lock(&self.current).clone();
        shared().on(&window, op).await
    }

    /// [`try_on`](Self::try_on), panicking with `what` and the error if the command failed.
    async fn on<T, F, Fut>(&self, what: &str, op: F) -> T
    where
        T: Send + 'static,
        F: FnOnce(&'static thirtyfour::WebDriver) -> Fut + Send + 'static,
        Fut: Future<Output = WebDriverResult<T>> + Send,
    {
        self.try_on(op)
            .await
            .unwrap_or_else(|e| panic!("WebDriver, {what}: {e}"))
    }

    /// Runs a Chrome DevTools command on the current window.
    async fn cdp(&self, command: &'static str, params: Value) {
        self.on(command, move |d| async move {
            d.cdp().send_raw(command, params).await
        })
        .await;
    }

    /// Opens `url` in the current window and waits for it to load.
    pub async fn goto(&self, url: &str) {
        if let Some(origin) = origin_of(url) {
            let mut origins = lock(&self.origins);
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        let url = url.to_owned();
        self.on("open a page", |d| async move { d.goto(url).await })
            .await;
    }

    /// Reloads the current window.
    pub async fn reload(&self) {
        self.on("reload", |d| async move { d.refresh().await })
            .await;
    }

    /// Resizes the window (outer size; headless has no browser chrome around the page).
    pub async fn set_window_size(&self, width: u32, height: u32) {
        self.on("resize the window", move |d| async move {
            d.set_window_rect(0, 0, width, height).await
        })
        .await;
    }

    /// Makes the page's viewport exactly `width`×`height` CSS pixels at a device pixel ratio
    /// of 1 (Chromium's device emulation: a window cannot be narrower than 500 px).
    pub async fn set_viewport_size(&self, width: u32, height: u32) {
        let params = json!({"width": width, "height": height, "deviceScaleFactor": 1,
                            "mobile": false});
        self.cdp("Emulation.setDeviceMetricsOverride", params).await;
        self.wait_until(
            "return window.innerWidth === arguments[0] && window.innerHeight === arguments[1];",
            json!([width, height]),
        )
        .await;
    }

    /// Runs `script` in every document this window loads from now on, before the page's own
    /// scripts (to stand in for a gateway feature, e.g. by wrapping `WebSocket`).
    pub async fn run_before_each_load(&self, script: &str) {
        self.cdp(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": script}),
        )
        .await;
    }

    /// Lets pages of `origin` show notifications without asking, as if the person had allowed
    /// them (headless Chromium refuses every permission prompt). Each test's gateway has its
    /// own port, so the grant reaches no other test's pages.
    pub async fn grant_notifications(&self, origin: &str) {
        let params = json!({"origin": origin, "permissions": ["notifications"]});
        self.cdp("Browser.grantPermissions", params).await;
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
        self.cdp("Emulation.setEmulatedMedia", params).await;
        self.wait_until(
            "return matchMedia('(prefers-color-scheme: dark)').matches === arguments[0] \
                && matchMedia('(prefers-reduced-motion: reduce)').matches === arguments[1];",
            json!([dark, reduce_motion]),
        )
        .await;
    }

    /// The current window.
    pub async fn window(&self) -> Window {
        Window(lock(&self.current).clone())
    }

    /// Opens a new window (not a tab: both stay visible, so neither is throttled) and
    /// switches to it.
    pub async fn new_window(&self) -> Window {
        let window = open_window(&shared().base).await;
        lock(&self.windows).push(window.clone());
        *lock(&self.current) = window.clone();
        Window(window)
    }

    /// Makes `window` the one commands go to.
    pub async fn switch_to(&self, window: &Window) {
        assert!(
            lock(&self.windows).contains(&window.0),
            "{window:?} is not one of this browser's windows"
        );
        *lock(&self.current) = window.0.clone();
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

    async fn try_execute(&self, script: &str, args: &Value) -> WebDriverResult<Value> {
        let script = script.to_owned();
        let args = match args {
            Value::Array(args) => args.clone(),
            other => panic!("a script's arguments are a JSON array, not {other}"),
        };
        self.try_on(|d| async move { Ok(d.execute(script, args).await?.json().clone()) })
            .await
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
    pub async fn wait_for(&self, css: &str) {
        self.wait_until("return document.querySelector(arguments[0]);", json!([css]))
            .await;
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

    /// Asserts that an element matches `css` now (WebDriver's own lookup).
    pub async fn find(&self, css: &str) {
        let selector = css.to_owned();
        self.try_on(|d| async move { d.find(By::Css(selector)).await.map(drop) })
            .await
            .unwrap_or_else(|e| panic!("no element matches {css:?}: {e}"));
    }

    /// Clicks the element matching `css` the way a person would (scrolled into view, at its
    /// centre; WebDriver refuses if something covers it).
    pub async fn click(&self, css: &str) {
        self.wait_for(css).await;
        let selector = css.to_owned();
        self.on(&format!("click {css}"), |d| async move {
            d.find(By::Css(selector)).await?.click().await
        })
        .await;
    }

    /// Types `text` into the element matching `css`, key by key.
    pub async fn type_into(&self, css: &str, text: &str) {
        self.wait_for(css).await;
        let (selector, text) = (css.to_owned(), text.to_owned());
        self.on(&format!("type into {css}"), |d| async move {
            d.find(By::Css(selector)).await?.send_keys(text).await
        })
        .await;
    }

    /// Saves a PNG of the window's viewport to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let png = self
            .on("screenshot", |d| async move { d.screenshot_as_png().await })
            .await;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create the screenshot's directory");
        }
        std::fs::write(path, png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// The console's errors (and failed loads) since the last call, as Chromium words them:
    /// those of the pages this browser opened, and any that name no page at all (the log is
    /// the whole Chromium's, so another test's page's errors are left to that test).
    pub async fn console_errors(&self) -> Vec<String> {
        let window = lock(&self.current).clone();
        let shared = shared();
        shared
            .collect_console(&window)
            .await
            .unwrap_or_else(|e| panic!("WebDriver, read the console: {e}"));
        let origins = lock(&self.origins).clone();
        let mut pool = lock(&shared.console);
        let (mine, others) = std::mem::take(&mut *pool).into_iter().partition(|message| {
            origins.iter().any(|o| message.contains(o.as_str())) || !message.contains("://")
        });
        *pool = others;
        mine.into_iter()
            .filter(|message| !expected_failed_load(message))
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let windows = std::mem::take(&mut *lock(&self.windows));
        shared().close(windows);
    }
}

/// Failed loads that are answers, not faults: (what the URL holds, what the line says).
/// Chromium logs every fetch answered with an error status, handled or not, and a gateway
/// without `[push]` answers the pages' `GET /v1/push/key` with 404 by design: the page then
/// offers no push at all.
const EXPECTED_FAILED_LOADS: &[(&str, &str)] = &[("/v1/push/key", "status of 404")];

fn expected_failed_load(message: &str) -> bool {
    EXPECTED_FAILED_LOADS
        .iter()
        .any(|(url, status)| message.contains(url) && message.contains(status))
}

/// Opens a window (from `base`, which is always open), 1280×900, and returns it.
async fn open_window(base: &WindowHandle) -> WindowHandle {
    let shared = shared();
    let window = shared
        .on(base, |d| async move { d.new_window().await })
        .await
        .unwrap_or_else(|e| panic!("WebDriver, open a window: {e}"));
    let (width, height) = WINDOW_SIZE;
    shared
        .on(&window, move |d| async move {
            d.set_window_rect(0, 0, width, height).await
        })
        .await
        .unwrap_or_else(|e| panic!("WebDriver, size a new window: {e}"));
    window
}

/// `scheme://host:port` of `url`, if it has one.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    Some(format!("{scheme}://{authority}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_scheme_host_and_port() {
        assert_eq!(
            origin_of("http://127.0.0.1:4100/s/x#k=1").as_deref(),
            Some("http://127.0.0.1:4100")
        );
        assert_eq!(origin_of("about:blank"), None);
    }

    #[test]
    fn truthiness_is_javascripts() {
        for falsy in [json!(null), json!(false), json!(0), json!(""), json!(0.0)] {
            assert!(!truthy(&falsy), "{falsy}");
        }
        for truthy_value in [json!(true), json!(1), json!("0"), json!([]), json!({})] {
            assert!(truthy(&truthy_value), "{truthy_value}");
        }
    }
}
