//! Slack: a message from the gateway's app for each request, to a person (a direct message)
//! or to a group's channel, with buttons that answer where one click is a whole answer; the
//! messages updated in place when the request ends; reminders and escalations in their
//! threads.
//!
//! The messages a request caused are remembered in the store ([`KeptTable::SlackMessages`],
//! under `session/id`, a field per target), so that the update reaches them whichever node
//! makes it and after a restart. A target's message is posted once: a retried or repeated
//! `request.opened` finds it remembered and posts nothing. On a shared store the ending's
//! update first leaves a mark ([`SLACK_ENDED_FIELD`]): a post another node makes as the
//! update runs finds it and updates its message to match.
//!
//! - [`api`]: calling the Web API, and what its answers mean for the delivery queue.
//! - [`blocks`]: what the messages say, in Block Kit.
//! - [`signature`]: checking that an interaction came from Slack.
//! - [`interactions`]: what an interaction asks, read from Slack's payload.

pub mod api;
pub mod blocks;
pub mod interactions;
pub mod signature;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::delivery::Told;
use super::{Notifier, SendError};
use crate::clock::now_ms;
use crate::people::action_links::link_expiry;
use crate::store::{
    DeliveryTarget, KeptField, KeptTable, SLACK_ENDED_FIELD, StoreOp, StoredDelivery,
};
use blocks::Answering;

/// A message the app posted: where, and its timestamp (Slack's id of a message).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Posted {
    /// The channel it is in (a `D…` for a direct message).
    pub channel: String,
    /// Its `ts`.
    pub ts: String,
}

/// The messages posted per request, on a store only this node uses: `session/id` → target
/// field → message.
#[derive(Debug, Default)]
pub struct PostedMessages(Mutex<HashMap<String, BTreeMap<String, Posted>>>);

impl PostedMessages {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, BTreeMap<String, Posted>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes in what the store kept before a restart.
    pub fn restore(&self, kept: &[KeptField]) {
        let mut posted = self.lock();
        for field in kept {
            if field.table != KeptTable::SlackMessages {
                continue;
            }
            match serde_json::from_str::<Posted>(&field.value) {
                Ok(message) => {
                    posted
                        .entry(field.key.clone())
                        .or_default()
                        .insert(field.field.clone(), message);
                }
                Err(error) => {
                    tracing::warn!(key = %field.key, field = %field.field, %error, "a kept Slack message could not be read; it will not be updated");
                }
            }
        }
    }

    /// How many requests have messages remembered.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none has.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The key a request's messages are kept under.
pub fn messages_key(delivery: &StoredDelivery) -> String {
    format!(
        "{}/{}",
        delivery.session.as_str(),
        delivery.request.as_str()
    )
}

/// The field a target's message is kept in.
fn target_field(target: &DeliveryTarget) -> Option<String> {
    match target {
        DeliveryTarget::SlackPerson(person) => Some(format!("person:{person}")),
        DeliveryTarget::SlackChannel(group) => Some(format!("group:{group}")),
        _ => None,
    }
}

impl Notifier {
    /// The messages `key`'s request caused, as the store (or this node, on a local store)
    /// remembers them.
    async fn posted_messages(&self, key: &str) -> Result<BTreeMap<String, Posted>, SendError> {
        let Some(shared) = &self.shared else {
            return Ok(self.posted.lock().get(key).cloned().unwrap_or_default());
        };
        Ok(kept_messages(shared.as_ref(), key)
            .await?
            .into_iter()
            .filter(|(field, _)| field != SLACK_ENDED_FIELD)
            .filter_map(|(field, value)| Some((field, serde_json::from_str(&value).ok()?)))
            .collect())
    }

    /// Remembers (or, with `None`, forgets) the message of `field` of `key`'s request.
    async fn remember_posted(&self, key: &str, field: &str, message: Option<&Posted>) {
        let op = StoreOp::Keep {
            table: KeptTable::SlackMessages,
            key: key.to_owned(),
            field: field.to_owned(),
            value: message.and_then(|m| serde_json::to_string(m).ok()),
        };
        if let Err(error) = self.store.commit(vec![op]).await {
            tracing::warn!(%key, %field, %error, "a Slack message could not be remembered; it may not be updated when its request ends");
        }
        if self.shared.is_none() {
            let mut posted = self.posted.lock();
            match message {
                Some(message) => {
                    posted
                        .entry(key.to_owned())
                        .or_default()
                        .insert(field.to_owned(), message.clone());
                }
                None => {
                    if let Some(fields) = posted.get_mut(key) {
                        fields.remove(field);
                        if fields.is_empty() {
                            posted.remove(key);
                        }
                    }
                }
            }
        }
    }

