//! The answer page with people in it, in real headless Chromium: each person opens their own
//! personal link, the page says who they are, an answer is named by who gave it, a request
//! for one person is read-only to everyone else (and the gateway refuses them too), the
//! list of endings says who ended each, and a refused link says why.
//!
//! Every new state is checked with axe-core (no violation of its rules, light and dark, at
//! 360 px and at desktop width). axe-core is the npm package `axe-core`, looked for at
//! `$ASKGATE_AXE_CORE` or `.venv/axe/node_modules/axe-core/axe.min.js`; when it is missing the
//! test fails with how to install it, never skips.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use askgate::people::Groups;
use askgate_testkit::TIMEOUT;
use askgate_testkit::frames::{answer, ask};
use askgate_tests::browser::Browser;
use askgate_tests::browser::axe::assert_accessible;
use askgate_tests::browser::page::{
    agent_asking, card, open_link, personal_link, reload, shown, text, wait_connected,
};
use askgate_tests::server::{TestServer, test_config};
use serde_json::json;

const ALICE: &str = "alice@example.com";
const BOB: &str = "bob@example.com";

/// The option input labelled `label` of request `id`'s question `header`.
fn option(id: &str, header: &str, label: &str) -> String {
    format!(
        r#"{} fieldset[data-header="{header}"] input[value="{label}"]"#,
        card(id)
    )
}

/// Milliseconds since the Unix epoch, by the clock the gateway reads too.
fn now_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    u64::try_from(since.as_millis()).expect("a time in range")
}

/// Two people with their own links to one session: the page says who each is; when alice
/// answers, bob's card names her and hers says she answered; folded into the list of
/// endings, it names her, how she was known and what she picked, in bob's tab and again after
/// he reloads (then from the snapshot and the gateway's `history`), and passes axe-core.
#[tokio::test(flavor = "multi_thread")]
async fn each_person_sees_who_answered() {
    let server = TestServer::start().await;
    let (alice_url, _, _) = personal_link(&server, "s", ALICE, 86_400.0).await;
    let (bob_url, _, _) = personal_link(&server, "s", BOB, 86_400.0).await;
    let alice = open_link(&alice_url).await;
    let bob = open_link(&bob_url).await;
    assert_eq!(
        text(&alice, "#you").await,
        "Signed in as alice@example.com via a personal link."
    );
    assert_eq!(
        text(&bob, "#you").await,
        "Signed in as bob@example.com via a personal link."
    );

    let mut frame = ask("s", "r1", &["Color"], None);
    frame["title"] = json!("Pick a colour");
    let mut agent = agent_asking(&server, &frame).await;
    bob.wait_for(&option("r1", "Color", "Red")).await;
    alice.click(&option("r1", "Color", "Blue")).await;
    alice.click(&format!("{} .submit", card("r1"))).await;
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["outcome"], "answered");
    assert_eq!(outcome["user"], ALICE);

    // The cards say it while still whole (they fold a few seconds later).
    let status = format!("{} .card-status", card("r1"));
    bob.wait_for_text(&status, "Answered by alice@example.com")
        .await;
    alice.wait_for_text(&status, "You answered").await;
    assert_eq!(
        bob.text_of(&format!("{} .summary .pick", card("r1")))
            .await
            .as_deref(),
        Some("Blue")
    );

    // Folded into the one list of endings, it names her, how she was known and what she
    // picked; in her own tab, it says she did.
    let entry = format!("#finished {}.is-folded", card("r1"));
    bob.wait_for_text(
        &format!("{entry} .card-status"),
        "Answered by alice@example.com via a personal link",
    )
    .await;
    assert_eq!(
        text(&bob, &format!("{entry} .folded-what")).await,
        "Pick a colour"
    );
    assert_eq!(text(&bob, &format!("{entry} .pick")).await, "Blue");
    assert_eq!(text(&bob, "#finished-heading").await, "Finished (1)");
    alice
        .wait_for_text(
            &format!("{entry} .card-status"),
            "Answered by you via a personal link",
        )
        .await;

    // A reloaded tab has it from the gateway, once.
    reload(&bob).await;
    bob.wait_for_text(
        &format!("{entry} .card-status"),
        "Answered by alice@example.com via a personal link",
    )
    .await;
    assert_eq!(text(&bob, &format!("{entry} .pick")).await, "Blue");
    assert!(!shown(&bob, "#history").await, "one list, not two");
    assert_accessible(&bob, "the finished card").await;
    assert_eq!(bob.console_errors().await, Vec::<String>::new());
}

