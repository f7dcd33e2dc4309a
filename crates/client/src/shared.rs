//! What the handles and the connection task share: the settings fixed at connect time, why
//! the task stopped for good (once it has), and the counter that numbers asks.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio_tungstenite::tungstenite::http::HeaderValue;

use crate::backoff::Backoff;
use crate::error::ClientError;

/// The settings the connection task runs with, fixed at connect time.
pub(crate) struct Settings {
    /// The agent endpoint's WebSocket URL.
    pub(crate) url: String,
    /// The `Authorization` header value, `Bearer <key>`; checked to be a valid header.
    pub(crate) authorization: Option<HeaderValue>,
    pub(crate) backoff: Backoff,
    pub(crate) connect_timeout: Duration,
    pub(crate) ping_interval: Duration,
    pub(crate) max_frame_bytes: usize,
}

impl fmt::Debug for Settings {
    /// The key stays out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("url", &self.url)
            .field("key", &self.authorization.as_ref().map(|_| "<redacted>"))
            .field("backoff", &self.backoff)
            .finish_non_exhaustive()
    }
}

/// What every clone and the connection task share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) settings: Arc<Settings>,
    /// Why the connection task stopped for good; set before its command channel closes.
    pub(crate) fatal: OnceLock<ClientError>,
    /// Numbers asks, so a late withdrawal cannot hit a later ask of the same request id.
    pub(crate) next_ticket: AtomicU64,
}

impl Shared {
    pub(crate) fn new(settings: Arc<Settings>) -> Shared {
        Shared {
            settings,
            fatal: OnceLock::new(),
            next_ticket: AtomicU64::new(0),
        }
    }

    /// The error for a call the connection task can no longer take.
    pub(crate) fn error(&self) -> ClientError {
        self.fatal.get().cloned().unwrap_or(ClientError::Closed)
    }
}
