//! The answer page as its browser tests open, read and work it: the page of a session (with
//! scripts run before it loads, e.g. [`RECORD_FRAMES`]), a person's personal and inbox links,
//! an agent that has asked and the outcome it gets, the selectors of cards and their parts,
//! the texts they show, and the steps a person takes that every card shares (Decline, the
//! list of endings after a reload, a click on something under the sticky header).
//!
//! Selectors are `String`s built from a request id, so a test reads as what it looks at:
//! `format!("{} .card-status", card("r1"))`.

use serde_json::{Value, json};

use super::Browser;
use crate::server::TestServer;
use askgate_testkit::ws::WsClient;

/// Run before the page's own scripts: records every frame the page sends in
/// `window.__sent`, and lets a test rewrite an outgoing answer (`window.__tamper`, a function
/// from the frame to the frame sent instead), to stand in for a page that disagrees with the
/// gateway. A test can then tell that nothing went out, without waiting for silence.
pub const RECORD_FRAMES: &str = "(() => { \
    window.__sent = []; \
    const send = WebSocket.prototype.send; \
    WebSocket.prototype.send = function (data) { \
      let frame = null; \
      try { frame = JSON.parse(data); } catch (_) { /* not JSON: sent as it is */ } \
      if (frame) window.__sent.push(frame); \
      if (frame && frame.type === 'answer' && typeof window.__tamper === 'function') { \
        data = JSON.stringify(window.__tamper(frame)); \
      } \
      return send.call(this, data); \
    }; \
  })();";

/// Run before the page's own scripts: every call of `window.open` is recorded in
/// `window.__opened` (its arguments) instead of opening anything.
pub const STUB_WINDOW_OPEN: &str = "(() => { \
    window.__opened = []; \
    window.open = function (...args) { window.__opened.push(args); return null; }; \
  })();";

/// The page's connection line once its socket is open.
const CONNECTION_OPEN: &str = r#"#connection[data-state="open"]"#;

/// The page's URL for `session`, key in the fragment, as the agent would print it.
pub fn page_url(server: &TestServer, session: &str) -> String {
    server.http_url(&format!("/s/{session}#k={}", server.viewer_key(session)))
}

/// A browser on the page of `session`, once its socket is open.
pub async fn open_page(server: &TestServer, session: &str) -> Browser {
    open_page_with(server, session, &[]).await
}

/// A browser on the page of `session`, recording what it sends ([`RECORD_FRAMES`]), once its
/// socket is open.
pub async fn open_recording_page(server: &TestServer, session: &str) -> Browser {
    open_page_with(server, session, &[RECORD_FRAMES]).await
}

/// A browser on the page of `session` that runs each of `before_load` (in order) before the
/// page's own scripts on every load, once its socket is open.
pub async fn open_page_with(server: &TestServer, session: &str, before_load: &[&str]) -> Browser {
    let browser = Browser::start().await;
    for script in before_load {
        browser.run_before_each_load(script).await;
    }
    browser.goto(&page_url(server, session)).await;
    wait_connected(&browser).await;
    browser
}

/// Waits until the page's socket is open.
pub async fn wait_connected(browser: &Browser) {
    browser.wait_for(CONNECTION_OPEN).await;
}

/// Reloads the page and waits until its socket is open again.
pub async fn reload(browser: &Browser) {
    browser.reload().await;
    wait_connected(browser).await;
}

/// A personal link to `session` for `user`, working for `ttl_s` seconds: `(url, key,
/// expires_ms)`, as `POST /v1/sessions/{session}/links` gives it (local mode: no agent key).
pub async fn personal_link(
    server: &TestServer,
    session: &str,
    user: &str,
    ttl_s: f64,
) -> (String, String, u64) {
    let (status, body) = server
        .http(
            "POST",
            &format!("/v1/sessions/{session}/links"),
            Some(&json!({"user": user, "ttl_s": ttl_s})),
        )
        .await;
    assert_eq!(status, 201, "a personal link for {user}: {body}");
    assert_eq!(body["user"], user);
    let url = body["url"].as_str().expect("a link").to_owned();
    let key = url
        .split_once("#k=")
        .expect("the key in the fragment")
        .1
        .to_owned();
    assert!(key.starts_with("p1."), "a personal key: {key}");
    (url, key, body["expires_ms"].as_u64().expect("an expiry"))
}

