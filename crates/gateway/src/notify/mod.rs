//! Telling people about requests on channels they read, so that a question reaches them
//! without a tab open.
//!
//! The hub asks the [`Notifier`] whom a change is for as it commits the change: the
//! notifications come back as a [`StoreOp::Notify`] for the same commit, so a crash cannot
//! keep the change and lose its notifications. Once the commit is durable they are queued to
//! their targets' [`outbox`]es and sent, tried again with backoff until sent or given up, and
//! then deleted from the store. Delivery is at least once; every try carries the same id.
//!
//! - [`settings`]: `--notify FILE`: people's addresses, groups, webhooks, mail.
//! - [`delivery`]: a notification's body, its id, the retry schedule.
//! - [`outbox`]: one target's bounded queue.
//! - [`webhook`]: Standard Webhooks signing and sending.
//! - [`email`]: one message per person, with links that answer as that person.
//! - [`push`]: Web Push to the devices people subscribed.
//! - [`slack`]: messages from a Slack app, with buttons that answer, updated when a request
//!   ends.
//! - [`callback`]: an ask's own callback: its outcome POSTed where the ask said.
//! - [`address`]: the addresses the gateway will not call.
//! - [`web_push`]: VAPID signing and Web Push message encryption, no I/O.

pub mod address;
pub mod callback;
pub mod delivery;
pub mod email;
pub mod outbox;
pub mod push;
pub mod settings;
pub mod slack;
pub mod web_push;
pub mod webhook;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use askgate_protocol::{RequestId, SessionId};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use callback::{CALLBACK_SENDERS, CallbackHosts};
pub use delivery::{DEFAULT_RETRY_FOR, RequestFacts, SendError};
pub use settings::{EventKind, NotifySettings};

use crate::clock::now_ms;
use crate::keys::ViewerKeys;
use crate::metrics::history::Tried;
use crate::metrics::{Metrics, count, gauge_add};
use crate::people::Groups;
use crate::store::shared::{ClaimedDelivery, NOTIFY_LEASE, Shared};
use crate::store::{DeliveryTarget, FollowUp, Store, StoreOp, StoredDelivery, StoredResolution};
use outbox::{MAX_QUEUED_PER_TARGET, Pending, Queue};

/// The longest `--notify-retry-for-s`: a week.
pub const MAX_RETRY_FOR_S: u64 = 7 * 86_400;

/// Whether a request is still open, as the hub holds it: a notification other than
/// `request.resolved` about one that has ended is dropped unsent.
pub trait RequestLookup: Send + Sync {
    /// Whether `id` of `session` is open; `None` if the hub does not hold the session.
    fn is_open(&self, session: &SessionId, id: &RequestId) -> Option<bool>;
}

/// How often a node on a shared store claims the notifications that are due.
pub const CLAIM_EVERY: Duration = Duration::from_secs(1);

/// How the notifier is set up (`serve`'s flags).
#[derive(Clone, Debug)]
pub struct NotifyConfig {
    /// What the notify file says.
    pub settings: NotifySettings,
    /// How long a failing notification is tried (`--notify-retry-for-s`).
    pub retry_for: Duration,
    /// Whether targets on private addresses may be called (`--notify-allow-private`).
    pub allow_private: bool,
    /// The VAPID key from `--vapid-key-file`; derived from the viewer-link secret without it.
    pub vapid_key: Option<web_push::VapidKey>,
}

/// Routes changes to the people and webhooks they concern, and sends what is committed.
pub struct Notifier {
    config: NotifyConfig,
    groups: Groups,
    store: Arc<dyn Store>,
    metrics: Arc<Metrics>,
    client: webhook::Client,
    /// The client callbacks are sent with: private addresses allowed when the operator listed
    /// the callback hosts (or allowed them for every target).
    callback_client: webhook::Client,
    /// Each webhook's queue, by name.
    webhooks: BTreeMap<String, Arc<Queue>>,
    /// The mail server's queue and how to reach it, when `[email]` is given.
    mail: Option<(Arc<Queue>, email::Mailer)>,
    /// Slack's queue and its API, when `[slack]` is given.
    slack: Option<(Arc<Queue>, slack::api::Api)>,
    /// On a local store: the Slack messages each request caused.
    posted: slack::PostedMessages,
    /// Every request's callback: one queue, sent by [`CALLBACK_SENDERS`] tasks so that one
    /// slow receiver holds up no other.
    callbacks: Arc<Queue>,
    /// Which callback hosts may be called (`--callback-hosts`).
    callback_hosts: CallbackHosts,
    /// The push queue and how pushes are signed, when `[push]` is given.
    push: Option<(Arc<Queue>, push::Pusher)>,
    /// On a local store: each person's push subscriptions.
    subscriptions: push::Subscriptions,
    /// For the links a mail carries.
    keys: ViewerKeys,
    lookup: OnceLock<Weak<dyn RequestLookup>>,
    /// On a store several nodes share: where due notifications are claimed from.
    shared: Option<Arc<dyn Shared>>,
    /// The ids of the notifications in this node's queues, so that a claim does not queue
    /// one twice.
    held: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("webhooks", &self.webhooks.keys())
            .finish_non_exhaustive()
    }
}

