//! The answer page's Claude Agent SDK `AskUserQuestion` cards (the `claude` dialect) in a
//! real headless Chromium: an agent asks Claude's questions, the test answers them in the
//! page (options, several options, "Other…" texts, an answer in one's own words), and checks
//! what the page shows, what it sent, and the permission result the agent gets: answers
//! keyed by question text.
//!
//! Every frame the page sends is recorded in the page (`window.__sent`, by
//! `page::RECORD_FRAMES`). Each card state is also checked with axe-core (no violation, light
//! and dark, 360 px and desktop width).

use askgate_tests::browser::axe::assert_accessible;
use askgate_tests::browser::page::{
    agent_asking, assert_no_direction_control, assert_nothing_made, assert_nothing_ran, card,
    children_texts, click_centred, decline_centred, ended_after_reload, finished, frames_about,
    open_recording_page, option, outcome_as_response, question, submit, submit_disabled, text,
    texts,
};
use askgate_tests::server::TestServer;
use serde_json::{Value, json};

const DATABASE: &str = "Which database should the service use?";
const FEATURES: &str = "Which features should ship first?";
const HOSTING: &str = "Where should it run?";

/// Three questions as Claude asks them: one pick (an option with a preview, and a key the
/// SDK does not know, which is passed through), several picks, and one pick.
fn questions() -> Value {
    json!([
        {"question": DATABASE, "header": "Database", "multiSelect": false, "x-origin": "plan",
         "options": [
             {"label": "Postgres", "description": "Relational, with migrations"},
             {"label": "SQLite", "description": "One file, no server",
              "preview": "db.sqlite3\n  users\n  orders"}]},
        {"question": FEATURES, "header": "Features", "multiSelect": true,
         "options": [
             {"label": "Auth", "description": "Sign-in"},
             {"label": "Billing", "description": "Invoices"},
             {"label": "Search", "description": "Full text"}]},
        {"question": HOSTING, "header": "Hosting", "multiSelect": false,
         "options": [
             {"label": "Fly.io", "description": "Near the users"},
             {"label": "Our rack", "description": "Cheaper"}]}
    ])
}

/// A claude `ask` frame on session `s`.
fn claude_ask(id: &str, questions: &Value) -> Value {
    json!({"type": "ask", "session": "s", "id": id, "dialect": "claude", "questions": questions})
}

/// The "Other…" text of question number `index` (from 0) of request `id`.
fn other(id: &str, index: usize) -> String {
    format!("{} textarea.other-input", question(id, index))
}

/// The text box for an answer in one's own words.
fn own_words(id: &str) -> String {
    format!("{} textarea.claude-response-text", card(id))
}

