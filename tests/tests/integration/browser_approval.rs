//! The answer page's tool-call approval cards (the `approval` dialect) in a real headless
//! Chromium: an agent asks before it runs tool calls, the test decides them in the page
//! (approve, edit, reject, respond, approve all), and checks what the page shows, what it
//! sent, and the outcome the agent gets.
//!
//! Every frame the page sends is recorded in the page (`window.__sent`, by
//! `page::RECORD_FRAMES`), so a test can tell that nothing went out, without waiting for
//! silence. Each card state is also checked with axe-core (no violation, light and dark, 360 px
//! and desktop width). axe-core is the npm package `axe-core`, looked for at
//! `$ASKGATE_AXE_CORE` or `.venv/axe/node_modules/axe-core/axe.min.js`; when it is missing the
//! test fails with how to install it, never skips.

use askgate_testkit::ws::WsClient;
use askgate_tests::browser::Browser;
use askgate_tests::browser::axe::assert_accessible;
use askgate_tests::browser::page::{
    agent_asking, assert_fits_phone_and_desktop, assert_no_direction_control, assert_nothing_made,
    assert_nothing_ran, assert_text, card, children_texts, click_centred, decline,
    ended_after_reload, finished, frames_of_type, open_link, open_page, open_recording_page,
    outcome, personal_link, submit, submit_disabled, text, texts,
};
use askgate_tests::server::TestServer;
use serde_json::{Value, json};

/// The run_sql call of the wire contract: a flat schema, every decision allowed.
fn run_sql() -> Value {
    json!({"name": "run_sql", "args": {"query": "DROP TABLE users"},
           "description": "Run a SQL statement",
           "args_schema": {"type": "object",
                           "properties": {"query": {"type": "string", "minLength": 1}},
                           "required": ["query"], "additionalProperties": false},
           "decisions": ["approve", "edit", "reject", "respond"]})
}

/// A call with no schema and the default decisions (approve, reject).
fn send_email() -> Value {
    json!({"name": "send_email", "args": {"to": "a@b.c", "body": "hi"}})
}

/// An agent that has asked, as request `id` on session `s`, for `calls` (a list) to be
/// approved, and had it accepted.
async fn asking_approval(server: &TestServer, id: &str, calls: Value) -> WsClient {
    let frame = json!({"type": "ask", "session": "s", "id": id, "dialect": "approval",
                       "calls": calls});
    agent_asking(server, &frame).await
}

/// A gateway, a recording page on session `s`, and an agent that has asked for `calls` (a
/// list) to be approved as request `r1`, accepted.
async fn approval_page(calls: Value) -> (TestServer, Browser, WsClient) {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let agent = asking_approval(&server, "r1", calls).await;
    (server, browser, agent)
}

/// Call number `index` (from 0) of request `id`.
fn call(id: &str, index: usize) -> String {
    format!(r#"{} .call[data-index="{index}"]"#, card(id))
}

/// The radio for decision `kind` of that call.
fn decision(id: &str, index: usize, kind: &str) -> String {
    format!(r#"{} input[type="radio"][value="{kind}"]"#, call(id, index))
}

/// Replaces the whole text of the text box `css` with `text`, typed key by key.
async fn replace_text(browser: &Browser, css: &str, text: &str) {
    browser
        .execute(
            "const box = document.querySelector(arguments[0]); box.focus(); box.select();",
            json!([css]),
        )
        .await;
    browser.type_into(css, text).await;
}

/// The top-level argument rows of the call at `call_css`, each `[key, value]` as shown.
async fn arg_rows(browser: &Browser, call_css: &str) -> Value {
    browser
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map((row) => \
             [row.querySelector('.arg-key').textContent, \
              row.querySelector('.arg-value').textContent]);",
            json!([format!("{call_css} .argtree > .arg")]),
        )
        .await
}

/// A call is shown with its name, the agent's description and its arguments, under a line
/// saying it comes from the agent; Approve sends `approve`, and the agent runs it as asked.
#[tokio::test(flavor = "multi_thread")]
async fn approving_runs_the_call_as_asked() {
    let (_server, browser, mut agent) = approval_page(json!([run_sql()])).await;

    let first = call("r1", 0);
    browser.wait_for(&first).await;
    assert_text(
        &browser,
        &format!("{} .card-origin", card("r1")),
        "Tool call requested by the agent — check it before you approve. \
         askgate never asks for passwords or keys.",
    )
    .await;
    assert_text(&browser, &format!("{first} .call-name"), "run_sql").await;
    assert_text(
        &browser,
        &format!("{first} .call-desc-text"),
        "Run a SQL statement",
    )
    .await;
    let rows = arg_rows(&browser, &first).await;
    assert_eq!(rows, json!([["query", "DROP TABLE users"]]));
    let offered = browser
        .inputs(&format!(r#"{first} input[type="radio"]"#))
        .await;
    let labels: Vec<&str> = offered
        .as_array()
        .expect("a list")
        .iter()
        .map(|i| i[1].as_str().expect("a value"))
        .collect();
    assert_eq!(labels, ["approve", "edit", "reject", "respond"]);
    assert!(submit_disabled(&browser, "r1").await, "nothing decided yet");
    assert_eq!(
        browser
            .find_all_count(&format!("{} .approve-all", card("r1")))
            .await,
        0,
        "one call: no Approve all"
    );

    browser.click(&decision("r1", 0, "approve")).await;
    browser.click(&submit("r1")).await;

    let outcome = outcome(&mut agent, "answered").await;
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "approve"}]})
    );
    assert_eq!(
        outcome["result"],
        json!([{"name": "run_sql", "decision": "approve",
                "args": {"query": "DROP TABLE users"}}])
    );
    assert_eq!(outcome["model_text"], "run_sql: approved");
    browser
        .wait_for_text(&format!("{} .card-status", card("r1")), "Sent ✓")
        .await;
    // Folded, an untitled approval is named by its call.
    let folded = finished("r1");
    browser.wait_for(&folded).await;
    assert_text(
        &browser,
        &format!("{folded} .folded-what"),
        "Tool call run_sql",
    )
    .await;
    assert_eq!(browser.console_errors().await, Vec::<String>::new());
}

