//! What every socket connection shares: limits on the upgrade, the event loop's next event,
//! writing queued frames in batches, keepalive, rate limiting, and closing with a code.

use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use askgate_protocol::close;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use futures_util::SinkExt as _;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use crate::config::Limits;
use crate::hub::{Frame, Kick};
use crate::metrics::{Metrics, count};

/// Frames written per flush when a queue has several waiting.
const BATCH_FRAMES: usize = 32;
/// How long a close frame may take to go out before the socket is dropped anyway.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// Applies the buffer and size limits to an upgrade.
///
/// The frame limit is on what peers send. What the gateway sends is not capped by it: a
/// snapshot carries every open request, and an outcome carries a custom answer three times
/// over, so either can be many times larger, and a cap on the write buffer would drop the
/// socket mid-write, again on every reconnect. The write buffer still stays bounded: a frame
/// is only queued once the buffer has been written out below `write_buffer_bytes`, so it holds
/// at most that plus one frame, and a frame's size follows from the hub's limits.
pub(super) fn limited(
    upgrade: WebSocketUpgrade,
    limits: &Limits,
    max_message_bytes: usize,
) -> WebSocketUpgrade {
    upgrade
        .read_buffer_size(limits.read_buffer_bytes)
        .write_buffer_size(limits.write_buffer_bytes)
        .max_write_buffer_size(usize::MAX)
        .max_message_size(max_message_bytes)
        .max_frame_size(max_message_bytes)
}

/// What happened next on a connection.
pub(super) enum Event {
    /// A message from the peer (`None`: the stream ended).
    Incoming(Option<Result<Message, axum::Error>>),
    /// A frame the hub queued (`None`: the hub let go of the connection).
    Outgoing(Option<Frame>),
    /// Time to ping.
    Tick,
    /// Close with this code (kicked by the hub, or shutdown).
    Close(u16),
}

/// The parts of a connection the event loop watches besides the socket.
pub(super) struct Watch<'a> {
    pub(super) queue: &'a mut mpsc::Receiver<Frame>,
    /// A tab's latest `presence` (agents: none).
    pub(super) presence: Option<&'a mut watch::Receiver<Option<Frame>>>,
    pub(super) kick: &'a Kick,
    pub(super) shutdown: &'a CancellationToken,
    pub(super) keepalive: &'a mut Keepalive,
    pub(super) metrics: &'a Metrics,
}

impl Watch<'_> {
    /// Races `write` (one frame, a flush or a ping) against a kick, shutdown, and a peer that
    /// does not take it within a ping interval (its buffers are full: it has stopped
    /// reading), which is closed as too slow (4408) rather than left holding the connection.
    async fn guard(
        &self,
        write: impl Future<Output = Result<(), axum::Error>>,
    ) -> Result<(), Option<u16>> {
        // Nearly every write goes through at once: then no timer is set up at all.
        let mut write = std::pin::pin!(write);
        if let Poll::Ready(written) = poll_once(write.as_mut()).await {
            return written.map_err(|_| None);
        }
        // Boxed, like a tab's frame handling: every connection's task would otherwise carry
        // room for this rare wait (a timer and two watches) while it sits idle.
        Box::pin(self.wait_for(write)).await
    }

    /// The rest of [`Watch::guard`], for a write that did not go through at once.
    async fn wait_for(
        &self,
        write: Pin<&mut impl Future<Output = Result<(), axum::Error>>>,
    ) -> Result<(), Option<u16>> {
        tokio::select! {
            biased;
            written = write => written.map_err(|_| None),
            code = self.kick.kicked() => Err(Some(code)),
            () = self.shutdown.cancelled() => Err(Some(close::GOING_AWAY)),
            () = tokio::time::sleep(self.keepalive.period) => {
                count(&self.metrics.closed_too_slow);
                Err(Some(close::TOO_SLOW))
            }
        }
    }
}

/// Polls `future` once, in the calling task: what it does up to its first wait happens now.
pub(super) async fn poll_once<F: Future>(mut future: Pin<&mut F>) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await
}