/// Claude's questions look like the harness's: each header, question and hint, options as
/// radios or checkboxes with their descriptions (and a preview, folded), an "Other…" text
/// each, and under them a box for an answer in one's own words. Answered (one pick, several
/// picks with a text of one's own among them, one text of one's own, and the free text), the
/// agent gets the tool's input back with the answers keyed by question text.
#[tokio::test(flavor = "multi_thread")]
async fn a_question_set_is_answered_by_question_text() {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let mut agent = agent_asking(&server, &claude_ask("r1", &questions())).await;

    browser.wait_for(&question("r1", 2)).await;
    assert_eq!(
        texts(&browser, &format!("{} fieldset .chip", card("r1"))).await,
        json!(["Database", "Features", "Hosting"])
    );
    assert_eq!(
        texts(&browser, &format!("{} fieldset .question-text", card("r1"))).await,
        json!([DATABASE, FEATURES, HOSTING, "Or answer in your own words"])
    );
    assert_eq!(
        texts(
            &browser,
            &format!(
                "{} fieldset:not(.claude-response) .question-hint",
                card("r1")
            )
        )
        .await,
        json!(["Pick one", "Pick one or more", "Pick one"])
    );
    assert_eq!(
        browser
            .inputs(&format!("{} input", question("r1", 0)))
            .await,
        json!([
            ["radio", "Postgres", "PostgresRelational, with migrations"],
            ["radio", "SQLite", "SQLiteOne file, no server"]
        ])
    );
    assert_eq!(
        browser
            .inputs(&format!("{} input", question("r1", 1)))
            .await,
        json!([
            ["checkbox", "Auth", "AuthSign-in"],
            ["checkbox", "Billing", "BillingInvoices"],
            ["checkbox", "Search", "SearchFull text"]
        ])
    );
    let preview = format!("{} details.option-preview", question("r1", 0));
    assert_eq!(
        text(&browser, &format!("{preview} .option-preview-text")).await,
        "db.sqlite3\n  users\n  orders"
    );
    assert_eq!(
        browser
            .find_all_count(&format!("{} textarea.other-input", card("r1")))
            .await,
        3,
        "an Other… text per question"
    );
    browser.find(&own_words("r1")).await;
    assert!(
        submit_disabled(&browser, "r1").await,
        "nothing answered yet"
    );

    click_centred(&browser, &option("r1", 0, "Postgres")).await;
    click_centred(&browser, &option("r1", 1, "Auth")).await;
    click_centred(&browser, &option("r1", 1, "Search")).await;
    browser.type_into(&other("r1", 1), "Audit log").await;
    // On a question of one answer, a pick and a text of one's own exclude each other.
    click_centred(&browser, &option("r1", 2, "Fly.io")).await;
    browser.type_into(&other("r1", 2), "Hetzner").await;
    assert_eq!(
        browser
            .execute(
                "return document.querySelector(arguments[0]).checked;",
                json!([option("r1", 2, "Fly.io")])
            )
            .await,
        json!(false)
    );
    assert!(
        browser
            .execute(
                "return document.querySelector(arguments[0]).checked;",
                json!([option("r1", 1, "Auth")])
            )
            .await
            == json!(true),
        "on a question of several, they go together"
    );
    browser
        .type_into(&own_words("r1"), "Ship it by Friday.")
        .await;
    browser
        .wait_for(&format!("{}:not([disabled])", submit("r1")))
        .await;
    click_centred(&browser, &submit("r1")).await;

    let outcome = outcome_as_response(&mut agent, "answered").await;
    let answers = json!({DATABASE: "Postgres", FEATURES: ["Auth", "Search", "Audit log"],
                         HOSTING: "Hetzner"});
    assert_eq!(
        outcome["response"],
        json!({"behavior": "allow", "updated_input": {"questions": questions(),
               "answers": answers, "response": "Ship it by Friday."}})
    );
    assert_eq!(
        frames_about(&browser, "r1").await,
        json!([{"type": "answer", "id": "r1",
                "response": {"answers": answers, "response": "Ship it by Friday."}}])
    );
    browser
        .wait_for_text(&format!("{} .card-status", card("r1")), "Sent ✓")
        .await;
    let folded = finished("r1");
    browser.wait_for(&folded).await;
    assert_eq!(
        text(&browser, &format!("{folded} .folded-what")).await,
        DATABASE
    );
    assert_eq!(browser.console_errors().await, Vec::<String>::new());

    // After a reload, the list of endings (from the gateway) says what was answered,
    // question by question, and the words of one's own.
    let entry = ended_after_reload(&browser, "r1").await;
    assert_eq!(
        text(&browser, &format!("{entry} .folded-what")).await,
        DATABASE
    );
    assert_eq!(
        texts(&browser, &format!("{entry} .summary li")).await,
        json!([
            "DatabasePostgres",
            "FeaturesAuthSearchAudit log",
            "Hosting“Hetzner”",
            "In their own words“Ship it by Friday.”"
        ])
    );
}

/// An answer in one's own words stands instead of picking: with it, questions may be left
/// unanswered, and only the ones answered are sent.
#[tokio::test(flavor = "multi_thread")]
async fn own_words_answer_instead_of_picking() {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let mut agent = agent_asking(&server, &claude_ask("r1", &questions())).await;

    click_centred(&browser, &option("r1", 0, "SQLite")).await;
    assert!(submit_disabled(&browser, "r1").await, "two questions left");
    browser
        .type_into(&own_words("r1"), "Let's talk about the rest tomorrow.")
        .await;
    browser
        .wait_for(&format!("{}:not([disabled])", submit("r1")))
        .await;
    // Blank, it answers nothing.
    browser
        .execute(
            "const box = document.querySelector(arguments[0]); box.value = '   '; \
             box.dispatchEvent(new Event('input'));",
            json!([own_words("r1")]),
        )
        .await;
    browser
        .wait_for(&format!("{}[disabled]", submit("r1")))
        .await;
    browser
        .execute(
            "const box = document.querySelector(arguments[0]); box.value = ''; \
             box.dispatchEvent(new Event('input'));",
            json!([own_words("r1")]),
        )
        .await;
    browser
        .type_into(&own_words("r1"), "Let's talk about the rest tomorrow.")
        .await;
    click_centred(&browser, &submit("r1")).await;

    let outcome = outcome_as_response(&mut agent, "answered").await;
    assert_eq!(
        outcome["response"]["updated_input"]["answers"],
        json!({DATABASE: "SQLite"})
    );
    assert_eq!(
        outcome["response"]["updated_input"]["response"],
        "Let's talk about the rest tomorrow."
    );
    assert_eq!(
        outcome["response"]["updated_input"]["questions"],
        questions()
    );
}