/// A request for alice alone: bob's tab shows it read-only, waiting for her, with nothing to
/// submit or decline, and it passes axe-core; bob's answer sent over his own socket with his
/// personal key is refused as `forbidden` and resolves nothing; alice can answer it, and
/// then bob's card names her.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_for_one_person_is_read_only_to_the_others() {
    let server = TestServer::start().await;
    let (alice_url, _, _) = personal_link(&server, "s", ALICE, 86_400.0).await;
    let (bob_url, bob_key, _) = personal_link(&server, "s", BOB, 86_400.0).await;
    let alice = open_link(&alice_url).await;
    let bob = open_link(&bob_url).await;
    let mut frame = ask("s", "r2", &["Color"], None);
    frame["answerers"] = json!([ALICE]);
    let mut agent = agent_asking(&server, &frame).await;

    let waiting = format!("{} .card-waiting", card("r2"));
    bob.wait_for_text(&waiting, "Waiting for alice@example.com")
        .await;
    assert!(shown(&bob, &waiting).await);
    for control in [".submit", ".decline", ".key-hint"] {
        let css = format!("{} {control}", card("r2"));
        assert!(!shown(&bob, &css).await, "bob's card shows no {control}");
    }
    let disabled = "return [...document.querySelectorAll(arguments[0])].every((f) => f.disabled);";
    assert_eq!(
        bob.execute(disabled, json!([format!("{} fieldset", card("r2"))]))
            .await,
        json!(true)
    );
    // Alice's is hers to answer.
    alice.wait_for(&option("r2", "Color", "Red")).await;
    assert!(shown(&alice, &format!("{} .submit", card("r2"))).await);
    assert!(!shown(&alice, &waiting).await);
    assert_accessible(&bob, "a card waiting for someone else").await;

    // The gateway refuses bob too, whatever his page shows.
    let mut socket = server.raw_tab("s").await;
    socket.send(&json!({"type": "hello", "key": bob_key})).await;
    let snapshot = socket.recv_type("snapshot").await;
    assert_eq!(snapshot["you"]["user"], BOB);
    assert_eq!(snapshot["requests"][0]["answerers"], json!([ALICE]));
    socket.send(&answer("r2", &["Color"], "Red")).await;
    let rejected = socket.recv_until("answer_rejected").await;
    assert_eq!(rejected["id"], "r2");
    assert_eq!(rejected["errors"][0]["code"], "forbidden", "{rejected}");
    let (status, pending) = server.http("GET", "/v1/sessions/s/requests/r2", None).await;
    assert_eq!(
        (status, &pending["state"]),
        (200, &json!("pending")),
        "{pending}"
    );
    agent.silent_for(Duration::from_millis(300)).await;
    assert!(shown(&alice, &format!("{}:not(.is-final) .submit", card("r2"))).await);

    alice.click(&option("r2", "Color", "Green")).await;
    alice.click(&format!("{} .submit", card("r2"))).await;
    assert_eq!(agent.recv_type("outcome").await["user"], ALICE);
    bob.wait_for_text(
        &format!("{} .card-status", card("r2")),
        "Answered by alice@example.com",
    )
    .await;
    assert!(!shown(&bob, &waiting).await, "no longer waiting");
}

