//! The answer page in a real headless Chromium: an agent asks over its socket, the test
//! clicks and types in the page, and checks both what the page shows and what the agent gets.

use std::time::{SystemTime, UNIX_EPOCH};

use askgate_testkit::TIMEOUT;
use askgate_testkit::frames::{answer, ask, questions};
use askgate_tests::browser::Browser;
use askgate_tests::browser::axe::assert_accessible;
use askgate_tests::browser::page::{
    agent_asking, assert_fits_phone_and_desktop, card, decline, finished, frames_of_type,
    open_page, open_page_with, open_recording_page, page_url, reload, text, wait_connected,
};
use askgate_tests::oracle::repo_root;
use askgate_tests::server::{TestServer, test_config};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Inside the card of request `id`, the question with `header`.
fn question(id: &str, header: &str) -> String {
    format!(r#"{} fieldset[data-header="{header}"]"#, card(id))
}

/// The option input labelled `label` of that question.
fn option(id: &str, header: &str, label: &str) -> String {
    format!(r#"{} input[value="{label}"]"#, question(id, header))
}

/// The request ids of the folded cards, top to bottom.
async fn finished_ids(browser: &Browser) -> Value {
    browser
        .execute(
            "return [...document.querySelectorAll('#finished article.is-folded')]\
             .map((card) => card.dataset.requestId);",
            json!([]),
        )
        .await
}

/// The accessible name `aria-labelledby` gives the element `css`.
async fn labelled_name(browser: &Browser, css: &str) -> Value {
    let script = "return document.querySelector(arguments[0]).getAttribute('aria-labelledby')\
                  .split(' ').map((id) => document.getElementById(id).textContent).join(' ');";
    browser.execute(script, json!([css])).await
}

/// Whether the `<time>` in the element `css` says `prefix` and the local time of its own
/// `datetime` (hours and minutes, as the page formats them), that moment within `max_age_ms`
/// of now.
async fn says_local_time(browser: &Browser, css: &str, prefix: &str, max_age_ms: u64) -> bool {
    let script = "const time = document.querySelector(arguments[0] + ' time'); \
        const at = new Date(time.dateTime); \
        const clock = at.toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'}); \
        return Date.now() - at.getTime() < arguments[2] && \
          time.textContent.startsWith(arguments[1] + ' ') && time.textContent.endsWith(clock);";
    browser
        .execute(script, json!([css, prefix, max_age_ms]))
        .await
        == json!(true)
}

/// This page's tab id, as it told the gateway.
async fn tab_id(browser: &Browser) -> String {
    let id = browser
        .execute("return sessionStorage.getItem('askgate.tab');", json!([]))
        .await;
    id.as_str().expect("a stored tab id").to_owned()
}

/// A question asked while the page is open appears as a card with its header, text and options.
#[tokio::test(flavor = "multi_thread")]
async fn a_question_appears_as_a_card() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    browser.wait_for("#empty:not([hidden])").await;
    browser.wait_for_text("#presence", "1 tab watching").await;

    let _agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;
    let q = question("r1", "Color");
    browser.wait_for(&q).await;
    assert_eq!(
        browser.text_of(&format!("{q} .chip")).await.unwrap(),
        "Color"
    );
    assert_eq!(
        browser
            .text_of(&format!("{q} .question-text"))
            .await
            .unwrap(),
        "Which Color?"
    );
    assert_eq!(
        browser
            .text_of(&format!("{q} .question-hint"))
            .await
            .unwrap(),
        "Pick one"
    );
    let options = browser.inputs(&format!("{q} input")).await;
    assert_eq!(
        options,
        json!([
            ["radio", "Red", "Red"],
            ["radio", "Blue", "Blue"],
            ["radio", "Green", "GreenA calm colour"]
        ])
    );
    browser.find(&format!("{q} .other-input")).await;
    assert_eq!(
        browser.text_of("#empty[hidden]").await.as_deref(),
        Some("No open questions. This page updates live when the agent asks.")
    );
    // Nothing picked yet, so nothing to submit.
    let submit = format!("{} .submit", card("r1"));
    assert_eq!(browser.attr(&submit, "disabled").await.as_deref(), Some(""));
    assert_eq!(browser.console_errors().await, Vec::<String>::new());
}

/// Picking an option and submitting hands the agent that answer; the card says it was sent,
/// then folds into the finished list, leaving no open question.
#[tokio::test(flavor = "multi_thread")]
async fn picking_and_submitting_delivers_the_answer() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;

    browser.click(&option("r1", "Color", "Blue")).await;
    browser.click(&format!("{} .submit", card("r1"))).await;

    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["outcome"], "answered");
    assert_eq!(outcome["result"], json!({"Color": ["Blue"]}));
    assert_eq!(outcome["by"], tab_id(&browser).await);
    let done = format!(r#"{}[data-state="answered"][data-by="self"]"#, card("r1"));
    browser.wait_for(&done).await;
    browser
        .wait_for_text(&format!("{done} .card-status"), "Sent ✓")
        .await;
    browser
        .wait_for_text(
            &format!("{} .card-status", finished("r1")),
            "Answered by you",
        )
        .await;
    browser
        .wait_gone(&format!("#requests {}", card("r1")))
        .await;
    browser.wait_for("#empty:not([hidden])").await;
}

/// A second window on the same link sees the card resolve when the first one answers.
#[tokio::test(flavor = "multi_thread")]
async fn another_window_sees_the_answer_land() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let first = browser.window().await;
    let second = browser.new_window().await;
    browser.goto(&page_url(&server, "s")).await;
    browser.wait_for_text("#presence", "2 tabs watching").await;
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;
    browser.wait_for(&card("r1")).await;

    browser.switch_to(&first).await;
    browser.click(&option("r1", "Color", "Green")).await;
    browser.click(&format!("{} .submit", card("r1"))).await;
    assert_eq!(
        agent.recv_type("outcome").await["result"],
        json!({"Color": ["Green"]})
    );

    browser.switch_to(&second).await;
    let other = format!(r#"{}[data-state="answered"][data-by="other"]"#, card("r1"));
    browser.wait_for(&other).await;
    let status = browser
        .text_of(&format!("{other} .card-status"))
        .await
        .unwrap();
    assert_eq!(status, "Answered in another tabColorGreen");
    let submit = format!("{other} .submit");
    assert_eq!(browser.attr(&submit, "disabled").await.as_deref(), Some(""));
}

