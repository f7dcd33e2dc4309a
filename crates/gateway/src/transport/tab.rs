//! `GET /v1/sessions/{session}/live`: a browser tab watching a session.
//!
//! The first frame must be `hello` with the session's viewer key or a personal key signed for
//! it (within the hello timeout, else the socket closes with 4408 and the page reconnects);
//! then the tab receives `snapshot` and live updates, and may send `answer`, `decline` and
//! `history` and `follow`. A tab admitted with a personal link is closed with 4401 when the link expires.
//! Who the tab is comes from its key, or from a trusted proxy's header on the upgrade
//! request; never from anything the page says.
//!
//! Every frame a tab sends takes one of its `--tab-frames-per-second`; a `history` or `follow` frame,
//! and an `answer` or `decline` refused because of who sent it, take [`COSTLY_FRAME`] in all: they cost the
//! gateway a trail's read or a refusal's record, and a page sends either rarely.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use askgate_protocol::wire::{FromTab, Via, read_tab_frame};
use askgate_protocol::{SessionId, close};
use axum::extract::{ConnectInfo, FromRequestParts, Path, State};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::response::Response;
use futures_util::StreamExt as _;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::closing::{Closing, close_with, code_for_read_error};
use super::socket::{Step, next_event, socket_config, step};
use super::upgrade::Upgrade;
use super::upgrade::WebSocket;
use super::watch::{Keepalive, Watch};
use crate::clock::{now_ms, until};
use crate::connections::{Cut, Standing};
use crate::hub::{Hub, Link, Queue, Rejected, TabHandle};
use crate::metrics::{count, gauge_add};
use crate::pacer::Pacer;
use crate::people::{KeyRefusal, Person, ProxyIdentity};
use crate::server::AppState;

/// The upgrade handler.
pub async fn tab_endpoint(
    State(state): State<AppState>,
    Path(session): Path<String>,
    PeerAddress(peer): PeerAddress,
    ConnectionStanding(standing): ConnectionStanding,
    headers: HeaderMap,
    upgrade: Upgrade,
) -> Response {
    let proxied = state.proxies.identify(&headers, peer);
    let tracker = state.tracker.clone();
    let limits = state.hub.limits();
    let config = socket_config(limits, limits.max_frame_bytes, limits.read_buffer_bytes);
    upgrade.on_upgrade(config, limits.upgrade_timeout, move |socket| {
        // At debug level: a span is entered on every poll of the connection, and an info span
        // was 2 % of the fan-out's CPU. What a tab logs at info and above names its session.
        let span = tracing::debug_span!("tab", %session);
        let joining = Box::new(Joining {
            session,
            proxied,
            standing,
            shutdown: state.shutdown,
        });
        let task = run(socket, state.hub, joining);
        tracker.track_future(task.instrument(span))
    })
}

/// What the upgrade request tells about a tab still to say hello. Boxed, and let go once
/// the tab has joined: a task keeps room for what it was started with for as long as it runs.
struct Joining {
    /// The session in the path, not yet parsed.
    session: String,
    /// Who a trusted proxy says it is.
    proxied: ProxyIdentity,
    /// Its connection's standing, when the accept loop keeps one: the hello shows its key.
    standing: Option<Arc<Standing>>,
    /// The server's shutdown, watched while the tab has not said hello (once it has joined,
    /// the hub closes it).
    shutdown: CancellationToken,
}

/// The connection's standing under the caps, when the accept loop recorded one.
pub struct ConnectionStanding(pub Option<Arc<Standing>>);

impl<S: Send + Sync> FromRequestParts<S> for ConnectionStanding {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(ConnectionStanding(
            parts.extensions.get::<Arc<Standing>>().cloned(),
        ))
    }
}

/// How a tab cut before it showed its key is closed.
fn closing_for(cut: Cut) -> Closing {
    match cut {
        Cut::Deadline => Closing::with(close::TOO_SLOW, "no hello in time"),
        Cut::Crowded => Closing::with(close::TRY_AGAIN_LATER, cut.message()),
    }
}