/// With `--require-identity` and a group: the anonymous link holder's page says it is watch
/// only, and why, and shows the card read-only; a member of the group the request names may
/// answer it, someone outside it waits for "group ops"; both read-only states pass axe-core.
#[tokio::test(flavor = "multi_thread")]
async fn watch_only_and_group_requests_say_whom_they_wait_for() {
    let mut config = test_config();
    config.people.require_identity = true;
    config.people.groups = Groups::parse(&json!({"ops": [BOB]}).to_string()).expect("groups");
    let server = TestServer::start_with(config).await;
    let (alice_url, _, _) = personal_link(&server, "s", ALICE, 86_400.0).await;
    let (bob_url, _, _) = personal_link(&server, "s", BOB, 86_400.0).await;
    let anonymous_url = server.http_url(&format!("/s/s#k={}", server.viewer_key("s")));
    let mut frame = ask("s", "r3", &["Color"], None);
    frame["answerers"] = json!(["group:ops"]);
    let _agent = agent_asking(&server, &frame).await;

    let bob = open_link(&bob_url).await;
    assert_eq!(
        text(&bob, "#you").await,
        "Signed in as bob@example.com via a personal link (group ops)."
    );
    bob.wait_for(&option("r3", "Color", "Red")).await;
    assert!(shown(&bob, &format!("{} .submit", card("r3"))).await);

    let waiting = format!("{} .card-waiting", card("r3"));
    let alice = open_link(&alice_url).await;
    alice.wait_for_text(&waiting, "Waiting for group ops").await;
    assert!(!shown(&alice, &format!("{} .submit", card("r3"))).await);
    assert_accessible(&alice, "a card waiting for a group").await;
    drop(alice);

    let anonymous = open_link(&anonymous_url).await;
    anonymous.wait_for_text("#you", "Watch only.").await;
    assert!(
        text(&anonymous, "#you")
            .await
            .starts_with("Anonymous link holder.")
    );
    anonymous
        .wait_for_text(&waiting, "Waiting for group ops")
        .await;
    assert!(
        text(&anonymous, &waiting)
            .await
            .contains("This tab can watch but not answer.")
    );
    assert!(!shown(&anonymous, &format!("{} .decline", card("r3"))).await);
    assert_accessible(&anonymous, "a watch-only tab").await;
}

