//! What a Slack message about a request says, in Block Kit.
//!
//! Everything an agent wrote goes in `plain_text` objects with `emoji` off, and the message's
//! fallback `text` is sent with `mrkdwn` off and `&`, `<`, `>` escaped: no mention, link,
//! channel ping or formatting can come from an agent's words. Direction controls are named
//! in brackets, as in a mail's text part ([`plain`]). Texts are cut to Block Kit's limits.
//!
//! A click is a whole answer where one is enough: each option of a lone single-choice
//! question, or approve and reject of a lone call ([`choices::offers`]); the buttons carry
//! which request (by its questions' digest) and which choice ([`ButtonValue`]). Anything else
//! gets one button to the page.

use askgate_protocol::Dialect;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::audit::questions_digest;
use crate::notify::delivery::{Told, rfc3339};
use crate::people::action_links::short_digest;
use crate::people::choices::{self, Choice, Offer};
use crate::shown_text::plain;

/// Block Kit's longest header text.
pub const MAX_HEADER_CHARS: usize = 150;
/// Block Kit's longest section text.
pub const MAX_SECTION_CHARS: usize = 3000;
/// Block Kit's longest button label.
pub const MAX_BUTTON_CHARS: usize = 75;
/// Most questions shown as their own block; the page shows the rest.
pub const MAX_SHOWN_QUESTIONS: usize = 10;
/// Most characters of the fallback `text` (what a notification on a phone shows).
pub const MAX_FALLBACK_CHARS: usize = 300;
/// Most characters of a call's arguments shown.
pub const MAX_ARGS_CHARS: usize = 1500;
/// Most buttons a message carries: Block Kit allows 25 in an actions block, and a lone
/// question with more options reads better on the page.
pub const MAX_BUTTONS: usize = 5;

/// The `action_id` of the button that opens the page (a link: the click needs no answer).
pub const OPEN_ACTION: &str = "askgate_open";
/// The `action_id` of a channel post's button that sends the clicker their personal link.
pub const LINK_ACTION: &str = "askgate_link";
/// What every choice button's `action_id` starts with (the choice's key follows).
pub const CHOICE_ACTION_PREFIX: &str = "askgate_choice_";
/// The `callback_id` of the modal that asks a rejection's reason.
pub const REJECT_CALLBACK: &str = "askgate_reject";
/// The block and action ids of the modal's reason input.
pub const REASON_INPUT: &str = "reason";

/// What a button names: the request (and the asking of it, by its questions' digest) and
/// the answer it gives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ButtonValue {
    /// The session.
    #[serde(rename = "s")]
    pub session: String,
    /// The request.
    #[serde(rename = "r")]
    pub request: String,
    /// The short digest of the questions it was posted for.
    #[serde(rename = "d")]
    pub digest: String,
    /// The choice's key ([`Choice::as_key`]), or empty for the page's button.
    #[serde(rename = "c")]
    pub choice: String,
    /// In the reason modal's metadata: the channel of the message clicked, where the clicker
    /// is told if their rejection is refused after Slack stopped waiting for the modal.
    #[serde(rename = "ch", default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}

impl ButtonValue {
    /// The value for `told`'s request and `choice`.
    pub fn of(told: &Told, choice: Option<Choice>) -> ButtonValue {
        ButtonValue {
            session: told.session.as_str().to_owned(),
            request: told.id.as_str().to_owned(),
            digest: short_digest(&questions_digest(told.dialect, &told.questions)),
            choice: choice.map(Choice::as_key).unwrap_or_default(),
            channel: None,
        }
    }

    /// As a button's `value`.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A button's `value`, if it is one of ours.
    pub fn decode(text: &str) -> Option<ButtonValue> {
        serde_json::from_str(text).ok()
    }
}

