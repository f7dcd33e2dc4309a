//! `GET /v1/inbox/live`: one person's inbox, their open requests across every session.
//!
//! It speaks as a tab's socket does. The first frame must be `hello`, with an inbox key
//! (`POST /v1/inbox/links`) unless a trusted proxy's header on the upgrade request names the
//! person; an anonymous visitor is closed with 4401, since an inbox is only ever someone's.
//! Then the inbox receives `snapshot` and the frames the sessions' tabs get about the requests
//! it shows, each naming its `session`, and may send `answer` and `decline`, each naming its
//! `session`, which take the same path as a tab's.
//!
//! Bounded as a tab is: the same queue, frame size and `--tab-frames-per-second` (an answer
//! refused because of who sent it costs [`COSTLY_FRAME`]), and closed with 4401 when its link
//! expires; and in number ([`INBOXES_PER_PERSON`], [`MAX_INBOXES`]: 1013 past either).
//!
//! [`INBOXES_PER_PERSON`]: crate::hub::INBOXES_PER_PERSON
//! [`MAX_INBOXES`]: crate::hub::MAX_INBOXES

use askgate_protocol::wire::{FromInbox, Via};
use askgate_protocol::{ReplyCode, close};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use futures_util::StreamExt as _;
use tokio_tungstenite::tungstenite::Message;
use tracing::Instrument as _;

use super::closing::{Closing, close_with, code_for_read_error};
use super::socket::{Step, next_event, socket_config, step};
use super::tab::{COSTLY_FRAME, ConnectionStanding, PeerAddress};
use super::upgrade::{Upgrade, WebSocket};
use super::watch::{Keepalive, Watch};
use crate::clock::{now_ms, until};
use crate::hub::{Frame, InboxHandle, Link, Queue};
use crate::metrics::{count, gauge_add};
use crate::pacer::Pacer;
use crate::people::{KeyRefusal, Person, ProxyIdentity};
use crate::server::AppState;

/// What an anonymous visitor's inbox is closed with: how to get in.
const WHO_ARE_YOU: &str = "an inbox is a person's: open the inbox link you were given, or \
     sign in through the gateway's proxy";

/// The upgrade handler.
pub async fn inbox_endpoint(
    State(state): State<AppState>,
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
        // At debug level, as a tab's (transport/tab.rs): entered on every poll.
        let span = tracing::debug_span!("inbox");
        tracker.track_future(
            async move {
                gauge_add(&state.hub.metrics().connection_tasks, 1);
                let mut socket = socket;
                let closing = match Box::pin(admit(&mut socket, &state, proxied)).await {
                    Ok((handle, queue)) => {
                        // Its key is shown: it is never cut to make room for connections
                        // that have shown none.
                        if let Some(standing) = &standing {
                            let _ = standing.show_key();
                        }
                        // On a shared store, the sessions of the person's requests this node
                        // does not hold yet; their requests follow the snapshot.
                        Box::pin(state.hub.gather_inbox(&handle)).await;
                        serve(&mut socket, &state, &handle, queue).await
                    }
                    Err(closing) => closing,
                };
                if let Some(closing) = closing {
                    Box::pin(close_with(&mut socket, closing)).await;
                }
                gauge_add(&state.hub.metrics().connection_tasks, -1);
            }
            .instrument(span),
        )
    })
}