/// A personal link past its expiry is refused, and the page shows the gateway's reason; the
/// wait for the expiry polls the clock (with a deadline), and the page passes axe-core.
#[tokio::test(flavor = "multi_thread")]
async fn an_expired_personal_link_says_so() {
    let server = TestServer::start().await;
    let (url, _, expires_ms) = personal_link(&server, "s", ALICE, 1.0).await;
    let deadline = Instant::now() + TIMEOUT;
    while now_ms() <= expires_ms {
        assert!(Instant::now() < deadline, "the link never expired");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let browser = Browser::start().await;
    browser.goto(&url).await;
    browser
        .wait_for(r#"#connection[data-state="closed"]"#)
        .await;
    browser
        .wait_for_text(
            "#notice",
            "This personal link has expired; ask for a new one.",
        )
        .await;
    assert_eq!(
        text(&browser, "#notice").await,
        "This personal link has expired; ask for a new one."
    );
    assert!(!shown(&browser, "#you").await);
    assert_accessible(&browser, "an expired link").await;
}

/// A page open on a personal link when the link expires is told so, as when it is opened
/// too late, and no longer acts as that person.
#[tokio::test(flavor = "multi_thread")]
async fn a_page_open_when_its_link_expires_says_so() {
    let server = TestServer::start().await;
    let browser = Browser::start().await;
    // Seconds enough for the page to load and join first, as alice; on a machine too busy
    // for that, a fresh link with twice the time, a few times.
    let mut ttl_s = 6.0;
    let expires_ms = loop {
        let (url, _, expires_ms) = personal_link(&server, "s", ALICE, ttl_s).await;
        // A blank page between tries: a link differing only after `#` would not load anew.
        browser.goto("about:blank").await;
        browser.goto(&url).await;
        browser
            .wait_for(r#"#you:not([hidden]), #connection[data-state="closed"]"#)
            .await;
        if shown(&browser, "#you").await && now_ms() < expires_ms {
            break expires_ms;
        }
        assert!(
            ttl_s < 48.0,
            "the page never joined before its link expired"
        );
        ttl_s *= 2.0;
    };
    // A retried link lives longer than a wait's timeout: the wait for the notice starts at
    // the expiry (a moment on the clock, not an event), so the timeout is the gateway's alone.
    tokio::time::sleep(Duration::from_millis(expires_ms.saturating_sub(now_ms()))).await;
    browser
        .wait_for_text(
            "#notice",
            "This personal link has expired; ask for a new one.",
        )
        .await;
    browser
        .wait_for(r#"#connection[data-state="closed"]"#)
        .await;
    assert!(now_ms() >= expires_ms, "told at the expiry, not before");
    assert!(!shown(&browser, "#you").await);
}

/// A personal link opened on another session's page, and a key that is no key at all, each
/// say why they were refused.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_link_says_why() {
    let server = TestServer::start().await;
    let (_, key, _) = personal_link(&server, "s", ALICE, 86_400.0).await;
    let browser = Browser::start().await;
    for (url, reason) in [
        (
            server.http_url(&format!("/s/other#k={key}")),
            "This personal link is for another session.",
        ),
        (
            server.http_url("/s/s#k=not-a-key"),
            "Wrong viewer key. Ask your agent for a fresh session link.",
        ),
    ] {
        browser.goto(&url).await;
        browser
            .wait_for(r#"#connection[data-state="closed"]"#)
            .await;
        browser.wait_for_text("#notice", reason).await;
        assert_eq!(text(&browser, "#notice").await, reason);
    }
}

/// A script for `run_before_each_load` that takes `answerers` out of every request the page
/// receives, so that it believes anyone may answer (as a page that misjudged would).
const FORGET_ANSWERERS: &str = "(() => { const listen = WebSocket.prototype.addEventListener; \
    WebSocket.prototype.addEventListener = function (type, listener, options) { \
      if (type !== 'message') return listen.call(this, type, listener, options); \
      return listen.call(this, type, (event) => { \
        const frame = JSON.parse(event.data); \
        for (const view of [...(frame.requests ?? []), frame.request]) if (view) delete view.answerers; \
        listener.call(this, new MessageEvent('message', {data: JSON.stringify(frame)})); \
      }, options); }; })();";

/// Should the page offer a card its person may not answer, the gateway's `forbidden` turns
/// it read-only, with the gateway's words; nothing resolves.
#[tokio::test(flavor = "multi_thread")]
async fn a_forbidden_answer_turns_the_card_read_only() {
    let server = TestServer::start().await;
    let (bob_url, _, _) = personal_link(&server, "s", BOB, 86_400.0).await;
    let bob = Browser::start().await;
    bob.run_before_each_load(FORGET_ANSWERERS).await;
    bob.goto(&bob_url).await;
    wait_connected(&bob).await;
    let mut frame = ask("s", "r4", &["Color"], None);
    frame["answerers"] = json!([ALICE]);
    let mut agent = agent_asking(&server, &frame).await;

    bob.click(&option("r4", "Color", "Red")).await;
    bob.click(&format!("{} .submit", card("r4"))).await;
    bob.wait_for_text(&format!("{} .card-error", card("r4")), "alice@example.com")
        .await;
    bob.wait_for_text(&format!("{} .card-status", card("r4")), "Not accepted")
        .await;
    assert!(shown(&bob, &format!("{} .card-waiting", card("r4"))).await);
    assert!(!shown(&bob, &format!("{} .submit", card("r4"))).await);
    assert_accessible(&bob, "a card whose answer was refused").await;
    agent.silent_for(Duration::from_millis(300)).await;
    let (status, pending) = server.http("GET", "/v1/sessions/s/requests/r4", None).await;
    assert_eq!(
        (status, &pending["state"]),
        (200, &json!("pending")),
        "{pending}"
    );
}

/// A request for alice, escalated to bob after a second: bob's card says whom it was
/// escalated to and is his to answer (his answer wins, named as his); the escalated card
/// passes axe-core.
#[tokio::test(flavor = "multi_thread")]
async fn an_escalated_request_is_answerable_by_whom_it_was_escalated_to() {
    let server = TestServer::start().await;
    let (bob_url, _, _) = personal_link(&server, "s", BOB, 86_400.0).await;
    let bob = open_link(&bob_url).await;
    let mut frame = ask("s", "r5", &["Color"], None);
    frame["answerers"] = json!([ALICE]);
    frame["escalate"] = json!({"after_s": 1, "to": [BOB]});
    let mut agent = agent_asking(&server, &frame).await;
    let escalated = format!("{} .card-escalated", card("r5"));
    bob.wait_for_text(&escalated, "Escalated to bob@example.com")
        .await;
    let waiting = format!("{} .card-waiting", card("r5"));
    assert!(!shown(&bob, &waiting).await, "no longer waiting for alice");
    assert_accessible(&bob, "an escalated card").await;
    bob.click(&option("r5", "Color", "Red")).await;
    bob.click(&format!("{} .submit", card("r5"))).await;
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["outcome"], "answered");
    assert_eq!(outcome["user"], BOB);
    assert_eq!(bob.console_errors().await, Vec::<String>::new());
}

/// Run before the page's own scripts: the type of every frame the page has received and
/// handled, in `window.__received` (recorded once the page's own handler has run).
const RECORD_RECEIVED: &str = "(() => { \
    window.__received = []; \
    const Native = window.WebSocket; \
    window.WebSocket = class extends Native { \
      constructor(...args) { \
        super(...args); \
        this.addEventListener('message', (event) => { \
          let type = null; \
          try { type = JSON.parse(event.data).type; } catch (_) { /* not JSON */ } \
          setTimeout(() => window.__received.push(type), 0); \
        }); \
      } \
    }; \
  })();";

/// How many times the page shows request `id` anywhere (its card, folded or whole, and any
/// other entry naming it).
async fn times_shown(browser: &Browser, id: &str) -> u64 {
    browser
        .find_all_count(&format!(r#"[data-request-id="{id}"]"#))
        .await
}

/// Issue 45: the page lists each ended request once, in one list (the finished list, which
/// the gateway's `history` feeds too), and says who answered: the person by name, "you", or
/// "someone with the link" for an anonymous link holder; after a reload too, once the
/// snapshot's `finished` and the `history` have both come.
#[tokio::test(flavor = "multi_thread")]
async fn one_list_of_endings_says_who_answered() {
    let server = TestServer::start().await;
    let (alice_url, _, _) = personal_link(&server, "s", ALICE, 86_400.0).await;
    let (bob_url, _, _) = personal_link(&server, "s", BOB, 86_400.0).await;
    let alice = open_link(&alice_url).await;
    let bob = Browser::start().await;
    bob.run_before_each_load(RECORD_RECEIVED).await;
    bob.goto(&bob_url).await;
    wait_connected(&bob).await;

    let mut agent = server.agent().await;
    for (id, title) in [("r1", "First"), ("r2", "Second"), ("r3", "Third")] {
        let mut frame = ask("s", id, &["Color"], None);
        frame["title"] = json!(title);
        agent.send(&frame).await;
        agent.recv_type("accepted").await;
    }
    bob.wait_for(&option("r3", "Color", "Red")).await;
    alice.wait_for(&option("r1", "Color", "Blue")).await;
    alice.click(&option("r1", "Color", "Blue")).await;
    alice.click(&format!("{} .submit", card("r1"))).await;
    assert_eq!(agent.recv_type("outcome").await["user"], ALICE);
    let (mut anonymous, _) = server.tab("s").await;
    anonymous.send(&answer("r2", &["Color"], "Red")).await;
    assert_eq!(agent.recv_type("outcome").await["via"], "session-link");
    bob.click(&option("r3", "Color", "Green")).await;
    bob.click(&format!("{} .submit", card("r3"))).await;
    assert_eq!(agent.recv_type("outcome").await["user"], BOB);

    let said = [
        ("r1", "Answered by alice@example.com via a personal link"),
        ("r2", "Answered by someone with the link"),
        ("r3", "Answered by you via a personal link"),
    ];
    let folded = |id: &str| format!(r#"#finished article.is-folded[data-request-id="{id}"]"#);
    for (id, words) in said {
        bob.wait_for_text(&format!("{} .card-status", folded(id)), words)
            .await;
        assert_eq!(times_shown(&bob, id).await, 1, "{id} is listed once");
    }
    assert!(!shown(&bob, "#history").await, "no second list");

    reload(&bob).await;
    bob.wait_until(
        "return window.__received.includes('snapshot') && window.__received.includes('history');",
        json!([]),
    )
    .await;
    for (id, words) in said {
        bob.wait_for_text(&format!("{} .card-status", folded(id)), words)
            .await;
        assert_eq!(
            times_shown(&bob, id).await,
            1,
            "{id} is listed once after a reload"
        );
    }
    assert_eq!(text(&bob, &format!("{} .pick", folded("r2"))).await, "Red");
    assert!(!shown(&bob, "#history").await, "no second list");
    assert_accessible(&bob, "the one list of endings").await;
    assert_eq!(bob.console_errors().await, Vec::<String>::new());
}