/// Reject takes an optional reason, which the agent is told; a call without `decisions`
/// offers only Approve and Reject.
#[tokio::test(flavor = "multi_thread")]
async fn rejecting_tells_the_agent_why() {
    let (_server, browser, mut agent) = approval_page(json!([send_email()])).await;

    let only = call("r1", 0);
    browser.wait_for(&only).await;
    let offered = browser
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map((i) => i.value);",
            json!([format!(r#"{only} input[type="radio"]"#)]),
        )
        .await;
    assert_eq!(offered, json!(["approve", "reject"]));
    let reason = format!("{only} textarea.call-reason");
    let visible = "return document.querySelector(arguments[0]).checkVisibility();";
    assert_eq!(
        browser.execute(visible, json!([reason])).await,
        json!(false),
        "the reason waits for Reject"
    );
    browser.click(&decision("r1", 0, "reject")).await;
    browser.wait_until(visible, json!([reason])).await;
    // A reason is optional: the decision is complete without one.
    browser
        .wait_for(&format!("{}:not([disabled])", submit("r1")))
        .await;
    browser
        .type_into(&reason, "Not before the review.\nAsk Dana first.")
        .await;
    browser.click(&submit("r1")).await;

    let outcome = outcome(&mut agent, "answered").await;
    let message = "Not before the review.\nAsk Dana first.";
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "reject", "message": message}]})
    );
    assert_eq!(
        outcome["result"],
        json!([{"name": "send_email", "decision": "reject",
                "args": {"to": "a@b.c", "body": "hi"}, "message": message}])
    );
    assert_eq!(
        outcome["model_text"],
        format!("send_email: rejected: {message}")
    );
}

/// Edit opens the arguments in a form (the schema is flat); an edit that breaks the schema
/// is named beside the call and never sent, in the form and as JSON; a valid one shows what
/// it changes, and the agent gets the edited arguments.
#[tokio::test(flavor = "multi_thread")]
async fn an_edit_is_checked_before_it_is_sent() {
    let (_server, browser, mut agent) = approval_page(json!([run_sql()])).await;

    let only = call("r1", 0);
    let error = format!("{only} .question-error");
    browser.click(&decision("r1", 0, "edit")).await;
    let field = format!(r#"{only} .edit-field[data-key="query"] textarea"#);
    browser.wait_for(&field).await;
    assert_text(
        &browser,
        &format!("{only} .edit-note"),
        "Your edit is checked against the tool's argument schema before it is sent.",
    )
    .await;
    assert_text(
        &browser,
        &format!("{only} .edit-diff"),
        "No changes yet. Change an argument, or pick Approve to run the call as it is.",
    )
    .await;
    assert!(submit_disabled(&browser, "r1").await, "an unchanged edit");

    // Emptied, the query breaks minLength.
    replace_text(&browser, &field, "\u{E003}").await;
    browser
        .wait_for_text(
            &error,
            "query: must be at least 1 character long, and it is empty",
        )
        .await;
    browser
        .wait_for(&format!("{only} fieldset.has-error"))
        .await;
    assert!(submit_disabled(&browser, "r1").await);

    // As JSON, a number where the schema wants a string, and an argument it does not take.
    browser.click(&format!("{only} .edit-toggle")).await;
    let json_box = format!("{only} textarea.edit-json");
    browser
        .wait_until(
            "return document.activeElement === document.querySelector(arguments[0]);",
            json!([json_box]),
        )
        .await;
    replace_text(&browser, &json_box, r#"{"query": 5}"#).await;
    browser
        .wait_for_text(&error, "query: expected a string, got an integer")
        .await;
    replace_text(&browser, &json_box, r#"{"query": "SELECT 1", "limit": 1}"#).await;
    browser
        .wait_for_text(&error, "limit: not an argument this tool takes")
        .await;
    replace_text(&browser, &json_box, "[1, 2]").await;
    browser
        .wait_for_text(&error, "arguments: expected a JSON object")
        .await;
    // Ctrl+Enter, the keyboard's submit, sends nothing while the edit is wrong.
    browser
        .type_into(&json_box, "\u{E009}\u{E007}\u{E009}")
        .await;
    browser
        .wait_for_text(
            &format!("{} .card-status", card("r1")),
            "Pick a decision for every call, and fix anything marked, to submit.",
        )
        .await;
    assert_eq!(frames_of_type(&browser, "answer").await, json!([]));

    replace_text(&browser, &json_box, "{\n  \"query\": \"SELECT 1\"\n}").await;
    browser
        .wait_gone(&format!("{only} fieldset.has-error"))
        .await;
    let change = format!(r#"{only} .edit-diff li[data-change="changed"]"#);
    browser.wait_for(&change).await;
    let pieces = browser
        .execute(
            "return [...document.querySelector(arguments[0]).children].map((e) => e.textContent);",
            json!([change]),
        )
        .await;
    assert_eq!(
        pieces,
        json!([
            "Changed",
            "query",
            r#"was: "DROP TABLE users""#,
            r#"now: "SELECT 1""#
        ])
    );
    assert_eq!(
        browser
            .find_all_count(&format!("{only} .edit-diff li"))
            .await,
        1
    );
    browser
        .wait_for(&format!("{}:not([disabled])", submit("r1")))
        .await;
    browser.click(&submit("r1")).await;

    let outcome = outcome(&mut agent, "answered").await;
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "edit", "args": {"query": "SELECT 1"}}]})
    );
    assert_eq!(
        outcome["result"],
        json!([{"name": "run_sql", "decision": "edit", "args": {"query": "SELECT 1"}}])
    );
    assert_eq!(outcome["model_text"], "run_sql: edited");
    assert_eq!(
        frames_of_type(&browser, "answer")
            .await
            .as_array()
            .map(Vec::len),
        Some(1),
        "only the valid edit went out"
    );
}

