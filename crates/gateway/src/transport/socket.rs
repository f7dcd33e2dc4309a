//! What every socket connection shares: its configuration, the event loop's next event,
//! writing queued frames (in fragments when large), keepalive, rate limiting, and closing
//! with a code that the peer gets to read.

use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use askgate_protocol::close;
use bytes::Bytes;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::io::AsyncReadExt as _;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::{CloseFrame, Frame as WireFrame, Utf8Bytes};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

pub(super) use super::upgrade::WebSocket;
use crate::config::Limits;
use crate::hub::{Delivery, FRAGMENT_BYTES, Frame, Queue};
use crate::metrics::{Metrics, count};
use crate::pacer::Pacer;

/// Frames written per flush when a queue has several waiting.
const BATCH_FRAMES: usize = 32;
/// How long a close frame may take to go out.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);
/// How long, after the close frame, the peer's remaining input is read (and dropped) while
/// waiting for its own close frame. Closing a socket with unread input makes the kernel reset
/// the connection, and a reset can discard the close frame before the peer reads it.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// The most of a peer's unread input read after its bad input, before closing anyway.
const DRAIN_BYTES: usize = 4 * 1024 * 1024;

/// The socket configuration for a peer that may send messages of `max_message_bytes`, read
/// `read_buffer_bytes` at a time.
///
/// The message limit is on what peers send. What the gateway sends is not capped by it: a
/// snapshot carries every open request, and an outcome carries a custom answer three times
/// over, so either can be many times larger. The write buffer stays bounded anyway: a frame
/// is written in fragments of [`FRAGMENT_BYTES`], each queued only once the buffer has been
/// written out below `write_buffer_bytes`.
pub(super) fn socket_config(
    limits: &Limits,
    max_message_bytes: usize,
    read_buffer_bytes: usize,
) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(read_buffer_bytes)
        .write_buffer_size(limits.write_buffer_bytes)
        .max_write_buffer_size(usize::MAX)
        .max_message_size(Some(max_message_bytes))
        .max_frame_size(Some(max_message_bytes))
}

/// What happened next on a connection.
pub(super) enum Event {
    /// A message from the peer (`None`: the stream ended).
    Incoming(Option<Result<Message, WsError>>),
    /// A frame the hub queued (`None`: the hub let go of the connection).
    Outgoing(Option<Frame>),
    /// A tab's latest presence.
    Presence(Frame),
    /// Time to ping.
    Tick,
    /// Close with this code (asked for by the hub, or by shutdown).
    Close(u16),
}

/// The parts of a connection the event loop watches besides the socket.
pub(super) struct Watch<'a> {
    /// The connection's inbox: frames, a tab's presence, and the code to close with.
    pub(super) queue: &'a mut Queue,
    pub(super) keepalive: &'a mut Keepalive,
    pub(super) metrics: &'a Metrics,
}