/// A duplicated browser tab copies the original's `sessionStorage`, so it asks for the
/// original's tab id; the gateway gives it another, and the original's answer stays another
/// tab's answer to it (not "Sent ✓").
#[tokio::test(flavor = "multi_thread")]
async fn a_duplicated_tab_does_not_claim_the_originals_answer() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let first = browser.window().await;
    let tab_id = "return sessionStorage.getItem('askgate.tab');";
    let original = browser.execute(tab_id, json!([])).await;
    let copy = browser.new_window().await;
    browser.goto(&page_url(&server, "s")).await;
    browser
        .execute(
            "sessionStorage.setItem('askgate.tab', arguments[0]); location.reload();",
            json!([original]),
        )
        .await;
    browser
        .wait_until(
            "return performance.getEntriesByType('navigation')[0]?.type === 'reload' && \
             (document.querySelector('#presence')?.textContent ?? '').includes('2 tabs watching');",
            json!([]),
        )
        .await;
    assert_ne!(browser.execute(tab_id, json!([])).await, original);
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;
    browser.wait_for(&card("r1")).await;

    browser.switch_to(&first).await;
    browser.click(&option("r1", "Color", "Green")).await;
    browser.click(&format!("{} .submit", card("r1"))).await;
    agent.recv_type("outcome").await;

    browser.switch_to(&copy).await;
    let other = format!(r#"{}[data-state="answered"][data-by="other"]"#, card("r1"));
    browser.wait_for(&other).await;
    browser
        .wait_for_text(&format!("{other} .card-status"), "Answered in another tab")
        .await;
}

/// Focus stays with a keyboard user through a card's end: on the words saying how it ended,
/// then, once the card folds into the finished list, on the next open card (not the top of
/// the page).
#[tokio::test(flavor = "multi_thread")]
async fn focus_moves_on_to_the_next_card_when_one_ends() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;
    agent.send(&ask("s", "r2", &["Size"], None)).await;
    agent.recv_type("accepted").await;
    browser.wait_for(&card("r2")).await;

    browser.click(&option("r1", "Color", "Red")).await;
    browser.click(&format!("{} .submit", card("r1"))).await;
    agent.recv_type("outcome").await;
    let focused_in = "const focused = document.activeElement; \
                      return focused?.closest(arguments[0]) ? focused.className || focused.tagName : null;";
    let on_status = browser.wait_until(focused_in, json!([card("r1")])).await;
    assert_eq!(on_status, "card-status");
    browser.wait_for(&finished("r1")).await;
    browser.wait_until(focused_in, json!([card("r2")])).await;
}

/// Leaving the page (a reload, a closed tab) asks first while an open card holds typed text,
/// and only then.
#[tokio::test(flavor = "multi_thread")]
async fn leaving_asks_first_while_typed_text_is_unsent() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let _agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;
    let leaving_is_held = "const leaving = new Event('beforeunload', {cancelable: true}); \
                           window.dispatchEvent(leaving); return leaving.defaultPrevented;";
    let other = format!("{} .other-input", question("r1", "Color"));
    browser.wait_for(&other).await;
    assert_eq!(
        browser.execute(leaving_is_held, json!([])).await,
        json!(false)
    );
    browser.type_into(&other, "Teal, with a note").await;
    assert_eq!(
        browser.execute(leaving_is_held, json!([])).await,
        json!(true)
    );
    browser
        .execute(
            "document.querySelector(arguments[0]).value = '';",
            json!([other]),
        )
        .await;
    assert_eq!(
        browser.execute(leaving_is_held, json!([])).await,
        json!(false)
    );
}

/// A multi-select question sends every ticked option, in the order the options are listed.
#[tokio::test(flavor = "multi_thread")]
async fn multi_select_sends_every_tick_in_option_order() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut frame = ask("s", "r1", &["Colors"], None);
    frame["questions"][0]["multi_select"] = json!(true);
    let mut agent = agent_asking(&server, &frame).await;

    browser
        .wait_for_text(&question("r1", "Colors"), "Pick one or more")
        .await;
    assert_eq!(
        browser
            .attr(&option("r1", "Colors", "Red"), "type")
            .await
            .as_deref(),
        Some("checkbox")
    );
    for label in ["Green", "Blue", "Red"] {
        browser.click(&option("r1", "Colors", label)).await;
    }
    browser.click(&option("r1", "Colors", "Blue")).await; // and untick Blue again
    browser.click(&format!("{} .submit", card("r1"))).await;

    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["result"], json!({"Colors": ["Red", "Green"]}));
    assert_eq!(
        outcome["response"]["answers"],
        json!([{"header": "Colors", "selected": ["Red", "Green"]}])
    );
}

/// Text typed in "Other…" is sent as a custom answer, and typing it clears the picked option.
#[tokio::test(flavor = "multi_thread")]
async fn a_custom_answer_replaces_the_picks() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;

    let blue = option("r1", "Color", "Blue");
    let checked = "return document.querySelector(arguments[0]).checked;";
    browser.click(&blue).await;
    assert_eq!(browser.execute(checked, json!([blue])).await, json!(true));
    let other = format!("{} .other-input", question("r1", "Color"));
    browser.type_into(&other, "Teal, with a hint of grey").await;
    assert_eq!(browser.execute(checked, json!([blue])).await, json!(false));
    browser.click(&format!("{} .submit", card("r1"))).await;

    let outcome = agent.recv_type("outcome").await;
    assert_eq!(
        outcome["result"],
        json!({"Color": ["Teal, with a hint of grey"]})
    );
    assert_eq!(
        outcome["response"]["answers"],
        json!([{"header": "Color", "custom_answer": "Teal, with a hint of grey"}])
    );
}

/// Declining hands the agent `declined`, and the card says so.
#[tokio::test(flavor = "multi_thread")]
async fn declining_tells_the_agent() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;

    decline(&browser, "r1").await;

    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["outcome"], "declined");
    assert_eq!(
        outcome["response"],
        json!({"answers": [], "cancelled": true})
    );
    let declined = format!(r#"{}[data-state="declined"][data-by="self"]"#, card("r1"));
    browser
        .wait_for_text(&format!("{declined} .card-status"), "Declined")
        .await;
    // The finished card's controls fade; the words saying how it ended do not (contrast).
    let opacities = "const seen = (css) => { let el = document.querySelector(css); \
                     if (!el) return null; let o = 1; \
                     for (; el; el = el.parentElement) o *= Number(getComputedStyle(el).opacity); \
                     return Math.round(o * 100) / 100; }; \
                     const status = seen(arguments[0]), actions = seen(arguments[1]); \
                     return status === 1 && actions === 0.85 ? [status, actions] : null;";
    let within = |css: &str| format!("{declined}:not(.is-folded) {css}");
    browser
        .wait_until(
            opacities,
            json!([within(".card-status"), within(".card-actions")]),
        )
        .await;
}

/// A question with a deadline counts its seconds down, then shows "Timed out" while the agent
/// gets `timed_out`.
#[tokio::test(flavor = "multi_thread")]
async fn the_countdown_runs_out() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color"], Some(3.0))).await;

    let countdown = format!("{} .countdown", card("r1"));
    let seconds_left = "const m = /^(\\d+) s left$/.exec(\
                        document.querySelector(arguments[0])?.textContent ?? ''); \
                        return m && Number(m[1]) < arguments[1] ? Number(m[1]) : null;";
    let first = browser
        .wait_until(seconds_left, json!([countdown, 4]))
        .await;
    let later = browser
        .wait_until(seconds_left, json!([countdown, first]))
        .await;
    assert!(
        later.as_u64().unwrap() < first.as_u64().unwrap(),
        "{later} after {first}"
    );

    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["outcome"], "timed_out");
    let timed_out = format!(r#"{}[data-state="timed_out"]"#, card("r1"));
    browser
        .wait_for_text(&format!("{timed_out} .card-status"), "Timed out")
        .await;
    let submit = format!("{timed_out} .submit");
    assert_eq!(browser.attr(&submit, "disabled").await.as_deref(), Some(""));
}

