//! [`Client`]: the handle callers hold, cheap to clone and usable from many tasks.
//!
//! Every method turns into a command for the connection task and awaits its reply on a
//! oneshot channel. An `ask` future carries a drop guard: dropping it before the outcome
//! arrives withdraws the request, as a cancelled agent run should.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use askgate_protocol::wire::AgentFrame;
use askgate_protocol::{ErrorCode, FieldError, SessionId};
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument as _;

use crate::ask::{Answered, Ask, Opened, new_id};
use crate::connection::{Command, Connection, Socket};
use crate::error::ClientError;
use crate::pending::Key;
use crate::shared::{Settings, Shared};

/// A connection to an askgate gateway's agent endpoint, shared by every clone.
///
/// One background task owns the WebSocket. It reconnects with backoff when the socket drops,
/// re-sends every ask still waiting (same id, so the gateway neither duplicates a question
/// nor loses an answer given meanwhile), delivers each outcome once and acknowledges it. The
/// task ends when the last clone is dropped.
#[derive(Clone)]
pub struct Client {
    /// To the connection task; it closes when the task stops for good.
    commands: mpsc::UnboundedSender<Command>,
    shared: Arc<Shared>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.shared.settings.url)
            .field("stopped", &self.commands.is_closed())
            .finish()
    }
}

impl Client {
    /// Starts the connection task on a connected socket.
    pub(crate) fn spawn(settings: Arc<Settings>, socket: Socket) -> Client {
        let (commands, receiver) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared::new(Arc::clone(&settings)));
        let span = tracing::debug_span!("askgate_client", url = %settings.url);
        let connection = Connection::new(settings, Arc::clone(&shared), receiver);
        tokio::spawn(connection.run(socket).instrument(span));
        Client { commands, shared }
    }

    /// The agent endpoint's WebSocket URL.
    pub fn url(&self) -> &str {
        &self.shared.settings.url
    }

    /// Opens `session` (a new random id when `None`) and returns the link people answer at.
    ///
    /// An `ask` opens its session by itself; this is for handing people the link first.
    ///
    /// # Errors
    /// [`ClientError::Rejected`] for an invalid session id (checked here, since the
    /// gateway's `error` reply names no session); [`ClientError::Forbidden`] when the agent
    /// key may not act on the session; [`ClientError::Gateway`] when the gateway holds the
    /// most sessions it allows; [`ClientError::Fatal`] once the client has stopped.
    pub async fn open(&self, session: Option<&str>) -> Result<Opened, ClientError> {
        let session = match session {
            None => new_id(),
            Some(text) => SessionId::parse(text)
                .map_err(|message| {
                    ClientError::Rejected(vec![FieldError::new(
                        "session",
                        ErrorCode::InvalidValue,
                        message,
                    )])
                })?
                .to_string(),
        };
        let (reply, opened) = oneshot::channel();
        self.send(Command::Open { session, reply })?;
        opened.await.unwrap_or_else(|_| Err(self.shared.error()))
    }

    /// Asks people `ask` and waits, across reconnects, for how it ends: answered, declined,
    /// timed out, or withdrawn (by someone else's `cancel`).
    ///
    /// Dropping the future before it completes withdraws the request: the gateway tells the
    /// tabs to drop it. The request id is fixed before the first send (generated when
    /// `ask.id` is `None`), so every re-send names the same request.
    ///
    /// # Errors
    /// [`ClientError::Rejected`] when the questions (or the session, id, timeout, title) do
    /// not pass the gateway's validation; [`ClientError::Forbidden`] when the agent key may
    /// not act on the session; [`ClientError::TooLarge`];
    /// [`ClientError::Duplicate`] when this client already waits on the same id;
    /// [`ClientError::Fatal`] once the client has stopped.
    pub async fn ask(&self, mut ask: Ask) -> Result<Answered, ClientError> {
        let key: Key = (ask.session.clone(), ask.request_id().to_owned());
        let frame = ask.into_frame();
        let text = serde_json::to_string(&AgentFrame::Ask(Box::new(frame)))
            .map_err(|e| ClientError::Protocol(format!("could not encode the ask: {e}")))?;
        let limit = self.shared.settings.max_frame_bytes;
        if text.len() > limit {
            return Err(ClientError::TooLarge {
                size: text.len(),
                limit,
            });
        }
        let ticket = self.shared.next_ticket.fetch_add(1, Ordering::Relaxed);
        let (reply, outcome) = oneshot::channel();
        self.send(Command::Ask {
            key: key.clone(),
            ticket,
            text,
            reply,
        })?;
        let guard = WithdrawOnDrop {
            commands: self.commands.clone(),
            key: Some(key),
            ticket,
        };
        let result = outcome.await;
        guard.disarm();
        result.unwrap_or_else(|_| Err(self.shared.error()))
    }

    /// Withdraws request `id` of `session`, whoever asked it (an earlier run of this agent,
    /// say), and returns how it ended: `withdrawn`, or the outcome it already had. The
    /// outcome is acknowledged, as every outcome this client receives. The `cancel` is sent
    /// again after a reconnect until the gateway answers.
    ///
    /// To withdraw an ask of this client, drop its future instead.
    ///
    /// # Errors
    /// [`ClientError::Gateway`] `not_found` when the gateway holds no such request (never
    /// asked, or its outcome was already acknowledged), or `store_failed` when it could not
    /// store the withdrawal (the request stays open; try again); [`ClientError::Forbidden`]
    /// when the agent key may not act on the session; [`ClientError::Duplicate`] when this client is asking that very request;
    /// [`ClientError::Fatal`] once the client has stopped.
    pub async fn withdraw(&self, session: &str, id: &str) -> Result<Answered, ClientError> {
        let key: Key = (session.to_owned(), id.to_owned());
        let ticket = self.shared.next_ticket.fetch_add(1, Ordering::Relaxed);
        let (reply, outcome) = oneshot::channel();
        self.send(Command::WithdrawRequest { key, ticket, reply })?;
        outcome.await.unwrap_or_else(|_| Err(self.shared.error()))
    }

    /// Acknowledges the outcome of request `id` of `session`, collected some other way (the
    /// HTTP API, say): the gateway forgets it. Outcomes this client receives are acknowledged
    /// on their own. Sent again after a reconnect, as acknowledgements are idempotent, unless
    /// the gateway refused it as outside the agent key's scope (the gateway answers an
    /// acknowledgement only when it refuses it, so that refusal is logged, not returned).
    ///
    /// # Errors
    /// [`ClientError::Fatal`] once the client has stopped.
    pub fn acknowledge(&self, session: &str, id: &str) -> Result<(), ClientError> {
        self.send(Command::Ack {
            key: (session.to_owned(), id.to_owned()),
        })
    }

    fn send(&self, command: Command) -> Result<(), ClientError> {
        self.commands.send(command).map_err(|_| self.shared.error())
    }
}

/// Withdraws a request when the `ask` future that awaits it is dropped early.
struct WithdrawOnDrop {
    commands: mpsc::UnboundedSender<Command>,
    /// `None` once disarmed.
    key: Option<Key>,
    ticket: u64,
}

impl WithdrawOnDrop {
    /// The outcome arrived: nothing to withdraw.
    fn disarm(mut self) {
        self.key = None;
    }
}

impl Drop for WithdrawOnDrop {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            tracing::debug!(session = %key.0, request = %key.1, "ask dropped; withdrawing");
            // The task may be gone (stopped for good): then there is nothing to withdraw from.
            let _ = self.commands.send(Command::Withdraw {
                key,
                ticket: self.ticket,
            });
        }
    }
}