impl Watch<'_> {
    /// Races `write` (one fragment, a flush or a ping) against a close (asked for by the hub
    /// or by shutdown), and a peer that does not take it within a ping interval (its buffers
    /// are full: it has stopped reading), which is closed as too slow (4408) rather than left
    /// holding the connection.
    async fn guard(
        &mut self,
        write: impl Future<Output = Result<(), WsError>>,
    ) -> Result<(), Option<u16>> {
        // Nearly every write goes through at once: then no timer is set up at all.
        let mut write = std::pin::pin!(write);
        if let Poll::Ready(written) = poll_once(write.as_mut()).await {
            return written.map_err(|_| None);
        }
        // Boxed, like a tab's frame handling: every connection's task would otherwise carry
        // room for this rare wait (a timer) while it sits idle.
        Box::pin(self.wait_for(write)).await
    }

    /// The rest of [`Watch::guard`], for a write that did not go through at once.
    async fn wait_for(
        &mut self,
        write: Pin<&mut impl Future<Output = Result<(), WsError>>>,
    ) -> Result<(), Option<u16>> {
        let period = self.keepalive.period;
        tokio::select! {
            biased;
            written = write => written.map_err(|_| None),
            code = self.queue.closed() => Err(Some(code)),
            () = tokio::time::sleep(period) => {
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

/// Waits for the next event: what the hub has for the connection first (a close before
/// frames, queued frames before a tab's presence), then the peer's input, then the keepalive.
///
/// Polled by hand rather than raced with `select!`: the wait then holds no future of its own
/// (no timer, channel or token waiter each with its state), which is what an idle
/// connection's task is made of.
pub(super) async fn next_event(socket: &mut WebSocket, watch: &mut Watch<'_>) -> Event {
    std::future::poll_fn(|cx| {
        if let Poll::Ready(delivery) = watch.queue.poll_next(cx) {
            return Poll::Ready(match delivery {
                Delivery::Close(code) => Event::Close(code),
                Delivery::Frame(frame) => Event::Outgoing(Some(frame)),
                Delivery::Presence(frame) => Event::Presence(frame),
                Delivery::LetGo => Event::Outgoing(None),
            });
        }
        if let Poll::Ready(message) = socket.poll_next_unpin(cx) {
            return Poll::Ready(Event::Incoming(message));
        }
        if watch.keepalive.interval.poll_tick(cx).is_ready() {
            return Poll::Ready(Event::Tick);
        }
        Poll::Pending
    })
    .await
}

/// What an event comes to, for the connection's own loop.
pub(super) enum Step {
    /// Handled; wait for the next event.
    Continue,
    /// A text message from the peer, admitted by its pacer: the connection's to handle.
    Text(Utf8Bytes),
    /// The connection ends, with this close code and reason if any.
    End(Option<(u16, &'static str)>),
    /// The peer's input could not be read (a frame too large, not UTF-8, against the
    /// protocol): close with this code and reason, its unread input drained first.
    Failed(u16, &'static str),
}

/// How a connection ends, as its task hands it to [`close_with`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Closing {
    pub(super) code: u16,
    pub(super) reason: &'static str,
    /// The WebSocket stream failed on the peer's input, which may still be arriving.
    pub(super) after_bad_input: bool,
}

impl Closing {
    pub(super) fn with(code: u16, reason: &'static str) -> Self {
        Closing {
            code,
            reason,
            after_bad_input: false,
        }
    }

    pub(super) fn after_bad_input(code: u16, reason: &'static str) -> Self {
        Closing {
            code,
            reason,
            after_bad_input: true,
        }
    }
}

/// Handles `event` as every connection does: writes what the hub queued, keeps the peer
/// alive, paces what it sends (pings included), and turns failures into close codes.
pub(super) async fn step(
    socket: &mut WebSocket,
    watch: &mut Watch<'_>,
    pacer: &mut Pacer,
    event: Event,
) -> Step {
    let ended = |code: Option<u16>| Step::End(code.map(|c| (c, "closing")));
    let wait = match event {
        Event::Close(code) => return ended(Some(code)),
        Event::Outgoing(Some(frame)) => {
            let mut first = Some(frame);
            let written = std::future::poll_fn(|cx| match first.take() {
                Some(frame) => Poll::Ready(write_now(socket, cx, frame, watch.queue)),
                None => Poll::Ready(Written::Failed),
            })
            .await;
            match written {
                Written::Done => return Step::Continue,
                Written::Failed => return Step::End(None),
                Written::Rest(rest) => Wait::Rest(rest),
            }
        }
        Event::Outgoing(None) | Event::Incoming(None) => return Step::End(None),
        Event::Presence(frame) => Wait::Presence(frame),
        Event::Tick => Wait::Tick,
        Event::Incoming(Some(Ok(Message::Close(_)))) => Wait::PeerClosed,
        Event::Incoming(Some(Err(error))) => {
            return match code_for_read_error(&error, watch.metrics) {
                Some((code, reason)) => Step::Failed(code, reason),
                None => Step::End(None),
            };
        }
        Event::Incoming(Some(Ok(message))) => {
            watch.keepalive.alive();
            // Every frame counts, pings too: answering a flood of pings is work as well.
            if !pacer.admit() {
                count(&watch.metrics.closed_too_many_frames);
                return Step::End(Some((close::TOO_MANY_FRAMES, "too many frames")));
            }
            return match message {
                Message::Text(text) => Step::Text(text),
                Message::Binary(_) => Step::End(Some((close::MALFORMED, "frames are JSON text"))),
                // Pongs are answered by tungstenite; raw frames are never read.
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) | Message::Close(_) => {
                    Step::Continue
                }
            };
        }
    };
    // Boxed: waiting on a write, a ping or a close holds futures of its own (a frame's
    // fragments, a flush, a timer), and a task is as large as its largest wait, so unboxed
    // every idle connection would carry room for them. Most events never get here: a frame
    // the socket takes at once is written above, without an allocation.
    Box::pin(wait_on(socket, watch, wait)).await
}

/// An event that may have to wait.
enum Wait {
    /// Frames the socket did not take at once (`None`: only the flush is left).
    Rest(Option<Frame>),
    Presence(Frame),
    Tick,
    /// The peer's close, whose reply is still to go out.
    PeerClosed,
}

async fn wait_on(socket: &mut WebSocket, watch: &mut Watch<'_>, wait: Wait) -> Step {
    let ended = |code: Option<u16>| Step::End(code.map(|c| (c, "closing")));
    let written = match wait {
        Wait::Rest(Some(frame)) => write_frames(socket, frame, watch).await,
        Wait::Rest(None) => watch.guard(socket.flush()).await,
        Wait::Presence(frame) => match write_frame(socket, &frame, watch).await {
            Ok(()) => watch.guard(socket.flush()).await,
            Err(code) => Err(code),
        },
        Wait::Tick => match watch.keepalive.tick() {
            Some(ping) => send_ping(socket, ping, watch).await,
            None => return Step::End(None),
        },
        Wait::PeerClosed => {
            // tungstenite has queued the reply to the peer's close; it goes out on a flush.
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, socket.flush()).await;
            return Step::End(None);
        }
    };
    written.map_or_else(ended, |()| Step::Continue)
}

/// What writing without waiting came to.
enum Written {
    /// Every frame written and flushed.
    Done,
    /// The socket failed.
    Failed,
    /// The socket would block, or a frame must go in fragments: the rest is for [`wait_on`].
    Rest(Option<Frame>),
}

/// Writes `first` and whatever else is queued (up to a batch), then flushes, for as long as
/// the socket takes them without waiting; stops at a frame too large for one fragment.
fn write_now(
    socket: &mut WebSocket,
    cx: &mut std::task::Context<'_>,
    first: Frame,
    queue: &mut Queue,
) -> Written {
    let mut frame = first;
    let mut written = 0;
    loop {
        let Some(whole) = frame.whole(FRAGMENT_BYTES) else {
            return Written::Rest(Some(frame));
        };
        match socket.poll_ready_unpin(cx) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(_)) => return Written::Failed,
            Poll::Pending => return Written::Rest(Some(frame)),
        }
        // As in `write_frame`: serde_json's output goes out without being checked again.
        let wire = WireFrame::message(whole.clone(), OpCode::Data(Data::Text), true);
        if socket.start_send_unpin(Message::Frame(wire)).is_err() {
            return Written::Failed;
        }
        written += 1;
        if written == BATCH_FRAMES {
            break;
        }
        match queue.try_frame() {
            Some(next) => frame = next,
            None => break,
        }
    }
    match socket.poll_flush_unpin(cx) {
        Poll::Ready(Ok(())) => Written::Done,
        Poll::Ready(Err(_)) => Written::Failed,
        Poll::Pending => Written::Rest(None),
    }
}

/// Writes `first` and whatever else is queued (up to a batch), then flushes, each step
/// guarded by [`Watch::guard`].
pub(super) async fn write_frames(
    socket: &mut WebSocket,
    first: Frame,
    watch: &mut Watch<'_>,
) -> Result<(), Option<u16>> {
    write_frame(socket, &first, watch).await?;
    drop(first);
    // Guarded fragment by fragment: a peer that reads slowly but steadily gets a whole batch
    // however long it takes; one that takes nothing for a ping interval is closed.
    for _ in 1..BATCH_FRAMES {
        let Some(frame) = watch.queue.try_frame() else {
            break;
        };
        write_frame(socket, &frame, watch).await?;
    }
    watch.guard(socket.flush()).await
}

/// Writes one frame (without a final flush), in fragments when it is larger than one.
pub(super) async fn write_frame(
    socket: &mut WebSocket,
    frame: &Frame,
    watch: &mut Watch<'_>,
) -> Result<(), Option<u16>> {
    let fragments = frame.len().div_ceil(FRAGMENT_BYTES).max(1);
    let mut pieces = frame.fragments(FRAGMENT_BYTES).peekable();
    let mut first = true;
    while let Some(piece) = pieces.next() {
        let last = pieces.peek().is_none();
        let opcode = if first { Data::Text } else { Data::Continue };
        first = false;
        // Frames are encoded by serde_json (valid UTF-8) and cut between characters, so they
        // go out as they are, without being checked again for every tab.
        let wire = WireFrame::message(piece, OpCode::Data(opcode), last);
        watch.guard(socket.feed(Message::Frame(wire))).await?;
        // A large frame is flushed fragment by fragment, so the write buffer holds one.
        if fragments > 1 && !last {
            watch.guard(socket.flush()).await?;
        }
    }
    Ok(())
}

/// Sends a keepalive ping, guarded by [`Watch::guard`].
pub(super) async fn send_ping(
    socket: &mut WebSocket,
    ping: Message,
    watch: &mut Watch<'_>,
) -> Result<(), Option<u16>> {
    watch.guard(socket.send(ping)).await
}

/// Sends the close frame (within [`CLOSE_TIMEOUT`]), then reads and drops what the peer
/// still sends, until its own close frame arrives (or its input ends) or [`DRAIN_TIMEOUT`]
/// passes. After bad input the WebSocket stream reads nothing more, so the raw connection is
/// read instead, up to [`DRAIN_BYTES`].
pub(super) async fn close_with(socket: &mut WebSocket, closing: Closing) {
    let frame = CloseFrame {
        code: CloseCode::from(closing.code),
        reason: Utf8Bytes::from(closing.reason),
    };
    let sent = tokio::time::timeout(CLOSE_TIMEOUT, socket.send(Message::Close(Some(frame)))).await;
    if !matches!(sent, Ok(Ok(()))) {
        return;
    }
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, async {
        if closing.after_bad_input {
            let raw = socket.get_mut();
            let mut sink = vec![0u8; 8192];
            let mut drained = 0;
            while drained < DRAIN_BYTES {
                match raw.read(&mut sink).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => drained += n,
                }
            }
        } else {
            while let Some(Ok(_)) = socket.next().await {}
        }
    })
    .await;
}

/// The close code and reason for a failed read, or `None` when the connection just ended.
pub(super) fn code_for_read_error(
    error: &WsError,
    metrics: &Metrics,
) -> Option<(u16, &'static str)> {
    match error {
        WsError::Capacity(_) => {
            count(&metrics.closed_too_large);
            Some((close::TOO_LARGE, "frame too large"))
        }
        WsError::Utf8(_) => Some((close::INVALID_PAYLOAD, "a text frame that is not UTF-8")),
        WsError::Protocol(
            tokio_tungstenite::tungstenite::error::ProtocolError::ResetWithoutClosingHandshake,
        ) => None,
        WsError::Protocol(_) => Some((close::PROTOCOL_ERROR, "a WebSocket protocol violation")),
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
        Some(Message::Ping(Bytes::new()))
    }
}