/// A card whose ask has a default says beforehand what the agent gets if nobody answers, and
/// when the deadline passes it says the default was given; both states pass axe-core.
#[tokio::test(flavor = "multi_thread")]
async fn a_default_is_shown_beforehand_and_named_when_given() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut asked = ask("s", "r1", &["Color"], Some(3.0));
    asked["default"] = answer("r1", &["Color"], "Blue")["response"].clone();
    let mut agent = agent_asking(&server, &asked).await;
    let said = format!("{} .card-default", card("r1"));
    browser
        .wait_for_text(
            &said,
            "If nobody answers in time, the agent gets this answer:",
        )
        .await;
    assert!(text(&browser, &said).await.contains("Blue"));
    assert_accessible(&browser, "a card with a default").await;

    let outcome = agent.recv_type("outcome").await;
    assert_eq!(
        (&outcome["outcome"], &outcome["via"]),
        (&json!("answered"), &json!("default"))
    );
    let given = format!(r#"{}[data-state="answered"] .card-status"#, card("r1"));
    browser
        .wait_for_text(&given, "Nobody answered in time: answered by default")
        .await;
    assert_accessible(&browser, "a card its default answered").await;
}

/// An agent killed mid-question: after the grace its card says the agent is not connected (and
/// stays answerable); the agent started again re-asks it, and the card is live again. Both
/// states pass axe-core.
#[tokio::test(flavor = "multi_thread")]
async fn a_card_whose_agent_is_gone_says_so_until_it_is_asked_again() {
    let mut config = test_config();
    config.limits.agent_grace = std::time::Duration::from_secs(1);
    let server = TestServer::start_with(config).await;
    let browser = open_page(&server, "s").await;
    let asked = ask("s", "r1", &["Color"], None);
    let agent = agent_asking(&server, &asked).await;
    browser.wait_for_text(&card("r1"), "Which Color?").await;
    agent.close().await;
    let orphaned = format!("{} .card-orphaned", card("r1"));
    browser
        .wait_for_text(&orphaned, "The agent that asked this is not connected")
        .await;
    assert_accessible(&browser, "a card whose agent is gone").await;
    let mut agent = agent_asking(&server, &asked).await;
    browser
        .wait_until(
            "return document.querySelector(arguments[0])?.hidden === true;",
            json!([orphaned]),
        )
        .await;
    // Answerable all along: the page's answer reaches the agent that came back.
    browser.click(&format!("{} .option", card("r1"))).await;
    browser.click(&format!("{} .submit", card("r1"))).await;
    assert_eq!(agent.recv_type("outcome").await["outcome"], "answered");
}

/// A title is shown as sent, emoji sequences and line breaks included, its direction controls
/// as marks, and a deadline weeks away counts down in days.
#[tokio::test(flavor = "multi_thread")]
async fn a_long_deadline_counts_in_days_under_any_title() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut frame = ask("s", "r1", &["Color"], Some(30.0 * 24.0 * 3600.0));
    let title = "👩\u{200d}💻 Review\nthe \u{202e}plan\u{202c} 🫨";
    frame["title"] = json!(title);
    let _agent = agent_asking(&server, &frame).await;
    let shown = format!("{} .card-title", card("r1"));
    browser
        .wait_for_text(&shown, "👩\u{200d}💻 Review\nthe RLOplanPDF 🫨")
        .await;
    let days_left = "const text = document.querySelector(arguments[0])?.textContent ?? ''; \
                     return /^(30 d|29 d 23 h) left$/.test(text) ? text : null;";
    browser
        .wait_until(days_left, json!([format!("{} .countdown", card("r1"))]))
        .await;
}

/// An id asked again right after its outcome was acked shows as a new open card, even while
/// the finished card of the first request still shows how it ended (it folds at once, to
/// make way).
#[tokio::test(flavor = "multi_thread")]
async fn an_id_asked_again_after_its_ack_shows_again() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;
    browser.wait_for(&question("r1", "Color")).await;
    agent
        .send(&json!({"type": "cancel", "session": "s", "id": "r1"}))
        .await;
    assert_eq!(agent.recv_type("outcome").await["outcome"], "withdrawn");
    browser
        .wait_for(&format!(r#"{}[data-state="withdrawn"]"#, card("r1")))
        .await;
    agent
        .send(&json!({"type": "ack", "session": "s", "id": "r1"}))
        .await;
    agent.send(&ask("s", "r1", &["Size"], None)).await;
    agent.recv_type("accepted").await;
    browser.wait_for(&question("r1", "Size")).await;
    let open = format!("{}:not(.is-final)", card("r1"));
    browser.wait_for(&open).await;
    browser.click(&option("r1", "Size", "Red")).await;
    browser.click(&format!("{} .submit", card("r1"))).await;
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["result"], json!({"Size": ["Red"]}));
    assert_eq!(browser.console_errors().await, Vec::<String>::new());
}

/// Reloading the page while a question is open shows the same question again, still
/// answerable.
#[tokio::test(flavor = "multi_thread")]
async fn a_reload_restores_an_open_question() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;
    browser.click(&option("r1", "Color", "Red")).await;

    browser
        .execute(
            "document.querySelector(arguments[0]).dataset.before = 'reload';",
            json!([card("r1")]),
        )
        .await;
    reload(&browser).await;
    browser.wait_for(&card("r1")).await;
    assert_eq!(browser.attr(&card("r1"), "data-before").await, None);
    assert_eq!(
        browser
            .execute(
                "return document.querySelectorAll('article.card').length;",
                json!([])
            )
            .await,
        json!(1)
    );

    browser.click(&option("r1", "Color", "Blue")).await;
    browser.click(&format!("{} .submit", card("r1"))).await;
    assert_eq!(
        agent.recv_type("outcome").await["result"],
        json!({"Color": ["Blue"]})
    );
    browser
        .wait_for(&format!(
            r#"{}[data-state="answered"][data-by="self"]"#,
            card("r1")
        ))
        .await;
}