/// The address a request came from, when the accept loop recorded it.
pub struct PeerAddress(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for PeerAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(address)| address.ip());
        Ok(PeerAddress(peer))
    }
}

/// The tab's task, holding only what it uses of the server's state (the hub; the shutdown to
/// watch until it joins is in `joining`) rather than all of it. Not an `async fn`: one moves
/// its arguments into locals of its own and keeps room for both, the socket twice over in
/// every idle tab; a block holds each once.
///
/// What an idle tab costs is mostly this task: tokio allocates it in 128-byte steps, and at
/// 768 bytes of future it took 1,024; what it holds while serving (the socket, the hub, the
/// boxed `joining`, the handle and `serve`'s own state) now fits 896, so nothing else may
/// be held across `serve`'s wait: see `a_tab_s_task_fits_its_allocation` below.
#[expect(
    clippy::manual_async_fn,
    reason = "an async fn would hold its arguments twice"
)]
fn run(
    mut socket: WebSocket,
    hub: Arc<Hub>,
    joining: Box<Joining>,
) -> impl Future<Output = ()> + Send {
    async move {
        gauge_add(&hub.metrics().connection_tasks, 1);
        // Boxed, as every rare wait: a task is as large as its largest state, idle or not,
        // and the hello, the key check and the store's load are over once the tab has joined.
        // Taken apart in a `let`, not in the arms of a `match`, and nothing awaited while
        // the admission's result is in scope: a scrutinee keeps its room in the task, beside
        // what was moved out of it, wherever its scope holds a wait.
        let (handle, closing) = 'joined: {
            let (handle, queue) = match Box::pin(admit(&mut socket, &hub, *joining)).await {
                Ok(joined) => joined,
                Err(closing) => break 'joined (None, closing),
            };
            let closing = serve(&mut socket, &hub, &handle, queue).await;
            (Some(handle), closing)
        };
        // The leaving, in one boxed step: a local kept across two waits after `serve` would
        // take its room in the task beside `serve`'s.
        Box::pin(leave(&mut socket, handle, closing)).await;
        gauge_add(&hub.metrics().connection_tasks, -1);
    }
}
/// Records the refusals a tab that joined was counting (its handle goes then, so it leaves
/// its session), then closes the socket as `closing` says, if it says.
async fn leave(socket: &mut WebSocket, handle: Option<TabHandle>, closing: Option<Closing>) {
    if let Some(handle) = handle {
        handle.record_counted_refusals().await;
    }
    if let Some(closing) = closing {
        close_with(socket, closing).await;
    }
}

