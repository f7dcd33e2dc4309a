//! "Notify me on this device" (Web Push) in real headless Chromium, against a gateway started
//! here: alice's personal link and her inbox offer it, the button registers `/sw.js` and asks
//! the browser for a push subscription, the device the gateway keeps is listed and its Remove
//! button removes it; an anonymous link holder, and every page of a gateway without `[push]`,
//! are offered nothing.
//!
//! This Chromium has no internet, so its push service cannot be reached and the browser's own
//! subscription most likely fails: the page must then say so, and the test sends the
//! subscription itself, from the page, as the page would have (printing that it did).
//!
//! Every state with the section shown is checked with axe-core (light and dark, at 360 px and
//! desktop width); when axe-core is missing the test fails with how to install it, never skips.

use askgate::notify::settings::FromEnv;
use askgate::notify::{DEFAULT_RETRY_FOR, NotifyConfig, NotifySettings};
use askgate::people::Groups;
use askgate_tests::browser::Browser;
use askgate_tests::browser::axe::assert_accessible;
use askgate_tests::browser::page::{
    inbox_link, open_link, page_url, personal_link, reload, shown, text, wait_connected,
};
use askgate_tests::server::{TestServer, test_config};
use serde_json::{Value, json};

const ALICE: &str = "alice@example.com";

/// What the page calls this headless Chromium on Linux (its brands are "Chromium" and a
/// made-up one).
const LABEL: &str = "Chromium on Linux";

/// What the status line says while the browser is still being asked.
const ASKING: &str = "Asking this browser…";

/// A gateway that knows alice, with Web Push set up when `push` (else no `[push]` at all).
async fn server_knowing_alice(push: bool) -> TestServer {
    let mut text = format!("[people.\"{ALICE}\"]\nemail = \"{ALICE}\"\n");
    if push {
        text.push_str("\n[push]\nsubject = \"mailto:ops@example.com\"\n");
    }
    let settings = NotifySettings::parse(
        &text,
        "notify.toml",
        &mut Groups::default(),
        &FromEnv::default(),
    )
    .expect("the notify file reads");
    let mut config = test_config();
    config.notify = Some(NotifyConfig {
        settings,
        retry_for: DEFAULT_RETRY_FOR,
        allow_private: true,
        // Derived from the store's secret, as a gateway started without --vapid-key-file does.
        vapid_key: None,
    });
    TestServer::start_with(config).await
}

/// The gateway's origin, as a permission is granted to it.
fn origin(server: &TestServer) -> String {
    server.http_url("").trim_end_matches('/').to_owned()
}

/// Whether the page has finished a request whose URL contains `arguments[0]` (a resource
/// timing entry appears once the response has been read), as a wait's script: null if not.
const REQUESTED: &str = "return performance.getEntriesByType('resource')\
                         .some((entry) => entry.name.includes(arguments[0])) || null;";

/// The labels of the devices the section lists, in order.
async fn device_labels(browser: &Browser) -> Value {
    let script = "return [...document.querySelectorAll('#push-devices .push-device-label')]\
                  .map((label) => label.textContent);";
    browser.execute(script, json!([])).await
}

/// The script URL of the page's service worker registration, once there is one.
async fn service_worker_script(browser: &Browser) -> String {
    // A wait polls a synchronous script: each look starts the asynchronous lookup and returns
    // what the one before it found.
    let script = "navigator.serviceWorker.getRegistration('/').then((registration) => { \
                    const worker = registration && (registration.active || registration.waiting \
                      || registration.installing); \
                    window.__workerScript = worker ? worker.scriptURL : null; }); \
                  return window.__workerScript || null;";
    let found = browser.wait_until(script, json!([])).await;
    found.as_str().expect("a script URL").to_owned()
}

/// What the section's status line says once the browser has answered the button.
async fn outcome_of_subscribing(browser: &Browser) -> String {
    let script = "const said = document.querySelector('#push-status').textContent; \
                  return said && said !== arguments[0] ? said : null;";
    let said = browser.wait_until(script, json!([ASKING])).await;
    said.as_str().expect("a sentence").to_owned()
}

/// Posts a subscription for this browser the way the page does (its key as a bearer token,
/// the session in the query, `toJSON()`'s shape plus a label), with a made-up push service
/// address and a real P-256 public key made in the page, since the gateway checks it is one;
/// the gateway must keep it.
async fn post_subscription_as_the_page(browser: &Browser, key: &str, session: &str, label: &str) {
    let start = "const [key, session, label] = arguments; \
        window.__posted = null; \
        const base64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))) \
          .replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, ''); \
        (async () => { \
          const pair = await crypto.subtle.generateKey( \
            { name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits']); \
          const p256dh = base64url(await crypto.subtle.exportKey('raw', pair.publicKey)); \
          const auth = base64url(crypto.getRandomValues(new Uint8Array(16))); \
          const response = await fetch('/v1/push/subscriptions?session=' + \
            encodeURIComponent(session), { \
            method: 'POST', \
            headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' }, \
            body: JSON.stringify({ endpoint: 'https://push.example/abc', \
              keys: { p256dh, auth }, label }), \
          }); \
          return response.status + ' ' + await response.text(); \
        })().then((said) => { window.__posted = said; }, \
                  (error) => { window.__posted = 'failed: ' + error; }); \
        return true;";
    browser.execute(start, json!([key, session, label])).await;
    let posted = browser
        .wait_until("return window.__posted;", json!([]))
        .await;
    let posted = posted.as_str().expect("a status and body");
    assert!(
        posted.starts_with("201 "),
        "the gateway keeps the subscription: {posted}"
    );
}

