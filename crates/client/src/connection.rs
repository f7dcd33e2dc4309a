//! The connection task: the one owner of the socket, and the only code that touches it.
//!
//! Callers never see the socket. They send [`Command`]s; the task writes frames, reads the
//! gateway's replies into the [`Pending`] ledger, and when the socket goes it waits out a
//! [backoff](crate::Backoff), dials again and re-sends everything still owed. The task ends
//! when every [`Client`](crate::Client) is gone and nothing is owed, or when the gateway
//! closes with a code that forbids coming back.

use std::sync::Arc;
use std::time::Duration;

use askgate_protocol::close;
use askgate_protocol::wire::ToAgent;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::http::header::AUTHORIZATION;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::ask::{Answered, Opened};
use crate::error::ClientError;
use crate::pending::{Key, Pending, Reply};
use crate::shared::{Settings, Shared};

/// How long the task keeps going after the last `Client` is dropped, to deliver withdrawals
/// of asks dropped just before. Past it, their requests stay open until their deadline.
pub(crate) const DRAIN_GRACE: Duration = Duration::from_secs(5);
/// The wait before withdrawals are sent again after the gateway's store failed on one.
const STORE_RETRY: Duration = Duration::from_secs(1);
/// How long a closing handshake may take before the socket is simply dropped.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

pub(crate) type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// What callers ask of the connection task.
pub(crate) enum Command {
    /// Open `session` (named by the client, so the `opened` reply can be matched).
    Open {
        session: String,
        reply: Reply<Opened>,
    },
    /// Ask; `text` is the encoded `ask` frame, with its id fixed.
    Ask {
        key: Key,
        ticket: u64,
        text: String,
        reply: Reply<Answered>,
    },
    /// The ask of `ticket` was dropped: withdraw it.
    Withdraw { key: Key, ticket: u64 },
    /// Withdraw `key`, whoever asked it, and reply with how it ended.
    WithdrawRequest {
        key: Key,
        ticket: u64,
        reply: Reply<Answered>,
    },
    /// Acknowledge the outcome of `key`.
    Ack { key: Key },
}

/// Why a dial failed.
pub(crate) enum DialError {
    /// Worth another try later (refused, timed out, server error).
    Retry(String),
    /// Not worth another try.
    Fatal(ClientError),
}

/// What this client takes from the gateway. Its outcome frames repeat a custom answer three
/// times over (one escaped twice), and go out as one frame: a frame limit below the message
/// limit (tungstenite's defaults are 16 and 64 MiB) would refuse a large one, and the
/// reconnect that follows would get the same outcome again, for ever.
fn limits() -> tungstenite::protocol::WebSocketConfig {
    let limit = 64 << 20;
    tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(limit))
        .max_frame_size(Some(limit))
}

/// Makes one connection attempt.
pub(crate) async fn dial(settings: &Settings) -> Result<Socket, DialError> {
    let mut request = settings.url.as_str().into_client_request().map_err(|e| {
        DialError::Fatal(ClientError::Url {
            url: settings.url.clone(),
            message: e.to_string(),
        })
    })?;
    if let Some(authorization) = &settings.authorization {
        request
            .headers_mut()
            .insert(AUTHORIZATION, authorization.clone());
    }
    // TCP_NODELAY: asks and acks are small frames; Nagle would hold one behind another.
    let connecting = tokio_tungstenite::connect_async_with_config(request, Some(limits()), true);
    match tokio::time::timeout(settings.connect_timeout, connecting).await {
        Ok(Ok((socket, _))) => Ok(socket),
        Err(_) => Err(DialError::Retry("timed out".to_owned())),
        Ok(Err(tungstenite::Error::Http(response))) => {
            let status = response.status();
            let message = format!("the WebSocket upgrade was refused with HTTP {status}");
            // A client error other than "too slow" or "too many" will not go away by itself.
            if status.is_client_error() && !matches!(status.as_u16(), 408 | 429) {
                Err(DialError::Fatal(ClientError::Fatal {
                    code: status.as_u16(),
                    reason: message,
                }))
            } else {
                Err(DialError::Retry(message))
            }
        }
        Ok(Err(tungstenite::Error::Url(error))) => Err(DialError::Fatal(ClientError::Url {
            url: settings.url.clone(),
            message: error.to_string(),
        })),
        Ok(Err(error)) => Err(DialError::Retry(error.to_string())),
    }
}

/// Whether a close code means reconnecting cannot help: askgate's 44xx codes other than
/// "too slow" and "too many frames", and the standard codes for a peer that broke the
/// protocol. Everything else (1000, 1001, 1006, 1013...) reconnects.
pub(crate) fn is_fatal(code: u16) -> bool {
    !close::should_reconnect(code)
        && (matches!(code, 1002 | 1003 | 1007 | 1008 | 1009 | 1010) || (4000..5000).contains(&code))
}

/// How one socket's life ended.
enum Ended {
    /// Reconnect. `heard`: the gateway sent a frame first, so it was serving and the backoff
    /// can start again from its first step.
    Dropped { reason: String, heard: bool },
    /// Stop, failing every caller.
    Fatal(ClientError),
    /// Every client is gone and nothing is owed.
    Finished,
}