/// Waits for the next event.
pub(super) async fn next_event(socket: &mut WebSocket, watch: &mut Watch<'_>) -> Event {
    tokio::select! {
        biased;
        code = watch.kick.kicked() => Event::Close(code),
        () = watch.shutdown.cancelled() => Event::Close(close::GOING_AWAY),
        frame = watch.queue.recv() => Event::Outgoing(frame),
        // Queued frames first (a tab's snapshot precedes any presence), then presence.
        Some(frame) = latest_presence(watch.presence.as_deref_mut()) => Event::Outgoing(Some(frame)),
        message = socket.recv() => Event::Incoming(message),
        _ = watch.keepalive.interval.tick() => Event::Tick,
    }
}

/// The next presence change, or never (no slot, or its sender is gone).
async fn latest_presence(slot: Option<&mut watch::Receiver<Option<Frame>>>) -> Option<Frame> {
    let Some(slot) = slot else {
        return std::future::pending().await;
    };
    if slot.changed().await.is_err() {
        return std::future::pending().await;
    }
    slot.borrow_and_update().clone()
}

/// Writes `first` and whatever else is queued (up to a batch), then flushes, each step
/// guarded by [`Watch::guard`].
pub(super) async fn write_frames(
    socket: &mut WebSocket,
    first: Frame,
    watch: &mut Watch<'_>,
) -> Result<(), Option<u16>> {
    let mut batch = Vec::with_capacity(BATCH_FRAMES);
    batch.push(first);
    while batch.len() < BATCH_FRAMES {
        match watch.queue.try_recv() {
            Ok(frame) => batch.push(frame),
            Err(_) => break,
        }
    }
    // Guarded frame by frame: a peer that reads slowly but steadily gets a whole batch
    // however long it takes; one that takes nothing for a ping interval is closed.
    for frame in batch {
        watch.guard(socket.feed(text(frame))).await?;
    }
    watch.guard(socket.flush()).await
}

fn text(frame: Frame) -> Message {
    // Frames are encoded from serde_json, always valid UTF-8.
    Message::Text(Utf8Bytes::try_from(frame.into_bytes()).unwrap_or_default())
}

/// Sends a keepalive ping, guarded by [`Watch::guard`].
pub(super) async fn send_ping(
    socket: &mut WebSocket,
    ping: Message,
    watch: &Watch<'_>,
) -> Result<(), Option<u16>> {
    watch.guard(socket.send(ping)).await
}

/// Sends a close frame with `code`, waiting at most a second.
pub(super) async fn close_with(socket: &mut WebSocket, code: u16, reason: &str) {
    let frame = CloseFrame {
        code,
        reason: Utf8Bytes::from(reason),
    };
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, socket.send(Message::Close(Some(frame)))).await;
}

/// The close code for a failed read: 4413 for a message over the size limit.
pub(super) fn code_for_read_error(error: axum::Error) -> Option<u16> {
    let inner = error.into_inner();
    match inner.downcast_ref::<tokio_tungstenite::tungstenite::Error>() {
        Some(tokio_tungstenite::tungstenite::Error::Capacity(_)) => Some(close::TOO_LARGE),
        _ => None,
    }
}

/// Pings on an interval; two pings without any sign of life end the connection.
pub(super) struct Keepalive {
    interval: Interval,
    period: Duration,
    unanswered: u8,
}

impl Keepalive {
    pub(super) fn new(period: Duration) -> Self {
        let mut interval = tokio::time::interval_at(Instant::now() + period, period);
        interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Keepalive {
            interval,
            period,
            unanswered: 0,
        }
    }

    /// The peer sent something: it is alive.
    pub(super) fn alive(&mut self) {
        self.unanswered = 0;
    }

    /// On a tick: `Some(ping)` to send, or `None` when two pings went unanswered.
    pub(super) fn tick(&mut self) -> Option<Message> {
        if self.unanswered >= 2 {
            return None;
        }
        self.unanswered += 1;
        Some(Message::Ping(bytes::Bytes::new()))
    }
}

/// A token bucket: `rate` frames a second, bursts up to twice that.
pub(super) struct Pacer {
    tokens: f64,
    capacity: f64,
    rate: f64,
    last: Instant,
}

impl Pacer {
    pub(super) fn new(rate: u32) -> Self {
        let rate = f64::from(rate.max(1));
        Pacer {
            tokens: rate * 2.0,
            capacity: rate * 2.0,
            rate,
            last: Instant::now(),
        }
    }

    /// Takes a token; `false` when the peer is over its rate.
    pub(super) fn admit(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(self.capacity);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}