/// Markup in the agent's text is shown as text, never run; and unbroken long words wrap
/// instead of widening the page, on a phone and on a desktop.
#[tokio::test(flavor = "multi_thread")]
async fn hostile_text_is_shown_as_text_and_never_widens_the_page() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let img = r#"<img src=x onerror="window.__pwned=1">"#;
    let script = "<script>window.__pwned=2</script>";
    let long_word = "W".repeat(500);
    let long_label = "M".repeat(50);
    let frame = json!({"type": "ask", "session": "s", "id": "r1",
        "title": r#"<img src=y onerror="window.__pwned=3">"#,
        "questions": [
            {"header": "<b>bold</b>", "question": img, "options": [
                {"label": script, "description": "<i>not italic</i>"},
                {"label": "Plain"}]},
            {"header": "Long", "question": long_word, "options": [
                {"label": long_label, "description": "D".repeat(200)},
                {"label": "Short"}]}]});
    let _agent = agent_asking(&server, &frame).await;

    let hostile = question("r1", "<b>bold</b>");
    browser.wait_for(&hostile).await;
    assert_eq!(
        browser
            .text_of(&format!("{hostile} .question-text"))
            .await
            .unwrap(),
        img
    );
    assert_eq!(
        browser.text_of(&format!("{hostile} .chip")).await.unwrap(),
        "<b>bold</b>"
    );
    assert_eq!(
        browser
            .text_of(&format!("{hostile} .option-label"))
            .await
            .unwrap(),
        script
    );
    assert_eq!(
        browser
            .text_of(&format!("{} .card-title", card("r1")))
            .await
            .unwrap(),
        r#"<img src=y onerror="window.__pwned=3">"#
    );
    let injected = browser
        .execute(
            "return [document.querySelectorAll(arguments[0] + ' :is(img, script, b, i)').length, \
             window.__pwned ?? null];",
            json!([card("r1")]),
        )
        .await;
    assert_eq!(injected, json!([0, null]));

    let long = question("r1", "Long");
    assert_eq!(
        browser
            .text_of(&format!("{long} .question-text"))
            .await
            .unwrap(),
        long_word
    );
    // The card clips what overflows it, so the page's width alone would not show a long word
    // running out of its box: every element must also fit its own width.
    assert_fits_phone_and_desktop(&browser, &format!("{} *", card("r1"))).await;
}

/// A character the harness would refuse is caught before sending and named beside its
/// question, and the card stays open for a corrected answer: a format character, and one
/// the browser knows but the harness (Unicode 14.0) does not.
///
/// U+2FFC was assigned in Unicode 15.1: the browser's own `\p{C}` lets it through.
#[tokio::test(flavor = "multi_thread")]
async fn a_character_the_harness_refuses_is_named_before_sending() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color", "Size"], None)).await;
    assert_eq!(
        browser
            .execute("return /\\p{C}/u.test('\\u2FFC');", json!([]))
            .await,
        json!(false),
        "this test needs a browser whose Unicode is 15.1 or later"
    );

    let size = question("r1", "Size");
    browser.click(&option("r1", "Color", "Red")).await;
    browser
        .type_into(&format!("{size} .other-input"), "a\u{200D}b")
        .await;
    browser
        .wait_for_text(
            &format!("{size} .question-error"),
            "an invisible or control character (U+200D) at character 2",
        )
        .await;
    browser
        .type_into(
            &format!("{size} .other-input"),
            "\u{E003}\u{E003}\u{E003}Tall \u{2FFC}",
        )
        .await;
    browser
        .wait_for_text(
            &format!("{size} .question-error"),
            "(U+2FFC) at character 6, which is newer than the agent's framework knows",
        )
        .await;
    browser.wait_for(&format!("{size}.has-error")).await;
    assert_eq!(
        browser
            .text_of(&format!("{} .question-error", question("r1", "Color")))
            .await
            .as_deref(),
        Some("")
    );
    assert_eq!(
        browser
            .attr(&format!("{} .submit", card("r1")), "disabled")
            .await
            .as_deref(),
        Some("")
    );

    // Backspace twice takes the character and its space away; the error goes with it.
    browser
        .type_into(&format!("{size} .other-input"), "\u{E003}\u{E003}")
        .await;
    browser.wait_gone(&format!("{size}.has-error")).await;
    browser.click(&format!("{} .submit", card("r1"))).await;
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(
        outcome["result"],
        json!({"Color": ["Red"], "Size": ["Tall"]})
    );
}

/// The raw response head to `GET path`.
async fn response_head(server: &TestServer, path: &str) -> String {
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        server.addr
    );
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut response = Vec::new();
    tokio::time::timeout(TIMEOUT, stream.read_to_end(&mut response))
        .await
        .expect("a response in time")
        .expect("read");
    let response = String::from_utf8_lossy(&response);
    let (head, _) = response.split_once("\r\n\r\n").expect("an HTTP response");
    head.to_owned()
}

/// The pages, their scripts (the service worker too) and style are served with a strict
/// Content-Security-Policy, no referrer and no sniffing; names outside the embedded set are
/// not found.
#[tokio::test(flavor = "multi_thread")]
async fn the_page_is_served_with_strict_headers() {
    let server = TestServer::start().await;
    for path in [
        "/s/s",
        "/",
        "/js/main.js",
        "/js/cards.js",
        "/style.css",
        "/sw.js",
    ] {
        let head = response_head(&server, path).await;
        let header = |name: &str| {
            head.lines()
                .filter_map(|line| line.split_once(':'))
                .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim().to_owned())
                .unwrap_or_else(|| panic!("{path}: no {name} header in\n{head}"))
        };
        assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
        let csp = header("content-security-policy");
        assert!(csp.contains("default-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("script-src 'self'"), "{path}: {csp}");
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(header("referrer-policy"), "no-referrer", "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        if path.starts_with("/js/") || path == "/sw.js" {
            assert!(
                header("content-type").starts_with("text/javascript"),
                "{path}"
            );
        }
        // The service worker lives at the root so that it may control every page.
        if path == "/sw.js" {
            assert_eq!(header("service-worker-allowed"), "/");
            assert_eq!(header("cache-control"), "no-cache");
        }
    }
    for path in ["/js/nope.js", "/js/..%2Fsession.html", "/app.js"] {
        let head = response_head(&server, path).await;
        assert!(head.starts_with("HTTP/1.1 404"), "{path}: {head}");
    }
}

/// The README's screenshot: two open questions, both whole in a 1280×1500 window. Written to
/// the file `ASKGATE_SCREENSHOT` names (relative to the repository root), else to a temporary
/// file that is checked and removed.
#[tokio::test(flavor = "multi_thread")]
async fn screenshot_for_the_docs() {
    let (target, keep) = match std::env::var_os("ASKGATE_SCREENSHOT") {
        Some(path) => (repo_root().join(path), true),
        None => (
            std::env::temp_dir().join(format!("askgate-screenshot-{}.png", std::process::id())),
            false,
        ),
    };
    let server = TestServer::start().await;
    let session = "review-7f3a";
    let browser = open_page(&server, session).await;
    browser.set_viewport_size(1280, 1500).await;
    let database = json!({"type": "ask", "session": session, "id": "db", "questions": [
        {"header": "Database", "question": "Which database should the new billing service use?",
         "options": [
            {"label": "PostgreSQL", "description": "Relational and mature; the team already runs it"},
            {"label": "SQLite", "description": "One file, no server; fine while there is one instance"},
            {"label": "DynamoDB", "description": "Managed key-value store; scales without ops work"}]}]});
    let release = json!({"type": "ask", "session": session, "id": "release",
        "title": "Release v2.4 checklist", "timeout_s": 900,
        "questions": [
            {"header": "Targets", "question": "Which platforms should this release build for?",
             "multi_select": true, "options": [
                {"label": "Linux x86-64"}, {"label": "Linux ARM64"},
                {"label": "macOS"}, {"label": "Windows"}]}]});
    let mut agent = agent_asking(&server, &release).await;
    agent.send(&database).await;
    agent.recv_type("accepted").await;

    browser.click(&option("db", "Database", "PostgreSQL")).await;
    browser
        .click(&option("release", "Targets", "Linux x86-64"))
        .await;
    browser
        .click(&option("release", "Targets", "Linux ARM64"))
        .await;
    // No focus ring, and the picked options' colour transitions finished.
    browser
        .execute(
            "document.activeElement.blur(); window.scrollTo(0, 0);",
            json!([]),
        )
        .await;
    browser
        .wait_until(
            "return [...document.querySelectorAll('.option')]\
             .every((el) => el.getAnimations().length === 0);",
            json!([]),
        )
        .await;
    browser
        .wait_for_text(&format!("{} .countdown", card("release")), "min")
        .await;
    browser
        .wait_until(
            "return [...document.querySelectorAll('article[data-request-id]')]\
             .filter((card) => card.getBoundingClientRect().bottom <= window.innerHeight)\
             .length === 2;",
            json!([]),
        )
        .await;
    browser.screenshot(&target).await;
    let png = std::fs::read(&target).expect("read the screenshot");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "the screenshot is a PNG"
    );
    if keep {
        eprintln!("wrote {}", target.display());
    } else {
        std::fs::remove_file(&target).expect("remove the screenshot");
    }
}

