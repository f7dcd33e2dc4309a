//! Slack, against `askgate serve` and a stand-in for Slack's Web API built to its published
//! contract (`tests/oracle/slack_api.py`; Slack itself cannot be reached here): the messages'
//! blocks, buttons only where a click is a whole answer, interactions signed as Slack signs
//! them (HMAC-SHA256 computed here, not by askgate's code), answers through the tabs'
//! first-wins path as the mapped person, every message updated when its request ends, and
//! what changes nothing: a bad signature, an old timestamp, a replayed click, an unknown user,
//! a person who may not answer, a click after the end. On three nodes over Redis a click on a
//! node that did not post works; after a SIGKILL between the ask and the post, the post is
//! made after the restart, once.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::time::Duration;

use askgate_testkit::frames::ask;
use askgate_testkit::http::post_form;
use askgate_testkit::slack::SlackApi;
use hmac::{Hmac, Mac as _};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::support;
use support::nodes::Node;

const TOKEN: &str = "xoxb-test-token";
const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const ALICE: &str = "alice@example.com";
const BOB: &str = "bob@example.com";
const CAROL: &str = "carol@example.com";
/// A rate limit's `Retry-After` and the first retry leave room for a busy machine.
const WITHIN: Duration = Duration::from_secs(20);
/// Text no message may render as markup or a mention.
const HOSTILE: &str = "<!channel> *deploy* <@U01ALICE> <https://evil.example|here>";

fn notify_file(dir: &Path, api_url: &str) -> String {
    let path = dir.join("notify.toml");
    let text = format!(
        r#"
[people."{ALICE}"]
slack = "U01ALICE"

[people."{BOB}"]
slack = "U02BOB"

[people."{CAROL}"]
slack = "U03CAROL"

[groups.ops]
members = ["{ALICE}", "{BOB}"]
slack_channel = "C01OPS"

[slack]
bot_token = "{TOKEN}"
signing_secret = "{SIGNING_SECRET}"
api_url = "{api_url}"
"#
    );
    std::fs::write(&path, text).expect("the notify file is written");
    path.display().to_string()
}

/// An approval of one call, for the ops group.
fn approval(session: &str, id: &str) -> Value {
    json!({"type": "ask", "session": session, "id": id, "dialect": "approval",
           "title": HOSTILE, "answerers": ["group:ops"], "timeout_s": 600.0,
           "calls": [{"name": "run_sql", "args": {"query": "DROP TABLE users"},
                      "decisions": ["approve", "reject"]}]})
}

/// The Color question (Red, Blue, Green) for `answerers`.
fn color(session: &str, id: &str, answerers: &[&str]) -> Value {
    let mut frame = ask(session, id, &["Color"], Some(600.0));
    frame["answerers"] = json!(answerers);
    frame
}

/// The buttons of a posted message: (action_id, value).
fn buttons(body: &Value) -> Vec<(String, Value)> {
    body["blocks"]
        .as_array()
        .expect("blocks")
        .iter()
        .filter(|block| block["type"] == "actions")
        .flat_map(|block| block["elements"].as_array().expect("elements").clone())
        .map(|button| {
            (
                button["action_id"]
                    .as_str()
                    .expect("an action id")
                    .to_owned(),
                button["value"].clone(),
            )
        })
        .collect()
}