/// Declined, the agent is told the person declined; unanswered in time, that no answer came.
#[tokio::test(flavor = "multi_thread")]
async fn decline_and_timeout_deny_the_tool() {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let mut first = agent_asking(&server, &claude_ask("r1", &questions())).await;
    let mut later = claude_ask("r2", &questions());
    later["timeout_s"] = json!(3);
    let mut second = agent_asking(&server, &later).await;

    decline_centred(&browser, "r1").await;
    assert_eq!(
        outcome_as_response(&mut first, "declined").await["response"],
        json!({"behavior": "deny", "message": "The person declined to answer."})
    );
    assert_eq!(
        outcome_as_response(&mut second, "timed_out").await["response"],
        json!({"behavior": "deny", "message": "No answer in time."})
    );
    assert_eq!(frames_about(&browser, "r2").await, json!([]));
}

/// What the gateway refuses about one question's answer is shown beside that question, and
/// the card stays open for a corrected answer. The page itself would not send such an answer,
/// so the test rewrites it on its way out.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_answer_is_shown_beside_its_question() {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let mut agent = agent_asking(&server, &claude_ask("r1", &questions())).await;

    browser
        .execute(
            "window.__tamper = (frame) => { frame.response.answers[arguments[0]] = 5; return frame; };",
            json!([HOSTING]),
        )
        .await;
    click_centred(&browser, &option("r1", 0, "Postgres")).await;
    click_centred(&browser, &option("r1", 1, "Billing")).await;
    click_centred(&browser, &option("r1", 2, "Our rack")).await;
    click_centred(&browser, &submit("r1")).await;

    browser
        .wait_for(&format!("{}.has-error", question("r1", 2)))
        .await;
    assert!(
        !text(&browser, &format!("{} .question-error", question("r1", 2)))
            .await
            .is_empty()
    );
    browser
        .wait_for_text(&format!("{} .card-status", card("r1")), "Not accepted")
        .await;
    assert_eq!(
        text(&browser, &format!("{} .card-error", card("r1"))).await,
        ""
    );
    browser.execute("window.__tamper = null;", json!([])).await;
    click_centred(&browser, &option("r1", 2, "Fly.io")).await;
    browser
        .wait_gone(&format!("{} fieldset.has-error", card("r1")))
        .await;
    click_centred(&browser, &submit("r1")).await;
    assert_eq!(
        outcome_as_response(&mut agent, "answered").await["response"]["updated_input"]["answers"],
        json!({DATABASE: "Postgres", FEATURES: ["Billing"], HOSTING: "Fly.io"})
    );
}

