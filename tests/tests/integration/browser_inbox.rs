//! The inbox and the follow switch, in real headless Chromium against a gateway started here:
//! alice's inbox gathers what is addressed to her from two sessions and to her group, in
//! deadline order, filters it, counts what she has not seen in the title, and answers in place
//! (the session's own page sees it resolved); bob's inbox never shows it. The empty inbox and
//! an anonymous visitor's page say what they should and nothing more. A named person follows
//! a session from its page; an anonymous link holder is not offered the switch.
//!
//! Every state is checked with axe-core (light and dark, at 360 px and desktop width); when
//! axe-core is missing the test fails with how to install it, never skips.

use askgate::people::Groups;
use askgate_testkit::frames::ask;
use askgate_tests::browser::Browser;
use askgate_tests::browser::axe::assert_accessible;
use askgate_tests::browser::page::{
    agent_asking, card, inbox_link, open_link, open_page, text, wait_connected,
};
use askgate_tests::server::{TestServer, test_config};
use serde_json::{Value, json};

const ALICE: &str = "alice@example.com";
const BOB: &str = "bob@example.com";
const CAROL: &str = "carol@example.com";

/// A gateway whose operator put alice in `group:oncall`.
async fn server_with_oncall() -> TestServer {
    let mut config = test_config();
    config.people.groups = Groups::parse(&json!({"oncall": [ALICE]}).to_string()).expect("groups");
    TestServer::start_with(config).await
}

/// A browser on `user`'s inbox, once it is connected.
async fn open_inbox(server: &TestServer, user: &str) -> Browser {
    open_link(&inbox_link(server, user).await).await
}

/// The inbox card of request `id` of `session`.
fn inbox_card(session: &str, id: &str) -> String {
    card(&format!("{session}/{id}"))
}

/// An ask of `id` in `session` for `answerers`, timing out after `timeout_s` if given.
fn ask_for(session: &str, id: &str, answerers: &[&str], timeout_s: Option<f64>) -> Value {
    let mut frame = ask(session, id, &["Color"], timeout_s);
    frame["title"] = json!(format!("{id} in {session}"));
    frame["answerers"] = json!(answerers);
    frame
}

/// The `data-request-id` of every card the inbox shows (not hidden by a filter), in order.
async fn shown_cards(browser: &Browser) -> Value {
    let script = "return [...document.querySelectorAll('#requests article')]\
                  .filter((el) => el.checkVisibility()).map((el) => el.dataset.requestId);";
    browser.execute(script, json!([])).await
}

