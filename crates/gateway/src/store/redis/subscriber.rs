//! The node's one pub/sub connection: which session channels it listens to, the notices it
//! hands the hub, and the probe that restarts it when it stops hearing anything.
//!
//! Pub/sub is at most once, so nothing here is trusted to be complete: after every
//! (re)subscription the hub is told [`Notice::Resubscribed`] and loads every session it holds
//! again. The probe publishes on the node's own channel every third of the probe silence
//! (`--probe-silence-s`, [`DEFAULT_PROBE_SILENCE`](super::DEFAULT_PROBE_SILENCE)); a
//! connection that has not heard its own probe for that long is dropped and made again (one
//! still open to a server that no longer forwards anything is otherwise silent for good).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt as _;
use redis::cluster_async::ClusterConnection;
use redis::{Client, Msg, PushInfo, PushKind};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::conn::{Conn, Subscribing};
use super::keys::Keys;
use super::records;
use super::seals::Seals;
use crate::metrics::Metrics;
use crate::store::StoreError;
use crate::store::shared::Notice;

/// How often the probe goes out for a probe silence of `silence`: three chances to be heard.
fn probe_every(silence: Duration) -> Duration {
    silence / 3
}

/// How long a subscription may take to be confirmed.
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Notices waiting for the hub. Past this the subscriber waits, Redis buffers, and a
/// subscriber far behind is disconnected by Redis and resubscribes: memory stays bounded.
const NOTICE_QUEUE: usize = 4096;

enum Command {
    Watch(String, oneshot::Sender<Result<(), StoreError>>),
    Unwatch(String),
}

/// A handle on the subscription task.
#[derive(Clone)]
pub(super) struct Subscriber {
    commands: mpsc::UnboundedSender<Command>,
    notices: Arc<Mutex<Option<mpsc::Receiver<Notice>>>>,
    status: Arc<Mutex<Result<(), String>>>,
}

impl Subscriber {
    /// Starts the subscription task; probes are published through `conn`.
    pub(super) fn start(
        subscribing: Subscribing,
        conn: Conn,
        keys: Keys,
        node: &str,
        metrics: Arc<Metrics>,
        probe_silence: Duration,
        seals: Arc<Seals>,
    ) -> Subscriber {
        let (commands, received) = mpsc::unbounded_channel();
        let (notify, notices) = mpsc::channel(NOTICE_QUEUE);
        let status = Arc::new(Mutex::new(Err("not subscribed yet".to_owned())));
        let task = Task {
            conn,
            probe: keys.probe(node),
            inbox: keys.inbox_channel(),
            // Heard by every node from the start, whatever sessions it holds.
            watched: HashSet::from([keys.inbox_channel()]),
            keys,
            metrics,
            probe_silence,
            notify,
            status: Arc::clone(&status),
            seals,
        };
        match subscribing {
            Subscribing::Single(client) => tokio::spawn(task.run(*client, received)),
            Subscribing::Cluster(cluster, pushes) => {
                tokio::spawn(task.run_sharded(cluster, pushes, received))
            }
        };
        Subscriber {
            commands,
            notices: Arc::new(Mutex::new(Some(notices))),
            status,
        }
    }

    /// Subscribes to `channel`; resolves once Redis confirmed it.
    pub(super) fn watch(
        &self,
        channel: String,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'static {
        let (done, confirmed) = oneshot::channel();
        let sent = self.commands.send(Command::Watch(channel, done)).is_ok();
        async move {
            if !sent {
                return Err(StoreError::unavailable("the subscription task has stopped"));
            }
            match tokio::time::timeout(SUBSCRIBE_TIMEOUT, confirmed).await {
                Ok(Ok(result)) => result,
                Ok(Err(_)) => Err(StoreError::unavailable(
                    "the subscription was dropped; retrying",
                )),
                Err(_) => Err(StoreError::unavailable(
                    "redis did not confirm a subscription in time",
                )),
            }
        }
    }

    /// Unsubscribes from `channel`.
    pub(super) fn unwatch(&self, channel: String) {
        let _ = self.commands.send(Command::Unwatch(channel));
    }