/// An answer too long for one frame is not sent: the page says why and keeps the text, the
/// socket stays open (sending it would have closed it with 4413), and the shortened answer
/// goes through.
#[tokio::test(flavor = "multi_thread")]
async fn an_answer_too_long_to_send_is_kept_and_explained() {
    let mut config = test_config();
    config.limits.max_frame_bytes = 4096;
    let server = TestServer::start_with(config).await;
    let browser = open_page(&server, "s").await;
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;

    let other = format!("{} .other-input", question("r1", "Color"));
    browser.wait_for(&other).await;
    let fill = "const box = document.querySelector(arguments[0]); box.value = arguments[1]; \
                box.dispatchEvent(new Event('input', { bubbles: true }));";
    let long = "x".repeat(5000);
    browser.execute(fill, json!([other, long])).await;
    let submit = format!("{} .submit", card("r1"));
    browser.click(&submit).await;
    browser
        .wait_for_text(&format!("{} .card-error", card("r1")), "too long to send")
        .await;
    browser
        .wait_for_text(&format!("{} .card-status", card("r1")), "Not sent")
        .await;
    let kept = "return document.querySelector(arguments[0]).value.length;";
    assert_eq!(browser.execute(kept, json!([other])).await, json!(5000));
    wait_connected(&browser).await;

    browser.execute(fill, json!([other, "Teal"])).await;
    browser.click(&submit).await;
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["result"], json!({"Color": ["Teal"]}));
}

/// A question that ends while the page is disconnected does not just vanish on reconnect: its
/// card says it ended meanwhile, and typing in it is over. A gateway that lists finished
/// requests in its snapshot tells the page how (withdrawn); one that does not, only that it
/// closed.
#[tokio::test(flavor = "multi_thread")]
async fn a_card_that_ended_while_disconnected_says_so() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;
    let other = format!("{} .other-input", question("r1", "Color"));
    browser.type_into(&other, "half a tho").await;

    // "Server busy": the page waits seconds before it reconnects, time enough to withdraw.
    server.state.hub.kick_tabs(1013);
    browser
        .wait_for(r#"#connection[data-state="reconnecting"]"#)
        .await;
    agent
        .send(&json!({"type": "cancel", "session": "s", "id": "r1"}))
        .await;
    assert_eq!(agent.recv_type("outcome").await["outcome"], "withdrawn");

    let ended = format!(
        r#"{0}:is([data-state="closed"], [data-state="withdrawn"]) .card-status"#,
        card("r1")
    );
    browser.wait_for(&ended).await;
    let status = browser.text_of(&ended).await.unwrap();
    assert!(
        [
            "Closed while the connection was down.",
            "Withdrawn by the agent"
        ]
        .contains(&&*status),
        "{status}"
    );
    // Its inputs are disabled, or gone once it has folded.
    let typed = browser
        .execute(
            "const fields = document.querySelector(arguments[0]); \
             return fields === null || fields.disabled;",
            json!([format!("{} fieldset", card("r1"))]),
        )
        .await;
    assert_eq!(typed, json!(true));
    wait_connected(&browser).await;
}

/// The characters of the element `css` matches, in the order they appear on screen from left
/// to right (direction controls, which take no room, and the marks standing for them left out).
const LEFT_TO_RIGHT: &str = "const root = document.querySelector(arguments[0]); \
    const controls = /[\\u202A-\\u202E\\u2066-\\u2069\\u200E\\u200F\\u061C]/; \
    const seen = []; \
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT); \
    for (let node; (node = walk.nextNode());) { \
      if (node.parentElement.closest('.bidi-mark')) continue; \
      for (let i = 0; i < node.length; i++) { \
        if (controls.test(node.data[i])) continue; \
        const range = document.createRange(); range.setStart(node, i); range.setEnd(node, i + 1); \
        seen.push([range.getBoundingClientRect().left, node.data[i]]); } } \
    return seen.sort((a, b) => a[0] - b[0]).map((s) => s[1]).join('');";

/// The child nodes of the element `css` matches: `["text", data]` or `[class, text, label]`.
const PIECES: &str = "return [...document.querySelector(arguments[0]).childNodes].map((n) => \
    n.nodeType === Node.TEXT_NODE ? ['text', n.data] \
    : [n.className, n.textContent, n.getAttribute('aria-label')]);";

