//! Web Push: a notification on each device a person subscribed, for each request they are
//! told of, encrypted for that device (RFC 8291) and signed with the gateway's VAPID key
//! (RFC 8292) by [`web_push`].
//!
//! Subscriptions are kept per person ([`KeptTable::PushSubscriptions`], a field per device,
//! [`MAX_SUBSCRIPTIONS`] at most: the oldest goes), on every store. The VAPID key is given
//! with `--vapid-key-file`, or derived from the secret the store keeps for viewer links, so
//! that every node of a deployment signs with the same key and a restart keeps it.
//!
//! A push carries the request's title, its first question and the person's own link, and is
//! tagged with the request, so that a repeat (delivery is at least once) replaces the
//! notification shown rather than adding one. A 404 or 410 from a push service means the
//! browser dropped the subscription: it is deleted. A 429 is tried again after its
//! `Retry-After`, a 5xx or no answer like any failed try.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use hmac::Mac as _;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest as _, Sha256};

use super::delivery::{self, Told, chain};
use super::web_push::{self, VapidKey};
use super::webhook::SEND_TIMEOUT;
use super::{Notifier, SendError, address};
use crate::clock::now_ms;
use crate::keys::ViewerKeys;
use crate::people::action_links::link_expiry;
use crate::people::choices;
use crate::store::{DeliveryTarget, KeptField, KeptTable, StoreError, StoreOp, StoredDelivery};

/// Most devices one person may have subscribed; an eleventh pushes out the oldest.
pub const MAX_SUBSCRIPTIONS: usize = 10;
/// The longest label a device may be given.
pub const MAX_LABEL_CHARS: usize = 100;
/// How long a push waits at its push service for a request without a deadline.
pub const UNDATED_TTL_S: u64 = 86_400;
/// A request with less than this left is pushed with `Urgency: high`.
pub const URGENT_WITHIN: Duration = Duration::from_secs(600);
/// Most characters of a title or a question in a push (a notification shows a line or two).
const MAX_PUSH_TEXT_CHARS: usize = 200;

/// One device's subscription, as the browser gave it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    /// Where pushes for it go.
    pub endpoint: String,
    /// The browser's P-256 public key, base64url.
    pub p256dh: String,
    /// The browser's auth secret, base64url.
    pub auth: String,
    /// What the page called the device.
    pub label: String,
    /// When it was added (Unix ms).
    pub created_ms: u64,
    /// The session it was made from with a personal link, whose requests alone it is told
    /// of (a personal link is the person's only in that session, and may have been issued by
    /// an agent limited to it); `None` when made from the inbox: every session.
    #[serde(default)]
    pub session: Option<String>,
}

impl Subscription {
    /// Its id, as pages see it: the first 16 hex digits of the SHA-256 of its endpoint (the
    /// endpoint itself is a capability to push to the device, so it is not shown back; a page
    /// works the id out from its own subscription to find itself in the list).
    pub fn id(&self) -> String {
        short_hex(&Sha256::digest(self.endpoint.as_bytes()))
    }

    /// The field it is kept under: its endpoint and session, since the same device may be
    /// subscribed from a session's page and from the inbox, each told of other requests.
    fn field(&self) -> String {
        let mut hash = Sha256::new();
        hash.update(self.endpoint.as_bytes());
        hash.update(b"\0");
        hash.update(self.session.as_deref().unwrap_or_default().as_bytes());
        short_hex(&hash.finalize())
    }

    /// Whether a key for `session` (`None`: an inbox key) sees it.
    pub fn seen_from(&self, session: Option<&str>) -> bool {
        session.is_none() || self.session.as_deref() == session
    }
}

/// The first 16 hex digits of `digest`.
fn short_hex(digest: &[u8]) -> String {
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// How pushes are signed: the key and the contact the push services are given.
#[derive(Clone)]
pub struct Pusher {
    /// The VAPID key.
    pub key: VapidKey,
    /// `sub`: whom a push service's operator may contact (`mailto:` or `https:`).
    pub subject: String,
}

impl std::fmt::Debug for Pusher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pusher")
            .field("key", &self.key.public_key_base64url())
            .field("subject", &self.subject)
            .finish()
    }
}

/// The VAPID key derived from the viewer-link secret: the same on every node sharing it.
///
/// # Errors
/// The derived bytes are not a P-256 scalar (a chance of about 2^-128).
pub fn derived_key(keys: &ViewerKeys) -> Result<VapidKey, String> {
    let bytes = keys
        .mac_over(&[b"vapid-key", b"v1"])
        .finalize()
        .into_bytes();
    VapidKey::from_secret_bytes(&bytes)
}