/// Whether a notification to `target` had a place promised in its queue (callbacks are never
/// shed, so never promised one).
fn reserves(target: &DeliveryTarget) -> bool {
    !matches!(target, DeliveryTarget::Callback(_))
}

/// The index of a channel in [`crate::metrics::notify::CHANNELS`].
fn channel_of(target: &DeliveryTarget) -> usize {
    match target {
        DeliveryTarget::Webhook(_) => 0,
        DeliveryTarget::Email(_) => 1,
        DeliveryTarget::SlackPerson(_)
        | DeliveryTarget::SlackChannel(_)
        | DeliveryTarget::SlackUpdate => 2,
        DeliveryTarget::Push(_) => 3,
        DeliveryTarget::Callback(_) => 4,
    }
}

impl Notifier {
    /// A notifier for `config`, committing through `store`. Nothing is sent until
    /// [`Notifier::run`].
    ///
    /// # Errors
    /// The HTTP client cannot be built.
    pub fn new(
        config: NotifyConfig,
        groups: Groups,
        keys: ViewerKeys,
        store: Arc<dyn Store>,
        metrics: Arc<Metrics>,
        callback_hosts: CallbackHosts,
    ) -> Result<Arc<Notifier>, String> {
        let client = webhook::client(config.allow_private)?;
        let callback_client = webhook::client(callback_hosts.allows_private())?;
        let mail = match &config.settings.email {
            Some(settings) => {
                let queue = Arc::new(Queue::new(MAX_QUEUED_PER_TARGET));
                metrics
                    .notify
                    .watch_queue(1, Arc::clone(&queue.earliest_due_ms));
                Some((queue, email::Mailer::new(settings)?))
            }
            None => None,
        };
        let slack = config.settings.slack.as_ref().map(|settings| {
            let queue = Arc::new(Queue::new(MAX_QUEUED_PER_TARGET));
            metrics
                .notify
                .watch_queue(2, Arc::clone(&queue.earliest_due_ms));
            (
                queue,
                slack::api::Api::new(client.clone(), settings.clone()),
            )
        });
        let push = match &config.settings.push {
            Some(settings) => {
                let key = match &config.vapid_key {
                    Some(key) => key.clone(),
                    None => push::derived_key(&keys)?,
                };
                let queue = Arc::new(Queue::new(MAX_QUEUED_PER_TARGET));
                metrics
                    .notify
                    .watch_queue(3, Arc::clone(&queue.earliest_due_ms));
                Some((
                    queue,
                    push::Pusher {
                        key,
                        subject: settings.subject.clone(),
                    },
                ))
            }
            None => None,
        };
        let webhooks = config
            .settings
            .webhooks
            .keys()
            .map(|name| {
                let queue = Arc::new(Queue::new(MAX_QUEUED_PER_TARGET));
                metrics
                    .notify
                    .watch_queue(0, Arc::clone(&queue.earliest_due_ms));
                (name.clone(), queue)
            })
            .collect();
        let callbacks = Arc::new(Queue::new(MAX_QUEUED_PER_TARGET));
        metrics
            .notify
            .watch_queue(4, Arc::clone(&callbacks.earliest_due_ms));
        let shared = store.shared();
        Ok(Arc::new(Notifier {
            callbacks,
            callback_hosts,
            callback_client,
            config,
            groups,
            store,
            metrics,
            client,
            webhooks,
            mail,
            slack,
            posted: slack::PostedMessages::default(),
            push,
            subscriptions: push::Subscriptions::default(),
            keys,
            lookup: OnceLock::new(),
            shared,
            held: Mutex::new(HashSet::new()),
        }))
    }