/// A flat schema's arguments are edited in a form: a text, a whole number, a pick from an
/// enum and a boolean, each labelled with its key; the agent gets the form's arguments, an
/// optional one left empty left out.
#[tokio::test(flavor = "multi_thread")]
async fn a_flat_schema_is_edited_in_a_form() {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let search = json!({"name": "search", "args": {"q": "cats", "limit": 10, "mode": "fast"},
        "args_schema": {"type": "object", "properties": {
            "q": {"type": "string", "description": "What to look for"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "mode": {"enum": ["fast", "thorough"]},
            "safe": {"type": "boolean"}},
            "required": ["q"]},
        "decisions": ["approve", "edit"]});
    let mut agent = asking_approval(&server, "r1", json!([search])).await;

    let only = call("r1", 0);
    browser.click(&decision("r1", 0, "edit")).await;
    browser.wait_for(&format!("{only} .edit-form")).await;
    let labels = browser
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map((row) => { \
               const control = row.querySelector('.edit-input'); \
               return [control.labels[0].textContent, control.tagName, control.value]; });",
            json!([format!("{only} .edit-field")]),
        )
        .await;
    assert_eq!(
        labels,
        json!([
            ["q (text, required)", "TEXTAREA", "cats"],
            [
                "limit (whole number, optional: leave empty to leave it out)",
                "INPUT",
                "10"
            ],
            ["mode (pick one, optional)", "SELECT", "0"],
            ["safe (true or false, optional)", "SELECT", ""]
        ])
    );
    let limit = format!(r#"{only} .edit-field[data-key="limit"] input"#);
    let error = format!("{only} .question-error");
    replace_text(&browser, &limit, "500").await;
    browser
        .wait_for_text(&error, "limit: must be at most 50")
        .await;
    replace_text(&browser, &limit, "2.5").await;
    browser
        .wait_for_text(&error, "limit: expected an integer, got a number")
        .await;
    replace_text(&browser, &limit, "\u{E003}").await;
    browser
        .wait_gone(&format!("{only} fieldset.has-error"))
        .await;
    browser
        .execute(
            "for (const [key, value] of [['mode', '1'], ['safe', '0']]) { \
               const select = document.querySelector(arguments[0] + \
                 ` .edit-field[data-key=\"${key}\"] select`); \
               select.value = value; select.dispatchEvent(new Event('change')); }",
            json!([only]),
        )
        .await;
    let kinds = browser
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map((li) => \
             [li.dataset.change, li.querySelector('.edit-change-key').textContent]);",
            json!([format!("{only} .edit-diff li")]),
        )
        .await;
    assert_eq!(
        kinds,
        json!([["removed", "limit"], ["changed", "mode"], ["added", "safe"]])
    );
    browser.click(&submit("r1")).await;

    let outcome = outcome(&mut agent, "answered").await;
    let edited = json!({"q": "cats", "mode": "thorough", "safe": true});
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "edit", "args": edited}]})
    );
    assert_eq!(outcome["result"][0]["args"], edited);
}

/// A schema with a keyword askgate does not check: the gateway says so (`edit_note`), the
/// page shows it, and an edit need only be a JSON object.
#[tokio::test(flavor = "multi_thread")]
async fn an_unchecked_schema_asks_only_for_an_object() {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let lookup = json!({"name": "lookup", "args": {"id": "A-1"},
        "args_schema": {"type": "object",
                        "properties": {"id": {"type": "string", "pattern": "^[A-Z]-[0-9]+$"}}},
        "decisions": ["approve", "edit"]});
    let mut agent = asking_approval(&server, "r1", json!([lookup])).await;

    let only = call("r1", 0);
    browser.click(&decision("r1", 0, "edit")).await;
    let json_box = format!("{only} textarea.edit-json");
    browser.wait_for(&json_box).await;
    assert_eq!(
        browser.find_all_count(&format!("{only} .edit-form")).await,
        0,
        "an unchecked schema gets no form"
    );
    let note = text(&browser, &format!("{only} .edit-note")).await;
    assert!(
        note.contains("\"pattern\"") && note.contains("JSON object"),
        "the gateway's edit_note: {note}"
    );
    replace_text(&browser, &json_box, r#""A-2""#).await;
    browser
        .wait_for_text(
            &format!("{only} .question-error"),
            "arguments: expected a JSON object ({ … }), got a string",
        )
        .await;
    replace_text(&browser, &json_box, r#"{"id": 2}"#).await;
    browser
        .wait_for(&format!("{}:not([disabled])", submit("r1")))
        .await;
    browser.click(&submit("r1")).await;
    let outcome = outcome(&mut agent, "answered").await;
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "edit", "args": {"id": 2}}]})
    );
}

/// Respond needs a message, which the agent gets instead of running the call.
#[tokio::test(flavor = "multi_thread")]
async fn responding_sends_a_message_instead() {
    let (_server, browser, mut agent) = approval_page(json!([run_sql()])).await;

    let only = call("r1", 0);
    browser.click(&decision("r1", 0, "respond")).await;
    let message = format!("{only} textarea.call-message");
    browser
        .wait_until(
            "const box = document.querySelector(arguments[0]); \
             return box.checkVisibility() && box.getAttribute('aria-required') === 'true' && \
               box.labels[0].textContent === 'Your message to the agent (required)';",
            json!([message]),
        )
        .await;
    assert!(submit_disabled(&browser, "r1").await, "no message yet");
    browser.type_into(&message, "   ").await;
    assert!(submit_disabled(&browser, "r1").await, "a blank message");
    replace_text(&browser, &message, "Use the read replica instead.").await;
    browser
        .wait_for(&format!("{}:not([disabled])", submit("r1")))
        .await;
    browser.click(&submit("r1")).await;

    let outcome = outcome(&mut agent, "answered").await;
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "respond", "message": "Use the read replica instead."}]})
    );
    assert_eq!(outcome["result"][0]["decision"], "respond");
    assert_eq!(
        outcome["result"][0]["message"],
        "Use the read replica instead."
    );
    assert_eq!(
        outcome["model_text"],
        "run_sql: responded: Use the read replica instead."
    );
}

