//! What every socket connection shares: its configuration, the event loop's next event, and
//! each event handled as every connection does. Writing is in [`writing`](super::writing), the
//! close in [`closing`](super::closing), what the loop watches in [`watch`](super::watch).

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use askgate_protocol::close;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::Utf8Bytes;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::closing::{CLOSE_TIMEOUT, code_for_read_error};
use super::upgrade::WebSocket;
use super::watch::Watch;
use super::writing::{Written, send_ping, write_frame, write_frames, write_now};
use crate::config::Limits;
use crate::hub::{Delivery, Frame};
use crate::metrics::count;
use crate::pacer::Pacer;

/// The socket configuration for a peer that may send messages of `max_message_bytes`, read
/// `read_buffer_bytes` at a time.
///
/// The message limit is on what peers send. What the gateway sends is not capped by it: a
/// snapshot carries every open request, and an outcome carries a custom answer three times
/// over, so either can be many times larger. The write buffer stays bounded anyway: a frame
/// is written in fragments of [`FRAGMENT_BYTES`](crate::hub::FRAGMENT_BYTES), each queued
/// only once the buffer has been written out below `write_buffer_bytes`.
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

/// Handles `event` as every connection does: writes what the hub queued, keeps the peer
/// alive, paces what it sends (pings included), and turns failures into close codes.
///
/// A future written out rather than an `async fn`: a connection's task keeps room for its
/// largest wait, and an `async fn` would hold the event twice (as its argument and as the
/// local it is matched from) beside the write under way. This one holds the event until
/// its first poll, then only what is left to wait on, boxed; most events need no wait.
pub(super) fn step<'a, 'q>(
    socket: &'a mut WebSocket,
    watch: &'a mut Watch<'q>,
    pacer: &'a mut Pacer,
    event: Event,
) -> Stepping<'a, 'q> {
    Stepping::Start {
        socket,
        watch,
        pacer,
        event,
    }
}

/// The future of [`step`].
pub(super) enum Stepping<'a, 'q> {
    /// Not polled yet.
    Start {
        socket: &'a mut WebSocket,
        watch: &'a mut Watch<'q>,
        pacer: &'a mut Pacer,
        event: Event,
    },
    /// Waiting on a write, a ping or a close.
    Waiting(Pin<Box<dyn Future<Output = Step> + Send + 'a>>),
    /// Ready, and taken.
    Done,
}

impl Future for Stepping<'_, '_> {
    type Output = Step;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Step> {
        // Unpin: it holds only references and a box.
        let this = &mut *self;
        if let Stepping::Waiting(wait) = this {
            let step = ready!(wait.as_mut().poll(cx));
            *this = Stepping::Done;
            return Poll::Ready(step);
        }
        let Stepping::Start {
            socket,
            watch,
            pacer,
            event,
        } = std::mem::replace(this, Stepping::Done)
        else {
            panic!("a step polled after it was ready");
        };
        match step_now(socket, cx, watch, pacer, event) {
            Ok(step) => Poll::Ready(step),
            Err(wait) => {
                // Boxed: waiting holds futures of its own (a frame's fragments, a flush, a
                // timer), which every idle connection would otherwise carry room for.
                let mut wait: Pin<Box<dyn Future<Output = Step> + Send + '_>> =
                    Box::pin(wait_on(socket, watch, wait));
                match wait.as_mut().poll(cx) {
                    Poll::Ready(step) => Poll::Ready(step),
                    Poll::Pending => {
                        *this = Stepping::Waiting(wait);
                        Poll::Pending
                    }
                }
            }
        }
    }
}

/// What `event` comes to without waiting: the step, or what is left to wait on.
fn step_now(
    socket: &mut WebSocket,
    cx: &mut Context<'_>,
    watch: &mut Watch<'_>,
    pacer: &mut Pacer,
    event: Event,
) -> Result<Step, Wait> {
    let ended = |code: Option<u16>| Ok(Step::End(code.map(|c| (c, "closing"))));
    match event {
        Event::Close(code) => ended(Some(code)),
        Event::Outgoing(Some(frame)) => match write_now(socket, cx, frame, watch.queue) {
            Written::Done => Ok(Step::Continue),
            Written::Failed => Ok(Step::End(None)),
            Written::Rest(rest) => Err(Wait::Rest(rest)),
        },
        Event::Outgoing(None) | Event::Incoming(None) => Ok(Step::End(None)),
        Event::Presence(frame) => Err(Wait::Presence(frame)),
        Event::Tick => Err(Wait::Tick),
        Event::Incoming(Some(Ok(Message::Close(_)))) => Err(Wait::PeerClosed),
        Event::Incoming(Some(Err(error))) => Ok(match code_for_read_error(&error, watch.metrics) {
            Some((code, reason)) => Step::Failed(code, reason),
            None => Step::End(None),
        }),
        Event::Incoming(Some(Ok(message))) => {
            watch.keepalive.alive();
            // Every frame counts, pings too: answering a flood of pings is work as well.
            if !pacer.admit() {
                count(&watch.metrics.closed_too_many_frames);
                return Ok(Step::End(Some((close::TOO_MANY_FRAMES, "too many frames"))));
            }
            Ok(match message {
                Message::Text(text) => Step::Text(text),
                Message::Binary(_) => Step::End(Some((close::MALFORMED, "frames are JSON text"))),
                // Pongs are answered by tungstenite; raw frames are never read.
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) | Message::Close(_) => {
                    Step::Continue
                }
            })
        }
    }
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
