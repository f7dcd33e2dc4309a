//! The operator console (`/ops`), in real headless Chromium against a gateway started here:
//! its key form refuses a wrong key and opens on the right one (kept in the tab, forgotten on
//! request); an open request is listed with its fields and withdrawn after a confirmation
//! (the agent gets it withdrawn); an operator a sign-in proxy names needs no key, and a person
//! it names who is no operator is told so; the figures follow a tab arriving; the charts draw
//! the last hour's asks and answers; and the page rides out a gateway restart on the same port
//! and data directory, saying so, then carries on by itself with its key.
//!
//! The console with data showing and its key form are checked with axe-core (light and dark,
//! at 360 px and desktop width); when axe-core is missing the test fails with how to install
//! it, never skips.

use std::net::SocketAddr;
use std::path::Path;

use askgate::config::{Config, StoreKind};
use askgate::keys::AgentKey;
use askgate::people::proxy::Network;
use askgate::server;
use askgate_testkit::TIMEOUT;
use askgate_testkit::frames::{answer, ask};
use askgate_tests::browser::Browser;
use askgate_tests::browser::axe::assert_accessible;
use askgate_tests::browser::page::{agent_asking, text};
use askgate_tests::server::{TestServer, temp_dir, test_config};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const OPERATOR_KEY: &str = "operator-key-1";
const ALICE: &str = "alice@example.com";

/// The console's status line, once it reads the gateway's figures.
const LIVE: &str = r#"#connection[data-state="open"]"#;

/// A local-mode configuration with an operator key.
fn ops_config() -> Config {
    let mut config = test_config();
    config.operator_keys = vec![AgentKey::unscoped(OPERATOR_KEY)];
    config
}

/// A browser on the console's key form.
async fn open_form(server_url: &str) -> Browser {
    let browser = Browser::start().await;
    browser.goto(&format!("{server_url}/ops")).await;
    browser.wait_for("#sign-in:not([hidden])").await;
    browser
}

/// Types `key` in the form and sends it.
async fn sign_in(browser: &Browser, key: &str) {
    browser
        .execute("document.querySelector('#key').value = '';", json!([]))
        .await;
    browser.type_into("#key", key).await;
    browser.click("#key-form .submit").await;
}

/// A browser on the console, signed in with the operator key and showing figures.
async fn open_console(server_url: &str) -> Browser {
    let browser = open_form(server_url).await;
    sign_in(&browser, OPERATOR_KEY).await;
    browser.wait_for("#console:not([hidden])").await;
    browser.wait_for(LIVE).await;
    browser
}