    /// Queues what the store kept from before a restart, due now. Called before the hub
    /// restores its requests, whose endings at restore make notifications of their own.
    ///
    /// # Errors
    /// The store's notifications could not be read.
    pub async fn restore(&self) -> Result<(), crate::store::StoreError> {
        if self.slack.is_some() || self.push.is_some() {
            let kept = self.store.kept().await?;
            self.posted.restore(&kept);
            self.subscriptions.restore(&kept);
        }
        let kept = self.store.deliveries().await?;
        let now = now_ms();
        let mut restored = 0usize;
        for delivery in kept {
            match self.queue_of(&delivery.target) {
                Some(queue) => {
                    self.enqueue(queue, delivery, now, false, None);
                    restored += 1;
                }
                // Its webhook is no longer in the notify file: nobody to send it to.
                None => {
                    tracing::warn!(notification = %delivery.id, target = ?delivery.target, "a kept notification's target is no longer configured; dropped");
                    self.forget(&delivery).await;
                }
            }
        }
        if restored > 0 {
            tracing::info!(
                notifications = restored,
                "notifications kept from before the restart are queued"
            );
        }
        Ok(())
    }

    /// Starts sending: a task per target (four for callbacks), on `tracker`, until `stop` is
    /// cancelled. `lookup` says which requests are still open. A send cut short by the stop
    /// is made again after a restart (it stays in the store until sent).
    pub fn run(
        self: &Arc<Self>,
        lookup: Weak<dyn RequestLookup>,
        stop: &CancellationToken,
        tracker: &TaskTracker,
    ) {
        let _ = self.lookup.set(lookup);
        let queues = self
            .webhooks
            .values()
            .chain(self.mail.as_ref().map(|(queue, _)| queue))
            .chain(self.slack.as_ref().map(|(queue, _)| queue))
            .chain(self.push.as_ref().map(|(queue, _)| queue))
            .chain(std::iter::repeat_n(&self.callbacks, CALLBACK_SENDERS));
        for queue in queues {
            let notifier = Arc::clone(self);
            let queue = Arc::clone(queue);
            let stop = stop.clone();
            tracker.spawn(async move {
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = notifier.run_queue(&queue) => {}
                }
            });
        }
        if let Some(shared) = &self.shared {
            let notifier = Arc::clone(self);
            let shared = Arc::clone(shared);
            let stop = stop.clone();
            tracker.spawn(async move {
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = notifier.claim_due(&*shared) => {}
                }
            });
        }
    }

    /// On a shared store: claims the notifications that are due, every [`CLAIM_EVERY`], and
    /// queues them here, for as long as the gateway runs.
    async fn claim_due(self: Arc<Self>, shared: &dyn Shared) {
        loop {
            match shared.claim_deliveries().await {
                Ok(claimed) => {
                    let now = now_ms();
                    for ClaimedDelivery {
                        delivery,
                        claimed_until_ms,
                    } in claimed
                    {
                        match self.queue_of(&delivery.target) {
                            Some(queue) => {
                                self.enqueue(queue, delivery, now, false, Some(claimed_until_ms));
                            }
                            None => {
                                self.hand_back_unsendable(shared, &delivery, claimed_until_ms)
                                    .await;
                            }
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "claiming due notifications failed; tried again");
                }
            }
            tokio::time::sleep(CLAIM_EVERY).await;
        }
    }

    /// A claimed notification whose target this node does not have (a webhook of a notify file
    /// another node has, or no notify file here): handed back for a node that has it, unless
    /// it is past `--notify-retry-for-s` (then no node that has it claimed it in time).
    async fn hand_back_unsendable(
        &self,
        shared: &dyn Shared,
        delivery: &StoredDelivery,
        claimed_until_ms: u64,
    ) {
        let now = now_ms();
        if u128::from(now.saturating_sub(delivery.created_ms)) >= self.config.retry_for.as_millis()
        {
            tracing::warn!(notification = %delivery.id, target = ?delivery.target, "a kept notification's target is configured on no node that claimed it in time; given up");
            self.forget(delivery).await;
            return;
        }
        // Due at once: the node that can send it claims it at its next round (this one only
        // holds it for the moment between its claim and this).
        match shared
            .retry_delivery(&delivery.session, &delivery.id, claimed_until_ms, now)
            .await
        {
            Ok(()) => {
                tracing::debug!(notification = %delivery.id, target = ?delivery.target, "a notification this node cannot send is handed back");
            }
            Err(error) => {
                tracing::warn!(notification = %delivery.id, %error, "a notification this node cannot send could not be handed back; claimed again when the claim runs out");
            }
        }
    }

    fn queue_of(&self, target: &DeliveryTarget) -> Option<&Arc<Queue>> {
        match target {
            DeliveryTarget::Webhook(name) => self.webhooks.get(name),
            DeliveryTarget::Email(_) => self.mail.as_ref().map(|(queue, _)| queue),
            DeliveryTarget::SlackPerson(_)
            | DeliveryTarget::SlackChannel(_)
            | DeliveryTarget::SlackUpdate => self.slack.as_ref().map(|(queue, _)| queue),
            DeliveryTarget::Push(_) => self.push.as_ref().map(|(queue, _)| queue),
            DeliveryTarget::Callback(_) => Some(&self.callbacks),
        }
    }

    /// Whether a notify file tells anyone anything (else only asks' callbacks are sent).
    pub fn tells_people(&self) -> bool {
        self.config.settings.sends()
    }

    /// The people the notify file lists as `operators`.
    pub fn operators(&self) -> &[String] {
        &self.config.settings.operators
    }

    /// Where `target` goes, as the operator's history shows an error: a URL's host (never its
    /// path or query, which may hold a token), a mail address, a Slack id, a person.
    fn target_label(&self, target: &DeliveryTarget) -> String {
        let settings = &self.config.settings;
        let host = |url: &str| {
            url::Url::parse(url)
                .ok()
                .and_then(|url| url.host_str().map(str::to_owned))
                .unwrap_or_else(|| "(no host)".to_owned())
        };
        match target {
            DeliveryTarget::Webhook(name) => settings
                .webhooks
                .get(name)
                .map_or_else(|| name.clone(), |hook| host(hook.url.as_str())),
            DeliveryTarget::Email(person) => settings
                .people
                .get(person)
                .and_then(|contact| contact.email.clone())
                .unwrap_or_else(|| person.clone()),
            DeliveryTarget::SlackPerson(person) => settings
                .people
                .get(person)
                .and_then(|contact| contact.slack.clone())
                .unwrap_or_else(|| person.clone()),
            DeliveryTarget::SlackChannel(group) => settings
                .slack_channels
                .get(group)
                .cloned()
                .unwrap_or_else(|| format!("group:{group}")),
            DeliveryTarget::SlackUpdate => "the request's Slack messages".to_owned(),
            DeliveryTarget::Push(person) => person.clone(),
            DeliveryTarget::Callback(callback) => host(&callback.url),
        }
    }

    /// Counts a try on `target`'s channel in this minute of the history.
    fn tried(&self, target: &DeliveryTarget, tried: Tried) {
        self.metrics
            .history
            .notified(now_ms(), channel_of(target), tried);
    }

    /// Which callback URLs an ask may name (`--callback-hosts`, `--notify-allow-private`).
    pub fn callback_hosts(&self) -> &CallbackHosts {
        &self.callback_hosts
    }

    /// Slack's API, when `[slack]` is given.
    pub fn slack_api(&self) -> Option<&slack::api::Api> {
        self.slack.as_ref().map(|(_, api)| api)
    }

    /// The person whose Slack user id is `slack_id`, if the notify file names one.
    pub fn person_of_slack(&self, slack_id: &str) -> Option<&str> {
        self.config
            .settings
            .people
            .iter()
            .find(|(_, contact)| contact.slack.as_deref() == Some(slack_id))
            .map(|(name, _)| name.as_str())
    }

    /// The link for `person` to `session`, good until `expires_ms`.
    pub fn personal_url(&self, session: &SessionId, person: &str, expires_ms: u64) -> String {
        self.keys.personal_url(session, person, expires_ms)
    }

    fn counts(&self, target: &DeliveryTarget) -> &crate::metrics::notify::ChannelCounts {
        &self.metrics.notify.channels[channel_of(target)]
    }

    /// The first policy of the notify file for `session`, if one matches.
    pub fn policy(&self, session: &str) -> Option<&settings::Policy> {
        self.config
            .settings
            .policies
            .iter()
            .find(|policy| session.starts_with(&policy.sessions))
    }

    /// The people `answerers` name, groups expanded, sorted and without repeats.
    fn people_of(&self, answerers: Option<&[String]>) -> BTreeSet<String> {
        let mut people = BTreeSet::new();
        for name in answerers.unwrap_or_default() {
            match name.strip_prefix("group:") {
                Some(group) => people.extend(self.groups.members_of(group)),
                None => {
                    people.insert(name.clone());
                }
            }
        }
        people
    }

    /// The targets of a `kind` event about `facts`' request: every webhook watching its
    /// session, the webhooks of the people it is for, and (but for `request.resolved`) the
    /// mail of those who have an address: one message per person.
    fn targets(&self, facts: &RequestFacts, kind: EventKind) -> BTreeSet<DeliveryTarget> {
        self.targets_for(facts, kind, &Self::names_for(facts))
    }

    /// Whom a request is for: the people and groups its answerers name, or when it names
    /// none, its session's followers.
    fn names_for(facts: &RequestFacts) -> Vec<String> {
        match &facts.answerers {
            Some(answerers) => answerers.clone(),
            None => facts.followers.clone(),
        }
    }

    /// The Slack targets of `names`: a group with a channel is posted to once there, and its
    /// members who are not named otherwise get no message of their own; everyone else with a
    /// Slack id gets a direct message.
    fn slack_targets(&self, names: &[String]) -> BTreeSet<DeliveryTarget> {
        let settings = &self.config.settings;
        let mut targets = BTreeSet::new();
        let mut direct = BTreeSet::new();
        for name in names {
            match name.strip_prefix("group:") {
                Some(group) if settings.slack_channels.contains_key(group) => {
                    targets.insert(DeliveryTarget::SlackChannel(group.to_owned()));
                }
                Some(group) => direct.extend(self.groups.members_of(group)),
                None => {
                    direct.insert(name.clone());
                }
            }
        }
        for person in direct {
            let has_slack = settings
                .people
                .get(&person)
                .is_some_and(|contact| contact.slack.is_some());
            if has_slack {
                targets.insert(DeliveryTarget::SlackPerson(person));
            }
        }
        targets
    }

    /// As [`Notifier::targets`], for `names` (people and groups) rather than the request's
    /// own.
    fn targets_for(
        &self,
        facts: &RequestFacts,
        kind: EventKind,
        names: &[String],
    ) -> BTreeSet<DeliveryTarget> {
        if facts.quiet {
            return BTreeSet::new();
        }
        let people = self.people_of(Some(names));
        let settings = &self.config.settings;
        let mut targets = BTreeSet::new();
        for webhook in settings.webhooks.values() {
            if webhook.watches(facts.session.as_str(), kind) {
                targets.insert(DeliveryTarget::Webhook(webhook.name.clone()));
            }
        }
        for person in people {
            if let Some(contact) = settings.people.get(&person) {
                for name in &contact.webhooks {
                    if settings.webhooks[name].events.has(kind) {
                        targets.insert(DeliveryTarget::Webhook(name.clone()));
                    }
                }
                if contact.email.is_some() && self.mail.is_some() && kind != EventKind::Resolved {
                    targets.insert(DeliveryTarget::Email(person.clone()));
                }
            }
            if kind != EventKind::Resolved && self.may_push_to(&person) {
                targets.insert(DeliveryTarget::Push(person.clone()));
            }
        }
        if self.slack.is_some() {
            // Whoever was posted to (escalations included), the ending updates what was.
            if kind == EventKind::Resolved {
                targets.insert(DeliveryTarget::SlackUpdate);
            } else {
                targets.extend(self.slack_targets(names));
            }
        }
        targets
    }

    /// The notifications of a new request, as an op for the commit that stores it (`None`
    /// if nobody is to be told). Each has a place promised in its queue: give the op to
    /// [`Notifier::committed`] or [`Notifier::not_committed`] when the commit ends.
    pub fn opened(&self, facts: &RequestFacts) -> Option<StoreOp> {
        let at_ms = now_ms();
        let body = facts.body(EventKind::Opened, at_ms, serde_json::Map::new());
        self.notifications(facts, EventKind::Opened, &body, at_ms)
    }

    /// The notifications of a request's ending, as [`Notifier::opened`]'s; with `late`, the
    /// ending a shared store records instead should it find this one late, and its own
    /// notifications (kept by the store then, and claimed from it: no place is promised).
    pub fn resolved(
        &self,
        facts: &RequestFacts,
        resolution: &StoredResolution,
        late: Option<&StoredResolution>,
    ) -> Option<StoreOp> {
        let body = |resolution: &StoredResolution| {
            let extra = delivery::resolved_members(resolution);
            facts.body(EventKind::Resolved, resolution.at_ms, extra)
        };
        let op = self.notifications(
            facts,
            EventKind::Resolved,
            &body(resolution),
            resolution.at_ms,
        );
        let if_late: Vec<StoredDelivery> = late
            .map(|late| {
                let body = body(late);
                self.targets(facts, EventKind::Resolved)
                    .into_iter()
                    .map(|target| {
                        delivery::delivery(facts, EventKind::Resolved, target, &body, late.at_ms)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut if_late = if_late;
        let mut deliveries = match op {
            Some(StoreOp::Notify { deliveries, .. }) => deliveries,
            _ => Vec::new(),
        };
        if let Some(callback) = &facts.callback {
            let target = DeliveryTarget::Callback(Box::new(callback.clone()));
            // Never shed: a request has one, so the open requests bound them (and an agent
            // with nothing else waiting would never hear its outcome).
            if let Some(body) = callback::body(callback, &body(resolution), resolution) {
                deliveries.push(delivery::delivery(
                    facts,
                    EventKind::Resolved,
                    target.clone(),
                    &body,
                    resolution.at_ms,
                ));
            }
            if let Some(late) = late
                && let Some(body) = callback::body(callback, &body(late), late)
            {
                if_late.push(delivery::delivery(
                    facts,
                    EventKind::Resolved,
                    target,
                    &body,
                    late.at_ms,
                ));
            }
        }
        (!deliveries.is_empty() || !if_late.is_empty()).then_some(StoreOp::Notify {
            deliveries,
            if_late,
        })
    }

    /// The notifications of a follow-up made at `at_ms`, as [`Notifier::opened`]'s: a
    /// reminder to the request's people, an escalation to those it adds (`to`).
    pub fn followed_up(
        &self,
        facts: &RequestFacts,
        follow_up: FollowUp,
        to: &[String],
        at_ms: u64,
    ) -> Option<StoreOp> {
        let (kind, names, extra) = match follow_up {
            FollowUp::Remind => (
                EventKind::Reminded,
                Self::names_for(facts),
                serde_json::Map::new(),
            ),
            FollowUp::Escalate => {
                let mut extra = serde_json::Map::new();
                extra.insert("to".into(), serde_json::json!(to));
                (EventKind::Escalated, to.to_vec(), extra)
            }
        };
        let body = facts.body(kind, at_ms, extra);
        let mut targets = self.targets_for(facts, kind, &names);
        if kind == EventKind::Escalated && self.slack.is_some() {
            // Those already posted to hear of it in their message's thread.
            targets.extend(self.slack_targets(&Self::names_for(facts)));
        }
        self.notifications_to(facts, kind, targets, &body, at_ms)
    }

    fn notifications(
        &self,
        facts: &RequestFacts,
        kind: EventKind,
        body: &str,
        at_ms: u64,
    ) -> Option<StoreOp> {
        self.notifications_to(facts, kind, self.targets(facts, kind), body, at_ms)
    }

    fn notifications_to(
        &self,
        facts: &RequestFacts,
        kind: EventKind,
        targets: BTreeSet<DeliveryTarget>,
        body: &str,
        at_ms: u64,
    ) -> Option<StoreOp> {
        let mut deliveries = Vec::new();
        for target in targets {
            let Some(queue) = self.queue_of(&target) else {
                continue;
            };
            if !queue.reserve() {
                count(&self.counts(&target).shed);
                tracing::warn!(session = %facts.session, request = %facts.id, ?target, "a notification was shed: its target's queue is full");
                continue;
            }
            deliveries.push(delivery::delivery(facts, kind, target, body, at_ms));
        }
        (!deliveries.is_empty()).then_some(StoreOp::Notify {
            deliveries,
            if_late: Vec::new(),
        })
    }

    /// The commit holding `op` (from [`Notifier::opened`] or [`Notifier::resolved`]) is
    /// durable: its notifications are queued, due now.
    pub fn committed(&self, op: StoreOp) {
        let StoreOp::Notify { deliveries, .. } = op else {
            return;
        };
        let now = now_ms();
        for delivery in deliveries {
            // On a shared store, the index entry the store wrote holds it for this node
            // until its lease runs out.
            let claim = self.shared.as_ref().map(|_| {
                delivery
                    .created_ms
                    .saturating_add(NOTIFY_LEASE.as_millis() as u64)
            });
            if let Some(queue) = self.queue_of(&delivery.target) {
                let reserved = reserves(&delivery.target);
                self.enqueue(queue, delivery, now, reserved, claim);
            }
        }
    }

    /// Queues `delivery` to `queue`, due at `due_ms`, counted (`reserved`: see
    /// [`Queue::push`]); held by this node's claim until `claim`, on a shared store. One this
    /// node holds already is not queued again.
    fn enqueue(
        &self,
        queue: &Queue,
        delivery: StoredDelivery,
        due_ms: u64,
        reserved: bool,
        claim: Option<u64>,
    ) {
        if !self.held().insert(delivery.id.clone()) {
            if reserved {
                queue.release();
            }
            return;
        }
        gauge_add(&self.counts(&delivery.target).queued, 1);
        let pending = Pending {
            delivery,
            failures: 0,
            claim,
        };
        queue.push(pending, due_ms, reserved);
    }

    fn held(&self) -> MutexGuard<'_, HashSet<String>> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `pending` leaves this node's queue (sent, given up, dropped, or handed back to the
    /// shared store).
    fn let_go(&self, queue: &Queue, pending: &Pending) {
        gauge_add(&self.counts(&pending.delivery.target).queued, -1);
        self.held().remove(&pending.delivery.id);
        queue.done();
    }

    /// The commit holding `op` failed, or its change was not made: the places promised to
    /// its notifications are given back.
    pub fn not_committed(&self, op: StoreOp) {
        let StoreOp::Notify { deliveries, .. } = op else {
            return;
        };
        for delivery in deliveries {
            if let Some(queue) = self.queue_of(&delivery.target)
                && reserves(&delivery.target)
            {
                queue.release();
            }
        }
    }

    /// Sends one queue's notifications, one at a time, for as long as the gateway runs.
    async fn run_queue(self: Arc<Self>, queue: &Queue) {
        loop {
            let mut pending = queue.next_due().await;
            let delivery = &pending.delivery;
            let counts = self.counts(&delivery.target);
            if delivery.event != EventKind::Resolved.as_str() && !self.still_open(delivery).await {
                self.forget(delivery).await;
                count(&counts.dropped);
                self.let_go(queue, &pending);
                continue;
            }
            let error = match self.send(delivery).await {
                Ok(()) => {
                    self.forget(delivery).await;
                    count(&counts.sent);
                    self.tried(&delivery.target, Tried::Sent);
                    tracing::debug!(notification = %delivery.id, target = ?delivery.target, event = %delivery.event, "a notification was sent");
                    self.let_go(queue, &pending);
                    continue;
                }
                Err(error) => error,
            };
            self.metrics.history.failed(
                now_ms(),
                crate::metrics::notify::CHANNELS[channel_of(&delivery.target)],
                &self.target_label(&delivery.target),
                &error.to_string(),
            );
            if let SendError::Rejected(why) = &error {
                tracing::warn!(notification = %delivery.id, session = %delivery.session, request = %delivery.request, target = ?delivery.target, %why, "a notification was refused by its target for good; it is not tried again");
                self.forget_posted(delivery).await;
                self.forget(delivery).await;
                count(&counts.rejected);
                self.let_go(queue, &pending);
                continue;
            }
            if matches!(error, SendError::Refused(_)) {
                count(&counts.refused);
            }
            pending.failures += 1;
            let now = now_ms();
            let tried_for = now.saturating_sub(delivery.created_ms);
            if u128::from(tried_for) >= self.config.retry_for.as_millis() {
                tracing::warn!(notification = %delivery.id, session = %delivery.session, request = %delivery.request, failures = pending.failures, %error, "a notification is given up");
                self.forget_posted(delivery).await;
                self.forget(delivery).await;
                count(&counts.given_up);
                self.tried(&delivery.target, Tried::GivenUp);
                self.let_go(queue, &pending);
                continue;
            }
            let throttled = matches!(error, SendError::Throttled { .. });
            let wait = match &error {
                SendError::Throttled { wait, .. } => *wait,
                _ => delivery::retry_after(Duration::from_millis(tried_for)),
            };
            let due = now.saturating_add(wait.as_millis() as u64);
            let retry_in_ms = wait.as_millis() as u64;
            count(&counts.retried);
            self.tried(&delivery.target, Tried::Retried);
            match (&self.shared, pending.claim) {
                // Handed back: whichever node claims it when it is due tries it again.
                (Some(shared), Some(claimed_until_ms)) => {
                    match shared
                        .retry_delivery(&delivery.session, &delivery.id, claimed_until_ms, due)
                        .await
                    {
                        Ok(()) => {
                            tracing::info!(notification = %delivery.id, retry_in_ms, %error, "a notification failed; it is handed back to be tried again");
                        }
                        Err(store_error) => {
                            tracing::warn!(notification = %delivery.id, %error, %store_error, "a notification failed and could not be handed back; it is claimed again when this node's claim runs out");
                        }
                    }
                    self.let_go(queue, &pending);
                }
                _ => {
                    tracing::info!(notification = %delivery.id, failures = pending.failures, retry_in_ms, %error, "a notification failed; it is tried again");
                    queue.retry(pending, due);
                }
            }
            // A target that asked to be left alone is left alone: the rest of its queue waits
            // too (a Slack workspace's rate limit covers every message to it).
            if throttled {
                tokio::time::sleep(wait).await;
            }
        }
    }

    /// One try of `delivery`, on its channel.
    async fn send(&self, delivery: &StoredDelivery) -> Result<(), SendError> {
        let settings = &self.config.settings;
        match &delivery.target {
            DeliveryTarget::Webhook(name) => {
                let Some(webhook) = settings.webhooks.get(name) else {
                    return Err(SendError::Failed(format!(
                        "no webhook {name:?} is configured"
                    )));
                };
                let now_s = now_ms() / 1000;
                webhook::send(
                    &self.client,
                    webhook,
                    delivery,
                    now_s,
                    self.config.allow_private,
                )
                .await
            }
            DeliveryTarget::Email(person) => {
                let address = settings.people.get(person).and_then(|c| c.email.as_deref());
                let (Some((_, mailer)), Some(address)) = (&self.mail, address) else {
                    return Err(SendError::Failed(format!(
                        "no mail address is configured for {person:?}"
                    )));
                };
                email::send(mailer, &self.keys, delivery, person, address).await
            }
            DeliveryTarget::SlackPerson(_)
            | DeliveryTarget::SlackChannel(_)
            | DeliveryTarget::SlackUpdate => {
                let Some((_, api)) = &self.slack else {
                    return Err(SendError::Failed("no [slack] is configured".to_owned()));
                };
                self.send_slack(api, delivery).await
            }
            DeliveryTarget::Push(_) => {
                let Some((_, pusher)) = &self.push else {
                    return Err(SendError::Failed("no [push] is configured".to_owned()));
                };
                self.send_push(pusher, delivery).await
            }
            DeliveryTarget::Callback(callback) => {
                callback::send(
                    &self.callback_client,
                    callback,
                    delivery,
                    now_ms() / 1000,
                    &self.callback_hosts,
                )
                .await
            }
        }
    }

    /// Whether `delivery`'s request is still open: on a shared store, as the store holds it
    /// (this node's copy of a session may lag behind another node's change; should the store
    /// not answer, it is taken as open: a notification too many rather than one lost);
    /// otherwise as the hub does.
    async fn still_open(&self, delivery: &StoredDelivery) -> bool {
        if let Some(shared) = &self.shared {
            return shared
                .is_open(&delivery.session, &delivery.request)
                .await
                .unwrap_or(true);
        }
        self.lookup
            .get()
            .and_then(Weak::upgrade)
            .and_then(|hub| hub.is_open(&delivery.session, &delivery.request))
            .unwrap_or(false)
    }

    /// Deletes a notification that is done with from the store. Should that fail, it stays
    /// there and is sent again after a restart: at least once, never lost.
    async fn forget(&self, delivery: &StoredDelivery) {
        let op = StoreOp::Delivered {
            session: delivery.session.clone(),
            id: delivery.id.clone(),
        };
        if let Err(error) = self.store.commit(vec![op]).await {
            tracing::warn!(notification = %delivery.id, %error, "a sent notification could not be deleted from the store; it may be sent again after a restart");
        }
    }
}
