//! The answer page's MCP elicitation cards (the `form` dialect) in a real headless Chromium:
//! an MCP server, through the agent, asks for a form (or for a web address to be opened), the
//! test fills it in the page, and checks what the page shows, what it sent, and the
//! `ElicitResult` the agent gets.
//!
//! Every frame the page sends is recorded in the page (`window.__sent`, by
//! `page::RECORD_FRAMES`), and `window.open` is replaced before the page loads by a stub that
//! records its calls (`window.__opened`, by `page::STUB_WINDOW_OPEN`), so a test can tell that
//! nothing went out and nothing was opened, without waiting for silence. Each card state is
//! also checked with axe-core (no violation, light and dark, 360 px and desktop width).

use askgate_testkit::ws::WsClient;
use askgate_tests::browser::Browser;
use askgate_tests::browser::axe::assert_accessible;
use askgate_tests::browser::page::{
    RECORD_FRAMES, STUB_WINDOW_OPEN, agent_asking, assert_fits_phone_and_desktop,
    assert_no_direction_control, assert_nothing_made, assert_nothing_ran, assert_text, card,
    children_texts, click_centred, decline_centred, ended_after_reload, finished, frames_about,
    open_page_with, outcome_as_response, reload, submit, text, texts,
};
use askgate_tests::server::TestServer;
use serde_json::{Value, json};

/// The warning a form with a field that looks like a secret carries.
const SECRET_WARNING: &str = "This form asks for something that looks like a password or key — \
                              askgate forms must not be used for secrets";

/// What "Not now" says it does.
const NOT_NOW_NOTE: &str = "Not now closes this without answering or refusing: the MCP server \
                            is told you cancelled, and may ask again later.";

/// A schema with one property of each kind: a text with lengths, an email, a web address, a
/// date (with a default), a date and time (with a default), a whole number with bounds (and a
/// default), a number with bounds, a boolean (on by default), a single choice by `oneOf` (with
/// a default) and by legacy `enum` + `enumNames`, and a multiple choice with bounds (and a
/// default). Name, email, age and tags are required.
fn every_kind() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 3, "maxLength": 20},
        "email": {"type": "string", "format": "email", "title": "Email",
                  "description": "Where we write to you"},
        "site": {"type": "string", "format": "uri", "title": "Web site"},
        "born": {"type": "string", "format": "date", "title": "Birthday", "default": "2000-01-02"},
        "meet": {"type": "string", "format": "date-time", "title": "Meeting",
                 "default": "2026-01-02T10:30:00Z"},
        "age": {"type": "integer", "title": "Age", "minimum": 18, "maximum": 120, "default": 30},
        "score": {"type": "number", "title": "Score", "minimum": 0, "maximum": 1},
        "news": {"type": "boolean", "title": "Newsletter", "default": true},
        "color": {"type": "string", "title": "Colour",
                  "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
                  "default": "g"},
        "size": {"type": "string", "title": "Size", "enum": ["s", "m", "l"],
                 "enumNames": ["Small", "Medium", "Large"]},
        "tags": {"type": "array", "title": "Tags",
                 "items": {"type": "string", "enum": ["a", "b", "c", "d"]},
                 "minItems": 2, "maxItems": 3, "default": ["a", "b"]}},
        "required": ["name", "email", "age", "tags"]})
}

/// A form `ask` frame on session `s`, from the MCP server `calendar-mcp`.
fn form_ask(id: &str, schema: &Value) -> Value {
    json!({"type": "ask", "session": "s", "id": id, "dialect": "form", "mode": "form",
           "message": "Please tell us about yourself.", "server": "calendar-mcp",
           "schema": schema})
}