/// Direction controls in the agent's text (an option, a title, another tab's answer) are
/// shown as marks and take no effect, so "\u{202e}fdp.exe\u{202c}" cannot pass for
/// "exe.pdf"; Arabic without controls still reads right to left.
#[tokio::test(flavor = "multi_thread")]
async fn direction_controls_are_shown_not_applied() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let (mut tab, _) = server.tab("s").await;
    let disguised = "\u{202e}fdp.exe\u{202c}";
    let arabic = "أي ملف أفتح؟";
    let frame = json!({"type": "ask", "session": "s", "id": "r1", "dialect": "deepagents",
        "title": format!("Open {disguised} now"),
        "questions": [
            {"question": "Which file?", "type": "multiple_choice",
             "choices": [{"value": disguised}, {"value": "report.pdf"}]},
            {"question": arabic, "type": "multi_select",
             "choices": [{"value": disguised}, {"value": "\u{2067}RLI\u{2069} \u{200f}"}]}]});
    let mut agent = agent_asking(&server, &frame).await;

    let label = format!(r#"{} fieldset[data-index="0"] .option-label"#, card("r1"));
    browser.wait_for(&label).await;
    let mark = |name: &str, what: &str| json!(["bidi-mark", name, what]);
    let rlo = mark("RLO", "right-to-left override (U+202E), not applied");
    let pdf = mark("PDF", "pop directional formatting (U+202C), not applied");
    assert_eq!(
        browser.execute(LEFT_TO_RIGHT, json!([label])).await,
        "fdp.exe"
    );
    assert_eq!(
        browser.execute(PIECES, json!([label])).await,
        json!([rlo, ["text", "fdp.exe"], pdf])
    );
    let title = format!("{} .card-title", card("r1"));
    assert_eq!(
        browser.text_of(&title).await.as_deref(),
        Some("Open RLOfdp.exePDF now")
    );
    assert_eq!(
        browser.execute(LEFT_TO_RIGHT, json!([title])).await,
        "Open fdp.exe now"
    );
    let second = format!(r#"{} fieldset[data-index="1"]"#, card("r1"));
    assert_eq!(
        browser
            .execute(
                PIECES,
                json!([format!("{second} .option:nth-child(2) .option-label")])
            )
            .await,
        json!([
            mark("RLI", "right-to-left isolate (U+2067), not applied"),
            ["text", "RLI"],
            mark("PDI", "pop directional isolate (U+2069), not applied"),
            ["text", " "],
            mark("RLM", "right-to-left mark (U+200F), not applied")
        ])
    );
    // Arabic with no controls keeps its own direction: its first letter is the rightmost.
    let question_text = format!("{second} .question-text");
    assert_eq!(
        browser.text_of(&question_text).await.as_deref(),
        Some(arabic)
    );
    let reversed: String = arabic.chars().rev().collect();
    assert_eq!(
        browser.execute(LEFT_TO_RIGHT, json!([question_text])).await,
        reversed
    );
    // Nowhere in the card does a control still act.
    let acting = "return /[\\u202A-\\u202E\\u2066-\\u2069\\u200E\\u200F\\u061C]/\
                  .test(document.querySelector(arguments[0]).textContent);";
    assert_eq!(
        browser.execute(acting, json!([card("r1")])).await,
        json!(false)
    );

    // Another tab's answer, summarised here, is shown the same way.
    tab.recv_until("request").await;
    tab.send(&json!({"type": "answer", "id": "r1",
                     "response": {"answers": [disguised, [disguised]]}}))
        .await;
    agent.recv_type("outcome").await;
    let summary = format!(
        r#"{}[data-by="other"] .summary li:first-child .summary-value"#,
        card("r1")
    );
    browser.wait_for(&summary).await;
    assert_eq!(
        browser.execute(LEFT_TO_RIGHT, json!([summary])).await,
        "fdp.exe"
    );
    assert_eq!(
        browser.text_of(&summary).await.as_deref(),
        Some("RLOfdp.exePDF")
    );
    let pick = format!(r#"{}[data-by="other"] .summary .pick"#, card("r1"));
    assert_eq!(
        browser.execute(PIECES, json!([pick])).await,
        json!([rlo, ["text", "fdp.exe"], pdf])
    );
}

/// Elements in `css` (itself included) drawn in the page's error colours: text, background or
/// border in `--danger` or `--danger-soft`, as `tag.class: property`.
async fn in_error_colours(browser: &Browser, css: &str) -> Value {
    let script = "const probe = document.body.appendChild(document.createElement('span')); \
        const resolve = (value) => { probe.style.color = value; \
          return getComputedStyle(probe).color; }; \
        const alarming = [resolve('var(--danger)'), resolve('var(--danger-soft)')]; \
        probe.remove(); \
        const root = document.querySelector(arguments[0]); \
        return [root, ...root.querySelectorAll('*')].flatMap((el) => { \
          const style = getComputedStyle(el); \
          return ['color', 'background-color', 'border-top-color'] \
            .filter((p) => alarming.includes(style.getPropertyValue(p)) && \
              (p !== 'border-top-color' || style.borderTopStyle !== 'none')) \
            .map((p) => `${el.tagName}.${el.className}: ${p}`); });";
    browser.execute(script, json!([css])).await
}

/// Neither the header nor the agent's status is drawn in error colours, light or dark.
async fn assert_calm(browser: &Browser, state: &str) {
    for dark in [false, true] {
        browser.set_color_scheme(dark).await;
        for css in ["header", "#agent-status"] {
            assert_eq!(
                in_error_colours(browser, css).await,
                json!([]),
                "{css}, {state}, dark: {dark}"
            );
        }
    }
}

/// The page says in calm words whether an agent is waiting on the session — never as an
/// error, in either colour scheme; a socket agent arriving and leaving switches the two.
#[tokio::test(flavor = "multi_thread")]
async fn the_agent_status_is_said_calmly() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let absent = "No agent is connected right now. \
                  Answers are kept and reach the agent when it returns.";
    let waiting = "An agent is waiting for answers in this session.";
    let status = "#agent-status:not([hidden])";
    browser.wait_for_text(status, absent).await;
    assert_eq!(browser.text_of(status).await.as_deref(), Some(absent));
    assert_calm(&browser, "no agent").await;

    let mut agent = server.agent().await;
    agent.send(&json!({"type": "open", "session": "s"})).await;
    agent.recv_type("opened").await;
    browser.wait_for_text(status, waiting).await;
    assert_eq!(browser.text_of(status).await.as_deref(), Some(waiting));
    assert_calm(&browser, "agent waiting").await;

    agent.close().await;
    browser.wait_for_text(status, absent).await;
    assert!(
        browser
            .text_of("#presence")
            .await
            .unwrap()
            .contains("1 tab watching"),
        "the tab count stays in the header"
    );
}

/// Decline cannot be taken back, so it asks to be confirmed: a first click alone sends the
/// gateway nothing (no `decline` frame leaves the page) and turns the button into "Confirm decline", which goes back to "Decline"
/// after a few seconds, or at once on Escape; a double-click is one press; pressing it twice
/// from the keyboard declines.
#[tokio::test(flavor = "multi_thread")]
async fn a_first_decline_click_sends_nothing() {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;
    let button = format!("{} .decline", card("r1"));

    browser.click(&button).await;
    assert_eq!(
        frames_of_type(&browser, "decline").await,
        json!([]),
        "no decline sent"
    );
    assert_eq!(
        browser.text_of(&button).await.as_deref(),
        Some("Confirm decline")
    );
    browser
        .wait_for_text(&format!("{} .card-status", card("r1")), "Press again")
        .await;
    browser.wait_for_text("#live", "cannot be undone").await;
    let open = format!("{}:not(.is-final):not(.is-sending)", card("r1"));
    browser.find(&open).await;
    let says_decline = "return document.querySelector(arguments[0]).textContent === 'Decline';";
    browser.wait_until(says_decline, json!([button])).await;
    assert_eq!(
        frames_of_type(&browser, "decline").await,
        json!([]),
        "no decline sent"
    );
    browser.find(&open).await;

    // A double-click is one press: its second click confirms nothing.
    let double_click = "const button = document.querySelector(arguments[0]); \
        for (const detail of [1, 2]) button.dispatchEvent(new MouseEvent('click', \
          {bubbles: true, cancelable: true, detail}));";
    browser.execute(double_click, json!([button])).await;
    assert_eq!(
        frames_of_type(&browser, "decline").await,
        json!([]),
        "no decline sent"
    );
    assert_eq!(
        browser.text_of(&button).await.as_deref(),
        Some("Confirm decline")
    );

    // Escape backs out of the confirmation.
    browser.type_into(&button, "\u{E00C}").await;
    browser.wait_until(says_decline, json!([button])).await;
    assert_eq!(
        frames_of_type(&browser, "decline").await,
        json!([]),
        "no decline sent"
    );

    browser.find(&open).await;
    browser.type_into(&button, "\u{E007}").await;
    browser.wait_for_text(&button, "Confirm decline").await;
    browser.type_into(&button, "\u{E007}").await;
    assert_eq!(agent.recv_type("outcome").await["outcome"], "declined");
}

/// A question that ends stays on the page, folded under the open ones to what it asked, how
/// it ended and when, until the person dismisses it, one at a time or all at once.
#[tokio::test(flavor = "multi_thread")]
async fn a_finished_card_stays_folded_until_dismissed() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut shape = ask("s", "r3", &["Shape"], None);
    shape["title"] = json!("Pick a shape");
    let mut agent = agent_asking(&server, &ask("s", "r1", &["Color"], None)).await;
    agent.send(&shape).await;
    agent.recv_type("accepted").await;
    browser.wait_for(&card("r3")).await;

    // Answered, then withdrawn, then timed out: the finished list runs from the latest.
    browser.click(&option("r1", "Color", "Blue")).await;
    browser.click(&format!("{} .submit", card("r1"))).await;
    assert_eq!(agent.recv_type("outcome").await["outcome"], "answered");
    agent
        .send(&json!({"type": "cancel", "session": "s", "id": "r3"}))
        .await;
    assert_eq!(agent.recv_type("outcome").await["outcome"], "withdrawn");
    agent.send(&ask("s", "r2", &["Size"], Some(1.0))).await;
    agent.recv_type("accepted").await;
    assert_eq!(agent.recv_type("outcome").await["outcome"], "timed_out");

    for (id, what, how) in [
        ("r1", "Which Color?", "Answered by you"),
        ("r2", "Which Size?", "Timed out"),
        ("r3", "Pick a shape", "Withdrawn by the agent"),
    ] {
        let folded = finished(id);
        browser
            .wait_for_text(&format!("{folded} .card-status"), how)
            .await;
        assert_eq!(
            browser
                .text_of(&format!("{folded} .folded-what"))
                .await
                .as_deref(),
            Some(what)
        );
        assert!(
            says_local_time(&browser, &folded, "at", 60_000).await,
            "{id}"
        );
        assert_eq!(
            browser
                .find_all_count(&format!("{folded} :is(input, textarea, .submit, .decline)"))
                .await,
            0,
            "{id}: nothing left to answer with"
        );
    }
    assert_eq!(
        browser
            .text_of(&format!("{} .summary .pick", finished("r1")))
            .await
            .as_deref(),
        Some("Blue")
    );
    assert_eq!(finished_ids(&browser).await, json!(["r2", "r3", "r1"]));
    browser.wait_for("#empty:not([hidden])").await;

    // A new question goes above the finished ones.
    agent.send(&ask("s", "r4", &["Mood"], None)).await;
    agent.recv_type("accepted").await;
    browser.wait_for(&format!("#requests {}", card("r4"))).await;
    browser.wait_for("#empty[hidden]").await;
    let above = "return document.querySelector(arguments[0]).getBoundingClientRect().bottom <= \
                 document.querySelector('#finished').getBoundingClientRect().top;";
    assert_eq!(
        browser.execute(above, json!([card("r4")])).await,
        json!(true)
    );

    // Dismissing one from the keyboard leaves the others, and focus on the next one's button.
    let dismiss = format!("{} .dismiss", finished("r3"));
    assert_eq!(
        labelled_name(&browser, &dismiss).await,
        "Dismiss Pick a shape"
    );
    browser.type_into(&dismiss, "\u{E007}").await;
    browser.wait_gone(&finished("r3")).await;
    assert_eq!(finished_ids(&browser).await, json!(["r2", "r1"]));
    let focused = "return document.activeElement.matches(arguments[0]);";
    assert_eq!(
        browser
            .execute(focused, json!([format!("{} .dismiss", finished("r1"))]))
            .await,
        json!(true)
    );

    browser.click("#clear-finished").await;
    browser.wait_gone("#finished article").await;
    browser.wait_for("#finished[hidden]").await;
    browser
        .find(&format!("#requests {}:not(.is-final)", card("r4")))
        .await;
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    u64::try_from(since.as_millis()).expect("a time in range")
}