/// `text` with direction controls named, cut to `max` characters (an ellipsis ends a cut).
fn shown(text: &str, max: usize) -> String {
    let text = plain(text);
    if text.chars().count() <= max {
        return text;
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// A `plain_text` object: never parsed for mentions, links or emoji codes.
fn plain_text(text: &str, max: usize) -> Value {
    json!({"type": "plain_text", "text": shown(text, max), "emoji": false})
}

/// The fallback `text`, escaped as Slack asks for text it might format.
fn fallback(text: &str) -> String {
    shown(text, MAX_FALLBACK_CHARS)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The headline: the title, else the first question.
fn headline(told: &Told) -> String {
    told.title
        .clone()
        .or_else(|| choices::asked(&told.questions).into_iter().next())
        .unwrap_or_else(|| "A question for you".to_owned())
}

/// Who may answer, in words.
fn answerers(told: &Told) -> String {
    match &told.answerers {
        Some(names) if !names.is_empty() => {
            let names: Vec<String> = names
                .iter()
                .map(|name| match name.strip_prefix("group:") {
                    Some(group) => format!("group {group}"),
                    None => name.clone(),
                })
                .collect();
            format!("Who may answer: {}", names.join(", "))
        }
        _ => "Anyone with the session's link may answer".to_owned(),
    }
}

/// How long is left, in words, at `now_ms`.
fn time_left(deadline_ms: Option<u64>, now_ms: u64) -> String {
    let Some(deadline_ms) = deadline_ms else {
        return "No deadline".to_owned();
    };
    let left_s = deadline_ms.saturating_sub(now_ms) / 1000;
    let left = if left_s < 60 {
        format!("{left_s} s")
    } else if left_s < 2 * 3600 {
        format!("{} min", left_s / 60)
    } else if left_s < 2 * 86_400 {
        format!("{} h", left_s / 3600)
    } else {
        format!("{} days", left_s / 86_400)
    };
    format!("Answer within {left} (by {})", rfc3339(deadline_ms))
}

/// The blocks showing the request: its headline, its questions, a call's details.
fn request_blocks(told: &Told) -> Vec<Value> {
    let headline = headline(told);
    let mut blocks =
        vec![json!({"type": "header", "text": plain_text(&headline, MAX_HEADER_CHARS)})];
    let asked = choices::asked(&told.questions);
    for question in asked.iter().take(MAX_SHOWN_QUESTIONS) {
        if *question != headline {
            blocks
                .push(json!({"type": "section", "text": plain_text(question, MAX_SECTION_CHARS)}));
        }
    }
    if asked.len() > MAX_SHOWN_QUESTIONS {
        let more = asked.len() - MAX_SHOWN_QUESTIONS;
        blocks.push(json!({"type": "section", "text": plain_text(&format!("… and {more} more on the page"), MAX_SECTION_CHARS)}));
    }
    if let Some(details) = choices::call_details(told.dialect, &told.questions, MAX_ARGS_CHARS) {
        blocks.push(json!({"type": "section", "text": plain_text(&details, MAX_SECTION_CHARS)}));
    }
    blocks
}

/// How the message asks for an answer.
#[derive(Clone, Debug)]
pub enum Answering {
    /// A direct message: the page's button opens this person's own link.
    Personal {
        /// The person's link to the session.
        link: String,
    },
    /// A channel post: the page's button sends the clicker their own link.
    Channel,
}

/// The choices a request offers as buttons: as a mail's links, at most [`MAX_BUTTONS`].
pub fn offers(dialect: Dialect, questions: &Value) -> Vec<Offer> {
    let offers = choices::offers(dialect, questions);
    if offers.len() > MAX_BUTTONS {
        return Vec::new();
    }
    offers
}

/// The message asking `told`'s request, at `now_ms`: `{text, blocks}` for `chat.postMessage`.
pub fn asking(told: &Told, answering: &Answering, now_ms: u64) -> Value {
    let mut blocks = request_blocks(told);
    let context = format!(
        "{} · {}",
        time_left(told.deadline_ms, now_ms),
        answerers(told)
    );
    blocks.push(json!({"type": "context", "elements": [plain_text(&context, MAX_SECTION_CHARS)]}));
    let mut buttons: Vec<Value> = offers(told.dialect, &told.questions)
        .into_iter()
        .map(|offer| {
            let mut button = json!({
                "type": "button",
                "action_id": format!("{CHOICE_ACTION_PREFIX}{}", offer.choice.as_key()),
                "text": plain_text(&offer.label, MAX_BUTTON_CHARS),
                "value": ButtonValue::of(told, Some(offer.choice)).encode(),
            });
            match offer.choice {
                Choice::Approve => button["style"] = json!("primary"),
                Choice::Reject => button["style"] = json!("danger"),
                Choice::Option(_) => {}
            }
            button
        })
        .collect();
    let page_label = if buttons.is_empty() {
        "Answer in askgate"
    } else {
        "Open in askgate"
    };
    buttons.push(match answering {
        Answering::Personal { link } => json!({
            "type": "button",
            "action_id": OPEN_ACTION,
            "text": plain_text(page_label, MAX_BUTTON_CHARS),
            "url": link,
        }),
        Answering::Channel => json!({
            "type": "button",
            "action_id": LINK_ACTION,
            "text": plain_text(page_label, MAX_BUTTON_CHARS),
            "value": ButtonValue::of(told, None).encode(),
        }),
    });
    blocks.push(json!({"type": "actions", "block_id": "askgate", "elements": buttons}));
    json!({"text": fallback(&headline(told)), "blocks": blocks})
}

/// A thread reply for a reminder or an escalation of `told`'s request, at `now_ms`.
pub fn follow_up(told: &Told, now_ms: u64) -> Value {
    let text = if told.kind == "request.escalated" {
        let to: Vec<String> = told
            .to
            .iter()
            .map(|name| {
                name.strip_prefix("group:")
                    .map_or_else(|| name.clone(), |g| format!("group {g}"))
            })
            .collect();
        format!(
            "Still unanswered: escalated to {}. {}",
            to.join(", "),
            time_left(told.deadline_ms, now_ms)
        )
    } else {
        format!(
            "Reminder: this still waits for an answer. {}",
            time_left(told.deadline_ms, now_ms)
        )
    };
    json!({
        "text": fallback(&text),
        "blocks": [{"type": "section", "text": plain_text(&text, MAX_SECTION_CHARS)}],
    })
}

/// How `told` (a `request.resolved`) ended, in words: "Approved by alice in Slack".
pub fn ending_words(told: &Told) -> String {
    if told.via == Some(askgate_protocol::wire::Via::Default) {
        return match told.outcome.as_deref() {
            Some("declined") => "Nobody answered in time: declined by default",
            _ => "Nobody answered in time: the agent's default answer was given",
        }
        .to_owned();
    }
    let decision = told.response["decisions"]
        .as_array()
        .filter(|decisions| decisions.len() == 1)
        .and_then(|decisions| decisions[0]["type"].as_str());
    let verb = match (told.outcome.as_deref(), decision) {
        (Some("answered"), Some("approve")) => "Approved",
        (Some("answered"), Some("reject")) => "Rejected",
        (Some("answered"), _) => "Answered",
        (Some("declined"), _) => "Declined",
        (Some("timed_out"), _) => "Timed out: nobody answered in time",
        (Some("withdrawn"), _) => match told.via {
            Some(askgate_protocol::wire::Via::Operator) => "Withdrawn by an operator",
            Some(askgate_protocol::wire::Via::Gateway) => {
                "Withdrawn by the gateway: its agent was gone too long"
            }
            _ => "Withdrawn by the agent",
        },
        (Some(other), _) => return format!("Ended ({other})"),
        (None, _) => "Ended",
    };
    let mut words = verb.to_owned();
    if let Some(user) = &told.user {
        words.push_str(" by ");
        words.push_str(user);
    }
    if matches!(told.outcome.as_deref(), Some("answered" | "declined")) {
        words.push_str(match told.via {
            Some(askgate_protocol::wire::Via::Slack) => " in Slack",
            Some(askgate_protocol::wire::Via::Email) => " from a mail",
            _ => " in askgate",
        });
    }
    words
}

/// The message replacing one that asked, once `told`'s request has ended: no buttons, the
/// request and how it ended.
pub fn ended(told: &Told) -> Value {
    let words = ending_words(told);
    let mut blocks = request_blocks(told);
    blocks.push(json!({"type": "section", "text": plain_text(&words, MAX_SECTION_CHARS)}));
    json!({"text": fallback(&format!("{} — {words}", headline(told))), "blocks": blocks})
}

/// The modal asking why a call is rejected; `value` is the Reject button's.
pub fn reject_modal(value: &str, headline: &str) -> Value {
    json!({
        "type": "modal",
        "callback_id": REJECT_CALLBACK,
        "private_metadata": value,
        "title": {"type": "plain_text", "text": "Reject"},
        "submit": {"type": "plain_text", "text": "Reject"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {"type": "section", "text": plain_text(headline, MAX_SECTION_CHARS)},
            {
                "type": "input",
                "block_id": REASON_INPUT,
                "optional": true,
                "label": {"type": "plain_text", "text": "Why? (optional; the agent is told)"},
                "element": {
                    "type": "plain_text_input",
                    "action_id": REASON_INPUT,
                    "multiline": true,
                    "max_length": 2000,
                },
            },
        ],
    })
}

#[cfg(test)]
mod tests;