/// Several calls: each is decided on its own and Submit sends them in order once every one
/// is decided. After a reload, the session's history (from the gateway) lists the request
/// and what was decided for each call.
#[tokio::test(flavor = "multi_thread")]
async fn several_calls_are_decided_one_by_one() {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let calls = json!([run_sql(), send_email(), run_sql()]);
    let frame = json!({"type": "ask", "session": "s", "id": "r1", "dialect": "approval",
                       "title": "Deploy bot wants to run 3 tools", "calls": calls});
    let mut agent = agent_asking(&server, &frame).await;

    browser.wait_for(&call("r1", 2)).await;
    assert_text(
        &browser,
        &format!("{} .card-origin", card("r1")),
        "Tool calls requested by the agent — check each one before you approve. \
         askgate never asks for passwords or keys.",
    )
    .await;
    let heads = browser
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map((h) => \
             [h.tagName, h.textContent]);",
            json!([format!("{} .call-head", card("r1"))]),
        )
        .await;
    assert_eq!(
        heads,
        json!([
            ["H3", "Tool call 1 of 3 run_sql"],
            ["H3", "Tool call 2 of 3 send_email"],
            ["H3", "Tool call 3 of 3 run_sql"]
        ])
    );
    browser.click(&decision("r1", 0, "approve")).await;
    browser.click(&decision("r1", 1, "reject")).await;
    assert!(submit_disabled(&browser, "r1").await, "call 3 is undecided");
    browser.click(&decision("r1", 2, "respond")).await;
    browser
        .type_into(
            &format!("{} textarea.call-message", call("r1", 2)),
            "Later.",
        )
        .await;
    browser.click(&submit("r1")).await;

    let outcome = outcome(&mut agent, "answered").await;
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "approve"}, {"type": "reject"},
                             {"type": "respond", "message": "Later."}]})
    );
    assert_eq!(
        outcome["model_text"],
        "run_sql: approved\nsend_email: rejected\nrun_sql: responded: Later."
    );

    let entry = ended_after_reload(&browser, "r1").await;
    assert_text(
        &browser,
        &format!("{entry} .folded-what"),
        "Deploy bot wants to run 3 tools",
    )
    .await;
    let lines = children_texts(&browser, &format!("{entry} .summary li")).await;
    assert_eq!(
        lines,
        json!([
            ["run_sql", "Approved"],
            ["send_email", "Rejected"],
            ["run_sql", "Responded: “Later.”"]
        ])
    );
}