#[tokio::test(flavor = "multi_thread")]
async fn alices_inbox_gathers_her_requests_and_answers_them_in_place() {
    let server = server_with_oncall().await;
    let mut agent = agent_asking(&server, &ask_for("one", "r1", &[ALICE], Some(600.0))).await;
    for frame in [
        ask_for("two", "r2", &[ALICE], Some(300.0)),
        json!({"type": "ask", "session": "two", "id": "r3", "dialect": "approval",
               "title": "r3 in two", "answerers": ["group:oncall"],
               "calls": [{"name": "send_email", "args": {"to": "a@b.c", "body": "hi"}}]}),
        ask_for("one", "r4", &[BOB], None),
    ] {
        agent.send(&frame).await;
        agent.recv_type("accepted").await;
    }
    let session_page = open_page(&server, "one").await;
    session_page.wait_for(&card("r1")).await;

    let alice = open_inbox(&server, ALICE).await;
    alice.wait_for(&inbox_card("two", "r3")).await;
    // The nearest deadline first, the one without a deadline last; bob's is not hers.
    assert_eq!(
        shown_cards(&alice).await,
        json!(["two/r2", "one/r1", "two/r3"])
    );
    assert_eq!(
        text(
            &alice,
            &format!("{} .card-session", inbox_card("one", "r1"))
        )
        .await,
        "Session one"
    );
    assert_eq!(
        text(&alice, "#you").await,
        "Signed in as alice@example.com via a personal link (group oncall)."
    );
    let bob = open_inbox(&server, BOB).await;
    bob.wait_for(&inbox_card("one", "r4")).await;
    assert_eq!(shown_cards(&bob).await, json!(["one/r4"]));
    assert_accessible(&alice, "alice's inbox with three cards").await;

    // On screen at desktop size, every card has been seen: the title counts none.
    alice.set_viewport_size(1280, 2400).await;
    alice
        .wait_until(
            "return document.title === 'askgate inbox' || null;",
            json!([]),
        )
        .await;
    // A request asked while she looks elsewhere in the list is counted until she sees it.
    alice.set_viewport_size(1280, 300).await;
    alice.execute("window.scrollTo(0, 0);", json!([])).await;
    agent
        .send(&ask_for("three", "r5", &["group:oncall"], None))
        .await;
    agent.recv_type("accepted").await;
    alice.wait_for(&inbox_card("three", "r5")).await;
    alice
        .wait_until(
            "return document.title === '(1) askgate inbox' || null;",
            json!([]),
        )
        .await;
    alice
        .execute(
            "document.querySelector(arguments[0]).scrollIntoView();",
            json!([inbox_card("three", "r5")]),
        )
        .await;
    alice
        .wait_until(
            "return document.title === 'askgate inbox' || null;",
            json!([]),
        )
        .await;

    // Filtered by session, by kind, and by both.
    let filter = "for (const [css, value] of arguments[0]) { \
                  const s = document.querySelector(css); s.value = value; \
                  s.dispatchEvent(new Event('change')); }";
    let by = |session: &str, dialect: &str| {
        json!([[["#filter-session", session], ["#filter-dialect", dialect]]])
    };
    alice.execute(filter, by("one", "")).await;
    assert_eq!(shown_cards(&alice).await, json!(["one/r1"]));
    alice.execute(filter, by("", "approval")).await;
    assert_eq!(shown_cards(&alice).await, json!(["two/r3"]));
    alice.execute(filter, by("one", "approval")).await;
    assert_eq!(shown_cards(&alice).await, json!([]));
    alice.wait_for("#filtered-empty:not([hidden])").await;
    assert_accessible(&alice, "the inbox filtered to nothing").await;
    alice.execute(filter, by("", "")).await;
    assert_eq!(shown_cards(&alice).await.as_array().map(Vec::len), Some(4));
    alice.set_viewport_size(1280, 900).await;

    // Answered in place: the session's own page and the agent see it as hers.
    let r1 = inbox_card("one", "r1");
    alice
        .click(&format!(
            r#"{r1} fieldset[data-header="Color"] input[value="Red"]"#
        ))
        .await;
    alice.click(&format!("{r1} .submit")).await;
    alice
        .wait_for_text(&format!("{r1} .card-status"), "You answered")
        .await;
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(
        (outcome["id"].as_str(), outcome["user"].as_str()),
        (Some("r1"), Some(ALICE))
    );
    session_page
        .wait_for_text(
            &format!("{} .card-status", card("r1")),
            "Answered by alice@example.com",
        )
        .await;
    assert_eq!(bob.find_all_count(&r1).await, 0, "never bob's");
    assert_eq!(alice.console_errors().await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_inbox_and_an_anonymous_visitor_say_what_they_should() {
    let server = server_with_oncall().await;
    let carol = open_inbox(&server, CAROL).await;
    carol.wait_for("#empty:not([hidden])").await;
    assert!(
        text(&carol, "#empty")
            .await
            .starts_with("Nothing waits for you."),
        "{}",
        text(&carol, "#empty").await
    );
    assert_accessible(&carol, "the empty inbox").await;

    let stranger = Browser::start().await;
    stranger.goto(&server.http_url("/inbox")).await;
    stranger.wait_for("#sign-in:not([hidden])").await;
    assert_eq!(
        stranger
            .execute("return document.querySelector('#inbox').hidden;", json!([]))
            .await,
        json!(true)
    );
    let words = text(&stranger, "#sign-in").await;
    assert!(words.contains("inbox link"), "{words}");
    for hidden in ["#sign-in-why", "#notify"] {
        let script = "return document.querySelector(arguments[0]).hidden;";
        assert_eq!(
            stranger.execute(script, json!([hidden])).await,
            json!(true),
            "{hidden}"
        );
    }
    assert_accessible(&stranger, "the inbox of an anonymous visitor").await;
    // A key that is not this gateway's is told so.
    let forged = format!("{}x", inbox_link(&server, CAROL).await);
    let holder = Browser::start().await;
    holder.goto(&forged).await;
    holder.wait_for("#sign-in-why:not([hidden])").await;
    assert_eq!(
        text(&holder, "#sign-in-why").await,
        "This is not an inbox link of this gateway."
    );
    assert_eq!(stranger.console_errors().await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_named_person_follows_a_session_from_its_page() {
    let server = server_with_oncall().await;
    let (status, body) = server
        .http(
            "POST",
            "/v1/sessions/f/links",
            Some(&json!({"user": ALICE})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let alice = Browser::start().await;
    alice.goto(body["url"].as_str().unwrap()).await;
    wait_connected(&alice).await;
    alice.wait_for("#follow:not([hidden])").await;
    assert_eq!(
        alice.attr("#follow", "aria-pressed").await.as_deref(),
        Some("false")
    );
    assert_eq!(text(&alice, "#follow").await, "Follow this session");
    assert_accessible(&alice, "the session page with the follow switch").await;
    alice.click("#follow").await;
    alice.wait_for(r#"#follow[aria-pressed="true"]"#).await;
    // The gateway kept it: the same follow over HTTP is already so.
    let (status, _) = server
        .http(
            "POST",
            "/v1/sessions/f/followers",
            Some(&json!({"user": ALICE})),
        )
        .await;
    assert_eq!(status, 200);
    // A request naming no one in the session now reaches her inbox.
    let inbox = open_inbox(&server, ALICE).await;
    let _agent = agent_asking(&server, &ask("f", "open-to-all", &["Color"], None)).await;
    inbox.wait_for(&inbox_card("f", "open-to-all")).await;
    alice.click("#follow").await;
    alice.wait_for(r#"#follow[aria-pressed="false"]"#).await;
    // No longer hers: her inbox lets it go.
    inbox.wait_gone(&inbox_card("f", "open-to-all")).await;

    let anonymous = open_page(&server, "f").await;
    anonymous.wait_for("#you:not([hidden])").await;
    assert_eq!(
        anonymous
            .execute(
                "return document.querySelector('#follow').hidden;",
                json!([])
            )
            .await,
        json!(true)
    );
}