/// A script for `run_before_each_load` that gives every `snapshot` the page receives the
/// `finished` list `entries`, or `window.finishedForTest` once a test sets it (a `by` of
/// `"$self"` becomes the snapshot's own tab id).
fn snapshot_with_finished(entries: &Value) -> String {
    format!(
        "(() => {{ const given = {entries}; \
         const listen = WebSocket.prototype.addEventListener; \
         WebSocket.prototype.addEventListener = function (type, listener, options) {{ \
           if (type !== 'message') return listen.call(this, type, listener, options); \
           return listen.call(this, type, (event) => {{ \
             const frame = JSON.parse(event.data); \
             if (frame.type !== 'snapshot') return listener.call(this, event); \
             const entries = window.finishedForTest ?? given; \
             frame.finished = entries.map((e) => ({{...e, by: e.by === '$self' ? frame.tab : e.by}})); \
             listener.call(this, new MessageEvent('message', {{data: JSON.stringify(frame)}})); \
           }}, options); }}; }})();"
    )
}

/// Finished requests a snapshot lists (for a late or reloaded tab) show as folded cards,
/// newest first, each with how and when it ended, and stay dismissed across a reload once
/// dismissed. Today's gateway sends no `finished`, so a script adds it to the snapshot.
#[tokio::test(flavor = "multi_thread")]
async fn finished_requests_in_a_snapshot_are_listed() {
    let server = TestServer::start().await;
    let now = now_ms();
    let colors = questions(&["Color"]);
    let deploy = json!([{"question": "Deploy now?", "type": "multiple_choice", "required": true,
                         "choices": [{"value": "Yes"}, {"value": "No"}]}]);
    let entries = json!([
        {"id": "old", "dialect": "harness", "title": "Two days ago", "questions": colors,
         "outcome": "timed_out", "response": {"answers": [], "cancelled": true}, "by": null,
         "at_ms": now - 2 * 86_400_000},
        {"id": "mine", "dialect": "harness", "title": null, "questions": colors,
         "outcome": "answered", "by": "$self", "at_ms": now - 120_000,
         "response": {"answers": [{"header": "Color", "selected": ["Red"]}], "cancelled": false}},
        {"id": "theirs", "dialect": "deepagents", "title": null, "questions": deploy,
         "outcome": "declined", "response": {"status": "cancelled", "answers": [""]},
         "by": "another-tab", "at_ms": now - 60_000},
        {"id": "gone", "dialect": "harness", "title": "Withdrawn \u{202e}one", "questions": colors,
         "outcome": "withdrawn", "response": null, "by": null, "at_ms": now - 30_000}]);
    let browser = open_page_with(&server, "s", &[&snapshot_with_finished(&entries)]).await;
    let _agent = agent_asking(&server, &ask("s", "open", &["Size"], None)).await;
    browser
        .wait_for(&format!("#requests {}", card("open")))
        .await;

    assert_eq!(
        finished_ids(&browser).await,
        json!(["gone", "theirs", "mine", "old"])
    );
    for (id, what, how) in [
        ("gone", "Withdrawn RLOone", "Withdrawn by the agent"),
        ("theirs", "Deploy now?", "Declined in another tab"),
        ("mine", "Which Color?", "Answered by you"),
        ("old", "Two days ago", "Timed out"),
    ] {
        let folded = finished(id);
        assert_eq!(
            browser
                .text_of(&format!("{folded} .folded-what"))
                .await
                .as_deref(),
            Some(what)
        );
        assert!(
            browser
                .text_of(&format!("{folded} .card-status"))
                .await
                .unwrap()
                .starts_with(how),
            "{id}"
        );
    }
    assert!(says_local_time(&browser, &finished("gone"), "at", 40_000).await);
    assert!(says_local_time(&browser, &finished("old"), "on", 3 * 86_400_000).await);
    assert_eq!(
        browser
            .text_of(&format!("{} .summary .pick", finished("mine")))
            .await
            .as_deref(),
        Some("Red")
    );

    browser
        .click(&format!("{} .dismiss", finished("mine")))
        .await;
    browser.wait_gone(&finished("mine")).await;
    reload(&browser).await;
    browser.wait_for(&finished("gone")).await;
    assert_eq!(
        finished_ids(&browser).await,
        json!(["gone", "theirs", "old"])
    );

    browser.click("#clear-finished").await;
    browser.wait_for("#finished[hidden]").await;
    reload(&browser).await;
    browser
        .wait_for(&format!("#requests {}", card("open")))
        .await;
    assert_eq!(finished_ids(&browser).await, json!([]));
    browser.wait_for("#finished[hidden]").await;
}