/// The subscriptions of each person, on a store only this node uses.
#[derive(Debug, Default)]
pub struct Subscriptions(Mutex<HashMap<String, BTreeMap<String, Subscription>>>);

impl Subscriptions {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, BTreeMap<String, Subscription>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes in what the store kept before a restart.
    pub fn restore(&self, kept: &[KeptField]) {
        let mut all = self.lock();
        for field in kept {
            if field.table != KeptTable::PushSubscriptions {
                continue;
            }
            match serde_json::from_str::<Subscription>(&field.value) {
                Ok(subscription) => {
                    all.entry(field.key.clone())
                        .or_default()
                        .insert(field.field.clone(), subscription);
                }
                Err(error) => {
                    tracing::warn!(user = %field.key, %error, "a kept push subscription could not be read; it is not used");
                }
            }
        }
    }

    fn has_any(&self, person: &str) -> bool {
        self.lock().get(person).is_some_and(|subs| !subs.is_empty())
    }
}

/// Why a subscription was not added.
#[derive(Debug)]
pub enum SubscribeRefused {
    /// The gateway has no `[push]`.
    NotConfigured,
    /// Something in it is wrong: the path and what.
    Invalid(String, String),
    /// The store did not keep it.
    Store(StoreError),
}

/// Checks a subscription from a page: `(path, what)` of the first fault.
///
/// # Errors
/// What is wrong, and where.
pub fn check_subscription(
    endpoint: &str,
    p256dh: &str,
    auth: &str,
    label: &str,
    allow_private: bool,
) -> Result<(), (String, String)> {
    let fault = |path: &str, what: String| Err((path.to_owned(), what));
    let Ok(url) = url::Url::parse(endpoint) else {
        return fault("endpoint", format!("{endpoint:?} is not a URL"));
    };
    let loopback = address::is_loopback_host(&url);
    if url.scheme() != "https" && !(allow_private && loopback && url.scheme() == "http") {
        return fault(
            "endpoint",
            "must be an https:// URL (plain http only on loopback, with --notify-allow-private)"
                .to_owned(),
        );
    }
    if endpoint.len() > 2048 {
        return fault("endpoint", "at most 2048 bytes".to_owned());
    }
    if !allow_private && let Some((ip, why)) = address::refused_literal(&url) {
        return fault(
            "endpoint",
            format!("{ip} is {why} (refused without --notify-allow-private)"),
        );
    }
    // A test encryption checks both keys the way a push will use them.
    if let Err(why) = web_push::encrypt(b"", p256dh, auth) {
        let path = if why.contains("auth") {
            "keys.auth"
        } else {
            "keys.p256dh"
        };
        return fault(path, why);
    }
    if label.chars().count() > MAX_LABEL_CHARS || label.chars().any(char::is_control) {
        return fault(
            "label",
            format!("at most {MAX_LABEL_CHARS} characters, none a control character"),
        );
    }
    Ok(())
}

impl Notifier {
    /// The VAPID public key, base64url, when `[push]` is given.
    pub fn push_key(&self) -> Option<String> {
        self.push
            .as_ref()
            .map(|(_, pusher)| pusher.key.public_key_base64url())
    }

    /// `person`'s subscriptions, newest first.
    ///
    /// # Errors
    /// The shared store could not be read.
    pub async fn subscriptions_of(&self, person: &str) -> Result<Vec<Subscription>, StoreError> {
        let mut subs: Vec<Subscription> = match &self.shared {
            None => self
                .subscriptions
                .lock()
                .get(person)
                .map(|subs| subs.values().cloned().collect())
                .unwrap_or_default(),
            Some(shared) => shared
                .kept(KeptTable::PushSubscriptions, person)
                .await?
                .into_iter()
                .filter_map(|(_, value)| serde_json::from_str(&value).ok())
                .collect(),
        };
        subs.sort_by(|a, b| {
            b.created_ms
                .cmp(&a.created_ms)
                .then(a.endpoint.cmp(&b.endpoint))
        });
        Ok(subs)
    }

