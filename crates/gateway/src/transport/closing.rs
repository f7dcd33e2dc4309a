//! Ending a connection with a close code the peer gets to read: the close frame, then the
//! peer's remaining input drained so that a reset does not discard it; and the code for a
//! read that failed.

use std::time::Duration;

use askgate_protocol::close;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::io::AsyncReadExt as _;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::frame::{CloseFrame, Utf8Bytes};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::upgrade::WebSocket;
use crate::metrics::{Metrics, count};

/// How long a close frame may take to go out.
pub(super) const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);
/// How long, after the close frame, the peer's remaining input is read (and dropped) while
/// waiting for its own close frame. Closing a socket with unread input makes the kernel reset
/// the connection, and a reset can discard the close frame before the peer reads it.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// The most of a peer's unread input read after its bad input, before closing anyway.
const DRAIN_BYTES: usize = 4 * 1024 * 1024;

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