    /// The notices, for their one receiver.
    pub(super) fn take_notices(&self) -> Option<mpsc::Receiver<Notice>> {
        self.notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Whether the subscription is live and Redis answers.
    pub(super) fn ready(&self) -> Result<(), String> {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

struct Task {
    conn: Conn,
    keys: Keys,
    probe: String,
    /// The channel requests for people are announced on (`Notice::Addressed`).
    inbox: String,
    metrics: Arc<Metrics>,
    /// How long the probe may go unheard before the connection is made again.
    probe_silence: Duration,
    /// Every channel asked for, subscribed again after each reconnect.
    watched: HashSet<String>,
    notify: mpsc::Sender<Notice>,
    status: Arc<Mutex<Result<(), String>>>,
    /// Told the trail heads notices carry.
    seals: Arc<Seals>,
}

impl Task {
    fn set_status(&self, status: Result<(), String>) {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner) = status;
    }

    async fn run(mut self, client: Client, mut commands: mpsc::UnboundedReceiver<Command>) {
        let mut pause = Duration::from_millis(100);
        let mut first = true;
        loop {
            match self.connected(&client, &mut commands, &mut first).await {
                Ended::HubGone => return,
                // The store is being dropped (a one-shot command like `askgate audit export`
                // finishing): its connections close under the task, which is no news.
                Ended::Lost(_) if commands.is_closed() => return,
                Ended::Lost(why) => {
                    tracing::warn!(%why, "the redis subscription was lost; subscribing again");
                    self.set_status(Err(format!("redis subscription lost: {why}")));
                }
            }
            // While disconnected, watch requests are answered with an error (the hub retries),
            // unwatches are applied to the set.
            let resume = Instant::now() + pause;
            while let Ok(Some(command)) = tokio::time::timeout_at(resume, commands.recv()).await {
                match command {
                    Command::Watch(channel, done) => {
                        self.watched.insert(channel);
                        let _ =
                            done.send(Err(StoreError::unavailable("redis subscription is down")));
                    }
                    Command::Unwatch(channel) => {
                        self.watched.remove(&channel);
                    }
                }
            }
            pause = (pause * 2).min(Duration::from_secs(2));
            if !first {
                self.metrics
                    .shared
                    .count(&self.metrics.shared.subscription_reconnects);
            }
        }
    }

    /// One subscription connection's life.
    async fn connected(
        &mut self,
        client: &Client,
        commands: &mut mpsc::UnboundedReceiver<Command>,
        first: &mut bool,
    ) -> Ended {
        let pubsub = match tokio::time::timeout(SUBSCRIBE_TIMEOUT, client.get_async_pubsub()).await
        {
            Ok(Ok(pubsub)) => pubsub,
            Ok(Err(error)) => return Ended::Lost(error.to_string()),
            Err(_) => return Ended::Lost("connecting timed out".into()),
        };
        let (mut sink, mut stream) = pubsub.split();
        let mut channels: Vec<String> = self.watched.iter().cloned().collect();
        channels.push(self.probe.clone());
        for chunk in channels.chunks(512) {
            match tokio::time::timeout(SUBSCRIBE_TIMEOUT, sink.subscribe(chunk)).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => return Ended::Lost(error.to_string()),
                Err(_) => return Ended::Lost("subscribing timed out".into()),
            }
        }
        *first = false;
        // Everything the hub holds may have changed unheard while no subscription was live.
        if self.notify.send(Notice::Resubscribed).await.is_err() {
            return Ended::HubGone;
        }
        let mut heard = Instant::now();
        let mut probes = tokio::time::interval(probe_every(self.probe_silence));
        loop {
            tokio::select! {
                message = stream.next() => {
                    let Some(message) = message else {
                        return Ended::Lost("the connection closed".into());
                    };
                    if !self.hand_over(&message, &mut heard).await {
                        return Ended::HubGone;
                    }
                }
                command = commands.recv() => {
                    let Some(command) = command else { return Ended::HubGone };
                    match command {
                        Command::Watch(channel, done) => {
                            let subscribed = tokio::time::timeout(SUBSCRIBE_TIMEOUT, sink.subscribe(&channel)).await;
                            let result = match subscribed {
                                Ok(Ok(())) => Ok(()),
                                Ok(Err(error)) => Err(error.to_string()),
                                Err(_) => Err("subscribing timed out".to_owned()),
                            };
                            self.watched.insert(channel);
                            match result {
                                Ok(()) => { let _ = done.send(Ok(())); }
                                Err(why) => {
                                    let _ = done.send(Err(StoreError::unavailable(format!("redis subscription: {why}"))));
                                    return Ended::Lost(why);
                                }
                            }
                        }
                        Command::Unwatch(channel) => {
                            self.watched.remove(&channel);
                            if let Err(error) = sink.unsubscribe(&channel).await {
                                return Ended::Lost(error.to_string());
                            }
                        }
                    }
                }
                _ = probes.tick() => {
                    if let Err(why) = self.probe(heard).await {
                        return Ended::Lost(why);
                    }
                }
            }
        }
    }

    /// Passes a message on to the hub (or notes the probe came back); `false` if the hub is
    /// gone.
    async fn hand_over(&self, message: &Msg, heard: &mut Instant) -> bool {
        let channel = message.get_channel_name();
        if channel == self.probe {
            *heard = Instant::now();
            return true;
        }
        if channel == self.inbox {
            let payload: String = message.get_payload().unwrap_or_default();
            let Some(notice) = records::addressed(&payload) else {
                tracing::warn!(%payload, "an inbox notice could not be read; dropped");
                return true;
            };
            return self.notify.send(notice).await.is_ok();
        }
        let Some(session) = self.keys.session_of_channel(channel) else {
            return true;
        };
        let payload: String = message.get_payload().unwrap_or_default();
        match records::notice(&session, &payload) {
            Ok((seq, trail_head, change)) => {
                if let Some(head) = trail_head {
                    self.seals.heard(&session, head);
                }
                let notice = Notice::Change {
                    session,
                    seq,
                    change,
                };
                self.notify.send(notice).await.is_ok()
            }
            Err(error) => {
                tracing::warn!(%session, %error, "a notice could not be read; the session is checked by its sequence number");
                true
            }
        }
    }

    /// Publishes the probe and says whether the subscription is alive; `Err` when it has not
    /// heard its own probe for too long.
    async fn probe(&self, heard: Instant) -> Result<(), String> {
        let silence = self.probe_silence;
        if heard.elapsed() > silence {
            self.metrics
                .shared
                .count(&self.metrics.shared.probe_restarts);
            return Err(format!("its own probe went unheard for {silence:?}"));
        }
        let started = std::time::Instant::now();
        let mut conn = self.conn.clone();
        let published: Result<i64, _> = tokio::time::timeout(
            silence,
            redis::cmd(self.conn.publish_command())
                .arg(&self.probe)
                .arg("probe")
                .query_async(&mut conn),
        )
        .await
        .unwrap_or_else(|_| Err(redis::RedisError::from((redis::ErrorKind::Io, "timed out"))));
        self.metrics.shared.round_trip(started.elapsed());
        self.set_status(match published {
            Ok(_) if heard.elapsed() <= silence => Ok(()),
            Ok(_) => Err("redis subscription silent".to_owned()),
            Err(error) => Err(format!("redis unreachable: {error}")),
        });
        Ok(())
    }

    /// The subscription on a Cluster: sharded channels on one Cluster connection, which
    /// subscribes again by itself after a reconnect or a slot move. Each such resubscription
    /// (a confirmation for a channel already confirmed) tells the hub notices may have been
    /// missed; a probe that goes unheard subscribes everything again.
    async fn run_sharded(
        mut self,
        mut cluster: ClusterConnection,
        mut pushes: mpsc::UnboundedReceiver<PushInfo>,
        mut commands: mpsc::UnboundedReceiver<Command>,
    ) {
        let mut confirmed: HashSet<String> = HashSet::new();
        let mut heard = Instant::now();
        let mut probes = tokio::time::interval(probe_every(self.probe_silence));
        let mut resubscribe = true;
        loop {
            if std::mem::take(&mut resubscribe) {
                let mut channels: Vec<String> = self.watched.iter().cloned().collect();
                channels.push(self.probe.clone());
                for channel in &channels {
                    if let Err(error) = cluster.ssubscribe(channel).await {
                        tracing::warn!(%error, "subscribing to a sharded channel failed; retrying");
                        self.set_status(Err(format!("redis subscription: {error}")));
                        resubscribe = true;
                    }
                }
                if self.notify.send(Notice::Resubscribed).await.is_err() {
                    return;
                }
                heard = Instant::now();
            }
            tokio::select! {
                push = pushes.recv() => {
                    let Some(push) = push else { return };
                    match push.kind {
                        PushKind::SSubscribe => {
                            let channel = push.data.first().and_then(|v| redis::from_redis_value_ref::<String>(v).ok());
                            if let Some(channel) = channel {
                                // A second confirmation: the connection came back and
                                // subscribed again; what was published meanwhile is lost.
                                if !confirmed.insert(channel) {
                                    self.metrics.shared.count(&self.metrics.shared.subscription_reconnects);
                                    if self.notify.send(Notice::Resubscribed).await.is_err() {
                                        return;
                                    }
                                }
                            }
                        }
                        PushKind::SUnsubscribe => {
                            if let Some(channel) = push.data.first().and_then(|v| redis::from_redis_value_ref::<String>(v).ok()) {
                                confirmed.remove(&channel);
                            }
                        }
                        _ => {
                            if let Some(message) = Msg::from_push_info(push)
                                && !self.hand_over(&message, &mut heard).await {
                                    return;
                                }
                        }
                    }
                }
                command = commands.recv() => {
                    let Some(command) = command else { return };
                    match command {
                        Command::Watch(channel, done) => {
                            let subscribed = tokio::time::timeout(SUBSCRIBE_TIMEOUT, cluster.ssubscribe(&channel)).await;
                            self.watched.insert(channel);
                            let _ = done.send(match subscribed {
                                Ok(Ok(())) => Ok(()),
                                Ok(Err(error)) => Err(StoreError::unavailable(format!("redis subscription: {error}"))),
                                Err(_) => Err(StoreError::unavailable("redis did not confirm a subscription in time")),
                            });
                        }
                        Command::Unwatch(channel) => {
                            self.watched.remove(&channel);
                            let _ = cluster.sunsubscribe(&channel).await;
                        }
                    }
                }
                _ = probes.tick() => {
                    if let Err(why) = self.probe(heard).await {
                        if commands.is_closed() {
                            return;
                        }
                        tracing::warn!(%why, "the sharded subscription went silent; subscribing again");
                        self.metrics.shared.count(&self.metrics.shared.subscription_reconnects);
                        resubscribe = true;
                    }
                }
            }
        }
    }
}

enum Ended {
    /// The hub dropped its side: nothing to do any more.
    HubGone,
    /// The connection failed; make it again.
    Lost(String),
}