    /// Keeps (or, with `None`, deletes) `person`'s subscription of `id`.
    async fn keep_subscription(
        &self,
        person: &str,
        id: &str,
        subscription: Option<&Subscription>,
    ) -> Result<(), StoreError> {
        let op = StoreOp::Keep {
            table: KeptTable::PushSubscriptions,
            key: person.to_owned(),
            field: id.to_owned(),
            value: subscription.and_then(|s| serde_json::to_string(s).ok()),
        };
        self.store.commit(vec![op]).await?;
        if self.shared.is_none() {
            let mut all = self.subscriptions.lock();
            match subscription {
                Some(subscription) => {
                    all.entry(person.to_owned())
                        .or_default()
                        .insert(id.to_owned(), subscription.clone());
                }
                None => {
                    if let Some(subs) = all.get_mut(person) {
                        subs.remove(id);
                        if subs.is_empty() {
                            all.remove(person);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Adds `subscription` for `person` (the oldest goes past [`MAX_SUBSCRIPTIONS`]); whether
    /// it is new.
    ///
    /// # Errors
    /// Why not.
    pub async fn subscribe(
        &self,
        person: &str,
        mut subscription: Subscription,
    ) -> Result<bool, SubscribeRefused> {
        if self.push.is_none() {
            return Err(SubscribeRefused::NotConfigured);
        }
        check_subscription(
            &subscription.endpoint,
            &subscription.p256dh,
            &subscription.auth,
            &subscription.label,
            self.config.allow_private,
        )
        .map_err(|(path, what)| SubscribeRefused::Invalid(path, what))?;
        let field = subscription.field();
        let existing = self
            .subscriptions_of(person)
            .await
            .map_err(SubscribeRefused::Store)?;
        let known = existing.iter().find(|s| s.field() == field);
        if let Some(known) = known {
            subscription.created_ms = known.created_ms;
        }
        let others = existing.iter().filter(|s| s.field() != field);
        for oldest in others.skip(MAX_SUBSCRIPTIONS - 1) {
            self.keep_subscription(person, &oldest.field(), None)
                .await
                .map_err(SubscribeRefused::Store)?;
        }
        self.keep_subscription(person, &field, Some(&subscription))
            .await
            .map_err(SubscribeRefused::Store)?;
        Ok(known.is_none())
    }

    /// Deletes `person`'s `subscription`.
    ///
    /// # Errors
    /// The store did not keep the change.
    pub async fn unsubscribe(
        &self,
        person: &str,
        subscription: &Subscription,
    ) -> Result<(), StoreError> {
        self.keep_subscription(person, &subscription.field(), None)
            .await
    }

    /// Whether `person` may have subscriptions to push to (on a shared store this node cannot
    /// tell without asking: yes).
    pub(super) fn may_push_to(&self, person: &str) -> bool {
        self.push.is_some() && (self.shared.is_some() || self.subscriptions.has_any(person))
    }

    /// One try of a push notification to every device of the person it is for.
    pub(super) async fn send_push(
        &self,
        pusher: &Pusher,
        delivery: &StoredDelivery,
    ) -> Result<(), SendError> {
        let DeliveryTarget::Push(person) = &delivery.target else {
            return Err(SendError::Rejected("not a push target".to_owned()));
        };
        let told = Told::read(&delivery.body).map_err(SendError::Rejected)?;
        let subs = self
            .subscriptions_of(person)
            .await
            .map_err(|e| SendError::Failed(format!("reading {person:?}'s subscriptions: {e}")))?;
        if subs.is_empty() {
            return Ok(());
        }
        let now = now_ms();
        let expires_ms = link_expiry(told.deadline_ms, delivery.created_ms);
        let payload = payload(
            &told,
            &self.keys.personal_url(&told.session, person, expires_ms),
        );
        let left_ms = told
            .deadline_ms
            .map(|deadline| deadline.saturating_sub(now));
        let ttl_s = left_ms.map_or(UNDATED_TTL_S, |ms| ms / 1000);
        let urgency = match left_ms {
            Some(ms) if u128::from(ms) < URGENT_WITHIN.as_millis() => "high",
            _ => "normal",
        };
        let session = told.session.as_str();
        let subs: Vec<&Subscription> = subs
            .iter()
            .filter(|sub| sub.session.as_deref().is_none_or(|only| only == session))
            .collect();
        let sends = subs
            .iter()
            .map(|sub| self.push_one(pusher, sub, &payload, ttl_s, urgency));
        // At once, so that devices that do not answer cost one timeout, not one each.
        let results = futures_util::future::join_all(sends).await;
        let mut failed: Option<SendError> = None;
        for (sub, result) in subs.iter().zip(results) {
            match result {
                Ok(()) => {}
                Err(Gone(why)) => {
                    tracing::info!(user = %person, device = %sub.id(), %why, "a push subscription is gone; it is deleted");
                    if let Err(error) = self.keep_subscription(person, &sub.field(), None).await {
                        tracing::warn!(user = %person, %error, "a gone push subscription could not be deleted");
                    }
                }
                // The delivery is tried again for the device that failed (the others get the
                // same tag again: their notification is replaced, not added to); a throttled
                // one sets the wait.
                Err(Failure(error)) => {
                    let keep = matches!(failed, Some(SendError::Throttled { .. }));
                    if !keep {
                        failed = Some(error);
                    }
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    async fn push_one(
        &self,
        pusher: &Pusher,
        sub: &Subscription,
        payload: &[u8],
        ttl_s: u64,
        urgency: &str,
    ) -> Result<(), PushError> {
        let failed = |why: String| Failure(SendError::Failed(why));
        // Keys that no longer encrypt (kept by another version) make the subscription useless.
        let body = web_push::encrypt(payload, &sub.p256dh, &sub.auth).map_err(Gone)?;
        let expires_s = now_ms() / 1000 + 12 * 3600;
        let authorization = pusher
            .key
            .authorization(&sub.endpoint, &pusher.subject, expires_s)
            .map_err(|why| Failure(SendError::Rejected(why)))?;
        if let Ok(url) = url::Url::parse(&sub.endpoint)
            && !self.config.allow_private
            && let Some((ip, why)) = address::refused_literal(&url)
        {
            return Err(Failure(SendError::Refused(format!(
                "push to {}: {ip} is {why} (refused without --notify-allow-private)",
                sub.id()
            ))));
        }
        let request = Request::post(sub.endpoint.as_str())
            .header("content-type", "application/octet-stream")
            .header("content-encoding", "aes128gcm")
            .header("ttl", ttl_s.to_string())
            .header("urgency", urgency)
            .header("authorization", authorization)
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| failed(format!("push to {}: {e}", sub.id())))?;
        let exchange = async {
            let response = self.client.request(request).await?;
            let status = response.status();
            let retry_after = delivery::retry_after_header(response.headers());
            let _ = response.into_body().collect().await;
            Ok::<_, hyper_util::client::legacy::Error>((status, retry_after))
        };
        let id = sub.id();
        match tokio::time::timeout(SEND_TIMEOUT, exchange).await {
            Err(_) => Err(failed(format!(
                "push to {id}: no answer within {} s",
                SEND_TIMEOUT.as_secs()
            ))),
            Ok(Err(error)) if address::is_refused(&error) => Err(Failure(SendError::Refused(
                format!("push to {id}: {}", chain(&error)),
            ))),
            Ok(Err(error)) => Err(failed(format!("push to {id}: {}", chain(&error)))),
            Ok(Ok((status, _))) if status.is_success() => Ok(()),
            Ok(Ok((status, _))) if matches!(status.as_u16(), 404 | 410) => {
                Err(Gone(format!("its push service answered {status}")))
            }
            Ok(Ok((status, retry_after))) if status.as_u16() == 429 => Err(Failure(
                delivery::throttled(format!("push to {id}: rate limited"), retry_after),
            )),
            Ok(Ok((status, _))) => Err(failed(format!("push to {id}: answered {status}"))),
        }
    }
}

/// What became of one device's push, beyond success.
enum PushError {
    /// The subscription can no longer be pushed to (why).
    Gone(String),
    /// Tried, and the delivery should be tried again (or given up) as this says.
    Failure(SendError),
}
use PushError::{Failure, Gone};

/// The JSON a push carries, as the service worker reads it.
fn payload(told: &Told, link: &str) -> Vec<u8> {
    let cut = |text: &str| -> String {
        let text = crate::shown_text::plain(text);
        if text.chars().count() <= MAX_PUSH_TEXT_CHARS {
            return text;
        }
        let mut cut: String = text.chars().take(MAX_PUSH_TEXT_CHARS - 1).collect();
        cut.push('…');
        cut
    };
    let asked = choices::asked(&told.questions);
    let title = told
        .title
        .clone()
        .or_else(|| asked.first().cloned())
        .unwrap_or_else(|| "A question for you".to_owned());
    let prefix = match told.kind.as_str() {
        "request.reminded" => "Reminder: ",
        "request.escalated" => "Escalated: ",
        _ => "",
    };
    let body = asked
        .first()
        .filter(|first| **first != title)
        .cloned()
        .unwrap_or_default();
    let mut payload = json!({
        "title": format!("{prefix}{}", cut(&title)),
        "body": cut(&body),
        "url": link,
        "tag": format!("askgate:{}:{}", told.session.as_str(), told.id.as_str()),
    });
    let mut bytes = payload.to_string().into_bytes();
    // A very long request id could still overflow a push: the link alone is enough.
    if bytes.len() > web_push::MAX_PUSH_PAYLOAD {
        payload["body"] = json!("");
        payload["tag"] = json!(format!(
            "askgate:{}",
            URL_SAFE_NO_PAD.encode(&Sha256::digest(told.id.as_str().as_bytes())[..12])
        ));
        bytes = payload.to_string().into_bytes();
    }
    bytes
}