/// A browser on `url`, once its socket is open and the gateway has said who it is.
pub async fn open_link(url: &str) -> Browser {
    let browser = Browser::start().await;
    browser.goto(url).await;
    wait_connected(&browser).await;
    browser.wait_for("#you:not([hidden])").await;
    browser
}

/// `user`'s inbox link, as `POST /v1/inbox/links` gives it (local mode: no agent key).
pub async fn inbox_link(server: &TestServer, user: &str) -> String {
    let (status, body) = server
        .http("POST", "/v1/inbox/links", Some(&json!({"user": user})))
        .await;
    assert_eq!(status, 201, "an inbox link for {user}: {body}");
    body["url"].as_str().expect("a link").to_owned()
}

/// Whether the element `css` is rendered: neither it nor an ancestor `hidden`, `display:
/// none` or folded away (the closed part of a `<details>`).
pub async fn shown(browser: &Browser, css: &str) -> bool {
    let script = "const el = document.querySelector(arguments[0]); \
                  return el !== null && el.checkVisibility();";
    browser.execute(script, json!([css])).await == json!(true)
}

/// An agent that has asked `frame` and had it accepted (the next frame it gets).
pub async fn agent_asking(server: &TestServer, frame: &Value) -> WsClient {
    let mut agent = server.agent().await;
    agent.send(frame).await;
    agent.recv_type("accepted").await;
    agent
}

/// The agent's outcome, which must be `kind` (`answered`, `declined`, `timed_out`, …).
pub async fn outcome(agent: &mut WsClient, kind: &str) -> Value {
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["outcome"], kind, "{outcome}");
    outcome
}

/// The agent's outcome, which must be `kind`, for a dialect whose `result` is its `response`
/// and which has no text for a model (`form`, `claude`).
pub async fn outcome_as_response(agent: &mut WsClient, kind: &str) -> Value {
    let outcome = outcome(agent, kind).await;
    assert_eq!(outcome["result"], outcome["response"], "{outcome}");
    assert_eq!(outcome["model_text"], Value::Null, "{outcome}");
    outcome
}