/// On reconnecting, a snapshot's `finished` says how a card the page still showed open ended
/// (here withdrawn), and an ending the page already shows (its own answer) is not listed a
/// second time. Today's gateway sends no `finished`, so a script adds it to the snapshot.
#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_tells_how_cards_ended_while_away() {
    let server = TestServer::start().await;
    let browser = open_page_with(&server, "s", &[&snapshot_with_finished(&json!([]))]).await;
    let mut agent = agent_asking(&server, &ask("s", "r0", &["Color"], None)).await;
    agent.send(&ask("s", "r1", &["Size"], None)).await;
    agent.recv_type("accepted").await;
    browser.click(&option("r0", "Color", "Red")).await;
    browser.click(&format!("{} .submit", card("r0"))).await;
    let answered = agent.recv_type("outcome").await;
    browser.wait_for(&finished("r0")).await;

    server.state.hub.kick_tabs(1013);
    browser
        .wait_for(r#"#connection[data-state="reconnecting"]"#)
        .await;
    agent
        .send(&json!({"type": "cancel", "session": "s", "id": "r1"}))
        .await;
    let withdrawn = agent.recv_type("outcome").await;
    assert_eq!(withdrawn["outcome"], "withdrawn");
    let entry = |outcome: &Value, questions: Value| {
        json!({"id": outcome["id"], "dialect": "harness", "title": null, "questions": questions,
               "outcome": outcome["outcome"], "response": outcome["response"],
               "by": outcome["by"], "at_ms": outcome["at_ms"]})
    };
    let entries = json!([
        entry(&answered, questions(&["Color"])),
        entry(&withdrawn, questions(&["Size"]))
    ]);
    browser
        .execute("window.finishedForTest = arguments[0];", json!([entries]))
        .await;

    browser
        .wait_for_text(
            &format!(r#"{}[data-state="withdrawn"] .card-status"#, card("r1")),
            "Withdrawn by the agent",
        )
        .await;
    wait_connected(&browser).await;
    browser
        .wait_for_text(
            &format!("{} .card-status", finished("r1")),
            "Withdrawn by the agent",
        )
        .await;
    assert_eq!(finished_ids(&browser).await, json!(["r1", "r0"]));
    assert!(says_local_time(&browser, &finished("r1"), "at", 60_000).await);
    assert_eq!(
        browser
            .execute(
                "return new Date(document.querySelector(arguments[0]).dateTime).getTime();",
                json!([format!("{} time", finished("r0"))]),
            )
            .await
            .as_f64()
            .map(|local| (local - answered["at_ms"].as_f64().unwrap()).abs() < 5000.0),
        Some(true),
        "r0 is dated when its answer landed"
    );
}

/// A tab opened after requests ended sees them as finished cards, acknowledged or not: the
/// gateway lists a session's recent finished requests in the snapshot (`finished`), latest
/// ending first.
///
/// Each ending is seen by the agent and by the tab (`resolved`) before the next request is
/// asked, so r2 ends after r1 by cause, not by the clock: the expected order holds however
/// close together the two ends fall.
#[tokio::test(flavor = "multi_thread")]
async fn a_late_tab_sees_finished_requests() {
    let server = TestServer::start().await;
    let (mut tab, mut agent) = server.answered_request("s", "r1").await;
    let first_end = tab.recv_until("resolved").await;
    assert_eq!(first_end["id"], "r1", "{first_end}");
    agent
        .send(&json!({"type": "ack", "session": "s", "id": "r1"}))
        .await;
    agent.send(&ask("s", "r2", &["Size"], None)).await;
    agent.recv_type("accepted").await;
    tab.recv_until("request").await;
    tab.send(&json!({"type": "decline", "id": "r2"})).await;
    assert_eq!(agent.recv_type("outcome").await["outcome"], "declined");
    let second_end = tab.recv_until("resolved").await;
    assert_eq!(second_end["id"], "r2", "{second_end}");

    let browser = open_page(&server, "s").await;
    browser
        .wait_for_text(
            &format!("{} .card-status", finished("r1")),
            "Answered by someone with the link",
        )
        .await;
    assert_eq!(
        browser
            .text_of(&format!("{} .summary .pick", finished("r1")))
            .await
            .as_deref(),
        Some("Red")
    );
    browser
        .wait_for_text(
            &format!("{} .card-status", finished("r2")),
            "Declined by someone with the link",
        )
        .await;
    assert_eq!(finished_ids(&browser).await, json!(["r2", "r1"]));
    browser.wait_for("#empty:not([hidden])").await;
}