/// "Approve all" is offered when every call allows approve, and approves them all at once;
/// it is not offered when one call does not allow approve.
#[tokio::test(flavor = "multi_thread")]
async fn approve_all_approves_every_call() {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let no_approve = json!({"name": "wipe", "args": {}, "decisions": ["reject", "respond"]});
    let _other = asking_approval(&server, "r0", json!([send_email(), no_approve])).await;
    let mut agent = asking_approval(
        &server,
        "r1",
        json!([run_sql(), send_email(), send_email()]),
    )
    .await;

    let button = format!("{} .approve-all", card("r1"));
    browser.wait_for(&button).await;
    assert_text(&browser, &button, "Approve all 3 calls").await;
    assert_eq!(
        browser
            .find_all_count(&format!("{} .approve-all", card("r0")))
            .await,
        0
    );
    assert!(submit_disabled(&browser, "r1").await);
    browser.click(&button).await;

    let outcome = outcome(&mut agent, "answered").await;
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "approve"}, {"type": "approve"}, {"type": "approve"}]})
    );
    assert_eq!(
        outcome["model_text"],
        "run_sql: approved\nsend_email: approved\nsend_email: approved"
    );
    let picked = browser
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map((i) => i.checked);",
            json!([format!(r#"{} input[value="approve"]"#, card("r1"))]),
        )
        .await;
    assert_eq!(
        picked,
        json!([true, true, true]),
        "the card shows what was sent"
    );
}

/// Declining the whole request stays Decline: the agent is told every call was rejected.
#[tokio::test(flavor = "multi_thread")]
async fn declining_rejects_every_call() {
    let (_server, browser, mut agent) = approval_page(json!([run_sql(), send_email()])).await;

    decline(&browser, "r1").await;

    let outcome = outcome(&mut agent, "declined").await;
    let declined = json!({"type": "reject", "message": "The person declined."});
    assert_eq!(
        outcome["response"],
        json!({"decisions": [declined, declined]})
    );
    assert_eq!(
        browser
            .execute(
                "return window.__sent.filter((f) => f.type === 'decline').length;",
                json!([])
            )
            .await,
        json!(1)
    );
}

/// Hostile text in a call (markup, `javascript:` links, a closing script tag, a
/// right-to-left override), in its name, description, keys and values, is shown as text:
/// no element is made from it, no link exists, the text reads as it was sent (the override
/// shown as a mark), line breaks are kept, a long value is folded but whole, and nothing
/// widens the page.
#[tokio::test(flavor = "multi_thread")]
async fn hostile_arguments_stay_inert() {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let img = r#"<img src=x onerror="window.__pwned=1">"#;
    let link = r#"<a href="javascript:window.__pwned=2">click me</a>"#;
    let url = "javascript:window.__pwned=3";
    let script = "</script><script>window.__pwned=4</script>";
    let rtl = "\u{202e}fdp.exe";
    let lines = "first line\nsecond line\n\n  indented";
    let long = format!("<svg onload=\"window.__pwned=5\">{}", "W".repeat(900));
    let hostile = json!({"name": "<b>fetch</b>",
        "description": &format!("{img}\n{link}"),
        "args": {"html": img, "link": link, "url": url, "script": script, "rtl": rtl,
                 "lines": lines, "<i>key</i>": "https://example.com/<u>x</u>",
                 "nested": {"deep": [img, {"url": url}]}, "long": long},
        "decisions": ["approve", "edit", "reject"]});
    let mut agent = asking_approval(&server, "r1", json!([hostile])).await;

    let only = call("r1", 0);
    browser.wait_for(&only).await;
    assert_nothing_made(
        &browser,
        &card("r1"),
        "img, script, a, b, i, u, svg, iframe, object, embed",
        r#"[href^="javascript"], [onerror], [onload]"#,
    )
    .await;
    assert_text(&browser, &format!("{only} .call-name"), "<b>fetch</b>").await;
    assert_text(
        &browser,
        &format!("{only} .call-desc-text"),
        &format!("{img}\n{link}"),
    )
    .await;
    let rows = arg_rows(&browser, &only).await;
    let row = |key: &str, value: &str| json!([key, value]);
    let rows = rows.as_array().expect("rows");
    assert_eq!(
        rows[..4],
        [
            row("html", img),
            row("link", link),
            row("url", url),
            row("script", script),
        ]
    );
    // The override is shown as a mark, not applied: the file name reads as it is.
    assert_eq!(rows[4], row("rtl", "RLOfdp.exe"));
    let mark = browser
        .execute(
            "const value = document.querySelectorAll(arguments[0])[4].querySelector('.arg-str'); \
             return [...value.childNodes].map((n) => n.nodeType === Node.TEXT_NODE \
               ? ['text', n.data] : [n.className, n.getAttribute('aria-label')]);",
            json!([format!("{only} .argtree > .arg")]),
        )
        .await;
    assert_eq!(
        mark,
        json!([
            ["bidi-mark", "right-to-left override (U+202E), not applied"],
            ["text", "fdp.exe"]
        ])
    );
    assert_no_direction_control(&browser, &card("r1")).await;
    // Line breaks and leading spaces are kept, as text.
    assert_eq!(rows[5], row("lines", lines));
    let white_space = browser
        .execute(
            "const value = document.querySelectorAll(arguments[0])[5].querySelector('.arg-str'); \
             return [getComputedStyle(value).whiteSpace, value.getClientRects().length > 0 && \
               value.getBoundingClientRect().height > 3 * parseFloat(getComputedStyle(value).lineHeight)];",
            json!([format!("{only} .argtree > .arg")]),
        )
        .await;
    assert_eq!(white_space, json!(["pre-wrap", true]));
    assert_eq!(rows[6], row("<i>key</i>", "https://example.com/<u>x</u>"));
    // The long value is folded, and whole once unfolded.
    let fold = format!("{only} .argtree > .arg:nth-child(9) details.arg-fold");
    assert_text(
        &browser,
        &format!("{fold} > summary"),
        "Show the whole text (931 characters)",
    )
    .await;
    browser.click(&format!("{fold} > summary")).await;
    browser.wait_for(&format!("{fold}[open]")).await;
    assert_text(&browser, &format!("{fold} > .arg-str"), &long).await;

    // Edited as JSON, the text box holds the arguments exactly, as inert text.
    browser.click(&decision("r1", 0, "edit")).await;
    let json_box = format!("{only} textarea.edit-json");
    browser.wait_for(&json_box).await;
    let edited = browser
        .execute(
            "return JSON.parse(document.querySelector(arguments[0]).value);",
            json!([json_box]),
        )
        .await;
    assert_eq!(edited, hostile["args"]);

    assert_fits_phone_and_desktop(&browser, &format!("{} *", card("r1"))).await;
    assert_nothing_ran(&browser).await;

    browser.click(&decision("r1", 0, "approve")).await;
    browser.click(&submit("r1")).await;
    assert_eq!(
        outcome(&mut agent, "answered").await["result"][0]["args"],
        hostile["args"]
    );
}

/// What the gateway refuses is shown beside the call it is about, naming the field, and the
/// card stays open for a corrected answer. The page itself would not send such an answer, so
/// the test rewrites it on its way out.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_decision_is_shown_beside_its_call() {
    let (_server, browser, mut agent) = approval_page(json!([run_sql(), send_email()])).await;

    browser
        .execute(
            "window.__tamper = (frame) => { \
               frame.response.decisions[0] = {type: 'edit', args: {query: 5}}; \
               frame.response.decisions[1] = {type: 'respond', message: 'no'}; \
               return frame; };",
            json!([]),
        )
        .await;
    browser.click(&decision("r1", 0, "approve")).await;
    browser.click(&decision("r1", 1, "approve")).await;
    browser.click(&submit("r1")).await;

    let first_error = format!("{} .question-error", call("r1", 0));
    let second_error = format!("{} .question-error", call("r1", 1));
    browser
        .wait_for_text(&first_error, "query: expected a string")
        .await;
    browser
        .wait_for(&format!("{} fieldset.has-error", call("r1", 0)))
        .await;
    let second = text(&browser, &second_error).await;
    assert!(
        second.contains("approve") && second.contains("reject"),
        "the second call's error says what it allows: {second:?}"
    );
    browser
        .wait_for_text(&format!("{} .card-status", card("r1")), "Not accepted")
        .await;
    // Nothing is left above the card.
    assert_text(&browser, &format!("{} .card-error", card("r1")), "").await;
    // A refusal inside one decision is about that decision, not about who may answer: the
    // card stays answerable.
    browser
        .wait_for(&format!("{}:not(.is-read-only)", card("r1")))
        .await;
    let answerable = "const card = document.querySelector(arguments[0]); \
        return [card.querySelector('.card-waiting').hidden, \
                card.querySelector('.card-actions').hidden, \
                [...card.querySelectorAll('fieldset')].some((f) => f.disabled)];";
    assert_eq!(
        browser.execute(answerable, json!([card("r1")])).await,
        json!([true, false, false])
    );

    // Without the rewrite, the same answer goes through; picking again clears the error.
    browser.execute("window.__tamper = null;", json!([])).await;
    browser.click(&decision("r1", 0, "reject")).await;
    browser
        .wait_gone(&format!("{} fieldset.has-error", call("r1", 0)))
        .await;
    browser.click(&submit("r1")).await;
    let outcome = outcome(&mut agent, "answered").await;
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "reject"}, {"type": "approve"}]})
    );
}