/// The card of request `id`.
pub fn card(id: &str) -> String {
    format!(r#"article[data-request-id="{id}"]"#)
}

/// The submit button of request `id`.
pub fn submit(id: &str) -> String {
    format!("{} .submit", card(id))
}

/// Inside the card of request `id`, question number `index` (from 0).
pub fn question(id: &str, index: usize) -> String {
    format!(r#"{} fieldset[data-index="{index}"]"#, card(id))
}

/// The option input whose value is `value` in that question.
pub fn option(id: &str, index: usize, value: &str) -> String {
    format!(r#"{} input[value="{value}"]"#, question(id, index))
}

/// The folded card of finished request `id`, in the list under the open questions.
pub fn finished(id: &str) -> String {
    format!(r#"#finished article.is-folded[data-request-id="{id}"]"#)
}

/// The `textContent` of the first element matching `css`; panics if nothing matches.
pub async fn text(browser: &Browser, css: &str) -> String {
    browser
        .text_of(css)
        .await
        .unwrap_or_else(|| panic!("nothing matches {css:?}"))
}

/// The text of the first element matching `css` is `expected`.
pub async fn assert_text(browser: &Browser, css: &str, expected: &str) {
    assert_eq!(text(browser, css).await, expected, "the text of {css}");
}

/// The texts of every element matching `css`, in document order.
pub async fn texts(browser: &Browser, css: &str) -> Value {
    browser
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map((e) => e.textContent);",
            json!([css]),
        )
        .await
}

/// For every element matching `css`, in document order, the texts of its children (a
/// summary's lines, part by part).
pub async fn children_texts(browser: &Browser, css: &str) -> Value {
    browser
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map((li) => \
               [...li.children].map((part) => part.textContent));",
            json!([css]),
        )
        .await
}

/// Whether the submit button of request `id` is disabled.
pub async fn submit_disabled(browser: &Browser, id: &str) -> bool {
    browser.attr(&submit(id), "disabled").await.is_some()
}

/// The frames the page has sent so far about request `id` (with [`RECORD_FRAMES`]).
pub async fn frames_about(browser: &Browser, id: &str) -> Value {
    browser
        .execute(
            "return window.__sent.filter((f) => f.id === arguments[0]);",
            json!([id]),
        )
        .await
}

/// The frames of type `kind` the page has sent so far (with [`RECORD_FRAMES`]).
pub async fn frames_of_type(browser: &Browser, kind: &str) -> Value {
    browser
        .execute(
            "return window.__sent.filter((f) => f.type === arguments[0]);",
            json!([kind]),
        )
        .await
}

/// Clicks `css` once it is in the middle of the window: an element already in view may sit
/// under the page's sticky header, where a click would land on the header.
pub async fn click_centred(browser: &Browser, css: &str) {
    browser.wait_for(css).await;
    browser
        .execute(
            "document.querySelector(arguments[0]).scrollIntoView({block: 'center'});",
            json!([css]),
        )
        .await;
    browser.click(css).await;
}

/// The Decline button of request `id` (it asks "Confirm decline" before it declines).
fn decline_button(id: &str) -> String {
    format!("{} .decline", card(id))
}

/// Declines request `id` as a person does: Decline, then Confirm decline.
pub async fn decline(browser: &Browser, id: &str) {
    let button = decline_button(id);
    browser.click(&button).await;
    confirm_decline(browser, &button).await;
}

/// Declines request `id` as a person does, Decline clicked once it is in the middle of the
/// window ([`click_centred`]), then Confirm decline.
pub async fn decline_centred(browser: &Browser, id: &str) {
    let button = decline_button(id);
    click_centred(browser, &button).await;
    confirm_decline(browser, &button).await;
}

async fn confirm_decline(browser: &Browser, button: &str) {
    browser.wait_for_text(button, "Confirm decline").await;
    browser.click(button).await;
}

/// Reloads the page, waits for the list of endings (from the snapshot's `finished` and the
/// gateway's `history`) to show request `id`, folded; returns the selector of its card.
pub async fn ended_after_reload(browser: &Browser, id: &str) -> String {
    reload(browser).await;
    let folded = finished(id);
    browser.wait_for(&folded).await;
    folded
}

/// No direction control (U+202A–U+202E, U+2066–U+2069) acts anywhere in the text of the
/// element `css`: the page shows each as a mark instead.
pub async fn assert_no_direction_control(browser: &Browser, css: &str) {
    assert_eq!(
        browser
            .execute(
                "return /[\\u202A-\\u202E\\u2066-\\u2069]/.test(\
                 document.querySelector(arguments[0]).textContent);",
                json!([css])
            )
            .await,
        json!(false),
        "no direction control acts anywhere in the card"
    );
}

/// Nothing was made from a hostile test's text: no element of `tags` (a selector list, e.g.
/// `img, script, a`) inside the element `css`, nothing on the page that `attrs` matches (links
/// and handlers, e.g. `[onerror]`), and no script set `window.__pwned`.
pub async fn assert_nothing_made(browser: &Browser, css: &str, tags: &str, attrs: &str) {
    let made = browser
        .execute(
            "return [document.querySelectorAll(arguments[0] + ' :is(' + arguments[1] + ')').length, \
             document.querySelectorAll(arguments[2]).length, \
             window.__pwned ?? null];",
            json!([css, tags, attrs]),
        )
        .await;
    assert_eq!(made, json!([0, 0, null]));
}

/// No script of a hostile test's text ran: none set `window.__pwned`.
pub async fn assert_nothing_ran(browser: &Browser) {
    assert_eq!(
        browser
            .execute("return window.__pwned ?? null;", json!([]))
            .await,
        Value::Null
    );
}

/// Neither the page nor any element matching `css` is wider than its own box, on a phone
/// (360×800) and then on a desktop (1280×900, where the viewport is left). A card clips what
/// overflows it, so the page's width alone would not show a long word running out of its box.
pub async fn assert_fits_phone_and_desktop(browser: &Browser, css: &str) {
    let overflowing = "return [document.documentElement, \
        ...document.querySelectorAll(arguments[0])] \
        .filter((el) => el.clientWidth > 0 && el.scrollWidth > el.clientWidth) \
        .map((el) => `${el.tagName}.${el.className}: ${el.scrollWidth} > ${el.clientWidth}`);";
    for (width, height) in [(360, 800), (1280, 900)] {
        browser.set_viewport_size(width, height).await;
        let offenders = browser.execute(overflowing, json!([css])).await;
        assert_eq!(offenders, json!([]), "at {width} px wide");
    }
}
