//! The accept loop: each TCP connection is admitted under the caps (or refused with a 503 it
//! can read), served as HTTP/1 by hyper with upgrades, watched for overstaying, and asked to
//! finish when the gateway shuts down.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, Request, Response, StatusCode};
use axum::response::IntoResponse as _;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower_service::Service as _;

use super::caps::{CapRefusal, ConnectionCaps, Cut, Standing};
use super::watchdog::{Activity, HttpTimeouts, Overstay, WatchedStream};
use crate::metrics::{Metrics, count};

/// Refusals being written at once; past it a refused connection is simply closed. Each holds
/// a descriptor for a moment, out of the reserve.
pub const REFUSALS_AT_ONCE: usize = 64;
/// How long a refusal may take to be written.
const REFUSAL_TIME: Duration = Duration::from_secs(2);
/// How long a refused connection's request is waited for and read after the refusal, so that
/// closing does not reset it before the client has read the 503 (a reset can discard it).
/// Short: a client that sends nothing holds a descriptor this long.
const REFUSAL_LINGER: Duration = Duration::from_millis(250);
/// What a refused client's request may still send while its refusal is read, so that closing
/// does not reset the connection before the client has read the 503.
const REFUSAL_DRAIN_BYTES: usize = 64 * 1024;
/// How often the same kind of refusal or accept error is logged; the others are counted.
const LOG_EVERY: Duration = Duration::from_secs(10);
/// Pause after an accept error (out of descriptors, say), which would otherwise repeat at once.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// How connections are served.
#[derive(Clone, Debug)]
pub struct ServeSettings {
    /// The HTTP phase's timeouts.
    pub timeouts: HttpTimeouts,
    /// From accept to a key shown; a connection that has shown none by then is cut.
    pub handshake_timeout: Duration,
    /// Whether a request's headers show a valid key (an agent's).
    pub shows_key: KeyCheck,
    /// The most one request may take, body and handler (a long-poll included).
    pub request_timeout: Duration,
    /// Where connections are counted.
    pub metrics: Arc<Metrics>,
}

/// Whether a request's headers show a valid key.
#[derive(Clone)]
pub struct KeyCheck(pub Arc<dyn Fn(&HeaderMap) -> bool + Send + Sync>);

impl std::fmt::Debug for KeyCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyCheck")
    }
}

/// Accepts on `listener` until `shutdown`; every connection task runs on `tracker`.
pub async fn accept_loop(
    listener: TcpListener,
    router: Router,
    caps: Arc<ConnectionCaps>,
    settings: ServeSettings,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) {
    let refusals = Arc::new(Semaphore::new(REFUSALS_AT_ONCE));
    let refusal_log = ThrottledLog::default();
    let error_log = ThrottledLog::default();
    loop {
        let (stream, peer) = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    error_log.warn(|suppressed| {
                        tracing::warn!(%error, suppressed, "accepting a connection failed");
                    });
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    continue;
                }
            },
        };
        match caps.admit(peer.ip()) {
            Ok(permit) => {
                // Frames are small and latency matters more than packet count: without
                // TCP_NODELAY, Nagle's algorithm holds a frame that follows another until the
                // peer's delayed ACK, adding up to 40 ms.
                let _ = stream.set_nodelay(true);
                let standing = Arc::clone(permit.standing());
                let deadline = Arc::clone(&standing);
                let handshake_timeout = settings.handshake_timeout;
                tokio::spawn(async move { deadline.enforce_deadline(handshake_timeout).await });
                let activity = Activity::new();
                let stream = WatchedStream::new(stream, Arc::clone(&activity), permit);
                tracker.spawn(serve_connection(
                    stream,
                    peer,
                    standing,
                    activity,
                    router.clone(),
                    settings.clone(),
                    shutdown.clone(),
                ));
            }
            Err(refusal) => {
                count(&settings.metrics.refused_connections);
                refusal_log.warn(|suppressed| {
                    tracing::warn!(
                        peer = %peer.ip(),
                        held = caps.held(),
                        max_connections = caps.max_total(),
                        max_per_address = caps.max_per_address(),
                        suppressed,
                        "refused a connection: {}",
                        refusal.message()
                    );
                });
                if let Ok(slot) = Arc::clone(&refusals).try_acquire_owned() {
                    tokio::spawn(async move {
                        refuse(stream, refusal).await;
                        drop(slot);
                    });
                }
            }
        }
    }
}

