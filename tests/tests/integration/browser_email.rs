//! A mail's answer link in real headless Chromium: the link is taken from the mail the gateway
//! sent (an aiosmtpd server of the test's own took it), its page shows the question and one
//! button, the button answers as the person the mail was for, and a tab on the session sees
//! the request answered by them. The link's pages (the question, the answer recorded, the
//! link opened again, a forged link) run no script, break no rule of their Content Security
//! Policy, and pass axe-core light and dark, at 360 px and at desktop width.

use askgate::notify::{DEFAULT_RETRY_FOR, NotifyConfig, NotifySettings};
use askgate::people::Groups;
use askgate_testkit::TIMEOUT;
use askgate_testkit::frames::ask;
use askgate_testkit::smtp::{SmtpSink, hrefs, part};
use askgate_tests::browser::Browser;
use askgate_tests::browser::axe::assert_accessible;
use askgate_tests::browser::page::{agent_asking, card, open_page};
use askgate_tests::server::{TestServer, test_config};
use serde_json::json;

const ALICE: &str = "alice@example.com";

/// A gateway mailing alice through `sink`.
async fn mailing_server(sink: &SmtpSink) -> TestServer {
    let text = format!(
        "[people.\"{ALICE}\"]\nemail = \"{ALICE}\"\n\n[email]\nsmtp_url = \"{}\"\n\
         from = \"askgate <askgate@example.com>\"\n",
        sink.url()
    );
    let mut config = test_config();
    let settings = NotifySettings::parse(
        &text,
        "notify.toml",
        &mut Groups::default(),
        &askgate::notify::settings::FromEnv::default(),
    )
    .expect("the notify file reads");
    config.notify = Some(NotifyConfig {
        settings,
        retry_for: DEFAULT_RETRY_FOR,
        allow_private: true,
        vapid_key: None,
    });
    TestServer::start_with(config).await
}

/// alice opens the Blue link of her mail, presses its button, and the session's tab shows the
/// request answered by her; each page of the link passes axe-core.
#[tokio::test(flavor = "multi_thread")]
async fn a_mail_link_answers_as_its_person_in_a_browser() {
    let mut sink = SmtpSink::start(0).await;
    let server = mailing_server(&sink).await;
    let tab = open_page(&server, "s").await;
    let mut frame = ask("s", "r1", &["Color"], Some(600.0));
    frame["title"] = json!("Pick a colour \u{202E}<b>now</b>");
    frame["answerers"] = json!([ALICE]);
    let mut agent = agent_asking(&server, &frame).await;

    let mail = sink.next_message(TIMEOUT).await;
    assert_eq!(mail["to"], json!([ALICE]));
    let links = hrefs(part(&mail, "text/html"));
    // Red, Blue, Green, then the page.
    assert_eq!(links.len(), 4, "{links:?}");
    let blue = links[1].clone();
    assert!(
        blue.starts_with(&server.http_url("/a/m1.")),
        "the link is under the gateway's public URL: {blue}"
    );

    let browser = Browser::start().await;
    browser.goto(&blue).await;
    browser.wait_for("form[method=post] button").await;
    assert_eq!(
        browser.text_of("form button").await.as_deref(),
        Some("Answer “Blue”")
    );
    assert_eq!(
        browser.text_of(".choice-label").await.as_deref(),
        Some("Blue")
    );
    // The override is a visible mark, and the tags are text.
    assert_eq!(
        browser.text_of("h1").await.as_deref(),
        Some("Pick a colour RLO<b>now</b>")
    );
    assert_eq!(browser.find_all_count("h1 b, script").await, 0);
    assert_eq!(browser.find_all_count("h1 .bidi-mark[role=img]").await, 1);
    assert_accessible(&browser, "a mail link's question").await;

    browser.click("form button").await;
    browser
        .wait_for_text(".status[data-kind=ok]", "Your answer was recorded")
        .await;
    assert_accessible(&browser, "a mail link's answer, recorded").await;
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["user"], ALICE);
    assert_eq!(
        outcome["response"]["answers"],
        json!([{"header": "Color", "selected": ["Blue"]}])
    );
    tab.wait_for_text(
        &format!("{} .card-status", card("r1")),
        "Answered by alice@example.com",
    )
    .await;

    // Opened again: who answered, and no button.
    browser.goto(&blue).await;
    browser
        .wait_for_text(".status", "Already answered by alice@example.com")
        .await;
    assert_eq!(browser.find_all_count("form, button").await, 0);
    assert_accessible(&browser, "a mail link opened after its request ended").await;
    // Nothing the pages did broke their policy or failed.
    assert_eq!(browser.console_errors().await, Vec::<String>::new());

    // A changed key: why it does not work, and no button.
    let mut forged = blue.clone().into_bytes();
    let at = forged.len() - 3;
    forged[at] = if forged[at] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).expect("ASCII");
    browser.goto(&forged).await;
    browser
        .wait_for_text(".status[data-kind=refused]", "not one this gateway made")
        .await;
    assert_eq!(browser.find_all_count("form, button").await, 0);
    assert_accessible(&browser, "a forged mail link").await;
    let errors = browser.console_errors().await;
    assert!(
        errors.len() == 1 && errors[0].contains("status of 403"),
        "only the forged link's own refusal: {errors:?}"
    );
    assert_eq!(tab.console_errors().await, Vec::<String>::new());
}