/// A call is decided from the keyboard alone: Tab reaches its decisions, a digit picks one,
/// Tab reaches the reason, and Ctrl+Enter submits.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_is_decided_from_the_keyboard() {
    let (_server, browser, mut agent) = approval_page(json!([run_sql()])).await;

    browser.wait_for(&call("r1", 0)).await;
    browser
        .execute(
            "document.querySelector(arguments[0]).focus();",
            json!([decision("r1", 0, "approve")]),
        )
        .await;
    // 3 picks the third decision, Reject; Tab goes on from the decisions to its reason.
    browser.type_into(&decision("r1", 0, "approve"), "3").await;
    browser
        .wait_until(
            "return document.querySelector(arguments[0]).checked;",
            json!([decision("r1", 0, "reject")]),
        )
        .await;
    let reason = format!("{} textarea.call-reason", call("r1", 0));
    browser
        .type_into(&decision("r1", 0, "reject"), "\u{E004}")
        .await;
    browser
        .wait_until(
            "return document.activeElement === document.querySelector(arguments[0]);",
            json!([reason]),
        )
        .await;
    browser
        .type_into(&reason, "Too risky\u{E009}\u{E007}\u{E009}")
        .await;
    let outcome = outcome(&mut agent, "answered").await;
    assert_eq!(
        outcome["response"],
        json!({"decisions": [{"type": "reject", "message": "Too risky"}]})
    );
}

/// Approval cards pass axe-core, light and dark, at 360 px and desktop width: a fresh card
/// with several calls, one with the edit form, the JSON editor, an error, a reason and a
/// message open, a card this tab may only watch, and the answered card folded with the
/// history unfolded.
#[tokio::test(flavor = "multi_thread")]
async fn approval_cards_pass_axe() {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let nested = json!({"name": "deploy", "description": "Deploys a service.\nCareful.",
        "args": {"service": "api", "replicas": 3, "env": {"A": "1", "B": null},
                 "regions": ["eu", "us"], "notes": "x\n".repeat(30)},
        "args_schema": {"type": "object", "properties": {
            "service": {"type": "string"}, "replicas": {"type": "integer"},
            "env": {"type": "object"}, "regions": {"type": "array", "items": {"type": "string"}},
            "notes": {"type": "string"}}},
        "decisions": ["approve", "edit", "reject", "respond"]});
    let frame = json!({"type": "ask", "session": "s", "id": "r1", "dialect": "approval",
                       "title": "Deploy bot wants to run 3 tools",
                       "calls": [run_sql(), nested, send_email()]});
    let mut agent = agent_asking(&server, &frame).await;
    browser.wait_for(&call("r1", 2)).await;
    assert_accessible(&browser, "a fresh approval card").await;

    browser.click(&decision("r1", 0, "edit")).await;
    replace_text(
        &browser,
        &format!(
            r#"{} .edit-field[data-key="query"] textarea"#,
            call("r1", 0)
        ),
        "\u{E003}",
    )
    .await;
    browser
        .wait_for(&format!("{} fieldset.has-error", call("r1", 0)))
        .await;
    browser.click(&decision("r1", 1, "edit")).await;
    replace_text(
        &browser,
        &format!("{} textarea.edit-json", call("r1", 1)),
        r#"{"service": "web", "replicas": 2}"#,
    )
    .await;
    browser
        .wait_for(&format!("{} .edit-diff li", call("r1", 1)))
        .await;
    browser.click(&decision("r1", 2, "reject")).await;
    click_centred(
        &browser,
        &format!("{} .argtree details.arg-fold > summary", call("r1", 1)),
    )
    .await;
    assert_accessible(&browser, "editing, with an error and a diff").await;
    browser.click(&decision("r1", 1, "respond")).await;
    assert_accessible(&browser, "responding").await;

    // Someone else's request: this tab may only watch it.
    let (mut tab, _) = server.tab("s").await;
    let watched = json!({"type": "ask", "session": "s", "id": "r2", "dialect": "approval",
                         "answerers": ["carol@example.com"],
                         "calls": [run_sql()]});
    let _carol = agent_asking(&server, &watched).await;
    browser
        .wait_for(&format!("{}.is-read-only", card("r2")))
        .await;
    assert_accessible(&browser, "a read-only approval card").await;

    // Another tab answers r1: its card says what was decided, then folds.
    tab.recv_until("request").await;
    tab.send(
        &json!({"type": "answer", "id": "r1", "response": {"decisions": [
        {"type": "edit", "args": {"query": "SELECT 1"}}, {"type": "approve"},
        {"type": "reject", "message": "no"}]}}),
    )
    .await;
    outcome(&mut agent, "answered").await;
    let folded = finished("r1");
    browser.wait_for(&folded).await;
    let summary = texts(&browser, &format!("{folded} .summary li")).await;
    assert_eq!(
        summary,
        json!([
            "run_sqlEdited: changed query",
            "deployApproved",
            "send_emailRejected: “no”"
        ])
    );
    assert_accessible(&browser, "folded").await;
}