/// Hostile text (markup, `javascript:` links, a closing script tag, a right-to-left override)
/// in headers, questions, labels, descriptions and previews is shown as text: no element is
/// made from it, no link exists, it reads as it was sent (the override as a mark), and the
/// answers are keyed by the question text exactly as it came.
#[tokio::test(flavor = "multi_thread")]
async fn hostile_text_stays_inert() {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let img = r#"<img src=x onerror="window.__pwned=1">"#;
    let link = r#"<a href="javascript:window.__pwned=2">go</a>"#;
    let script = "</script><script>window.__pwned=3</script>";
    let rtl = "\u{202e}fdp.exe";
    let hostile = json!([
        {"question": format!("{img} {rtl}?"), "header": "<b>Hi</b>", "multiSelect": false,
         "options": [{"label": link, "description": script},
                     {"label": rtl, "description": img, "preview": format!("{script}\n{link}")}]},
        {"question": "__proto__", "header": "javascript:", "multiSelect": true,
         "options": [{"label": "<i>a</i>", "description": "javascript:alert(1)"},
                     {"label": "constructor", "description": "b"}]}
    ]);
    let frame = json!({"type": "ask", "session": "s", "id": "r1", "dialect": "claude",
                       "title": format!("<svg onload=\"window.__pwned=4\">{rtl}"),
                       "questions": hostile});
    let mut agent = agent_asking(&server, &frame).await;

    browser.wait_for(&question("r1", 1)).await;
    assert_nothing_made(
        &browser,
        &card("r1"),
        "img, script, a, b, i, svg, iframe, object, embed",
        r#"[href^="javascript"], [onerror], [onload]"#,
    )
    .await;
    assert_eq!(
        texts(&browser, &format!("{} fieldset .chip", card("r1"))).await,
        json!(["<b>Hi</b>", "javascript:"])
    );
    assert_eq!(
        texts(&browser, &format!("{} .option-label", card("r1"))).await,
        json!([link, "RLOfdp.exe", "<i>a</i>", "constructor"])
    );
    assert_eq!(
        texts(&browser, &format!("{} .option-desc", card("r1"))).await,
        json!([script, img, "javascript:alert(1)", "b"])
    );
    assert_eq!(
        text(&browser, &format!("{} .option-preview-text", card("r1"))).await,
        format!("{script}\n{link}")
    );
    assert_eq!(
        text(&browser, &format!("{} .question-text", question("r1", 0))).await,
        format!("{img} RLOfdp.exe?")
    );
    assert_no_direction_control(&browser, &card("r1")).await;

    click_centred(&browser, &option("r1", 0, rtl)).await;
    click_centred(&browser, &option("r1", 1, "constructor")).await;
    browser.type_into(&other("r1", 1), "<u>mine</u>").await;
    click_centred(&browser, &submit("r1")).await;
    let outcome = outcome_as_response(&mut agent, "answered").await;
    let mut answers = serde_json::Map::new();
    answers.insert(format!("{img} {rtl}?"), json!(rtl));
    answers.insert(
        "__proto__".to_owned(),
        json!(["constructor", "<u>mine</u>"]),
    );
    assert_eq!(
        outcome["response"]["updated_input"]["answers"],
        Value::Object(answers)
    );
    assert_nothing_ran(&browser).await;
}

/// Claude cards pass axe-core, light and dark, at 360 px and desktop width: a fresh card with
/// its preview unfolded, one being answered, a card this tab may only watch, and a card
/// answered in another tab, folded with what was answered, with the history unfolded.
#[tokio::test(flavor = "multi_thread")]
async fn claude_cards_pass_axe() {
    let server = TestServer::start().await;
    let browser = open_recording_page(&server, "s").await;
    let mut frame = claude_ask("r1", &questions());
    frame["title"] = json!("Claude has three questions");
    let mut agent = agent_asking(&server, &frame).await;
    browser.wait_for(&question("r1", 2)).await;
    click_centred(
        &browser,
        &format!("{} details.option-preview > summary", question("r1", 0)),
    )
    .await;
    assert_accessible(&browser, "a fresh claude card").await;

    click_centred(&browser, &option("r1", 0, "SQLite")).await;
    click_centred(&browser, &option("r1", 1, "Billing")).await;
    browser.type_into(&other("r1", 2), "Hetzner").await;
    browser.type_into(&own_words("r1"), "Thanks").await;
    assert_accessible(&browser, "a claude card being answered").await;

    let mut watched = claude_ask("r2", &questions());
    watched["answerers"] = json!(["carol@example.com"]);
    let _carol = agent_asking(&server, &watched).await;
    browser
        .wait_for(&format!("{}.is-read-only", card("r2")))
        .await;
    assert_accessible(&browser, "a read-only claude card").await;

    // Another tab answers r1: its card says what was answered, then folds.
    let (mut tab, _) = server.tab("s").await;
    tab.send(&json!({"type": "answer", "id": "r1", "response": {
        "answers": {DATABASE: "SQLite", FEATURES: ["Auth", "Billing"], HOSTING: "Hetzner"},
        "response": "Thanks"}}))
        .await;
    outcome_as_response(&mut agent, "answered").await;
    let folded = finished("r1");
    browser.wait_for(&folded).await;
    let summary = children_texts(&browser, &format!("{folded} .summary li")).await;
    assert_eq!(
        summary,
        json!([
            ["Database", "SQLite"],
            ["Features", "AuthBilling"],
            ["Hosting", "“Hetzner”"],
            ["In their own words", "“Thanks”"]
        ])
    );
    assert_eq!(
        browser.find_all_count(r#"[data-request-id="r1"]"#).await,
        1,
        "listed once"
    );
    assert_accessible(&browser, "folded").await;
}