/// Reads the tab's hello, checks its key and joins it to its session: its handle and inbox,
/// or how to close it.
async fn admit(
    socket: &mut WebSocket,
    hub: &Arc<Hub>,
    joining: Joining,
) -> Result<(TabHandle, Queue), Option<Closing>> {
    let with = |code, reason| Err(Some(Closing::with(code, reason)));
    let Joining {
        session,
        proxied,
        standing,
        shutdown,
    } = joining;
    let Ok(session) = SessionId::parse(session) else {
        return with(close::UNKNOWN_SESSION, "not a session id");
    };
    let cut = async {
        match &standing {
            Some(standing) => standing.cut().await,
            None => std::future::pending().await,
        }
    };
    let hello = tokio::select! {
        hello = tokio::time::timeout(hub.limits().hello_timeout, socket.next()) => hello,
        () = shutdown.cancelled() => return with(close::GOING_AWAY, "shutting down"),
        why = cut => return Err(Some(closing_for(why))),
    };
    let (key, requested_tab) = match hello {
        Ok(Some(Ok(Message::Text(text)))) => match serde_json::from_str::<FromTab>(&text) {
            Ok(FromTab::Hello { key, tab }) => (key, tab),
            _ => return with(close::MALFORMED, "the first frame must be hello"),
        },
        Ok(Some(Err(error))) => {
            let (code, reason) = code_for_read_error(&error, hub.metrics()).ok_or(None)?;
            return Err(Some(Closing::after_bad_input(code, reason)));
        }
        Ok(None | Some(Ok(Message::Close(_)))) => return Err(None),
        Ok(Some(Ok(_))) => return with(close::MALFORMED, "the first frame must be hello"),
        // Not a broken page, most likely a stalled network: the page may reconnect.
        Err(_) => return with(close::TOO_SLOW, "no hello in time"),
    };
    let person = match hub.keys().identify(&session, &key, now_ms()) {
        Ok(person) => person,
        Err(refusal) => return with(close::BAD_KEY, refusal.reason()),
    };
    // Signed in at the proxy: that is who is here, whichever link they opened.
    let person = match proxied {
        ProxyIdentity::Person(user) => Person::named(&user, Via::Proxy),
        ProxyIdentity::None => person,
    };
    // On a shared store, the session as the store has it, so the snapshot is whole. Should the
    // store be unreachable the tab still joins, sees what this node holds, and catches up.
    if let Err(error) = hub.synced(&session).await {
        tracing::warn!(%session, %error, "a tab joined a session that could not be loaded");
    }
    let (link, queue) = Link::new(hub.limits().tab_queue);
    let handle = match hub.join_tab(
        session,
        FromTab::requested_tab(requested_tab.as_deref()),
        person,
        link,
    ) {
        Ok(handle) => handle,
        Err(refused) => return with(refused.close_code(), refused.reason()),
    };
    // Shutdown closes every tab the hub holds; one that joined just after it closes here.
    if shutdown.is_cancelled() {
        return with(close::GOING_AWAY, "shutting down");
    }
    // Its key is shown: from now on it is never cut to make room for connections that have
    // shown none, nor for its deadline; one cut meanwhile closes as it would have.
    if let Some(standing) = &standing
        && !standing.show_key()
    {
        return Err(Some(closing_for(
            standing.cut_already().unwrap_or(Cut::Deadline),
        )));
    }
    tracing::debug!(tab = %handle.tab(), "tab joined");
    Ok((handle, queue))
}

/// Runs a joined tab until it ends; how to close it, if with a code.
async fn serve(
    socket: &mut WebSocket,
    hub: &Hub,
    handle: &TabHandle,
    mut queue: Queue,
) -> Option<Closing> {
    let limits = hub.limits();
    let mut keepalive = Keepalive::new(limits.ping_interval);
    let mut pacer = Pacer::new(limits.tab_frames_per_second);
    let mut watch = Watch {
        queue: &mut queue,
        keepalive: &mut keepalive,
        metrics: hub.metrics(),
    };
    // Only a personal link's tab has one (boxed: every other tab pays a pointer for it).
    let mut link_expiry = handle
        .person()
        .expires_ms
        .map(|expires_ms| Box::pin(tokio::time::sleep(until(expires_ms))));
    loop {
        let event = match link_expiry.as_mut() {
            None => next_event(socket, &mut watch).await,
            Some(expiry) => tokio::select! {
                biased;
                () = expiry.as_mut() => return Some(link_expired()),
                event = next_event(socket, &mut watch) => event,
            },
        };
        // The step is taken apart before the frame is handled: a scrutinee would keep its
        // room in the task for as long as an arm waits.
        let text = match step(socket, &mut watch, &mut pacer, event).await {
            Step::Continue => continue,
            Step::End(ending) => return ending.map(|(code, reason)| Closing::with(code, reason)),
            Step::Failed(code, reason) => return Some(Closing::after_bad_input(code, reason)),
            Step::Text(text) => text,
        };
        // Boxed: a connection's task is as large as its largest wait, and handling a frame
        // (an answer waits on the hub and the store) would make every idle tab carry room
        // for it.
        match Box::pin(handle_frame(handle, &text, &mut pacer)).await {
            Ok(Some(reply)) => handle.reply(reply),
            Ok(None) => {}
            Err(TooManyFrames) => {
                count(&hub.metrics().closed_too_many_frames);
                return Some(Closing::with(close::TOO_MANY_FRAMES, "too many frames"));
            }
        }
        // The timer may not have fired yet (a busy task, a clock stepped forward): the hub
        // has refused what came after the expiry, and the tab goes now.
        if handle.person().expired_at(now_ms()) {
            return Some(link_expired());
        }
    }
}

