//! What an HTTP connection is doing, seen from its reads and its requests, and when it has
//! overstayed: silent or idle past the idle timeout, or taking longer than the header timeout
//! to get a request's headers in.
//!
//! hyper's own header timeout starts as soon as a connection waits for a request, so it
//! cannot tell a request trickling in from a keep-alive connection at rest; this can, and
//! gives each its own limit.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::caps::Permit;

/// No byte of a request has arrived since the connection was last ready for one.
const NONE: u64 = u64::MAX;

/// The timeouts the watchdog enforces.
#[derive(Clone, Copy, Debug)]
pub struct HttpTimeouts {
    /// From a request's first byte to its last header byte.
    pub header_read: Duration,
    /// How long a connection may wait for a request (its first, or its next on keep-alive)
    /// with no byte arriving.
    pub idle: Duration,
}

/// Why a connection was closed by its watchdog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overstay {
    /// Nothing arrived while it was waiting for a request.
    Idle,
    /// A request's headers did not arrive in time.
    HeadersTooSlow,
}

/// A connection's activity, shared by its stream, its service and its watchdog.
#[derive(Debug)]
pub struct Activity {
    opened: Instant,
    /// When (ms after opening) the connection became ready for its next request, or last
    /// wrote a byte after that (a response still going out to a slow reader is not idle).
    ready_since: AtomicU64,
    /// When (ms after opening) the first byte of the next request arrived, or [`NONE`].
    first_byte: AtomicU64,
    /// Requests being handled.
    in_flight: AtomicUsize,
    /// The HTTP phase is over (the connection became a WebSocket): reads and writes are no
    /// longer watched.
    retired: AtomicBool,
}

impl Activity {
    /// A connection opened now.
    pub fn new() -> Arc<Self> {
        Arc::new(Activity {
            opened: Instant::now(),
            ready_since: AtomicU64::new(0),
            first_byte: AtomicU64::new(NONE),
            in_flight: AtomicUsize::new(0),
            retired: AtomicBool::new(false),
        })
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(NONE - 1)
    }

    /// The HTTP phase is over; the stream goes on (upgraded) unwatched.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Relaxed);
    }

    /// Bytes arrived: if no request is being handled, they start the next one.
    fn read_some(&self) {
        if self.retired.load(Ordering::Relaxed) {
            return;
        }
        if self.in_flight.load(Ordering::Acquire) == 0
            && self.first_byte.load(Ordering::Acquire) == NONE
        {
            let _ = self.first_byte.compare_exchange(
                NONE,
                self.elapsed_ms(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
    }

    /// Bytes went out: while no request is being handled, the idle clock starts again (a
    /// response is still being written after its handler returned).
    fn wrote_some(&self) {
        if !self.retired.load(Ordering::Relaxed) && self.in_flight.load(Ordering::Acquire) == 0 {
            self.ready_since.store(self.elapsed_ms(), Ordering::Release);
        }
    }

    /// Whether a request is being handled.
    pub fn busy(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }

    /// A request's headers are in and its handler starts; the guard marks its end.
    pub fn begin_request(self: &Arc<Self>) -> RequestGuard {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.first_byte.store(NONE, Ordering::Release);
        RequestGuard(Arc::clone(self))
    }

    /// When the connection overstays if nothing changes, and how; `None` while a request is
    /// being handled (its handler has its own time limit).
    fn next_overstay(&self, timeouts: &HttpTimeouts) -> Option<(Instant, Overstay)> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let at =
            |since_ms: u64, limit: Duration| self.opened + Duration::from_millis(since_ms) + limit;
        match self.first_byte.load(Ordering::Acquire) {
            NONE => Some((
                at(self.ready_since.load(Ordering::Acquire), timeouts.idle),
                Overstay::Idle,
            )),
            first => Some((at(first, timeouts.header_read), Overstay::HeadersTooSlow)),
        }
    }

    /// Waits until the connection has overstayed (never returns while it behaves).
    pub async fn overstayed(&self, timeouts: HttpTimeouts) -> Overstay {
        loop {
            match self.next_overstay(&timeouts) {
                Some((at, why)) if at <= Instant::now() => return why,
                Some((at, _)) => tokio::time::sleep_until(at).await,
                // Busy: look again after the shorter period (the request may end any time).
                None => tokio::time::sleep(timeouts.header_read.min(timeouts.idle)).await,
            }
        }
    }
}

/// Held while a request is handled; its drop makes the connection ready for the next one.
#[derive(Debug)]
pub struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let activity = &self.0;
        activity
            .ready_since
            .store(activity.elapsed_ms(), Ordering::Release);
        activity.first_byte.store(NONE, Ordering::Release);
        activity.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An accepted TCP stream that reports its reads to its [`Activity`] and holds the
/// connection's place under the caps until it is dropped (after an upgrade, that is when the
/// WebSocket closes).
#[derive(Debug)]
pub struct WatchedStream {
    stream: TcpStream,
    activity: Arc<Activity>,
    _permit: Permit,
}

impl WatchedStream {
    /// Wraps `stream`.
    pub fn new(stream: TcpStream, activity: Arc<Activity>, permit: Permit) -> Self {
        WatchedStream {
            stream,
            activity,
            _permit: permit,
        }
    }
}

impl AsyncRead for WatchedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.read_some();
        }
        read
    }
}

impl AsyncWrite for WatchedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.wrote_some();
        }
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.wrote_some();
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUTS: HttpTimeouts = HttpTimeouts {
        header_read: Duration::from_secs(10),
        idle: Duration::from_secs(30),
    };

    #[tokio::test(start_paused = true)]
    async fn a_silent_connection_overstays_the_idle_timeout() {
        let activity = Activity::new();
        let started = Instant::now();
        assert_eq!(activity.overstayed(TIMEOUTS).await, Overstay::Idle);
        assert_eq!(started.elapsed(), TIMEOUTS.idle);
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickling_request_overstays_the_header_timeout() {
        let activity = Activity::new();
        tokio::time::advance(Duration::from_secs(5)).await;
        activity.read_some();
        let started = Instant::now();
        // More bytes do not restart the clock: the headers as a whole must arrive in time.
        tokio::time::advance(Duration::from_secs(3)).await;
        activity.read_some();
        assert_eq!(
            activity.overstayed(TIMEOUTS).await,
            Overstay::HeadersTooSlow
        );
        assert_eq!(started.elapsed(), TIMEOUTS.header_read);
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_going_out_slowly_is_not_idle() {
        let activity = Activity::new();
        let guard = activity.begin_request();
        drop(guard);
        for _ in 0..3 {
            tokio::time::advance(Duration::from_secs(20)).await;
            activity.wrote_some();
        }
        let last_write = Instant::now();
        assert_eq!(activity.overstayed(TIMEOUTS).await, Overstay::Idle);
        assert_eq!(last_write.elapsed(), TIMEOUTS.idle);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_being_handled_is_not_timed_and_its_end_restarts_the_idle_clock() {
        let activity = Activity::new();
        activity.read_some();
        let guard = activity.begin_request();
        // A long-poll: a minute in its handler, its body bytes arriving meanwhile.
        tokio::time::advance(Duration::from_secs(60)).await;
        activity.read_some();
        assert!(activity.next_overstay(&TIMEOUTS).is_none());
        drop(guard);
        let ended = Instant::now();
        assert_eq!(activity.overstayed(TIMEOUTS).await, Overstay::Idle);
        assert_eq!(ended.elapsed(), TIMEOUTS.idle);
    }
}