/// The field `name` of request `id`.
fn field(id: &str, name: &str) -> String {
    format!(r#"{} fieldset.form-field[data-name="{name}"]"#, card(id))
}

/// The one input of that field (a text box, a picker, a number box, a switch).
fn input(id: &str, name: &str) -> String {
    format!("{} :is(input, textarea)", field(id, name))
}

/// The option with `value` of a choice field.
fn choice(id: &str, name: &str, value: &str) -> String {
    format!(r#"{} input[value="{value}"]"#, field(id, name))
}

/// What is said beside field `name`.
fn field_error(id: &str, name: &str) -> String {
    format!("{} .question-error", field(id, name))
}

/// Replaces what the field `css` holds with `text`, typed key by key, then leaves it (Tab),
/// as a person moving on to the next field does.
async fn fill(browser: &Browser, css: &str, text: &str) {
    browser
        .execute(
            "const box = document.querySelector(arguments[0]); box.focus(); box.value = ''; \
             box.dispatchEvent(new Event('input', {bubbles: true}));",
            json!([css]),
        )
        .await;
    browser.type_into(css, &format!("{text}\u{E004}")).await;
}

/// Sets a date or date-and-time picker to `value` (as the picker holds it), as a person
/// picking it does: typed dates depend on the browser's locale.
async fn pick_date(browser: &Browser, css: &str, value: &str) {
    browser
        .execute(
            "const box = document.querySelector(arguments[0]); box.value = arguments[1]; \
             box.dispatchEvent(new Event('input', {bubbles: true})); \
             box.dispatchEvent(new Event('change', {bubbles: true}));",
            json!([css, value]),
        )
        .await;
}

/// Whether the element `css` is shown.
async fn visible(browser: &Browser, css: &str) -> bool {
    browser
        .execute(
            "return document.querySelector(arguments[0]).checkVisibility();",
            json!([css]),
        )
        .await
        == json!(true)
}

/// Each kind gets its input: text boxes (never a password box), an email box, a web-address
/// box, the date and date-and-time pickers, number boxes with their bounds (step 1 for a whole
/// number), a switch, radios for one choice and checkboxes for several; each default is filled
/// in, and each required field says so, in words and with aria-required. Which MCP server asks
/// is on the card. The agent gets the content as typed: a whole number as a JSON integer, a
/// boolean, a list, a default left as it was exactly as the server sent it, an optional field
/// left empty left out.
#[tokio::test(flavor = "multi_thread")]
async fn each_kind_has_its_input_and_the_content_is_as_typed() {
    let server = TestServer::start().await;
    let browser = open_page_with(&server, "s", &[RECORD_FRAMES, STUB_WINDOW_OPEN]).await;
    let mut agent = agent_asking(&server, &form_ask("r1", &every_kind())).await;

    browser.wait_for(&field("r1", "tags")).await;
    assert_text(
        &browser,
        &format!("{} .form-server-name", card("r1")),
        "calendar-mcp",
    )
    .await;
    assert_text(
        &browser,
        &format!("{} .form-server", card("r1")),
        "Asked by the MCP server calendar-mcp",
    )
    .await;
    assert_text(
        &browser,
        &format!("{} .form-message", card("r1")),
        "Please tell us about yourself.",
    )
    .await;
    assert_eq!(
        browser
            .find_all_count(&format!("{} .form-warning", card("r1")))
            .await,
        0,
        "nothing here looks like a secret"
    );
    // Per field: its name, its mark, and each input's type, role, value or checked state,
    // number bounds and step, and aria-required.
    let fields = browser
        .execute(
            "return [...document.querySelectorAll(arguments[0] + ' .form-field')].map((f) => [\
               f.dataset.name, f.querySelector('.required-mark, .optional-mark').textContent, \
               [...f.querySelectorAll('input, textarea')].map((i) => [i.type, i.getAttribute('role'), \
                 ['checkbox', 'radio'].includes(i.type) ? i.checked : i.value !== '', \
                 ...(i.type === 'number' ? [i.min, i.max, i.step] : []), \
                 i.getAttribute('aria-required')])]);",
            json!([card("r1")]),
        )
        .await;
    let req = Value::from("true");
    let no = Value::Null;
    assert_eq!(
        fields,
        json!([
            ["name", "Required", [["text", no, false, req]]],
            ["email", "Required", [["email", no, false, req]]],
            ["site", "(optional)", [["url", no, false, no]]],
            ["born", "(optional)", [["date", no, true, no]]],
            ["meet", "(optional)", [["datetime-local", no, true, no]]],
            [
                "age",
                "Required",
                [["number", no, true, "18", "120", "1", req]]
            ],
            [
                "score",
                "(optional)",
                [["number", no, false, "0", "1", "any", no]]
            ],
            ["news", "(optional)", [["checkbox", "switch", true, no]]],
            [
                "color",
                "(optional)",
                [["radio", no, false, no], ["radio", no, true, no]]
            ],
            [
                "size",
                "(optional)",
                [
                    ["radio", no, false, no],
                    ["radio", no, false, no],
                    ["radio", no, false, no]
                ]
            ],
            [
                "tags",
                "Required",
                [
                    ["checkbox", no, true, no],
                    ["checkbox", no, true, no],
                    ["checkbox", no, false, no],
                    ["checkbox", no, false, no]
                ]
            ]
        ])
    );
    assert_eq!(
        browser.find_all_count(r#"input[type="password"]"#).await,
        0,
        "a form never looks like a password prompt"
    );
    // Defaults as sent, and options by their labels.
    let values = browser
        .execute(
            "return [arguments[0], arguments[1], arguments[2]].map((css) => \
               document.querySelector(css).value);",
            json!([input("r1", "born"), input("r1", "age"), input("r1", "name")]),
        )
        .await;
    assert_eq!(values, json!(["2000-01-02", "30", ""]));
    let labels = browser
        .inputs(&format!("{} input[type=\"radio\"]", field("r1", "size")))
        .await;
    assert_eq!(
        labels,
        json!([
            ["radio", "s", "Small"],
            ["radio", "m", "Medium"],
            ["radio", "l", "Large"]
        ])
    );
    assert_text(
        &browser,
        &format!("{} .field-title", field("r1", "email")),
        "Email",
    )
    .await;
    assert_text(
        &browser,
        &format!("{} .field-desc", field("r1", "email")),
        "Where we write to you",
    )
    .await;
    assert_text(
        &browser,
        &format!("{} .switch-state", field("r1", "news")),
        "On",
    )
    .await;

    fill(&browser, &input("r1", "name"), "Ada Lovelace").await;
    fill(&browser, &input("r1", "email"), "ada@example.com").await;
    fill(&browser, &input("r1", "site"), "https://ada.example.com/").await;
    fill(&browser, &input("r1", "age"), "36").await;
    fill(&browser, &input("r1", "score"), "0.25").await;
    click_centred(&browser, &input("r1", "news")).await;
    assert_text(
        &browser,
        &format!("{} .switch-state", field("r1", "news")),
        "Off",
    )
    .await;
    click_centred(&browser, &choice("r1", "size", "m")).await;
    click_centred(&browser, &choice("r1", "tags", "c")).await;
    click_centred(&browser, &submit("r1")).await;

    let outcome = outcome_as_response(&mut agent, "answered").await;
    let content = json!({"name": "Ada Lovelace", "email": "ada@example.com",
        "site": "https://ada.example.com/", "born": "2000-01-02",
        "meet": "2026-01-02T10:30:00Z", "age": 36, "score": 0.25, "news": false,
        "color": "g", "size": "m", "tags": ["a", "b", "c"]});
    assert_eq!(
        outcome["response"],
        json!({"action": "accept", "content": content})
    );
    assert!(
        outcome["response"]["content"]["age"].is_i64(),
        "a whole number is a JSON integer"
    );
    let sent = frames_about(&browser, "r1").await;
    assert_eq!(
        sent,
        json!([{"type": "answer", "id": "r1", "response": {"content": content}}])
    );
    browser
        .wait_for_text(&format!("{} .card-status", card("r1")), "Sent ✓")
        .await;
    // Folded, an untitled form is named by its message.
    let folded = finished("r1");
    browser.wait_for(&folded).await;
    assert_text(
        &browser,
        &format!("{folded} .folded-what"),
        "Please tell us about yourself.",
    )
    .await;
    assert_eq!(browser.console_errors().await, Vec::<String>::new());

    // After a reload, the list of endings (from the gateway) names the form by its message
    // and says what was answered, field by field.
    let entry = ended_after_reload(&browser, "r1").await;
    assert_text(
        &browser,
        &format!("{entry} .folded-what"),
        "Please tell us about yourself.",
    )
    .await;
    let lines = texts(&browser, &format!("{entry} .summary li")).await;
    assert_eq!(
        lines,
        json!([
            "Your name“Ada Lovelace”",
            "Email“ada@example.com”",
            "Web site“https://ada.example.com/”",
            "Birthday2000-01-02",
            "Meeting2026-01-02T10:30:00Z",
            "Age36",
            "Score0.25",
            "NewsletterOff",
            "ColourGreen",
            "SizeMedium",
            "Tagsabc"
        ])
    );
}

/// What is wrong is said beside its field before anything is sent: a required field left
/// empty (and focus goes to it), a text too short, an email that is not one, a web address
/// that is not one, a number out of range, a whole number with decimals, too few and too
/// many choices. Nothing goes out until all is fixed; then the date and time picked goes with
/// this computer's offset.
#[tokio::test(flavor = "multi_thread")]
async fn problems_are_named_beside_their_field_before_sending() {
    let server = TestServer::start().await;
    let browser = open_page_with(&server, "s", &[RECORD_FRAMES, STUB_WINDOW_OPEN]).await;
    let mut agent = agent_asking(&server, &form_ask("r1", &every_kind())).await;
    browser.wait_for(&field("r1", "tags")).await;

    // Submit on an empty form: every required field says so, and focus goes to the first.
    click_centred(&browser, &submit("r1")).await;
    browser
        .wait_for_text(&field_error("r1", "name"), "This is required.")
        .await;
    assert_text(&browser, &field_error("r1", "email"), "This is required.").await;
    browser
        .wait_for(&format!("{}.has-error", field("r1", "name")))
        .await;
    assert_eq!(
        browser
            .execute(
                "return document.activeElement === document.querySelector(arguments[0]);",
                json!([input("r1", "name")])
            )
            .await,
        json!(true)
    );
    assert_text(
        &browser,
        &format!("{} .card-status", card("r1")),
        "Fill in every required field, and fix anything marked, to submit.",
    )
    .await;
    // Optional fields and the ones with a good default say nothing.
    for name in ["site", "age", "score", "tags"] {
        assert_text(&browser, &field_error("r1", name), "").await;
    }

    let cases = [
        ("name", "Al", "At least 3 characters, please (this has 2)."),
        (
            "name",
            "Alexandra Wilhelmina III",
            "At most 20 characters, please (this has 24).",
        ),
        (
            "email",
            "ada@localhost",
            "This is not an email address (one like name@example.com).",
        ),
        (
            "email",
            "not-an-email",
            "This is not an email address (one like name@example.com).",
        ),
        (
            "site",
            "ada dot example",
            "This is not a full web address (one like https://example.com).",
        ),
        ("age", "500", "Must be at most 120 (this is 500)."),
        ("age", "17", "Must be at least 18 (this is 17)."),
        ("age", "20.5", "Enter a whole number (no decimals)."),
        ("score", "2", "Must be at most 1 (this is 2)."),
    ];
    for (name, typed, problem) in cases {
        fill(&browser, &input("r1", name), typed).await;
        browser
            .wait_for_text(&field_error("r1", name), problem)
            .await;
    }
    // What the gateway refuses in an address, the page refuses before sending: each after a
    // good one, so that the words seen are for it.
    let refused_formats = [
        (
            "email",
            "ada@example.com",
            "ada@example.test",
            "not an email address",
        ),
        (
            "email",
            "ada@example.com",
            "ada..l@example.com",
            "not an email address",
        ),
        (
            "email",
            "ada@example.com",
            "ada@exa_mple.com",
            "not an email address",
        ),
        (
            "site",
            "https://example.com",
            "http://1.2.3.256/",
            "not a full web address",
        ),
        (
            "site",
            "https://example.com",
            "https://",
            "not a full web address",
        ),
        (
            "site",
            "https://example.com",
            "http://[::1/",
            "not a full web address",
        ),
        (
            "site",
            "https://example.com",
            "http://x:65536",
            "not a full web address",
        ),
    ];
    for (name, good, bad, problem) in refused_formats {
        fill(&browser, &input("r1", name), good).await;
        browser.wait_for_no_text(&field_error("r1", name)).await;
        fill(&browser, &input("r1", name), bad).await;
        browser
            .wait_for_text(&field_error("r1", name), problem)
            .await;
    }
    // Emptied, a required number says so too.
    fill(&browser, &input("r1", "age"), "").await;
    browser
        .wait_for_text(&field_error("r1", "age"), "This is required.")
        .await;
    // Too few choices, then too many.
    click_centred(&browser, &choice("r1", "tags", "b")).await;
    browser
        .wait_for_text(&field_error("r1", "tags"), "Pick at least 2 (1 picked).")
        .await;
    for value in ["b", "c", "d"] {
        click_centred(&browser, &choice("r1", "tags", value)).await;
    }
    browser
        .wait_for_text(&field_error("r1", "tags"), "Pick at most 3 (4 picked).")
        .await;
    click_centred(&browser, &submit("r1")).await;
    assert_eq!(frames_about(&browser, "r1").await, json!([]));

    // Fixed, field by field: each one's words go as soon as it is right.
    fill(&browser, &input("r1", "name"), "Ada").await;
    browser.wait_for_no_text(&field_error("r1", "name")).await;
    fill(&browser, &input("r1", "email"), "ada@example.com").await;
    fill(&browser, &input("r1", "site"), "").await;
    fill(&browser, &input("r1", "age"), "18").await;
    fill(&browser, &input("r1", "score"), "1").await;
    click_centred(&browser, &choice("r1", "tags", "a")).await;
    pick_date(&browser, &input("r1", "meet"), "2026-03-04T05:06").await;
    browser
        .wait_gone(&format!("{} fieldset.has-error", card("r1")))
        .await;
    click_centred(&browser, &submit("r1")).await;

    let outcome = outcome_as_response(&mut agent, "answered").await;
    let content = &outcome["response"]["content"];
    // A picked date and time goes in RFC 3339, with this computer's offset from UTC.
    let offset = browser
        .execute(
            "const minutes = -new Date(2026, 2, 4, 5, 6).getTimezoneOffset(); \
             const abs = Math.abs(minutes); \
             return (minutes < 0 ? '-' : '+') + String(Math.floor(abs / 60)).padStart(2, '0') + \
               ':' + String(abs % 60).padStart(2, '0');",
            json!([]),
        )
        .await;
    let meet = format!("2026-03-04T05:06:00{}", offset.as_str().expect("an offset"));
    assert_eq!(
        *content,
        json!({"name": "Ada", "email": "ada@example.com", "born": "2000-01-02", "meet": meet,
               "age": 18, "score": 1, "news": true, "color": "g", "tags": ["b", "c", "d"]}),
        "the site, emptied, is left out; choices go in the order they are offered"
    );
    assert_eq!(
        browser
            .execute(
                "return window.__sent.filter((f) => f.type === 'answer').length;",
                json!([])
            )
            .await,
        json!(1),
        "only the fixed answer went out"
    );
}

/// MCP's two ways to say no, at the click: Decline (pressed twice) sends `decline` and the
/// server is told `decline`; "Not now" (pressed once) sends `decline` with `dismiss` and the
/// server is told `cancel`, long before the request's deadline. Each ended card says which the
/// server was told, and so does another tab watching.
#[tokio::test(flavor = "multi_thread")]
async fn decline_declines_and_not_now_cancels_at_the_click() {
    let server = TestServer::start().await;
    let browser = open_page_with(&server, "s", &[RECORD_FRAMES, STUB_WINDOW_OPEN]).await;
    let (mut watcher, _) = server.tab("s").await;
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let mut first = agent_asking(&server, &form_ask("r1", &schema)).await;
    let mut later = form_ask("r2", &schema);
    later["timeout_s"] = json!(3600);
    let mut second = agent_asking(&server, &later).await;

    let not_now = format!("{} .not-now", card("r2"));
    browser.wait_for(&not_now).await;
    assert_text(&browser, &not_now, "Not now").await;
    let described = browser
        .execute(
            "return document.getElementById(document.querySelector(arguments[0])\
               .getAttribute('aria-describedby')).textContent;",
            json!([not_now]),
        )
        .await;
    assert_eq!(described, json!(NOT_NOW_NOTE));
    click_centred(&browser, &not_now).await;
    let cancelled = outcome_as_response(&mut second, "declined").await;
    assert_eq!(cancelled["response"], json!({"action": "cancel"}));
    assert_eq!(
        frames_about(&browser, "r2").await,
        json!([{"type": "decline", "id": "r2", "dismiss": true}]),
        "one press of Not now sends one dismissal"
    );
    let ended = format!(r#"{}[data-state="declined"] .card-status"#, card("r2"));
    browser
        .wait_for_text(&ended, "Not now: the MCP server was told you cancelled.")
        .await;
    let resolved = watcher.recv_until("resolved").await;
    assert_eq!(resolved["id"], "r2", "{resolved}");
    assert_eq!(
        resolved["response"],
        json!({"action": "cancel"}),
        "{resolved}"
    );

    decline_centred(&browser, "r1").await;
    let declined = outcome_as_response(&mut first, "declined").await;
    assert_eq!(declined["response"], json!({"action": "decline"}));
    assert_eq!(
        frames_about(&browser, "r1").await,
        json!([{"type": "decline", "id": "r1"}])
    );
    browser
        .wait_for_text(
            &format!(r#"{}[data-state="declined"] .card-status"#, card("r1")),
            "The MCP server was told you declined.",
        )
        .await;
}

/// What the gateway refuses inside the content is shown beside the field it names, and the
/// card stays open; a refusal naming no field of the form is shown above it. The page itself
/// would not send such answers, so the test rewrites them on their way out.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_field_is_shown_beside_it() {
    let server = TestServer::start().await;
    let browser = open_page_with(&server, "s", &[RECORD_FRAMES, STUB_WINDOW_OPEN]).await;
    let mut agent = agent_asking(&server, &form_ask("r1", &every_kind())).await;
    browser.wait_for(&field("r1", "tags")).await;
    fill(&browser, &input("r1", "name"), "Ada").await;
    fill(&browser, &input("r1", "email"), "ada@example.com").await;

    browser
        .execute(
            "window.__tamper = (frame) => { frame.response.content.age = 500; return frame; };",
            json!([]),
        )
        .await;
    click_centred(&browser, &submit("r1")).await;
    browser
        .wait_for(&format!("{}.has-error", field("r1", "age")))
        .await;
    let refused = text(&browser, &field_error("r1", "age")).await;
    assert!(!refused.is_empty(), "the gateway's words beside age");
    browser
        .wait_for_text(&format!("{} .card-status", card("r1")), "Not accepted")
        .await;
    assert_text(&browser, &format!("{} .card-error", card("r1")), "").await;
    for name in ["name", "email", "tags"] {
        assert_text(&browser, &field_error("r1", name), "").await;
    }
    browser
        .wait_for(&format!("{}:not(.is-read-only)", card("r1")))
        .await;

    browser
        .execute(
            "window.__tamper = (frame) => { frame.response.content.nickname = 'x'; return frame; };",
            json!([]),
        )
        .await;
    // Typing in the field clears the gateway's words about it.
    fill(&browser, &input("r1", "age"), "40").await;
    browser
        .wait_gone(&format!("{}.has-error", field("r1", "age")))
        .await;
    click_centred(&browser, &submit("r1")).await;
    browser
        .wait_for_text(
            &format!("{} .card-error", card("r1")),
            "not a field of this form",
        )
        .await;

    browser.execute("window.__tamper = null;", json!([])).await;
    click_centred(&browser, &submit("r1")).await;
    let outcome = outcome_as_response(&mut agent, "answered").await;
    assert_eq!(outcome["response"]["content"]["age"], json!(40));
    assert_eq!(outcome["response"]["content"]["name"], json!("Ada"));
}

/// URL mode: the whole address is shown as text with its host picked out, and nothing opens
/// it, links to it or fetches it until "Open and continue" is pressed; that click opens it in
/// a new tab with `noopener,noreferrer` and tells the server `accept`.
#[tokio::test(flavor = "multi_thread")]
async fn a_url_is_shown_whole_and_opened_only_on_consent() {
    let server = TestServer::start().await;
    let browser = open_page_with(&server, "s", &[RECORD_FRAMES, STUB_WINDOW_OPEN]).await;
    let (mut tab, _) = server.tab("s").await;
    let url = format!(
        "https://auth.example.com/device?user_code=WDJB-MJHT&state={}",
        "x".repeat(300)
    );
    let frame = json!({"type": "ask", "session": "s", "id": "u1", "dialect": "form",
                       "mode": "url", "message": "Sign in to your calendar to continue.",
                       "url": url, "elicitation_id": "e-42", "server": "calendar-mcp"});
    let mut agent = agent_asking(&server, &frame).await;
    let view = tab.recv_until("request").await["request"].clone();
    assert_eq!(view["url"], json!(url), "{view}");
    assert_eq!(view["host"], "auth.example.com", "{view}");

    let shown = format!("{} .form-url", card("u1"));
    browser.wait_for(&shown).await;
    assert_text(&browser, &shown, &url).await;
    assert_text(&browser, &format!("{shown} .url-host"), "auth.example.com").await;
    assert_text(
        &browser,
        &format!("{} .url-site", card("u1")),
        "auth.example.com",
    )
    .await;
    // A plain ASCII host: nothing to warn about, nothing written another way.
    assert_eq!(
        texts(
            &browser,
            &format!("{0} .url-warning, {0} .url-written", card("u1"))
        )
        .await,
        json!([])
    );
    assert_text(
        &browser,
        &format!("{} .form-server-name", card("u1")),
        "calendar-mcp",
    )
    .await;
    // No link, no prefetch, no request, nothing opened.
    let untouched = browser
        .execute(
            "return [document.querySelectorAll('a[href]:not(.brand)').length, \
               document.querySelectorAll('link[rel~=\"prefetch\"], link[rel~=\"preconnect\"], \
                 link[rel~=\"dns-prefetch\"], link[rel~=\"prerender\"], iframe, img').length, \
               performance.getEntriesByType('resource').filter((e) => e.name.includes('example.com')).length, \
               window.__opened.length];",
            json!([]),
        )
        .await;
    assert_eq!(untouched, json!([0, 0, 0, 0]));
    // Open and continue, Not now and Decline; no Submit.
    let buttons = browser
        .execute(
            "return [...document.querySelectorAll(arguments[0] + ' .card-actions button')]\
               .map((b) => b.textContent);",
            json!([card("u1")]),
        )
        .await;
    assert_eq!(buttons, json!(["Open and continue", "Not now", "Decline"]));
    assert_eq!(frames_about(&browser, "u1").await, json!([]));

    click_centred(&browser, &format!("{} .open-url", card("u1"))).await;
    let outcome = outcome_as_response(&mut agent, "answered").await;
    assert_eq!(outcome["response"], json!({"action": "accept"}));
    assert_eq!(
        browser.execute("return window.__opened;", json!([])).await,
        json!([[url, "_blank", "noopener,noreferrer"]])
    );
    assert_eq!(
        frames_about(&browser, "u1").await,
        json!([{"type": "answer", "id": "u1", "response": {"content": {}}}])
    );
}

/// The address `https://аpple.com/…` with a Cyrillic `а`: the gateway's host and the site
/// the page shows are the browser's ASCII form, `xn--pple-43d.com`, with the name as written
/// beside it and a warning that it mixes alphabets; the highlighted host is the name as
/// written, which is what the browser opens.
#[tokio::test(flavor = "multi_thread")]
async fn a_host_that_mixes_alphabets_is_shown_in_ascii_with_a_warning() {
    let server = TestServer::start().await;
    let (browser, _agent, intro) =
        apple_with_a_cyrillic_a(&server, "https://\u{430}pple.com/sign-in", ".url-warning").await;
    assert_text(
        &browser,
        &format!("{intro} .form-url .url-host"),
        "\u{430}pple.com",
    )
    .await;
    assert_fits_phone_and_desktop(&browser, &intro).await;
}

/// Asks for `url`, a spelling of `аpple.com` with a Cyrillic `а`, and checks what the tab
/// receives and what the card shows once `shown` is there: the ASCII site, the name as
/// written beside it, and one warning that it mixes alphabets. The agent is kept asking.
async fn apple_with_a_cyrillic_a(
    server: &TestServer,
    url: &str,
    shown: &str,
) -> (Browser, WsClient, String) {
    let browser = open_page_with(server, "s", &[RECORD_FRAMES, STUB_WINDOW_OPEN]).await;
    let (mut tab, _) = server.tab("s").await;
    let frame = json!({"type": "ask", "session": "s", "id": "u1", "dialect": "form",
                       "mode": "url", "message": "Sign in.", "url": url});
    let agent = agent_asking(server, &frame).await;
    let view = tab.recv_until("request").await["request"].clone();
    assert_eq!(view["host"], "xn--pple-43d.com", "{view}");

    let intro = card("u1");
    browser.wait_for(&format!("{intro} {shown}")).await;
    assert_text(&browser, &format!("{intro} .url-site"), "xn--pple-43d.com").await;
    assert_text(
        &browser,
        &format!("{intro} .url-written"),
        "\u{430}pple.com",
    )
    .await;
    let warnings = texts(&browser, &format!("{intro} .url-warning")).await;
    let warnings = warnings.as_array().expect("a list");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains("mixes alphabets (Latin and Cyrillic)"),
        "{warnings:?}"
    );
    (browser, agent, intro)
}

/// The same name written as its punycode, `https://xn--pple-43d.com/`: all ASCII as
/// written, but it stands for a Cyrillic `а` and Latin `pple`, so the page decodes it, warns
/// that it mixes alphabets and shows the decoded name beside the ASCII one.
#[tokio::test(flavor = "multi_thread")]
async fn a_punycode_host_that_mixes_alphabets_is_decoded_and_warned_about() {
    let server = TestServer::start().await;
    apple_with_a_cyrillic_a(
        &server,
        "https://xn--pple-43d.com/sign-in",
        ".form-url-site",
    )
    .await;
}

/// Stands in for a gateway that tells the page another host than the address has: every
/// `host` in a frame the page receives becomes `window.__toldHost`, once that is set.
const TELL_ANOTHER_HOST: &str = "(() => { \
    const listen = WebSocket.prototype.addEventListener; \
    WebSocket.prototype.addEventListener = function (type, listener, ...rest) { \
      if (type !== 'message') return listen.call(this, type, listener, ...rest); \
      return listen.call(this, type, (event) => { \
        if (typeof window.__toldHost !== 'string') return listener(event); \
        const data = JSON.stringify(JSON.parse(event.data), (key, value) => \
          key === 'host' && typeof value === 'string' ? window.__toldHost : value); \
        return listener(new MessageEvent('message', { data })); \
      }, ...rest); \
    }; \
    window.__toldHost = 'accounts.example.com'; \
  })();";

/// When the gateway's `host` is not the host the page reads in the address, the page trusts
/// neither: it shows the host the browser would open and a warning naming both.
#[tokio::test(flavor = "multi_thread")]
async fn a_host_the_gateway_and_the_page_disagree_on_is_warned_about() {
    let server = TestServer::start().await;
    let browser = open_page_with(&server, "s", &[TELL_ANOTHER_HOST, STUB_WINDOW_OPEN]).await;
    let frame = json!({"type": "ask", "session": "s", "id": "u1", "dialect": "form",
                       "mode": "url", "message": "Sign in.",
                       "url": "https://evil.example/sign-in"});
    let _agent = agent_asking(&server, &frame).await;
    let intro = card("u1");
    browser.wait_for(&format!("{intro} .url-warning")).await;
    assert_text(&browser, &format!("{intro} .url-site"), "evil.example").await;
    let warning = text(&browser, &format!("{intro} .url-warning")).await;
    assert!(
        warning.contains("evil.example") && warning.contains("accounts.example.com"),
        "{warning}"
    );
}

/// A field that reads as a password or key gets a warning on the card and beside itself, and
/// is still an ordinary text box: the form never looks like a password prompt.
#[tokio::test(flavor = "multi_thread")]
async fn a_field_that_looks_like_a_secret_is_warned_about() {
    let server = TestServer::start().await;
    let browser = open_page_with(&server, "s", &[RECORD_FRAMES, STUB_WINDOW_OPEN]).await;
    let schema = json!({"type": "object", "properties": {
        "user": {"type": "string", "title": "User name"},
        "password": {"type": "string", "title": "Password"}}});
    let mut agent = agent_asking(&server, &form_ask("r1", &schema)).await;

    let warning = format!("{} .form-warning", card("r1"));
    browser.wait_for(&warning).await;
    let said = text(&browser, &warning).await;
    assert!(said.contains(SECRET_WARNING), "{said:?}");
    assert!(visible(&browser, &warning).await);
    let beside = browser
        .execute(
            "return [...document.querySelectorAll(arguments[0] + ' .form-field')]\
               .map((f) => [f.dataset.name, f.querySelector('.field-sensitive') !== null, \
                 f.querySelector('input').type, f.querySelector('input').autocomplete]);",
            json!([card("r1")]),
        )
        .await;
    assert_eq!(
        beside,
        json!([
            ["user", false, "text", "off"],
            ["password", true, "text", "off"]
        ])
    );
    assert_eq!(browser.find_all_count(r#"input[type="password"]"#).await, 0);
    decline_centred(&browser, "r1").await;
    outcome_as_response(&mut agent, "declined").await;
}

/// Hostile text from the server (markup, `javascript:` links, a closing script tag, a
/// right-to-left override) in its name, message, field titles, descriptions, option labels
/// and defaults is shown as text: no element is made from it, no link exists, it reads as it
/// was sent (the override as a mark), and a default goes back exactly as it came.
#[tokio::test(flavor = "multi_thread")]
async fn hostile_text_stays_inert() {
    let server = TestServer::start().await;
    let browser = open_page_with(&server, "s", &[RECORD_FRAMES, STUB_WINDOW_OPEN]).await;
    let img = r#"<img src=x onerror="window.__pwned=1">"#;
    let link = r#"<a href="javascript:window.__pwned=2">click me</a>"#;
    let script = "</script><script>window.__pwned=3</script>";
    let rtl = "\u{202e}fdp.exe";
    let schema = json!({"type": "object", "properties": {
        "note": {"type": "string", "title": format!("<b>Note</b> {rtl}"), "description": link,
                 "default": img},
        "pick": {"type": "string", "title": "javascript:alert(1)",
                 "oneOf": [{"const": "x", "title": script}, {"const": "y", "title": link}]},
        "many": {"type": "array", "title": "<svg onload=\"window.__pwned=4\">",
                 "items": {"anyOf": [{"const": "1", "title": img}, {"const": "2", "title": rtl}]}}},
        "required": ["note"]});
    let frame = json!({"type": "ask", "session": "s", "id": "r1", "dialect": "form",
                       "title": format!("<h1>Title</h1>{rtl}"),
                       "message": format!("{img}\n{link}\n{script}"),
                       "server": "<iframe src=\"javascript:window.__pwned=5\"></iframe>",
                       "schema": schema});
    let mut agent = agent_asking(&server, &frame).await;

    browser.wait_for(&field("r1", "many")).await;
    assert_nothing_made(
        &browser,
        &card("r1"),
        "img, script, a, b, i, h1, svg, iframe, object, embed",
        r#"[href^="javascript"], [src^="javascript"], [onerror], [onload]"#,
    )
    .await;
    assert_text(
        &browser,
        &format!("{} .form-server-name", card("r1")),
        "<iframe src=\"javascript:window.__pwned=5\"></iframe>",
    )
    .await;
    assert_text(
        &browser,
        &format!("{} .form-message", card("r1")),
        &format!("{img}\n{link}\n{script}"),
    )
    .await;
    assert_text(
        &browser,
        &format!("{} .card-title", card("r1")),
        "<h1>Title</h1>RLOfdp.exe",
    )
    .await;
    assert_text(
        &browser,
        &format!("{} .field-title", field("r1", "note")),
        "<b>Note</b> RLOfdp.exe",
    )
    .await;
    assert_text(
        &browser,
        &format!("{} .field-desc", field("r1", "note")),
        link,
    )
    .await;
    assert_eq!(
        browser
            .execute(
                "return document.querySelector(arguments[0]).value;",
                json!([input("r1", "note")])
            )
            .await,
        json!(img)
    );
    let options = browser
        .execute(
            "return [...document.querySelectorAll(arguments[0] + ' .option-label')]\
               .map((l) => l.textContent);",
            json!([card("r1")]),
        )
        .await;
    assert_eq!(options, json!([script, link, img, "RLOfdp.exe"]));
    assert_no_direction_control(&browser, &card("r1")).await;
    // A text box scrolls its own text; nothing else may be wider than its box.
    assert_fits_phone_and_desktop(&browser, &format!("{} :not(input, textarea)", card("r1"))).await;

    click_centred(&browser, &choice("r1", "pick", "y")).await;
    click_centred(&browser, &choice("r1", "many", "2")).await;
    click_centred(&browser, &submit("r1")).await;
    let outcome = outcome_as_response(&mut agent, "answered").await;
    assert_eq!(
        outcome["response"]["content"],
        json!({"note": img, "pick": "y", "many": ["2"]})
    );
    assert_nothing_ran(&browser).await;
}

/// Form cards pass axe-core, light and dark, at 360 px and desktop width: a fresh form of
/// every kind with a secret warning, the same with its problems shown, a URL card, a card
/// closed with "Not now", a card this tab may only watch, and a form answered in another tab,
/// folded with what was answered, with the history unfolded.
#[tokio::test(flavor = "multi_thread")]
async fn form_cards_pass_axe() {
    let server = TestServer::start().await;
    let browser = open_page_with(&server, "s", &[RECORD_FRAMES, STUB_WINDOW_OPEN]).await;
    let mut schema = every_kind();
    schema["properties"]["api_key"] = json!({"type": "string", "title": "API key",
                                             "description": "From your settings page"});
    let mut frame = form_ask("r1", &schema);
    frame["title"] = json!("Set up your calendar");
    let mut agent = agent_asking(&server, &frame).await;
    browser.wait_for(&field("r1", "api_key")).await;
    browser
        .wait_for(&format!("{} .form-warning", card("r1")))
        .await;
    assert_accessible(&browser, "a fresh form").await;

    click_centred(&browser, &submit("r1")).await;
    fill(&browser, &input("r1", "email"), "nope").await;
    fill(&browser, &input("r1", "age"), "7").await;
    browser
        .wait_for_text(&field_error("r1", "email"), "not an email")
        .await;
    assert_accessible(&browser, "a form with its problems").await;

    let url = json!({"type": "ask", "session": "s", "id": "u1", "dialect": "form",
                     "mode": "url", "message": "Sign in to continue.",
                     "url": "https://auth.example.com/device?code=1", "server": "calendar-mcp"});
    let _url_agent = agent_asking(&server, &url).await;
    browser.wait_for(&format!("{} .form-url", card("u1"))).await;
    assert_accessible(&browser, "a URL card").await;
    let mixed = json!({"type": "ask", "session": "s", "id": "u2", "dialect": "form",
                       "mode": "url", "message": "Sign in.",
                       "url": "https://\u{430}pple.com/sign-in"});
    let _mixed_agent = agent_asking(&server, &mixed).await;
    browser
        .wait_for(&format!("{} .url-warning", card("u2")))
        .await;
    assert_accessible(&browser, "a URL card whose host mixes alphabets").await;
    click_centred(&browser, &format!("{} .not-now", card("u1"))).await;
    browser
        .wait_for_text(
            &format!(r#"{}[data-state="declined"] .card-status"#, card("u1")),
            "Not now: the MCP server was told you cancelled.",
        )
        .await;
    assert_accessible(&browser, "a card closed with Not now").await;

    // Someone else's form: this tab may only watch it.
    let mut watched = form_ask("r2", &every_kind());
    watched["answerers"] = json!(["carol@example.com"]);
    let _carol = agent_asking(&server, &watched).await;
    browser
        .wait_for(&format!("{}.is-read-only", card("r2")))
        .await;
    assert_accessible(&browser, "a read-only form").await;

    // Another tab answers r1: its card says what was answered, then folds.
    let (mut tab, _) = server.tab("s").await;
    tab.send(
        &json!({"type": "answer", "id": "r1", "response": {"content": {
        "name": "Ada", "email": "ada@example.com", "age": 40, "news": false,
        "color": "r", "tags": ["a", "d"]}}}),
    )
    .await;
    outcome_as_response(&mut agent, "answered").await;
    let folded = finished("r1");
    browser.wait_for(&folded).await;
    let summary = children_texts(&browser, &format!("{folded} .summary li")).await;
    assert_eq!(
        summary,
        json!([
            ["Your name", "“Ada”"],
            ["Email", "“ada@example.com”"],
            ["Age", "40"],
            ["Newsletter", "Off"],
            ["Colour", "Red"],
            ["Tags", "ad"]
        ])
    );
    assert_text(
        &browser,
        &format!("{folded} .folded-what"),
        "Set up your calendar",
    )
    .await;
    assert_eq!(
        browser.find_all_count(r#"[data-request-id="r1"]"#).await,
        1,
        "listed once"
    );
    assert_accessible(&browser, "folded").await;
}

/// Issue 45: on Submit, every field that is wrong says so beside it at once, not one after
/// another: a required name left empty is named beside it while a number out of range is
/// named beside its own field, and focus goes to the first of them.
#[tokio::test(flavor = "multi_thread")]
async fn submit_names_every_wrong_field_at_once() {
    let server = TestServer::start().await;
    let browser = open_page_with(&server, "s", &[RECORD_FRAMES, STUB_WINDOW_OPEN]).await;
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string", "title": "Name"},
        "guests": {"type": "integer", "title": "Guests", "minimum": 1, "maximum": 12}},
        "required": ["name", "guests"]});
    let mut agent = agent_asking(&server, &form_ask("r1", &schema)).await;
    browser.wait_for(&field("r1", "guests")).await;
    fill(&browser, &input("r1", "guests"), "13").await;
    browser
        .wait_for_text(
            &field_error("r1", "guests"),
            "Must be at most 12 (this is 13).",
        )
        .await;

    click_centred(&browser, &submit("r1")).await;
    browser
        .wait_for_text(&field_error("r1", "name"), "This is required.")
        .await;
    assert_text(
        &browser,
        &field_error("r1", "guests"),
        "Must be at most 12 (this is 13).",
    )
    .await;
    assert_eq!(
        browser
            .execute(
                "return document.activeElement === document.querySelector(arguments[0]);",
                json!([input("r1", "name")])
            )
            .await,
        json!(true),
        "focus goes to the first wrong field"
    );
    assert_eq!(frames_about(&browser, "r1").await, json!([]));

    fill(&browser, &input("r1", "name"), "Ada").await;
    fill(&browser, &input("r1", "guests"), "4").await;
    browser
        .wait_gone(&format!("{} fieldset.has-error", card("r1")))
        .await;
    click_centred(&browser, &submit("r1")).await;
    let outcome = outcome_as_response(&mut agent, "answered").await;
    assert_eq!(
        outcome["response"]["content"],
        json!({"name": "Ada", "guests": 4})
    );
}

/// The drafts this tab keeps in its sessionStorage, as `[key, value]` pairs.
async fn drafts(browser: &Browser) -> Value {
    browser
        .execute(
            "return Object.keys(sessionStorage).filter((k) => k.startsWith('askgate.draft.'))\
               .sort().map((k) => [k, sessionStorage.getItem(k)]);",
            json!([]),
        )
        .await
}

/// Issue 45: a reload keeps what was picked or typed on an open card and not sent (in the
/// tab's sessionStorage, by session and request id), and shows it again; the draft goes when
/// the answer is sent, or when the request ends otherwise.
#[tokio::test(flavor = "multi_thread")]
async fn a_reload_keeps_what_was_typed_and_picked_but_not_sent() {
    let server = TestServer::start().await;
    let browser = open_page_with(&server, "s", &[RECORD_FRAMES, STUB_WINDOW_OPEN]).await;
    let mut agent = agent_asking(&server, &form_ask("r1", &every_kind())).await;
    let mut other = form_ask(
        "r2",
        &json!({"type": "object", "properties": {
        "note": {"type": "string", "title": "Note"}}}),
    );
    other["message"] = json!("Anything else?");
    agent.send(&other).await;
    agent.recv_type("accepted").await;
    browser.wait_for(&field("r2", "note")).await;
    browser.wait_for(&field("r1", "tags")).await;

    fill(&browser, &input("r1", "name"), "Ada").await;
    fill(&browser, &input("r1", "age"), "40").await;
    click_centred(&browser, &choice("r1", "color", "r")).await;
    click_centred(&browser, &choice("r1", "size", "m")).await;
    // Tags start as a and b: b off, c on.
    click_centred(&browser, &choice("r1", "tags", "b")).await;
    click_centred(&browser, &choice("r1", "tags", "c")).await;
    click_centred(&browser, &input("r1", "news")).await;
    fill(&browser, &input("r2", "note"), "later").await;
    let kept = drafts(&browser).await;
    assert_eq!(
        kept.as_array().map(Vec::len),
        Some(2),
        "a draft per card: {kept}"
    );
    assert!(kept.to_string().contains(r#"\"s\",\"r1\""#), "{kept}");

    reload(&browser).await;
    browser.wait_for(&field("r1", "tags")).await;
    browser.wait_for(&field("r2", "note")).await;
    let state = browser
        .execute(
            "const q = (css) => document.querySelector(arguments[0] + ' ' + css); \
             const card = arguments[0]; \
             const all = (css) => [...document.querySelectorAll(card + ' ' + css)]; \
             return { \
               name: q('fieldset[data-name=\"name\"] input').value, \
               age: q('fieldset[data-name=\"age\"] input').value, \
               color: all('fieldset[data-name=\"color\"] input:checked').map((i) => i.value), \
               size: all('fieldset[data-name=\"size\"] input:checked').map((i) => i.value), \
               tags: all('fieldset[data-name=\"tags\"] input:checked').map((i) => i.value), \
               news: q('fieldset[data-name=\"news\"] input').checked, \
               note: document.querySelector(arguments[1]).value };",
            json!([card("r1"), input("r2", "note")]),
        )
        .await;
    assert_eq!(
        state,
        json!({"name": "Ada", "age": "40", "color": ["r"], "size": ["m"],
               "tags": ["a", "c"], "news": false, "note": "later"}),
        "the cards as they were left"
    );
    // Nothing is marked wrong that the person had right.
    for name in ["name", "age", "color", "size", "tags"] {
        assert_text(&browser, &field_error("r1", name), "").await;
    }

    fill(&browser, &input("r1", "email"), "ada@example.com").await;
    click_centred(&browser, &submit("r1")).await;
    let outcome = outcome_as_response(&mut agent, "answered").await;
    assert_eq!(
        outcome["response"]["content"],
        json!({"name": "Ada", "email": "ada@example.com", "born": "2000-01-02",
               "meet": "2026-01-02T10:30:00Z", "age": 40, "news": false, "color": "r",
               "size": "m", "tags": ["a", "c"]})
    );
    browser
        .wait_until(
            "return !Object.keys(sessionStorage).some((k) => k.includes('\"r1\"'));",
            json!([]),
        )
        .await;

    // Withdrawn: its draft goes too.
    agent
        .send(&json!({"type": "cancel", "session": "s", "id": "r2"}))
        .await;
    browser
        .wait_for(&format!(r#"{}[data-state="withdrawn"]"#, card("r2")))
        .await;
    assert_eq!(drafts(&browser).await, json!([]));
}
