//! What a connection's loop watches besides the socket (its inbox, its keepalive), and every
//! write raced against a close and against a peer that stopped reading.

use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use askgate_protocol::close;
use bytes::Bytes;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use crate::hub::Queue;
use crate::metrics::{Metrics, count};

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
    pub(super) async fn guard(
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

/// Pings on an interval; two pings without any sign of life end the connection.
pub(super) struct Keepalive {
    pub(super) interval: Interval,
    pub(super) period: Duration,
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
