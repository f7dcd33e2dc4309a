//! What an interaction from Slack asks, read from its form-encoded `payload`: a click on one
//! of the app's buttons (`block_actions`), or the reason modal sent (`view_submission`).
//! Anything else the app is sent is taken and ignored.

use serde_json::Value;

use super::blocks::{
    ButtonValue, CHOICE_ACTION_PREFIX, LINK_ACTION, OPEN_ACTION, REASON_INPUT, REJECT_CALLBACK,
};
use crate::people::choices::Choice;

/// The most bytes of an interaction's body read: Slack sends the whole message clicked, at
/// most 50 blocks of a few KiB.
pub const MAX_INTERACTION_BYTES: usize = 1024 * 1024;

/// What an interaction asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interaction {
    /// A choice button clicked: answer with it.
    Choose {
        /// Who clicked (a Slack user id).
        user: String,
        /// Where, to tell them privately if nothing changed.
        channel: String,
        /// The request and the choice.
        value: ButtonValue,
        /// The choice.
        choice: Choice,
        /// For opening the reason modal (Reject).
        trigger_id: Option<String>,
    },
    /// A channel post's page button clicked: send the clicker their own link.
    Link {
        /// Who clicked.
        user: String,
        /// Where.
        channel: String,
        /// The request.
        value: ButtonValue,
    },
    /// The reason modal sent: reject with the reason.
    Reject {
        /// Who sent it.
        user: String,
        /// The request (the Reject button's value).
        value: ButtonValue,
        /// What they wrote, if anything.
        reason: Option<String>,
    },
    /// Nothing to do (a link button's click, another app's payload, another type).
    Ignored,
}

/// The interaction in a form body (`payload=…`).
///
/// # Errors
/// It is not a payload Slack sends: what is wrong.
pub fn read(body: &[u8]) -> Result<Interaction, String> {
    let payload = url::form_urlencoded::parse(body)
        .find(|(name, _)| name == "payload")
        .map(|(_, value)| value.into_owned())
        .ok_or("the body has no payload field")?;
    let payload: Value =
        serde_json::from_str(&payload).map_err(|e| format!("payload: not JSON: {e}"))?;
    let user = payload["user"]["id"]
        .as_str()
        .ok_or("payload.user.id: missing")?
        .to_owned();
    match payload["type"].as_str() {
        Some("block_actions") => read_action(&payload, user),
        Some("view_submission") => read_submission(&payload, user),
        _ => Ok(Interaction::Ignored),
    }
}

fn read_action(payload: &Value, user: String) -> Result<Interaction, String> {
    let Some(action) = payload["actions"].as_array().and_then(|a| a.first()) else {
        return Err("payload.actions: missing or empty".to_owned());
    };
    let action_id = action["action_id"].as_str().unwrap_or_default();
    if action_id == OPEN_ACTION {
        return Ok(Interaction::Ignored);
    }
    let channel = payload["channel"]["id"]
        .as_str()
        .or_else(|| payload["container"]["channel_id"].as_str())
        .ok_or("payload.channel.id: missing")?
        .to_owned();
    let value = || {
        action["value"]
            .as_str()
            .and_then(ButtonValue::decode)
            .ok_or("payload.actions[0].value: not a value askgate made")
    };
    if action_id == LINK_ACTION {
        return Ok(Interaction::Link {
            user,
            channel,
            value: value()?,
        });
    }
    let Some(key) = action_id.strip_prefix(CHOICE_ACTION_PREFIX) else {
        return Ok(Interaction::Ignored);
    };
    let value = value()?;
    let choice = Choice::from_key(key)
        .filter(|choice| choice.as_key() == value.choice)
        .ok_or("payload.actions[0]: the action and its value name different choices")?;
    Ok(Interaction::Choose {
        user,
        channel,
        value,
        choice,
        trigger_id: payload["trigger_id"].as_str().map(str::to_owned),
    })
}

fn read_submission(payload: &Value, user: String) -> Result<Interaction, String> {
    let view = &payload["view"];
    if view["callback_id"].as_str() != Some(REJECT_CALLBACK) {
        return Ok(Interaction::Ignored);
    }
    let value = view["private_metadata"]
        .as_str()
        .and_then(ButtonValue::decode)
        .ok_or("payload.view.private_metadata: not a value askgate made")?;
    let reason = view["state"]["values"][REASON_INPUT][REASON_INPUT]["value"]
        .as_str()
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned);
    Ok(Interaction::Reject {
        user,
        value,
        reason,
    })
}