/// The connection task's state.
pub(crate) struct Connection {
    settings: Arc<Settings>,
    shared: Arc<Shared>,
    /// From every `Client` clone and every in-flight ask's drop guard; the channel is
    /// unbounded because a drop guard cannot wait, and a lost withdrawal would leave a
    /// question open in people's tabs. Each command stands for a caller's call, so callers
    /// bound it.
    commands: mpsc::UnboundedReceiver<Command>,
    /// Every sender is gone: finish what is owed, then end.
    orphaned: bool,
    /// A socket is up: a frame a command makes now goes out on it (else on the next one).
    online: bool,
    /// When an orphaned task gives up on what is still owed.
    drain_until: Option<Instant>,
    pending: Pending,
}

impl Connection {
    pub(crate) fn new(
        settings: Arc<Settings>,
        shared: Arc<Shared>,
        commands: mpsc::UnboundedReceiver<Command>,
    ) -> Self {
        Connection {
            settings,
            shared,
            commands,
            orphaned: false,
            online: false,
            drain_until: None,
            pending: Pending::default(),
        }
    }

    /// Serves `first`, then reconnects until finished or told to stop.
    pub(crate) async fn run(mut self, first: Socket) {
        let mut socket = Some(first);
        let mut attempt: u32 = 0;
        loop {
            if let Some(live) = socket.take() {
                self.online = true;
                let ended = self.serve(live).await;
                self.online = false;
                match ended {
                    Ended::Finished => {
                        tracing::debug!("every client is gone; connection task done");
                        return;
                    }
                    Ended::Fatal(error) => return self.fail(&error),
                    Ended::Dropped { reason, heard } => {
                        if heard {
                            attempt = 0;
                        }
                        self.pending.disconnected();
                        tracing::debug!(%reason, "connection lost; reconnecting");
                    }
                }
            }
            let delay = self.settings.backoff.delay(attempt);
            attempt = attempt.saturating_add(1);
            if !self.wait(delay).await {
                return;
            }
            match dial(&self.settings).await {
                Ok(live) => {
                    tracing::debug!(attempt, "reconnected");
                    socket = Some(live);
                }
                Err(DialError::Fatal(error)) => return self.fail(&error),
                Err(DialError::Retry(reason)) => {
                    tracing::debug!(%reason, attempt, "reconnect failed");
                }
            }
        }
    }

