//! `GET /v1/agent`: an agent connection carrying any number of sessions.
//!
//! Frames take effect in the order they arrive, then wait concurrently (up to [`IN_FLIGHT`]
//! at once) so that many asks share the store's group commits; replies go through the
//! connection's queue, in the hub's order.

use std::collections::HashMap;
use std::sync::Arc;

use askgate_protocol::close;
use askgate_protocol::wire::{AgentFrame, read_agent_frame};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tracing::Instrument as _;

use super::agent_frames;
use super::closing::{Closing, close_with};
use super::socket::{Step, next_event, socket_config, step};
use super::upgrade::Upgrade;
use super::upgrade::WebSocket;
use super::watch::{Keepalive, Watch, poll_once};
use crate::hub::Link;
use crate::keys::AgentRefusal;
use crate::metrics::gauge_add;
use crate::pacer::Pacer;
use crate::scope::SessionScope;
use crate::server::AppState;

/// Frames of one connection being handled at once; beyond it, reading pauses.
pub(super) const IN_FLIGHT: usize = 256;

/// The upgrade handler; the agent key is checked on the upgrade request.
pub async fn agent_endpoint(
    State(state): State<AppState>,
    headers: HeaderMap,
    upgrade: Upgrade,
) -> Response {
    let admitted = state
        .agent_keys
        .admit(&headers)
        .map(|scope| (scope, state.agent_keys.key_id(&headers)));
    let tracker = state.tracker.clone();
    let limits = state.hub.limits();
    let config = socket_config(
        limits,
        limits.max_agent_frame_bytes,
        crate::config::AGENT_READ_BUFFER_BYTES,
    );
    upgrade.on_upgrade(config, limits.upgrade_timeout, move |socket| {
        // At debug level, as a tab's (transport/tab.rs): entered on every poll.
        let span = tracing::debug_span!("agent");
        tracker.track_future(run(socket, state, admitted).instrument(span))
    })
}

/// The agent's task. Not an `async fn`, for the reason the tab's is not (its arguments are
/// held once, not twice).
#[expect(
    clippy::manual_async_fn,
    reason = "an async fn would hold its arguments twice"
)]
fn run(
    mut socket: WebSocket,
    state: AppState,
    admitted: Result<(SessionScope, String), AgentRefusal>,
) -> impl Future<Output = ()> + Send {
    async move {
        let (scope, key_id) = match admitted {
            Ok(admitted) => admitted,
            Err(refusal) => {
                let closing = Closing::with(close::BAD_KEY, refusal.message());
                Box::pin(close_with(&mut socket, closing)).await;
                return;
            }
        };
        gauge_add(&state.hub.metrics().connection_tasks, 1);
        if let Some(closing) = serve(&mut socket, &state, scope, &key_id).await {
            // Boxed, as every rare wait: a task is as large as its largest state.
            Box::pin(close_with(&mut socket, closing)).await;
        }
        gauge_add(&state.hub.metrics().connection_tasks, -1);
    }
}

async fn serve(
    socket: &mut WebSocket,
    state: &AppState,
    scope: SessionScope,
    key_id: &str,
) -> Option<Closing> {
    let limits = state.hub.limits();
    let (link, mut queue) = Link::new(limits.agent_queue);
    let agent = Arc::new(state.hub.attach_agent_as(link, scope, key_id));
    // Shutdown closes every agent the hub holds; one attached just after it closes here.
    if state.shutdown.is_cancelled() {
        return Some(Closing::with(close::GOING_AWAY, "shutting down"));
    }
    let mut keepalive = Keepalive::new(limits.ping_interval);
    let mut pacer = Pacer::new(limits.agent_frames_per_second);
    let mut in_flight = JoinSet::new();
    let mut acks = AcksInFlight::default();
    let mut watch = Watch {
        queue: &mut queue,
        keepalive: &mut keepalive,
        metrics: state.hub.metrics(),
    };
    let ending = loop {
        // Reap finished frames; wait for one when the limit is reached (backpressure).
        while in_flight.try_join_next().is_some() {}
        if in_flight.len() >= IN_FLIGHT {
            let _ = in_flight.join_next().await;
        }
        let event = next_event(socket, &mut watch).await;
        let text = match step(socket, &mut watch, &mut pacer, event).await {
            Step::Continue => continue,
            Step::End(ending) => break ending.map(|(code, reason)| Closing::with(code, reason)),
            Step::Failed(code, reason) => break Some(Closing::after_bad_input(code, reason)),
            Step::Text(text) => text,
        };
        match read_agent_frame(&text) {
            Ok(frame) => {
                // An ack's change is the deletion it waits for: on a shared store the outcome
                // stays there until it is done, and an ask of the same id right behind the
                // ack would be answered with it. So such an ask waits here for that ack,
                // before it and the frames behind it go on; other frames do not wait.
                if let Some(acked) = acks.waited_on_by(&frame) {
                    let _ = acked.await;
                }
                let done = acks.started(&frame);
                let agent = Arc::clone(&agent);
                let mut task = Box::pin(
                    async move {
                        agent_frames::handle(&agent, frame).await;
                        drop(done);
                    }
                    .in_current_span(),
                );
                // Run up to its first wait here, in the order frames arrive: the hub then
                // sees a frame's change (an ask stored as pending, a cancel withdrawing)
                // before the next frame's, so a `cancel` sent right behind its `ask` finds the
                // request. Only the waiting is concurrent.
                if poll_once(task.as_mut()).await.is_pending() {
                    in_flight.spawn(task);
                }
            }
            Err(e) => agent_frames::bad_frame(&agent, format!("not an agent frame: {e}")),
        }
    };
    // Frames already taken are finished (an ask half-stored must not be dropped midway).
    while in_flight.join_next().await.is_some() {}
    ending
}

/// The acks of one connection still deleting their outcomes, by session and id: each ends
/// when its task drops the sender. At most [`IN_FLIGHT`] are held; ended ones are let go as
/// frames arrive.
#[derive(Default)]
struct AcksInFlight {
    pending: HashMap<(String, String), oneshot::Receiver<()>>,
}

impl AcksInFlight {
    /// What an `ask` must wait for first: the ack of the same session and id, if one is
    /// still deleting.
    fn waited_on_by(&mut self, frame: &AgentFrame) -> Option<oneshot::Receiver<()>> {
        // Most asks come with no ack deleting: no key is made for them.
        if self.pending.is_empty() {
            return None;
        }
        let AgentFrame::Ask(ask) = frame else {
            return None;
        };
        let (Some(session), Some(id)) = (
            ask.session.as_str(),
            ask.id.as_ref().and_then(|id| id.as_str()),
        ) else {
            return None;
        };
        self.pending.remove(&(session.to_owned(), id.to_owned()))
    }

    /// Notes an `ack` starting; what its task drops when it is done (`None` for other frames).
    fn started(&mut self, frame: &AgentFrame) -> Option<oneshot::Sender<()>> {
        self.pending
            .retain(|_, ack| matches!(ack.try_recv(), Err(oneshot::error::TryRecvError::Empty)));
        let AgentFrame::Ack { session, id } = frame else {
            return None;
        };
        let (done, ended) = oneshot::channel();
        self.pending.insert((session.clone(), id.clone()), ended);
        Some(done)
    }
}