    /// One try of a Slack notification.
    pub(super) async fn send_slack(
        &self,
        api: &api::Api,
        delivery: &StoredDelivery,
    ) -> Result<(), SendError> {
        let told = Told::read(&delivery.body).map_err(SendError::Rejected)?;
        let key = messages_key(delivery);
        let Some(field) = target_field(&delivery.target) else {
            return self.update_ended(api, &told, &key, &delivery.body).await;
        };
        let posted = self.posted_messages(&key).await?;
        let (channel, answering) = self.slack_destination(&delivery.target, &told, delivery)?;
        let earlier = posted.get(&field);
        let now = now_ms();
        let message = match (told.kind.as_str(), earlier) {
            // Posted already (a repeat of this notification, or a restart between the post
            // and the record of it being sent): nothing more.
            ("request.opened", Some(_)) => return Ok(()),
            ("request.reminded" | "request.escalated", Some(earlier)) => {
                let mut reply = blocks::follow_up(&told, now);
                reply["channel"] = json!(earlier.channel);
                reply["thread_ts"] = json!(earlier.ts);
                reply
            }
            _ => {
                let mut message = blocks::asking(&told, &answering, now);
                message["channel"] = json!(channel);
                message
            }
        };
        let threaded = message.get("thread_ts").is_some();
        let mut args = message;
        args["mrkdwn"] = json!(false);
        args["unfurl_links"] = json!(false);
        args["unfurl_media"] = json!(false);
        let answer = api.send("chat.postMessage", &args).await?;
        if threaded {
            return Ok(());
        }
        let (Some(channel), Some(ts)) = (answer["channel"].as_str(), answer["ts"].as_str()) else {
            tracing::warn!(notification = %delivery.id, "Slack took a message without saying where it is; it will not be updated");
            return Ok(());
        };
        let message = Posted {
            channel: channel.to_owned(),
            ts: ts.to_owned(),
        };
        self.remember_posted(&key, &field, Some(&message)).await;
        // On a shared store the ending's update may be made by another node, and may have
        // read the messages before this one was remembered: then its mark is there, and this
        // message is updated here to match. Without the mark, the update is still to come and
        // will find this message. (On a local store the update goes through this same queue,
        // after this post.)
        if self.shared.is_some() && !self.still_open(delivery).await {
            // The update forgets each message it updated: one still kept beside the mark was
            // (most likely) read too late for it.
            let still_kept = self.posted_messages(&key).await?.contains_key(&field);
            let ended = self.ended_mark(&key).await?.filter(|_| still_kept);
            if let Some(body) = ended {
                let ended = Told::read(&body).map_err(SendError::Rejected)?;
                let mut args = blocks::ended(&ended);
                args["channel"] = json!(message.channel);
                args["ts"] = json!(message.ts);
                match api.send("chat.update", &args).await {
                    Ok(_) => {}
                    // Left with its buttons, whose clicks say the request has ended; the kept
                    // entry expires on Redis.
                    Err(error) => {
                        tracing::warn!(%key, %error, "a Slack message posted as its request ended could not be updated");
                    }
                }
                self.remember_posted(&key, &field, None).await;
            }
        }
        Ok(())
    }

    /// On a shared store: the `request.resolved` body the ending's update left, if it ran.
    async fn ended_mark(&self, key: &str) -> Result<Option<String>, SendError> {
        let Some(shared) = &self.shared else {
            return Ok(None);
        };
        Ok(kept_messages(shared.as_ref(), key)
            .await?
            .into_iter()
            .find(|(field, _)| field == SLACK_ENDED_FIELD)
            .map(|(_, body)| body))
    }