fn value_of(body: &Value, action_id: &str) -> String {
    buttons(body)
        .into_iter()
        .find(|(id, _)| id == action_id)
        .and_then(|(_, value)| value.as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no {action_id} in {body}"))
}

/// The request a post asks, as its first choice button names it.
fn posted_request(post: &Value) -> String {
    let value = value_of(&post["body"], "askgate_choice_o0");
    let value: Value = serde_json::from_str(&value).expect("a button's value is JSON");
    value["r"].as_str().expect("it names a request").to_owned()
}

/// A click as Slack sends it: `user` pressed `action_id` (carrying `value`) in `channel`.
fn click(user: &str, channel: &str, action_id: &str, value: &str) -> Value {
    json!({
        "type": "block_actions",
        "user": {"id": user},
        "trigger_id": "1234.5678.abcd",
        "channel": {"id": channel},
        "container": {"type": "message", "channel_id": channel},
        "actions": [{"type": "button", "action_id": action_id, "value": value}],
    })
}

/// Posts `payload` to the node's interactions endpoint, signed with `secret` at `timestamp`
/// (Unix seconds) as Slack signs: `v0=` hex HMAC-SHA256 of `v0:{timestamp}:{body}`.
async fn interact(node: &Node, payload: &Value, secret: &str, timestamp: u64) -> (u16, String) {
    let encoded: String =
        url::form_urlencoded::byte_serialize(payload.to_string().as_bytes()).collect();
    let body = format!("payload={encoded}");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key");
    mac.update(format!("v0:{timestamp}:{body}").as_bytes());
    let signature: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let url = format!("http://{}/v1/slack/interactions", node.addr);
    let timestamp = timestamp.to_string();
    let signature = format!("v0={signature}");
    post_form(
        &url,
        &[
            ("x-slack-request-timestamp", timestamp.as_str()),
            ("x-slack-signature", signature.as_str()),
        ],
        body,
    )
    .await
}

/// Clicks `action_id` (carrying `value`) as `user` in `channel`, signed: what they were then
/// told in a message only they see.
async fn hear(
    node: &Node,
    slack: &mut SlackApi,
    user: &str,
    channel: &str,
    action_id: &str,
    value: &str,
) -> String {
    let payload = click(user, channel, action_id, value);
    let (status, said) = interact(node, &payload, SIGNING_SECRET, now_s()).await;
    assert_eq!(status, 200, "{said}");
    let told = slack.next(WITHIN).await;
    assert_eq!(
        (&told["method"], &told["body"]["user"]),
        (&json!("chat.postEphemeral"), &json!(user)),
        "{told}"
    );
    told["body"]["text"].as_str().unwrap_or_default().to_owned()
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// The next post of a message (not a reply), its rate-limited tries skipped.
async fn next_post(slack: &mut SlackApi) -> Value {
    loop {
        let call = slack.next(WITHIN).await;
        assert_eq!(call["authorized"], true, "{call}");
        if call["method"] == "chat.postMessage" && call["status"] == 200 {
            return call;
        }
    }
}

/// The text of the section saying how a request ended, in an update's blocks.
fn ending_of(update: &Value) -> String {
    update["body"]["blocks"]
        .as_array()
        .expect("blocks")
        .last()
        .and_then(|block| block["text"]["text"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn slack_clicks_answer_as_their_person_and_every_message_is_updated() {
    let dir = support::tempdir("slack");
    // Slack's first answer is a rate limit: the queue waits its Retry-After and tries again.
    let mut slack = SlackApi::start(TOKEN, 1, 1).await;
    let file = notify_file(&dir, &slack.url());
    let node = Node::start_notifying("memory", None, &file);
    let (mut agent, viewer) = node.agent_opening("s").await;
    let (mut tab, _) = node.tab("s", &viewer).await;

    // An approval for the ops group: one post to its channel, none to its members.
    agent.send(&approval("s", "deploy")).await;
    agent.recv_until("accepted").await;
    let limited = slack.next(WITHIN).await;
    assert_eq!(
        (limited["status"].as_u64(), limited["method"].as_str()),
        (Some(429), Some("chat.postMessage"))
    );
    let posted = next_post(&mut slack).await;
    let body = &posted["body"];
    assert_eq!(body["channel"], "C01OPS", "{posted}");
    assert_eq!(body["mrkdwn"], false);
    let ids: Vec<String> = buttons(body).into_iter().map(|(id, _)| id).collect();
    assert_eq!(
        ids,
        [
            "askgate_choice_approve",
            "askgate_choice_reject",
            "askgate_link"
        ]
    );
    // The agent's words are plain text, never markup: no mention, ping or link is made.
    assert_eq!(body["blocks"][0]["type"], "header");
    assert_eq!(body["blocks"][0]["text"]["type"], "plain_text");
    assert_eq!(body["blocks"][0]["text"]["text"], HOSTILE);
    assert!(!body.to_string().contains("\"mrkdwn\"}"), "{body}");
    let fallback = body["text"].as_str().unwrap();
    assert!(fallback.starts_with("&lt;!channel&gt;"), "{fallback}");
    let deploy_post = posted["answer"].clone();
    let deploy_body = body.clone();
    let reject = value_of(body, "askgate_choice_reject");

    // The Color question for alice alone: a direct message with a button per option.
    agent.send(&color("s", "color", &[ALICE])).await;
    agent.recv_until("accepted").await;
    let posted = next_post(&mut slack).await;
    let body = posted["body"].clone();
    assert_eq!(body["channel"], "U01ALICE");
    let ids: Vec<String> = buttons(&body).into_iter().map(|(id, _)| id).collect();
    assert_eq!(
        ids,
        [
            "askgate_choice_o0",
            "askgate_choice_o1",
            "askgate_choice_o2",
            "askgate_open"
        ]
    );
    let color_post = posted["answer"].clone();
    let dm = color_post["channel"].as_str().unwrap().to_owned();
    let blue = value_of(&body, "askgate_choice_o1");

    // Two questions: no click is a whole answer; one button to alice's own page.
    let mut two = ask("s", "two", &["Color", "Size"], Some(600.0));
    two["answerers"] = json!([ALICE]);
    agent.send(&two).await;
    agent.recv_until("accepted").await;
    let posted = next_post(&mut slack).await;
    let only = buttons(&posted["body"]);
    assert_eq!(only.len(), 1, "{posted}");
    assert_eq!(only[0].0, "askgate_open");

    // What changes nothing: a wrong signature, an old timestamp, an unknown Slack user, a
    // person who may not answer.
    let blue_click = click("U01ALICE", &dm, "askgate_choice_o1", &blue);
    let (status, said) = interact(&node, &blue_click, "not-the-secret", now_s()).await;
    assert_eq!(status, 401, "{said}");
    let (status, said) = interact(&node, &blue_click, SIGNING_SECRET, now_s() - 301).await;
    assert_eq!(status, 401, "{said}");
    let told = hear(
        &node,
        &mut slack,
        "U09NOBODY",
        &dm,
        "askgate_choice_o1",
        &blue,
    )
    .await;
    assert!(told.contains("does not know your Slack account"), "{told}");
    let told = hear(
        &node,
        &mut slack,
        "U03CAROL",
        &dm,
        "askgate_choice_o1",
        &blue,
    )
    .await;
    assert!(told.contains("You may not answer"), "{told}");

    // Alice's click answers, as her, through the first-wins path.
    let (status, said) = interact(&node, &blue_click, SIGNING_SECRET, now_s()).await;
    assert_eq!(status, 200, "{said}");
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(
        (outcome["id"].as_str(), outcome["outcome"].as_str()),
        (Some("color"), Some("answered"))
    );
    assert_eq!(outcome["user"], ALICE);
    assert_eq!(
        outcome["response"]["answers"],
        json!([{"header": "Color", "selected": ["Blue"]}])
    );
    let resolved = tab.recv_about("resolved", "color").await;
    assert_eq!(
        (&resolved["user"], &resolved["via"]),
        (&json!(ALICE), &json!("slack")),
        "{resolved}"
    );
    // Its message is updated in place: no buttons, who decided and where.
    let (_, update) = slack.until("chat.update", WITHIN).await;
    assert_eq!(
        (&update["body"]["channel"], &update["body"]["ts"]),
        (&color_post["channel"], &color_post["ts"])
    );
    assert_eq!(update["answer"]["ok"], true, "{update}");
    assert!(buttons(&update["body"]).is_empty(), "{update}");
    assert_eq!(ending_of(&update), "Answered by alice@example.com in Slack");

    // The same click again (a replay, or a click after the end) changes nothing and says so.
    let told = hear(
        &node,
        &mut slack,
        "U01ALICE",
        &dm,
        "askgate_choice_o1",
        &blue,
    )
    .await;
    assert!(
        told.contains("already ended: answered by alice@example.com in Slack"),
        "{told}"
    );

    // The channel post's page button: carol, no member of ops, is told she may not answer;
    // bob gets his own link, its issue in the audit trail.
    let link_value = value_of(&deploy_body, "askgate_link");
    let told = hear(
        &node,
        &mut slack,
        "U03CAROL",
        "C01OPS",
        "askgate_link",
        &link_value,
    )
    .await;
    assert!(told.contains("You may not answer"), "{told}");
    let (status, _) = interact(
        &node,
        &click("U02BOB", "C01OPS", "askgate_link", &link_value),
        SIGNING_SECRET,
        now_s(),
    )
    .await;
    assert_eq!(status, 200);
    let told = slack.next(WITHIN).await;
    assert_eq!(told["body"]["user"], "U02BOB", "{told}");
    let link = told["body"]["blocks"][1]["elements"][0]["url"]
        .as_str()
        .unwrap_or_default();
    assert!(link.starts_with("https://askgate.example/s/s#k="), "{told}");
    let (_, trail) = node.http("GET", "/v1/audit?session=s", None).await;
    assert!(
        trail
            .lines()
            .any(|line| line.contains("\"link_issued\"") && line.contains(BOB)),
        "{trail}"
    );

    // Carol's Reject opens no modal: she is told she may not answer.
    let told = hear(
        &node,
        &mut slack,
        "U03CAROL",
        "C01OPS",
        "askgate_choice_reject",
        &reject,
    )
    .await;
    assert!(told.contains("You may not answer"), "{told}");

    // Bob, a member of ops, rejects the approval in its channel: a modal asks why.
    let (status, _) = interact(
        &node,
        &click("U02BOB", "C01OPS", "askgate_choice_reject", &reject),
        SIGNING_SECRET,
        now_s(),
    )
    .await;
    assert_eq!(status, 200);
    let opened = slack.next(WITHIN).await;
    assert_eq!(opened["method"], "views.open", "{opened}");
    assert_eq!(opened["body"]["trigger_id"], "1234.5678.abcd");
    let view = &opened["body"]["view"];
    let submitted = json!({
        "type": "view_submission",
        "user": {"id": "U02BOB"},
        "view": {
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "state": {"values": {"reason": {"reason": {"type": "plain_text_input", "value": "not on a Friday"}}}},
        },
    });
    let (status, said) = interact(&node, &submitted, SIGNING_SECRET, now_s()).await;
    assert_eq!((status, said.as_str()), (200, ""));
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["id"], "deploy");
    assert_eq!(outcome["user"], BOB);
    assert_eq!(
        outcome["response"]["decisions"],
        json!([{"type": "reject", "message": "not on a Friday"}])
    );
    let (_, update) = slack.until("chat.update", WITHIN).await;
    assert_eq!(update["body"]["channel"], "C01OPS");
    assert_eq!(update["body"]["ts"], deploy_post["ts"]);
    assert_eq!(ending_of(&update), "Rejected by bob@example.com in Slack");

    // A request withdrawn by its agent: its message says so too.
    agent
        .send(&json!({"type": "cancel", "session": "s", "id": "two"}))
        .await;
    let (_, update) = slack.until("chat.update", WITHIN).await;
    assert_eq!(ending_of(&update), "Withdrawn by the agent");
    drop(node);
    support::remove_scratch(&dir);
}

#[tokio::test]
async fn on_redis_a_click_on_a_node_that_did_not_post_answers_and_updates() {
    let dir = support::tempdir("slack-redis");
    let redis = support::redis::RedisServer::start(&[]);
    let mut slack = SlackApi::start(TOKEN, 0, 1).await;
    let file = notify_file(&dir, &slack.url());
    let nodes = [
        Node::start_notifying(&redis.url(), None, &file),
        Node::start_notifying(&redis.url(), None, &file),
        Node::start_notifying(&redis.url(), None, &file),
    ];
    let (mut agent, _) = nodes[0].agent_opening("s").await;
    agent.send(&color("s", "r1", &[ALICE])).await;
    agent.recv_until("accepted").await;
    let posted = next_post(&mut slack).await;
    assert_eq!(posted["body"]["channel"], "U01ALICE");
    let message = posted["answer"].clone();
    let blue = value_of(&posted["body"], "askgate_choice_o1");
    let dm = message["channel"].as_str().unwrap().to_owned();

    // The click reaches another node: it answers there, and the message is updated.
    let blue_click = click("U01ALICE", &dm, "askgate_choice_o1", &blue);
    let (status, said) = interact(&nodes[2], &blue_click, SIGNING_SECRET, now_s()).await;
    assert_eq!(status, 200, "{said}");
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(
        (&outcome["user"], &outcome["outcome"]),
        (&json!(ALICE), &json!("answered"))
    );
    let (_, update) = slack.until("chat.update", WITHIN).await;
    assert_eq!(
        (&update["body"]["channel"], &update["body"]["ts"]),
        (&message["channel"], &message["ts"])
    );
    assert_eq!(update["answer"]["ok"], true, "{update}");
    assert_eq!(ending_of(&update), "Answered by alice@example.com in Slack");

    // A replay on the second node changes nothing and says how it ended. (Had the post's
    // node seen the ending before the update forgot its message, it updated it too, alike.)
    let (status, _) = interact(&nodes[1], &blue_click, SIGNING_SECRET, now_s()).await;
    assert_eq!(status, 200);
    let (updates, told) = slack.until("chat.postEphemeral", WITHIN).await;
    for again in updates {
        assert_eq!(again["method"], "chat.update", "{again}");
        assert_eq!(ending_of(&again), "Answered by alice@example.com in Slack");
    }
    assert_eq!(told["method"], "chat.postEphemeral", "{told}");
    assert!(
        told["body"]["text"]
            .as_str()
            .unwrap()
            .contains("already ended"),
        "{told}"
    );
    drop(nodes);
    support::remove_scratch(&dir);
}

#[tokio::test]
async fn a_post_kept_before_a_sigkill_is_made_after_the_restart_once() {
    let dir = support::tempdir("slack-restart");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    // Nothing answers at Slack's address while the first gateway runs.
    let port = support::free_port();
    let file = notify_file(&dir, &format!("http://127.0.0.1:{port}/api/"));
    let mut node = Node::start_notifying("embedded", Some(&data), &file);
    let mut agent = node.agent().await;
    agent.open("s").await;
    agent.send(&color("s", "kept", &[ALICE])).await;
    agent.recv_until("accepted").await;
    assert!(
        node.wrote_line("a notification failed; it is tried again")
            .await,
        "{:?}",
        node.said()
    );
    node.kill();

    let mut slack = SlackApi::start_on(TOKEN, port).await;
    let node = Node::start_notifying("embedded", Some(&data), &file);
    let posted = next_post(&mut slack).await;
    assert_eq!(posted["body"]["channel"], "U01ALICE");
    assert_eq!(posted_request(&posted), "kept");
    assert!(
        node.wrote_line("a notification was sent").await,
        "{:?}",
        node.said()
    );
    drop(node);
    // Posted once: another restart posts nothing more, and the next post is a new request's.
    let node = Node::start_notifying("embedded", Some(&data), &file);
    let mut agent = node.agent().await;
    agent.open("s").await;
    agent.send(&color("s", "after", &[ALICE])).await;
    agent.recv_until("accepted").await;
    let next = next_post(&mut slack).await;
    assert_eq!(
        posted_request(&next),
        "after",
        "the first post came again: {next}"
    );
    drop(node);
    support::remove_scratch(&dir);
}

#[tokio::test]
async fn slacks_refusal_is_logged_counted_and_not_tried_again() {
    let dir = support::tempdir("slack-refused");
    // The stand-in takes another token: every call is `ok: false`, `invalid_auth`.
    let mut slack = SlackApi::start("xoxb-another-token", 0, 1).await;
    let file = notify_file(&dir, &slack.url());
    let node = Node::start_notifying("memory", None, &file);
    let (mut agent, _) = node.agent_opening("s").await;
    agent.send(&color("s", "r1", &[ALICE])).await;
    agent.recv_until("accepted").await;
    let call = slack.next(WITHIN).await;
    assert_eq!(
        (&call["authorized"], &call["answer"]["error"]),
        (&json!(false), &json!("invalid_auth"))
    );
    assert!(
        node.wrote_line("slack chat.postMessage: invalid_auth")
            .await,
        "{:?}",
        node.said()
    );
    let (_, metrics) = node.http("GET", "/metrics", None).await;
    assert!(
        metrics.contains("askgate_notifications_rejected_total{channel=\"slack\"} 1"),
        "{metrics}"
    );
    // Not tried again: counted as refused for good, never as a retry.
    assert!(
        metrics.contains("askgate_notifications_retried_total{channel=\"slack\"} 0"),
        "{metrics}"
    );
    // And the next call is the next request's.
    agent.send(&color("s", "r2", &[ALICE])).await;
    agent.recv_until("accepted").await;
    let next = slack.next(WITHIN).await;
    assert_eq!(
        posted_request(&next),
        "r2",
        "the refused post was tried again: {next}"
    );
    drop(node);
    support::remove_scratch(&dir);
}

#[tokio::test]
async fn reminders_reply_in_the_thread_and_escalations_post_to_the_new_people() {
    let dir = support::tempdir("slack-follow-ups");
    let mut slack = SlackApi::start(TOKEN, 0, 1).await;
    let file = notify_file(&dir, &slack.url());
    let node = Node::start_notifying("memory", None, &file);
    let (mut agent, _) = node.agent_opening("s").await;
    let mut frame = color("s", "r1", &[ALICE]);
    frame["remind_after_s"] = json!(0.5);
    frame["escalate"] = json!({"after_s": 1.0, "to": [BOB]});
    agent.send(&frame).await;
    agent.recv_until("accepted").await;
    let first = next_post(&mut slack).await;
    assert_eq!(first["body"]["channel"], "U01ALICE");
    let alices = first["answer"].clone();
    assert!(first["body"].get("thread_ts").is_none(), "{first}");

    // The reminder (a reply in alice's thread, without buttons), then the escalation (a
    // message of its own to bob, with the buttons, and a word of it in alice's thread).
    // Compared whatever order they come in: on a busy machine both timers may fire at once,
    // and one queue sends them sorted by target.
    let mut posts = Vec::new();
    for _ in 0..3 {
        posts.push(next_post(&mut slack).await);
    }
    let text = |post: &Value| post["body"]["text"].as_str().unwrap_or("").to_owned();
    let mut take = |what: &str, matches: &dyn Fn(&Value) -> bool| {
        let at = posts
            .iter()
            .position(matches)
            .unwrap_or_else(|| panic!("no {what} among {posts:?}"));
        posts.remove(at)
    };
    let reminder = take("reminder", &|post| text(post).starts_with("Reminder:"));
    let in_thread = take("word in alice's thread", &|post| {
        text(post).starts_with("Still unanswered: escalated to bob@example.com.")
    });
    let escalated = take("message to bob", &|post| {
        post["body"]["channel"] == "U02BOB"
    });
    assert_eq!(
        (&reminder["body"]["channel"], &reminder["body"]["thread_ts"]),
        (&alices["channel"], &alices["ts"]),
        "{reminder}"
    );
    assert!(buttons(&reminder["body"]).is_empty(), "{reminder}");
    assert_eq!(
        (
            &in_thread["body"]["channel"],
            &in_thread["body"]["thread_ts"]
        ),
        (&alices["channel"], &alices["ts"]),
        "{in_thread}"
    );
    assert_eq!(escalated["body"]["channel"], "U02BOB", "{escalated}");
    assert!(escalated["body"].get("thread_ts").is_none(), "{escalated}");
    let bobs = escalated["answer"].clone();
    let red = value_of(&escalated["body"], "askgate_choice_o0");

    // Bob answers from his message: both messages are updated.
    let (status, said) = interact(
        &node,
        &click(
            "U02BOB",
            bobs["channel"].as_str().unwrap(),
            "askgate_choice_o0",
            &red,
        ),
        SIGNING_SECRET,
        now_s(),
    )
    .await;
    assert_eq!(status, 200, "{said}");
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["user"], BOB);
    let mut updated = Vec::new();
    for _ in 0..2 {
        let (_, update) = slack.until("chat.update", WITHIN).await;
        assert_eq!(ending_of(&update), "Answered by bob@example.com in Slack");
        updated.push((
            update["body"]["channel"].clone(),
            update["body"]["ts"].clone(),
        ));
    }
    updated.sort_by_key(|(channel, _)| channel.to_string());
    let mut expected = vec![
        (alices["channel"].clone(), alices["ts"].clone()),
        (bobs["channel"].clone(), bobs["ts"].clone()),
    ];
    expected.sort_by_key(|(channel, _)| channel.to_string());
    assert_eq!(updated, expected);
    drop(node);
    support::remove_scratch(&dir);
}