/// The close of a tab whose personal link has run out, with the reason the page shows.
fn link_expired() -> Closing {
    Closing::with(close::BAD_KEY, KeyRefusal::Expired.reason())
}

/// How many frames of a tab's budget a `history` frame, or a refused `answer` or `decline`,
/// takes in all: with the default 20 a second (bursts of 40), four a second (bursts of 8).
pub(super) const COSTLY_FRAME: u32 = 5;

/// A tab past its frame budget.
struct TooManyFrames;

/// Handles one frame of the tab's, admitted by `pacer` (which is charged the rest of a
/// costly frame's price): the reply to queue, if any.
async fn handle_frame(
    handle: &TabHandle,
    text: &str,
    pacer: &mut Pacer,
) -> Result<Option<crate::hub::Frame>, TooManyFrames> {
    match read_tab_frame(text) {
        Ok(FromTab::Answer { id, response }) => {
            costly_if_refused(handle.answer(&id, response).await, pacer)
        }
        Ok(FromTab::Decline { id, dismiss }) => {
            costly_if_refused(handle.decline(&id, dismiss).await, pacer)
        }
        Ok(FromTab::History) => {
            // Charged before the work, which is what the charge is for.
            charge_costly(pacer)?;
            Ok(Some(handle.history().await))
        }
        Ok(FromTab::Follow { on }) => {
            // A change kept in the store and the trail, as costly as a history's read.
            charge_costly(pacer)?;
            Ok(handle.follow(on).await)
        }
        Ok(FromTab::Rules) => {
            charge_costly(pacer)?;
            Ok(Some(handle.rules().await))
        }
        Ok(FromTab::RevokeRule { id }) => {
            // A change kept in the store and the trail.
            charge_costly(pacer)?;
            Ok(handle.revoke_rule(&id).await)
        }
        Ok(FromTab::Hello { .. }) => Ok(Some(bad_frame("hello was already said"))),
        Err(e) => Ok(Some(bad_frame(&format!("not a tab frame: {e}")))),
    }
}

/// Takes the rest of a costly frame's price from `pacer`.
fn charge_costly(pacer: &mut Pacer) -> Result<(), TooManyFrames> {
    if pacer.charge(COSTLY_FRAME - 1) {
        Ok(())
    } else {
        Err(TooManyFrames)
    }
}

/// An answer's or a decline's reply, which it has only when it was rejected: charged as a
/// costly frame when refused because of who sent it.
fn costly_if_refused(
    rejected: Option<Rejected>,
    pacer: &mut Pacer,
) -> Result<Option<crate::hub::Frame>, TooManyFrames> {
    let Some(rejected) = rejected else {
        return Ok(None);
    };
    if rejected.for_who {
        charge_costly(pacer)?;
    }
    Ok(Some(rejected.frame))
}

/// `error` `bad_frame`: the tab sent what is not a frame it may send.
fn bad_frame(message: &str) -> crate::hub::Frame {
    crate::hub::Frame::encode(&askgate_protocol::wire::ToTab::Error {
        code: askgate_protocol::ReplyCode::BadFrame.as_str().to_owned(),
        message: message.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of what tokio allocates for a task running `run` as `tab_endpoint` spawns it
    /// (tracked, instrumented), by tokio 1's layout of a task: a 32-byte header, the scheduler
    /// handle and task id, the future's stage, a 48-byte trailer, in 128-byte steps.
    fn task_allocation<A, B, C, F: Future>(_: fn(A, B, C) -> F) -> usize {
        use tokio_util::task::task_tracker::TrackedFuture;
        let stage = size_of::<Option<TrackedFuture<tracing::instrument::Instrumented<F>>>>();
        (32 + 16 + stage + 48).next_multiple_of(128)
    }

    /// An idle tab's task is most of what it costs (issue 46's 95,000 idle tabs over five
    /// nodes, at 4,096 B a tab): something held across `serve`'s wait that grows the task by
    /// a few bytes costs every idle tab 128 more.
    #[test]
    fn a_tab_s_task_fits_its_allocation() {
        let bytes = task_allocation(run);
        assert!(bytes <= 896, "a tab's task takes {bytes} B");
    }
}