    /// Waits `delay` while offline, taking commands; `false` when the task should end.
    async fn wait(&mut self, delay: Duration) -> bool {
        let sleep = tokio::time::sleep(delay);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                () = &mut sleep => return true,
                () = until(self.drain_until) => return false,
                command = self.commands.recv(), if !self.orphaned => match command {
                    // Whatever it would send now is sent on the next socket.
                    Some(command) => drop(self.apply(command)),
                    None => {
                        if !self.orphan() {
                            return false;
                        }
                    }
                },
            }
        }
    }

    /// One socket's life: re-send what is owed, then relay frames until it ends.
    async fn serve(&mut self, mut socket: Socket) -> Ended {
        let mut heard = false;
        for text in self.pending.connected() {
            if let Err(error) = socket.feed(Message::text(text)).await {
                return dropped(&error, heard);
            }
        }
        if let Err(error) = socket.flush().await {
            return dropped(&error, heard);
        }
        let period = self.settings.ping_interval;
        let mut ping = tokio::time::interval_at(Instant::now() + period, period);
        ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut last_heard = Instant::now();
        let mut retry_withdrawals: Option<Instant> = None;
        loop {
            let reply = tokio::select! {
                message = socket.next() => {
                    last_heard = Instant::now();
                    match message {
                        Some(Ok(Message::Text(text))) => {
                            heard = true;
                            self.receive(&text)
                        }
                        Some(Ok(Message::Close(frame))) => return closed(frame, heard),
                        Some(Ok(_)) => None,
                        Some(Err(error)) => return dropped(&error, heard),
                        None => return Ended::Dropped { reason: "the socket ended".to_owned(), heard },
                    }
                }
                command = self.commands.recv(), if !self.orphaned => match command {
                    Some(command) => self.apply(command),
                    None => {
                        if !self.orphan() {
                            return finish(socket).await;
                        }
                        None
                    }
                },
                _ = ping.tick() => {
                    if last_heard.elapsed() >= period * 2 {
                        return Ended::Dropped { reason: "the gateway went silent".to_owned(), heard };
                    }
                    if let Err(error) = socket.send(Message::Ping(Default::default())).await {
                        return dropped(&error, heard);
                    }
                    None
                }
                () = until(self.drain_until) => {
                    tracing::debug!("gave up delivering withdrawals");
                    return finish(socket).await;
                }
                () = until(retry_withdrawals) => {
                    retry_withdrawals = None;
                    for text in self.pending.withdrawals_to_retry().unwrap_or_default() {
                        if let Err(error) = socket.feed(Message::text(text)).await {
                            return dropped(&error, heard);
                        }
                    }
                    if let Err(error) = socket.flush().await {
                        return dropped(&error, heard);
                    }
                    None
                }
            };
            if retry_withdrawals.is_none() && self.pending.withdrawal_failed() {
                retry_withdrawals = Some(Instant::now() + STORE_RETRY);
            }
            if let Some(text) = reply
                && let Err(error) = socket.send(Message::text(text)).await
            {
                return dropped(&error, heard);
            }
            if self.orphaned && self.pending.is_idle() {
                return finish(socket).await;
            }
        }
    }

    /// A command; returns the frame to send for it, if any.
    fn apply(&mut self, command: Command) -> Option<String> {
        match command {
            Command::Open { session, reply } => self.pending.open(&session, reply),
            Command::Ask {
                key,
                ticket,
                text,
                reply,
            } => self.pending.ask(key, ticket, text, reply, self.online),
            Command::Withdraw { key, ticket } => self.pending.withdraw(&key, ticket),
            Command::WithdrawRequest { key, ticket, reply } => {
                self.pending
                    .withdraw_request(key, ticket, reply, self.online)
            }
            Command::Ack { key } => Some(self.pending.acknowledge(key)),
        }
    }

    /// A text frame from the gateway; returns the frame to send in response, if any.
    fn receive(&mut self, text: &str) -> Option<String> {
        match serde_json::from_str::<ToAgent>(text) {
            Ok(frame) => self.pending.receive(frame),
            Err(error) => {
                // A newer gateway may send frames this client does not know: skip them.
                tracing::warn!(%error, "skipped a frame the client cannot read");
                None
            }
        }
    }

    /// Every sender is gone; `false` when nothing is owed and the task can end now.
    fn orphan(&mut self) -> bool {
        self.orphaned = true;
        if self.pending.is_idle() {
            return false;
        }
        self.drain_until = Some(Instant::now() + DRAIN_GRACE);
        true
    }

    /// Stops for good: callers waiting now and calling later get `error`.
    fn fail(mut self, error: &ClientError) {
        tracing::warn!(%error, "the askgate client has stopped");
        // Set before the channel closes, so a caller whose send fails finds the reason.
        let _ = self.shared.fatal.set(error.clone());
        self.pending.fail(error);
        self.commands.close();
        while let Ok(command) = self.commands.try_recv() {
            match command {
                Command::Open { reply, .. } => drop(reply.send(Err(error.clone()))),
                Command::Ask { reply, .. } | Command::WithdrawRequest { reply, .. } => {
                    drop(reply.send(Err(error.clone())));
                }
                Command::Withdraw { .. } | Command::Ack { .. } => {}
            }
        }
    }
}

/// Sleeps until `deadline`; never wakes without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

fn dropped(error: &tungstenite::Error, heard: bool) -> Ended {
    Ended::Dropped {
        reason: error.to_string(),
        heard,
    }
}

fn closed(frame: Option<CloseFrame>, heard: bool) -> Ended {
    let (code, reason) = match frame {
        Some(frame) => (u16::from(frame.code), frame.reason.to_string()),
        None => (1005, String::new()),
    };
    if is_fatal(code) {
        return Ended::Fatal(ClientError::Fatal { code, reason });
    }
    Ended::Dropped {
        reason: format!("the gateway closed with {code} {reason}"),
        // Told to slow down (too many frames, too slow, busy, failing): the waits go on
        // growing though frames came first, or a re-send owed after every reconnect would
        // bring the same close ten times a second.
        heard: heard && !asks_to_back_off(code),
    }
}

/// Whether the gateway closed with `code` to have the client come back more slowly.
fn asks_to_back_off(code: u16) -> bool {
    matches!(
        code,
        close::TOO_MANY_FRAMES | close::TOO_SLOW | close::TRY_AGAIN_LATER | 1011
    )
}

/// Closes a socket the client no longer needs.
async fn finish(mut socket: Socket) -> Ended {
    let frame = CloseFrame {
        code: CloseCode::Normal,
        reason: "client finished".into(),
    };
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, socket.close(Some(frame))).await;
    Ended::Finished
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_that_asks_to_back_off_keeps_the_waits_growing() {
        let closed_with = |code: u16| {
            let frame = CloseFrame {
                code: code.into(),
                reason: "".into(),
            };
            match closed(Some(frame), true) {
                Ended::Dropped { heard, .. } => heard,
                _ => panic!("{code} is not fatal"),
            }
        };
        for code in [4429, 4408, 1013, 1011] {
            assert!(!closed_with(code), "{code} resets the waits");
        }
        for code in [1001, 1006, 1012] {
            assert!(closed_with(code), "{code} keeps them growing");
        }
    }

    #[test]
    fn only_hopeless_codes_are_fatal() {
        for code in [4400, 4401, 4404, 4413, 1002, 1008] {
            assert!(is_fatal(code), "{code}");
        }
        for code in [1000, 1001, 1005, 1006, 1011, 1012, 1013, 4408, 4429] {
            assert!(!is_fatal(code), "{code}");
        }
    }
}