/// Serves one admitted connection's HTTP phase: until it ends, is upgraded (the WebSocket
/// goes on in a task of its own), overstays, or finishes after shutdown.
async fn serve_connection(
    stream: WatchedStream,
    peer: SocketAddr,
    standing: Arc<Standing>,
    activity: Arc<Activity>,
    router: Router,
    settings: ServeSettings,
    shutdown: CancellationToken,
) {
    let service_activity = Arc::clone(&activity);
    let service_standing = Arc::clone(&standing);
    let request_timeout = settings.request_timeout;
    let shows_key = settings.shows_key.clone();
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        let mut router = router.clone();
        let guard = service_activity.begin_request();
        if !service_standing.is_keyed() && (shows_key.0)(request.headers()) {
            service_standing.show_key();
        }
        request.extensions_mut().insert(ConnectInfo(peer));
        request
            .extensions_mut()
            .insert(Arc::clone(&service_standing));
        async move {
            let response = match tokio::time::timeout(request_timeout, router.call(request)).await {
                Ok(Ok(response)) => response,
                Ok(Err(never)) => match never {},
                Err(_) => request_timed_out(),
            };
            drop(guard);
            Ok::<_, Infallible>(response)
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    let mut connection = std::pin::pin!(connection);
    let mut finishing = false;
    loop {
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(error) = served {
                    tracing::debug!(%peer, %error, "connection ended with an error");
                }
                // Ended, or handed over as a WebSocket, which is not watched.
                activity.retire();
                return;
            }
            why = activity.overstayed(settings.timeouts), if !finishing => {
                count(&settings.metrics.closed_overstaying);
                tracing::debug!(%peer, ?why, "closing an HTTP connection that overstayed");
                if why == Overstay::HeadersTooSlow {
                    tracing::info!(%peer, "closed a connection whose request headers did not arrive in time");
                }
                return;
            }
            why = standing.cut() => {
                if why == Cut::Deadline {
                    count(&settings.metrics.closed_overstaying);
                }
                tracing::debug!(%peer, "closing a connection: {}", why.message());
                return;
            }
            () = shutdown.cancelled(), if !finishing => {
                // Requests in flight finish (long-polls end early on shutdown); a connection
                // with none (idle, or still sending its headers) closes now.
                if !activity.busy() {
                    return;
                }
                connection.as_mut().graceful_shutdown();
                finishing = true;
            }
        }
    }
}

fn request_timed_out() -> Response<axum::body::Body> {
    (
        StatusCode::REQUEST_TIMEOUT,
        "the request was not received and handled in time (--request-timeout-s)\n",
    )
        .into_response()
}

/// Answers a refused connection with a 503 it can read, without waiting for its request.
async fn refuse(mut stream: TcpStream, refusal: CapRefusal) {
    let body = format!("{}\n", refusal.message());
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
         retry-after: 10\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let written = tokio::time::timeout(REFUSAL_TIME, async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
    if !matches!(written, Ok(Ok(()))) {
        return;
    }
    // Closing with unread input resets the connection, and a reset can discard the response
    // before the client reads it: read what it sends, for a moment.
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        let mut sink = [0u8; 4096];
        let mut drained = 0;
        while drained < REFUSAL_DRAIN_BYTES {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    })
    .await;
}

/// Logs at most once per [`LOG_EVERY`], saying how many were left out since.
#[derive(Debug, Default)]
struct ThrottledLog {
    state: Mutex<(Option<Instant>, u64)>,
}

impl ThrottledLog {
    fn warn(&self, log: impl FnOnce(u64)) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (last, suppressed) = &mut *state;
        if last.is_some_and(|at| at.elapsed() < LOG_EVERY) {
            *suppressed += 1;
            return;
        }
        log(*suppressed);
        *last = Some(Instant::now());
        *suppressed = 0;
    }
}