/// alice's personal link offers the button (and passes axe-core); pressing it registers
/// `/sw.js` and asks for a subscription. Whether the browser manages (it has no push service
/// here) or not (the page says so), a device of hers is then listed after a reload, with a
/// Remove button that removes it. A plain session link offers nothing.
#[tokio::test(flavor = "multi_thread")]
async fn alice_adds_this_device_and_removes_it() {
    let server = server_knowing_alice(true).await;
    let (url, key, _) = personal_link(&server, "s", ALICE, 86_400.0).await;
    let browser = Browser::start().await;
    browser.grant_notifications(&origin(&server)).await;
    browser.goto(&url).await;
    wait_connected(&browser).await;
    browser.wait_for("#push:not([hidden])").await;
    assert_eq!(
        text(&browser, "#push-subscribe").await,
        "Notify me on this device"
    );
    assert_eq!(text(&browser, "#push-none").await, "None yet.");
    assert_accessible(&browser, "the push section, no device yet").await;

    browser.click("#push-subscribe").await;
    let script = service_worker_script(&browser).await;
    assert_eq!(script, server.http_url("/sw.js"));
    let said = outcome_of_subscribing(&browser).await;
    if said.starts_with("Subscribed") {
        assert_eq!(device_labels(&browser).await, json!([LABEL]));
    } else {
        assert!(
            said.starts_with("This browser cannot subscribe to notifications here ("),
            "the page says why: {said}"
        );
        println!(
            "push: this Chromium could not subscribe ({said}); the test posts a subscription \
             from the page itself, as the page would have"
        );
        post_subscription_as_the_page(&browser, &key, "s", LABEL).await;
    }
    assert_eq!(browser.console_errors().await, Vec::<String>::new());

    reload(&browser).await;
    browser.wait_for("#push-devices .push-device").await;
    // The page's own label for this browser, or the one the test sent in its place.
    assert_eq!(device_labels(&browser).await, json!([LABEL]));
    assert!(
        browser
            .text_of("#push-devices .push-device-when")
            .await
            .is_some_and(|when| when.starts_with("added at ")),
        "the device says when it was added"
    );
    let remove = "#push-devices .push-device .push-remove";
    assert!(
        browser
            .attr(remove, "aria-label")
            .await
            .is_some_and(|name| name.starts_with("Remove ")),
        "each Remove button names its device"
    );
    assert_accessible(&browser, "the push section with one device").await;

    browser.click(remove).await;
    browser.wait_gone("#push-devices .push-device").await;
    browser.wait_for("#push-none:not([hidden])").await;
    browser.wait_for_text("#push-status", "removed").await;
    // The list is the gateway's: after a reload it is still empty.
    reload(&browser).await;
    browser.wait_for("#push:not([hidden])").await;
    assert_eq!(device_labels(&browser).await, json!([]));

    // The plain session link names no one: nobody to keep devices for.
    let anonymous = open_link(&page_url(&server, "s")).await;
    assert!(
        text(&anonymous, "#you").await.contains("Anonymous"),
        "the session link is anonymous"
    );
    assert!(!shown(&anonymous, "#push").await);
}

/// alice's inbox offers the button too (its key is the inbox key; no session), and passes
/// axe-core with it.
#[tokio::test(flavor = "multi_thread")]
async fn alices_inbox_offers_this_device() {
    let server = server_knowing_alice(true).await;
    let inbox = open_link(&inbox_link(&server, ALICE).await).await;
    inbox.wait_for("#push:not([hidden])").await;
    assert_eq!(text(&inbox, "#push-none").await, "None yet.");
    assert_accessible(&inbox, "the inbox's push section").await;
}

/// A gateway without `[push]` answers 404 for its key: neither alice's page nor her inbox
/// shows the section, nor asks for her devices.
#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_without_push_offers_nothing() {
    let server = server_knowing_alice(false).await;
    let (url, _, _) = personal_link(&server, "s", ALICE, 86_400.0).await;
    for link in [url, inbox_link(&server, ALICE).await] {
        let browser = open_link(&link).await;
        browser.wait_until(REQUESTED, json!(["/v1/push/key"])).await;
        assert!(!shown(&browser, "#push").await, "{link}");
        let devices_asked = browser
            .execute(REQUESTED, json!(["/v1/push/subscriptions"]))
            .await;
        assert_eq!(devices_asked, Value::Null, "{link}");
    }
}