/// A call that needs two of group `leads` (alice and bob, each on a personal link): alice's
/// approval shows the tally on every page and decides nothing, an anonymous page sees it and
/// cannot vote, bob's approval ends it with both as voters; in another request one rejection
/// vetoes. Every state passes axe-core.
#[tokio::test(flavor = "multi_thread")]
async fn a_quorum_of_two_leads_is_reached_on_two_pages() {
    const ALICE: &str = "alice@example.com";
    const BOB: &str = "bob@example.com";
    let mut config = askgate_tests::server::test_config();
    config.people.groups =
        askgate::people::Groups::parse(&json!({"leads": [ALICE, BOB]}).to_string()).unwrap();
    let server = TestServer::start_with(config).await;
    let (alice_url, _, _) = personal_link(&server, "s", ALICE, 86_400.0).await;
    let (bob_url, _, _) = personal_link(&server, "s", BOB, 86_400.0).await;
    let anonymous = open_page(&server, "s").await;
    let alice = open_link(&alice_url).await;
    let bob = open_link(&bob_url).await;
    let frame = json!({"type": "ask", "session": "s", "id": "q1", "dialect": "approval",
        "calls": [{"name": "deploy", "args": {"env": "prod"}}], "quorum": 2,
        "answerers": ["group:leads"]});
    let mut agent = agent_asking(&server, &frame).await;
    let tally = format!("{} .call-tally", card("q1"));
    for page in [&anonymous, &alice, &bob] {
        page.wait_for_text(&tally, "0 of 2 approved").await;
    }
    anonymous
        .wait_for_text(
            &card("q1"),
            "This needs votes from people the gateway knows",
        )
        .await;
    assert_accessible(&anonymous, "a quorum card an anonymous page cannot vote on").await;

    alice.click(&decision("q1", 0, "approve")).await;
    alice.click(&submit("q1")).await;
    for page in [&anonymous, &alice, &bob] {
        page.wait_for_text(&tally, "1 of 2 approved — alice@example.com")
            .await;
    }
    alice
        .wait_for_text(
            &format!("{} .card-status", card("q1")),
            "Your vote is counted",
        )
        .await;
    assert_accessible(&alice, "a quorum card with one vote").await;
    bob.click(&decision("q1", 0, "approve")).await;
    bob.click(&submit("q1")).await;
    let reached = outcome(&mut agent, "answered").await;
    assert_eq!(reached["user"], BOB);
    assert_eq!(
        reached["voters"],
        json!([{"user": ALICE, "decisions": ["approve"]}, {"user": BOB, "decisions": ["approve"]}])
    );

    let mut frame = frame.clone();
    frame["id"] = json!("q2");
    let mut agent = agent_asking(&server, &frame).await;
    bob.wait_for_text(&format!("{} .call-tally", card("q2")), "0 of 2 approved")
        .await;
    bob.click(&decision("q2", 0, "reject")).await;
    bob.click(&submit("q2")).await;
    let vetoed = outcome(&mut agent, "answered").await;
    assert_eq!(
        vetoed["response"],
        json!({"decisions": [{"type": "reject"}]})
    );
}

/// A browser on `url` (a personal link) recording what it sends (`page::RECORD_FRAMES`), once
/// its socket is open and the gateway has said who it is.
async fn open_recording_link(url: &str) -> Browser {
    let browser = Browser::start().await;
    browser
        .run_before_each_load(askgate_tests::browser::page::RECORD_FRAMES)
        .await;
    browser.goto(url).await;
    askgate_tests::browser::page::wait_connected(&browser).await;
    browser.wait_for("#you:not([hidden])").await;
    browser
}

/// Asks, over HTTP on session `s`, as request `id`, for `calls` (a list) to be approved.
async fn ask_over_http(server: &TestServer, id: &str, calls: &Value) {
    let body = json!({"id": id, "dialect": "approval", "calls": calls});
    let (status, asked) = server
        .http("POST", "/v1/sessions/s/requests", Some(&body))
        .await;
    assert_eq!(status, 201, "{asked}");
}