    /// Where a person's or a group's message goes, and how it asks for an answer.
    fn slack_destination(
        &self,
        target: &DeliveryTarget,
        told: &Told,
        delivery: &StoredDelivery,
    ) -> Result<(String, Answering), SendError> {
        let settings = &self.config.settings;
        match target {
            DeliveryTarget::SlackPerson(person) => {
                let id = settings
                    .people
                    .get(person)
                    .and_then(|contact| contact.slack.clone())
                    .ok_or_else(|| {
                        SendError::Rejected(format!("no Slack id is configured for {person:?}"))
                    })?;
                let expires_ms = link_expiry(told.deadline_ms, delivery.created_ms);
                let link = self.keys.personal_url(&told.session, person, expires_ms);
                Ok((id, Answering::Personal { link }))
            }
            DeliveryTarget::SlackChannel(group) => {
                let channel = settings.slack_channels.get(group).cloned().ok_or_else(|| {
                    SendError::Rejected(format!(
                        "no Slack channel is configured for group {group:?}"
                    ))
                })?;
                Ok((channel, Answering::Channel))
            }
            _ => Err(SendError::Rejected("not a Slack target".to_owned())),
        }
    }

    /// Forgets the messages of a request whose update was given up: nothing will update them
    /// (their buttons stay, and their clicks say the request has ended).
    pub(super) async fn forget_posted(&self, delivery: &StoredDelivery) {
        if delivery.target != DeliveryTarget::SlackUpdate {
            return;
        }
        let key = messages_key(delivery);
        let op = StoreOp::Unkeep {
            table: KeptTable::SlackMessages,
            key: key.clone(),
        };
        if let Err(error) = self.store.commit(vec![op]).await {
            tracing::warn!(%key, %error, "a request's Slack messages could not be forgotten");
        }
        if self.shared.is_none() {
            self.posted.lock().remove(&key);
        }
    }

    /// Updates every message `key`'s request caused to say how it ended (`body`, the
    /// `request.resolved`), then forgets them. On a shared store it first leaves its mark, so
    /// that a message another node posts meanwhile is updated too.
    async fn update_ended(
        &self,
        api: &api::Api,
        told: &Told,
        key: &str,
        body: &str,
    ) -> Result<(), SendError> {
        if self.shared.is_some() {
            let op = StoreOp::Keep {
                table: KeptTable::SlackMessages,
                key: key.to_owned(),
                field: SLACK_ENDED_FIELD.to_owned(),
                value: Some(body.to_owned()),
            };
            self.store.commit(vec![op]).await.map_err(|e| {
                SendError::Failed(format!("marking the request's Slack messages: {e}"))
            })?;
        }
        let posted = self.posted_messages(key).await?;
        for message in posted.values() {
            let mut args = blocks::ended(told);
            args["channel"] = json!(message.channel);
            args["ts"] = json!(message.ts);
            match api.send("chat.update", &args).await {
                Ok(_) => {}
                // Deleted from Slack, or the app was removed from the channel: nothing to
                // update there, and no reason to keep the others waiting.
                Err(SendError::Rejected(why)) => {
                    tracing::warn!(%key, channel = %message.channel, %why, "a Slack message could not be updated");
                }
                Err(error) => return Err(error),
            }
        }
        if self.shared.is_some() {
            // The mark stays (it expires within the hour); the messages are done with.
            for field in posted.keys() {
                self.remember_posted(key, field, None).await;
            }
        } else if !posted.is_empty() {
            let op = StoreOp::Unkeep {
                table: KeptTable::SlackMessages,
                key: key.to_owned(),
            };
            if let Err(error) = self.store.commit(vec![op]).await {
                tracing::warn!(%key, %error, "a request's Slack messages could not be forgotten");
            }
            self.posted.lock().remove(key);
        }
        Ok(())
    }
}

/// A message only `user` sees in `channel`, as `chat.postEphemeral` takes it; with `link`,
/// a button opening it.
pub fn ephemeral(channel: &str, user: &str, text: &str, link: Option<&str>) -> Value {
    let escaped = text
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let mut blocks = vec![json!({
        "type": "section",
        "text": {"type": "plain_text", "text": text, "emoji": false},
    })];
    if let Some(link) = link {
        blocks.push(json!({"type": "actions", "elements": [{
            "type": "button",
            "action_id": blocks::OPEN_ACTION,
            "text": {"type": "plain_text", "text": "Open in askgate"},
            "url": link,
        }]}));
    }
    json!({
        "channel": channel,
        "user": user,
        "text": escaped,
        "mrkdwn": false,
        "blocks": blocks,
    })
}

/// Every field a shared store keeps under `key` of the Slack messages table.
async fn kept_messages(
    shared: &dyn crate::store::shared::Shared,
    key: &str,
) -> Result<Vec<(String, String)>, SendError> {
    shared
        .kept(KeptTable::SlackMessages, key)
        .await
        .map_err(|e| SendError::Failed(format!("reading the request's Slack messages: {e}")))
}