/// The figure `name` of the "Now" list, as shown.
fn figure(name: &str) -> String {
    format!(r#"[data-figure="{name}"] dd"#)
}

/// The row of request `id` of `session`.
fn row(session: &str, id: &str) -> String {
    format!(r#"#requests tr[data-request="{session}/{id}"]"#)
}

/// The console's console errors, less the loads that fail by design: a read without a key or
/// with a wrong one (401; 403 for a key that would let an agent in, which in local mode is any
/// key), after which the form shows, and every read while the gateway is down.
async fn unexpected_console_errors(browser: &Browser) -> Vec<String> {
    browser
        .console_errors()
        .await
        .into_iter()
        .filter(|message| {
            !(message.contains("/v1/")
                && (message.contains("status of 401")
                    || message.contains("status of 403")
                    || message.contains("ERR_CONNECTION")))
        })
        .collect()
}

/// The trimmed text of every cell of the row `css`.
async fn cells(browser: &Browser, css: &str) -> Value {
    browser
        .execute(
            "return [...document.querySelector(arguments[0]).cells]\
             .map((c) => c.textContent.trim());",
            json!([css]),
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_key_form_refuses_a_wrong_key_and_keeps_the_right_one() {
    let server = TestServer::start_with(ops_config()).await;
    let url = server.http_url("");
    let browser = open_form(&url).await;
    // A real label names the field, and nothing was said before a key was tried.
    assert_eq!(
        browser.inputs("#key").await,
        json!([["password", "", "Operator key"]])
    );
    browser.wait_for_no_text("#key-error").await;
    browser
        .wait_for(r#"#connection[data-state="closed"]"#)
        .await;
    assert_accessible(&browser, "the console's key form").await;

    sign_in(&browser, "not-the-key").await;
    browser
        .wait_for_text(
            "#key-error",
            "That key is not an operator key of this gateway.",
        )
        .await;
    assert_eq!(
        browser
            .execute(
                "return document.querySelector('#console').hidden;",
                json!([])
            )
            .await,
        json!(true)
    );

    sign_in(&browser, OPERATOR_KEY).await;
    browser.wait_for("#console:not([hidden])").await;
    browser.wait_for(LIVE).await;
    assert_eq!(text(&browser, &figure("sessions")).await, "0");
    assert_eq!(text(&browser, &figure("open")).await, "0");
    browser.wait_for("#sign-in[hidden]").await;
    // The form's button is gone: the focus is on the console's heading, not lost.
    browser
        .wait_until(
            "return document.activeElement.id === 'console-heading';",
            json!([]),
        )
        .await;
    let kept = "return sessionStorage.getItem('askgate-operator-key');";
    assert_eq!(browser.execute(kept, json!([])).await, json!(OPERATOR_KEY));

    // Kept in the tab: a reload opens the console without the form.
    browser.reload().await;
    browser.wait_for(LIVE).await;
    browser.wait_for("#console:not([hidden])").await;
    browser.wait_for("#forget-key:not([hidden])").await;

    // Forgotten: the form again, and nothing kept.
    browser.click("#forget-key").await;
    browser.wait_for("#sign-in:not([hidden])").await;
    browser.wait_for("#console[hidden]").await;
    assert_eq!(browser.execute(kept, json!([])).await, Value::Null);
    assert_eq!(
        unexpected_console_errors(&browser).await,
        Vec::<String>::new()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_open_request_is_listed_and_withdrawn_after_a_confirmation() {
    let server = TestServer::start_with(ops_config()).await;
    let mut agent = server.agent().await;
    let mut first = ask("billing", "r1", &["Color"], Some(600.0));
    first["title"] = json!("Refund the order?");
    first["answerers"] = json!([ALICE]);
    agent.send(&first).await;
    agent.recv_type("accepted").await;
    agent.send(&ask("alpha", "r2", &["Color"], None)).await;
    agent.recv_type("accepted").await;

    let browser = open_console(&server.http_url("")).await;
    browser.wait_for(&row("alpha", "r2")).await;
    // Oldest first, though the gateway lists the newest first.
    let order = browser
        .execute(
            "return [...document.querySelectorAll('#requests tbody tr')]\
             .map((r) => r.dataset.request);",
            json!([]),
        )
        .await;
    // Oldest first by when asked, ties by session then id: the two may share a millisecond.
    let (status, listed) = askgate_testkit::http::http_url(
        "GET",
        &server.http_url("/v1/requests?state=open"),
        &[("authorization", &format!("Bearer {OPERATOR_KEY}"))],
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    let listed: Value = serde_json::from_str(&listed).expect("the listing is JSON");
    let mut expected: Vec<(u64, String)> = listed["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .map(|r| {
            let key = format!(
                "{}/{}",
                r["session"].as_str().unwrap(),
                r["id"].as_str().unwrap()
            );
            (r["asked_at_ms"].as_u64().unwrap(), key)
        })
        .collect();
    expected.sort();
    let expected: Vec<String> = expected.into_iter().map(|(_, key)| key).collect();
    assert_eq!(order, json!(expected));
    let shown = cells(&browser, &row("billing", "r1")).await;
    assert_eq!(shown[0], "billing");
    assert_eq!(shown[1], "r1Refund the order?");
    assert_eq!(shown[2], "harness");
    assert!(shown[3].as_str().unwrap().ends_with(" s"), "age: {shown}");
    assert!(
        shown[4].as_str().unwrap().starts_with("9 min") || shown[4] == "10 min",
        "time left: {shown}"
    );
    assert_eq!(shown[5], ALICE);
    assert_eq!(shown[6], "connected");
    assert_eq!(shown[7], "0");
    let other = cells(&browser, &row("alpha", "r2")).await;
    assert_eq!(
        (&other[4], &other[5]),
        (&json!("no deadline"), &json!("anyone with the link"))
    );
    assert_eq!(text(&browser, &figure("open")).await, "2");

    // Withdraw, then No: nothing happens and the button is back.
    let action = format!("{} .ops-action", row("billing", "r1"));
    browser.click(&format!("{action} .ops-withdraw")).await;
    browser
        .wait_for_text(&format!("{action} .ops-confirm"), "Withdraw r1?")
        .await;
    assert_eq!(
        browser
            .execute("return document.activeElement.textContent;", json!([]))
            .await,
        json!("No"),
        "the harmless answer has the focus"
    );
    // Asked, and read again meanwhile: the question stays.
    let refreshed = text(&browser, "#updated").await;
    browser
        .wait_until(
            "return document.querySelector('#updated').textContent !== arguments[0];",
            json!([refreshed]),
        )
        .await;
    browser.find(&format!("{action} .ops-confirm-yes")).await;
    assert_accessible(&browser, "the console with a withdrawal to confirm").await;
    browser.click(&format!("{action} .ops-confirm-no")).await;
    browser.wait_for(&format!("{action} .ops-withdraw")).await;
    assert_eq!(browser.find_all_count(&row("billing", "r1")).await, 1);

    // Withdraw, then Yes: the agent has it withdrawn, and the page says so.
    browser.click(&format!("{action} .ops-withdraw")).await;
    browser.click(&format!("{action} .ops-confirm-yes")).await;
    browser
        .wait_for_text(
            "#withdraw-result",
            "Withdrew request r1 of session billing.",
        )
        .await;
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(
        (outcome["id"].as_str(), outcome["outcome"].as_str()),
        (Some("r1"), Some("withdrawn"))
    );
    browser.wait_gone(&row("billing", "r1")).await;
    browser.wait_for_text(&figure("open"), "1").await;
    assert_eq!(
        unexpected_console_errors(&browser).await,
        Vec::<String>::new()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_figures_follow_a_tab_arriving() {
    let server = TestServer::start_with(ops_config()).await;
    let browser = open_console(&server.http_url("")).await;
    assert_eq!(text(&browser, &figure("tabs")).await, "0");
    let (_tab, _) = server.tab("watched").await;
    browser.wait_for_text(&figure("tabs"), "1").await;
    browser.wait_for_text(&figure("sessions"), "1").await;
    assert_eq!(
        unexpected_console_errors(&browser).await,
        Vec::<String>::new()
    );
}

/// A console in a hidden tab stops reading (each read walks every open request and every
/// node's report) and reads again once shown.
#[tokio::test(flavor = "multi_thread")]
async fn a_hidden_console_stops_reading_until_it_is_shown() {
    let server = TestServer::start_with(ops_config()).await;
    let browser = open_console(&server.http_url("")).await;
    // The page is told it is hidden, and its reads are counted from here on.
    browser
        .execute(
            "window.__hidden = true; \
             Object.defineProperty(document, 'hidden', {configurable: true, get: () => window.__hidden}); \
             window.__reads = 0; const fetched = window.fetch; \
             window.fetch = (...a) => { window.__reads += 1; return fetched(...a); };",
            json!([]),
        )
        .await;
    // The read planned before ends, and says the console is paused.
    browser
        .wait_for(r#"#connection[data-state="paused"]"#)
        .await;
    let paused_at = browser.execute("return window.__reads", json!([])).await;
    // Not a wait for something to happen but a check that nothing does: two refresh periods,
    // in which a console that kept reading would have read again (one slow to only weakens
    // the check, never fails it).
    tokio::time::sleep(std::time::Duration::from_millis(6_500)).await;
    assert_eq!(
        browser.execute("return window.__reads", json!([])).await,
        paused_at,
        "read while hidden"
    );
    let (_tab, _) = server.tab("watched").await;
    browser
        .execute(
            "window.__hidden = false; document.dispatchEvent(new Event('visibilitychange'));",
            json!([]),
        )
        .await;
    browser.wait_for(LIVE).await;
    browser.wait_for_text(&figure("tabs"), "1").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_charts_draw_the_last_hours_asks_and_answers() {
    let server = TestServer::start_with(ops_config()).await;
    for id in ["r1", "r2", "r3"] {
        let (mut tab, mut agent) = server.asked_request("charted", id).await;
        tab.send(&answer(id, &["Color"], "Red")).await;
        agent.recv_type("outcome").await;
    }
    let browser = open_console(&server.http_url("")).await;
    let rate = r#"figure[data-chart="rate"]"#;
    // Three asks, each minute's count ÷ 60 a second: the hidden table's figures, times 60,
    // add up to 3 (whichever minutes they fell in).
    let asks = browser
        .wait_until(
            "const rows = [...document.querySelectorAll(arguments[0] + ' table tbody tr')]; \
             const sum = rows.reduce((s, r) => s + parseFloat(r.cells[1].textContent), 0); \
             return Math.round(sum * 60) === 3 && sum;",
            json!([rate]),
        )
        .await;
    assert!(asks.as_f64().is_some(), "{asks}");
    browser
        .wait_for_text(&format!("{rate} desc"), "Asks: latest ")
        .await;
    assert!(
        browser
            .find_all_count(&format!(
                "{rate} .chart-series-0 path, {rate} .chart-series-0 circle"
            ))
            .await
            > 0,
        "the asks are drawn"
    );
    let label = browser
        .execute(
            "const svg = document.querySelector(arguments[0] + ' svg'); \
             return document.getElementById(svg.getAttribute('aria-labelledby')).textContent;",
            json!([rate]),
        )
        .await;
    assert_eq!(label, json!("Asks and answers a second"));
    let hidden_rows = browser
        .find_all_count(&format!("{rate} table.visually-hidden tbody tr"))
        .await;
    assert!(hidden_rows >= 1, "the figures are in the hidden table too");
    for chart in ["ask-to-tab", "answer-to-agent", "answer-time"] {
        browser
            .wait_for(&format!(r#"figure[data-chart="{chart}"] svg[role="img"]"#))
            .await;
    }
    browser
        .wait_for_text(r#"figure[data-chart="answer-time"] desc"#, "3 answers")
        .await;
    assert!(
        browser
            .find_all_count(r#"figure[data-chart="answer-time"] rect"#)
            .await
            >= 1,
        "the answers' bar is drawn"
    );
    assert_accessible(&browser, "the console with its charts").await;
    assert_eq!(
        unexpected_console_errors(&browser).await,
        Vec::<String>::new()
    );
}

/// Run before the page's scripts: every call the page makes carries `user` in the header a
/// sign-in proxy would add, as if the page were served through one.
fn behind_proxy(user: &str) -> String {
    format!(
        "(() => {{ const plain = window.fetch; \
         window.fetch = (url, options = {{}}) => plain(url, Object.assign({{}}, options, \
           {{ headers: Object.assign({{}}, options.headers, {{ 'x-forwarded-email': {user:?} }}) }})); \
         }})();"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_named_by_the_proxy_needs_no_key() {
    let mut config = ops_config();
    config.people.user_header = Some("x-forwarded-email".parse().expect("a header name"));
    config.people.trusted_proxies = vec![Network::parse("127.0.0.1/32").expect("a network")];
    config.people.operators = vec![ALICE.to_owned()];
    let server = TestServer::start_with(config).await;
    let mut agent = agent_asking(&server, &ask("proxied", "r1", &["Color"], None)).await;

    let alice = Browser::start().await;
    alice.run_before_each_load(&behind_proxy(ALICE)).await;
    alice.goto(&server.http_url("/ops")).await;
    alice.wait_for(LIVE).await;
    alice.wait_for(&row("proxied", "r1")).await;
    for hidden in ["#sign-in", "#forget-key"] {
        let script = "return document.querySelector(arguments[0]).hidden;";
        assert_eq!(
            alice.execute(script, json!([hidden])).await,
            json!(true),
            "{hidden}"
        );
    }
    // She withdraws as an operator, with no key either.
    let action = format!("{} .ops-action", row("proxied", "r1"));
    alice.click(&format!("{action} .ops-withdraw")).await;
    alice.click(&format!("{action} .ops-confirm-yes")).await;
    alice
        .wait_for_text(
            "#withdraw-result",
            "Withdrew request r1 of session proxied.",
        )
        .await;
    assert_eq!(agent.recv_type("outcome").await["outcome"], "withdrawn");

    // Bob is named too, and no operator: the form, and the gateway's reason.
    let bob = Browser::start().await;
    bob.run_before_each_load(&behind_proxy("bob@example.com"))
        .await;
    bob.goto(&server.http_url("/ops")).await;
    bob.wait_for("#sign-in:not([hidden])").await;
    bob.wait_for_text("#key-error", "bob@example.com is not an operator")
        .await;
    assert_eq!(
        unexpected_console_errors(&alice).await,
        Vec::<String>::new()
    );
}

/// A gateway this test starts on an address it chooses, so a second can take the first's
/// port; stopped when dropped.
struct Gateway {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl Gateway {
    async fn start(config: &Config, addr: SocketAddr) -> Self {
        let listener = TcpListener::bind(addr).await.expect("bind the address");
        let state = server::build(config, &format!("http://{addr}"))
            .await
            .expect("server state");
        let (stop, stopped) = oneshot::channel::<()>();
        let config = config.clone();
        let task = tokio::spawn(async move {
            server::serve(listener, state, &config, async {
                let _ = stopped.await;
            })
            .await
        });
        Gateway {
            stop: Some(stop),
            task,
        }
    }

    /// Stops it and waits until it has (its store closed, its port free).
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let task = &mut self.task;
        tokio::time::timeout(TIMEOUT, task)
            .await
            .expect("stopped in time")
            .expect("the server task")
            .expect("served");
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn durable(dir: &Path) -> Config {
    let mut config = ops_config();
    config.store = StoreKind::Embedded;
    config.data_dir = dir.to_path_buf();
    config
}

#[tokio::test(flavor = "multi_thread")]
async fn the_console_rides_out_a_gateway_restart() {
    let dir = temp_dir("ops-restart");
    let config = durable(&dir);
    // A port of its own: bound once to learn it, then free for both gateways.
    let addr = {
        let probe = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        probe.local_addr().expect("its address")
    };
    let first = Gateway::start(&config, addr).await;
    let mut agent =
        askgate_testkit::ws::WsClient::connect(&format!("ws://{addr}/v1/agent"), None).await;
    agent.send(&ask("kept", "r1", &["Color"], None)).await;
    agent.recv_type("accepted").await;
    let url = format!("http://{addr}");
    let browser = open_console(&url).await;
    browser.wait_for(&row("kept", "r1")).await;

    drop(agent);
    first.stop().await;
    browser
        .wait_for(r#"#connection[data-state="reconnecting"]"#)
        .await;
    assert_eq!(
        text(&browser, "#connection").await,
        "Gateway unreachable — retrying"
    );
    assert_eq!(
        browser.attr("#connection", "role").await.as_deref(),
        Some("status")
    );
    // What was last read stays on screen meanwhile.
    browser.find(&row("kept", "r1")).await;

    let second = Gateway::start(&config, addr).await;
    browser.wait_for(LIVE).await;
    assert_eq!(text(&browser, "#connection").await, "Live");
    // The same key, never asked again, and the request the store kept.
    browser.wait_for("#sign-in[hidden]").await;
    browser.wait_for(&row("kept", "r1")).await;
    let kept = "return sessionStorage.getItem('askgate-operator-key');";
    assert_eq!(browser.execute(kept, json!([])).await, json!(OPERATOR_KEY));
    assert_eq!(
        unexpected_console_errors(&browser).await,
        Vec::<String>::new()
    );
    second.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