/// Request `id` of session `s` over HTTP, waiting at most 30 s for it to end.
async fn ended_over_http(server: &TestServer, id: &str) -> Value {
    let (status, body) = server
        .http(
            "GET",
            &format!("/v1/sessions/s/requests/{id}?wait_s=30"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "resolved", "{body}");
    body
}

/// The remember choice's radio `value` on call `index` of request `id`.
fn remember(id: &str, index: usize, value: &str) -> String {
    format!(
        r#"{} .call-remember input[type="radio"][value="{value}"]"#,
        call(id, index)
    )
}

/// alice (a personal link) is offered to remember her approval of `rm /tmp/x` beside Approve;
/// an anonymous page is not. A remember the gateway refuses is shown beside its call. She
/// approves it for the rest of the session: the agent reads a plain approval, both pages list
/// the rule (Revoke only for alice), and the same call asked again ends at once, named on
/// the page as approved by that remembered approval; a request with one more call shows the
/// ruled call approved and asks only the other. Revoked on the page, the list empties on both
/// pages and the same call is asked again. Every state passes axe-core.
#[tokio::test(flavor = "multi_thread")]
async fn a_remembered_approval_is_offered_made_shown_and_revoked_on_the_page() {
    use askgate_tests::browser::page::{frames_about, shown};
    const ALICE: &str = "alice@example.com";
    let server = TestServer::start().await;
    let (alice_url, _, _) = personal_link(&server, "s", ALICE, 86_400.0).await;
    let alice = open_recording_link(&alice_url).await;
    let anonymous = open_page(&server, "s").await;
    let rm = json!([{"name": "rm", "args": {"path": "/tmp/x"}}]);

    ask_over_http(&server, "a1", &rm).await;
    anonymous.wait_for(&decision("a1", 0, "approve")).await;
    anonymous.click(&decision("a1", 0, "approve")).await;
    assert_eq!(
        anonymous
            .find_all_count(&format!("{} .call-remember", card("a1")))
            .await,
        0,
        "an anonymous link holder has no one to remember an approval for"
    );

    alice.wait_for(&decision("a1", 0, "approve")).await;
    assert!(
        !shown(&alice, &remember("a1", 0, "once")).await,
        "only beside Approve"
    );
    alice.click(&decision("a1", 0, "approve")).await;
    let offered = alice
        .inputs(&format!(
            r#"{} .call-remember input[type="radio"]"#,
            call("a1", 0)
        ))
        .await;
    assert_eq!(
        offered,
        json!([
            ["radio", "once", "Just this once"],
            ["radio", "session", "For the rest of this session"],
            ["radio", "key", "Always, for this agent"],
            ["radio", "same", "Only these exact arguments"],
            ["radio", "any", "Any arguments to this tool"]
        ])
    );
    assert_eq!(
        alice
            .execute(
                "return document.querySelector(arguments[0]).checked;",
                json!([remember("a1", 0, "once")])
            )
            .await,
        json!(true),
        "just this once unless picked otherwise"
    );
    assert!(
        !shown(&alice, &remember("a1", 0, "same")).await,
        "no arguments to pick yet"
    );
    alice.click(&remember("a1", 0, "session")).await;
    assert!(shown(&alice, &remember("a1", 0, "same")).await);
    assert_accessible(&alice, "an approval to remember for the session").await;

    // A remember the gateway refuses (a page that disagrees with it) is shown beside the call.
    alice
        .execute(
            "window.__tamper = (f) => { f.response.decisions[0].remember = 'forever'; return f; };",
            json!([]),
        )
        .await;
    alice.click(&submit("a1")).await;
    alice
        .wait_for_text(
            &format!("{} .question-error", call("a1", 0)),
            "Remembering this approval: must be \"session\" or \"key\", got \"forever\"",
        )
        .await;
    alice.execute("window.__tamper = null;", json!([])).await;
    alice
        .wait_until(
            "return !document.querySelector(arguments[0]).disabled;",
            json!([submit("a1")]),
        )
        .await;
    alice.click(&submit("a1")).await;
    let answered = ended_over_http(&server, "a1").await;
    assert_eq!(
        answered["response"],
        json!({"decisions": [{"type": "approve"}]}),
        "what is remembered is not the agent's to read"
    );
    let answers = frames_about(&alice, "a1").await;
    assert_eq!(
        answers
            .as_array()
            .expect("frames")
            .last()
            .expect("an answer")["response"],
        json!({"decisions": [{"type": "approve", "remember": "session", "args": "same"}]})
    );

    // Both pages list the rule; only alice may revoke it.
    let listed = "#rules:not([hidden]) li.rule";
    alice.wait_for(listed).await;
    anonymous.wait_for(listed).await;
    let rule = alice
        .attr(listed, "data-rule-id")
        .await
        .expect("the rule's id");
    assert_text(&alice, "#rules-heading", "Remembered approvals (1)").await;
    assert_text(
        &alice,
        "#rules li.rule .rule-what",
        "rm for the rest of this session",
    )
    .await;
    assert_eq!(
        arg_rows(&alice, "#rules li.rule .rule-args").await,
        json!([["path", "/tmp/x"]])
    );
    alice
        .wait_for_text(
            "#rules li.rule .rule-how",
            &format!("Remembered approval {rule} by {ALICE}"),
        )
        .await;
    assert_eq!(alice.find_all_count("#rules .rule-revoke").await, 1);
    assert_eq!(anonymous.find_all_count("#rules .rule-revoke").await, 0);
    assert_accessible(&alice, "the session's remembered approvals").await;
    assert_accessible(
        &anonymous,
        "remembered approvals an anonymous page cannot revoke",
    )
    .await;

    // The same call again: approved at once by the rule, and said so on the page.
    ask_over_http(&server, "a2", &rm).await;
    let by_rule = ended_over_http(&server, "a2").await;
    assert_eq!(
        (&by_rule["outcome"], &by_rule["via"], &by_rule["user"]),
        (&json!("answered"), &json!("rule"), &json!(ALICE)),
        "{by_rule}"
    );
    assert_eq!(by_rule["by"], format!("rule:{rule}"));
    let by_rule_words = format!("Approved by remembered approval {rule} — {ALICE}");
    alice
        .wait_for_text(&format!("{} .card-status", finished("a2")), &by_rule_words)
        .await;
    assert_eq!(
        alice.find_all_count(r#"[data-request-id="a2"]"#).await,
        1,
        "listed once"
    );

    // Only some calls ruled: the ruled one shown approved, the other asked.
    let two = json!([{"name": "rm", "args": {"path": "/tmp/x"}},
                     {"name": "ls", "args": {"path": "/"}}]);
    ask_over_http(&server, "p1", &two).await;
    alice
        .wait_for_text(
            &format!("{} .call-ruled-text", call("p1", 0)),
            &format!("Approved by a remembered approval of {ALICE}, for this session"),
        )
        .await;
    assert_eq!(
        alice
            .find_all_count(&format!(r#"{} input[type="radio"]"#, call("p1", 0)))
            .await,
        0,
        "nothing to decide on a ruled call"
    );
    assert_eq!(
        alice
            .find_all_count(&format!("{} .approve-all", card("p1")))
            .await,
        0,
        "one call to decide: no Approve all"
    );
    assert!(
        submit_disabled(&alice, "p1").await,
        "the other call is still to decide"
    );
    assert_accessible(&alice, "an approval with a call already approved by a rule").await;
    alice.click(&decision("p1", 1, "approve")).await;
    alice.click(&submit("p1")).await;
    let partly = ended_over_http(&server, "p1").await;
    assert_eq!(
        partly["response"],
        json!({"decisions": [{"type": "approve"}, {"type": "approve"}]})
    );
    assert_eq!(partly["user"], ALICE);

    // Revoked on the page: the list empties on both pages, and the call is asked again.
    click_centred(&alice, "#rules .rule-revoke").await;
    let emptied = "return document.getElementById('rules').hidden;";
    alice.wait_until(emptied, json!([])).await;
    anonymous.wait_until(emptied, json!([])).await;
    assert_eq!(
        frames_of_type(&alice, "revoke_rule").await,
        json!([{"type": "revoke_rule", "id": rule}])
    );
    ask_over_http(&server, "a3", &rm).await;
    let (status, open) = server.http("GET", "/v1/sessions/s/requests/a3", None).await;
    assert_eq!((status, &open["state"]), (200, &json!("pending")), "{open}");
    alice.wait_for(&decision("a3", 0, "approve")).await;
    assert_eq!(alice.console_errors().await, Vec::<String>::new());
    assert_eq!(anonymous.console_errors().await, Vec::<String>::new());
}