/// Reads the hello, says who the person is, and opens their inbox.
async fn admit(
    socket: &mut WebSocket,
    state: &AppState,
    proxied: ProxyIdentity,
) -> Result<(InboxHandle, Queue), Option<Closing>> {
    let with = |code, reason: &'static str| Err(Some(Closing::with(code, reason)));
    let hello = tokio::select! {
        hello = tokio::time::timeout(state.hub.limits().hello_timeout, socket.next()) => hello,
        () = state.shutdown.cancelled() => return with(close::GOING_AWAY, "shutting down"),
    };
    let key = match hello {
        Ok(Some(Ok(Message::Text(text)))) => match serde_json::from_str::<FromInbox>(&text) {
            Ok(FromInbox::Hello { key }) => key,
            _ => return with(close::MALFORMED, "the first frame must be hello"),
        },
        Ok(Some(Err(error))) => {
            let (code, reason) = code_for_read_error(&error, state.hub.metrics()).ok_or(None)?;
            return Err(Some(Closing::after_bad_input(code, reason)));
        }
        Ok(None | Some(Ok(Message::Close(_)))) => return Err(None),
        Ok(Some(Ok(_))) => return with(close::MALFORMED, "the first frame must be hello"),
        Err(_) => return with(close::TOO_SLOW, "no hello in time"),
    };
    // Signed in at the proxy: that is who is here, whatever key the page holds.
    let person = match (proxied, key.as_deref().filter(|key| !key.is_empty())) {
        (ProxyIdentity::Person(user), _) => Person::named(&user, Via::Proxy),
        (ProxyIdentity::None, Some(key)) => match state.hub.keys().identify_inbox(key, now_ms()) {
            Ok(person) => person,
            Err(KeyRefusal::Expired) => {
                return with(
                    close::BAD_KEY,
                    "this inbox link has expired; ask for a new one",
                );
            }
            Err(_) => return with(close::BAD_KEY, "this is not an inbox link of this gateway"),
        },
        (ProxyIdentity::None, None) => return with(close::BAD_KEY, WHO_ARE_YOU),
    };
    let (link, queue) = Link::new(state.hub.limits().tab_queue);
    match state.hub.open_inbox(person, link) {
        Ok(handle) => Ok((handle, queue)),
        Err(refused) => Err(Some(Closing::with(refused.close_code(), refused.reason()))),
    }
}

/// Runs an open inbox until it ends; how to close it, if with a code.
async fn serve(
    socket: &mut WebSocket,
    state: &AppState,
    handle: &InboxHandle,
    mut queue: Queue,
) -> Option<Closing> {
    let limits = state.hub.limits();
    let mut keepalive = Keepalive::new(limits.ping_interval);
    let mut pacer = Pacer::new(limits.tab_frames_per_second);
    let mut watch = Watch {
        queue: &mut queue,
        keepalive: &mut keepalive,
        metrics: state.hub.metrics(),
    };
    let mut link_expiry = handle
        .person()
        .expires_ms
        .map(|expires_ms| Box::pin(tokio::time::sleep(until(expires_ms))));
    loop {
        let event = match link_expiry.as_mut() {
            None => next_event(socket, &mut watch).await,
            Some(expiry) => tokio::select! {
                biased;
                () = expiry.as_mut() => return Some(expired()),
                event = next_event(socket, &mut watch) => event,
            },
        };
        match step(socket, &mut watch, &mut pacer, event).await {
            Step::Continue => {}
            Step::End(ending) => return ending.map(|(code, reason)| Closing::with(code, reason)),
            Step::Failed(code, reason) => return Some(Closing::after_bad_input(code, reason)),
            Step::Text(text) => {
                let reply = Box::pin(handle_frame(handle, &text)).await;
                if let Some((frame, refused_for_who)) = reply {
                    if refused_for_who && !pacer.charge(COSTLY_FRAME - 1) {
                        count(&state.hub.metrics().closed_too_many_frames);
                        return Some(Closing::with(close::TOO_MANY_FRAMES, "too many frames"));
                    }
                    handle.reply(frame);
                }
                if handle.person().expired_at(now_ms()) {
                    return Some(expired());
                }
            }
        }
    }
}

fn expired() -> Closing {
    Closing::with(
        close::BAD_KEY,
        "this inbox link has expired; ask for a new one",
    )
}

/// Handles one frame: the reply, if any, and whether it is a refusal because of who sent it.
async fn handle_frame(handle: &InboxHandle, text: &str) -> Option<(Frame, bool)> {
    let rejected = match serde_json::from_str::<FromInbox>(text) {
        Ok(FromInbox::Answer {
            session,
            id,
            response,
        }) => handle.answer(&session, &id, response).await?,
        Ok(FromInbox::Decline {
            session,
            id,
            dismiss,
        }) => handle.decline(&session, &id, dismiss).await?,
        Ok(FromInbox::Hello { .. }) => return Some((bad_frame("hello was already said"), false)),
        Err(e) => return Some((bad_frame(&format!("not an inbox frame: {e}")), false)),
    };
    let for_who = rejected.text().contains(r#""code":"forbidden""#);
    Some((rejected, for_who))
}

fn bad_frame(message: &str) -> Frame {
    Frame::encode(&askgate_protocol::wire::ToTab::Error {
        code: ReplyCode::BadFrame.as_str().to_owned(),
        message: message.to_owned(),
    })
}
