//! [`ClientBuilder`]: where the gateway is, the key, and how the connection behaves; and the
//! two ways to start a [`Client`] (`Client::connect`, `Client::builder`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio_tungstenite::tungstenite::http::HeaderValue;

use crate::backoff::Backoff;
use crate::client::Client;
use crate::connection::{DialError, dial};
use crate::endpoint::agent_url;
use crate::error::ClientError;
use crate::shared::Settings;

/// How long one connection attempt (TCP, then the WebSocket upgrade) may take. The first
/// attempt fails [`ClientBuilder::connect`]; later ones are retried after a backoff.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the client pings the gateway. A socket that stays silent for two periods
/// (no pong, no frame) counts as dropped and is replaced, so a half-open TCP connection
/// does not hold asks forever.
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(20);
/// The shortest ping period honoured; shorter ones are raised to it.
pub const MIN_PING_INTERVAL: Duration = Duration::from_millis(100);
/// The longest ping period honoured; longer ones are lowered to it.
pub const MAX_PING_INTERVAL: Duration = Duration::from_secs(3600);
/// The largest `ask` frame sent, in bytes: the gateway's default limit on what an agent sends
/// (`--max-agent-frame-bytes`). A larger ask fails with [`ClientError::TooLarge`] instead of
/// getting the whole connection closed with 4413.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 1024 * 1024;

/// Configures and connects a [`Client`].
///
/// ```no_run
/// # async fn demo() -> Result<(), askgate_client::ClientError> {
/// use std::time::Duration;
/// use askgate_client::{Backoff, ClientBuilder};
///
/// let client = ClientBuilder::new("http://127.0.0.1:8080")
///     .key("agent-key")
///     .backoff(Backoff { max: Duration::from_secs(30), ..Backoff::default() })
///     .connect()
///     .await?;
/// # drop(client);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ClientBuilder {
    url: String,
    key: Option<String>,
    backoff: Backoff,
    connect_timeout: Duration,
    ping_interval: Duration,
    max_frame_bytes: usize,
}

impl fmt::Debug for ClientBuilder {
    /// The key stays out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("url", &self.url)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("backoff", &self.backoff)
            .field("connect_timeout", &self.connect_timeout)
            .field("ping_interval", &self.ping_interval)
            .field("max_frame_bytes", &self.max_frame_bytes)
            .finish()
    }
}

impl ClientBuilder {
    /// A builder for the gateway at `url`: the agent endpoint `ws://host:port/v1/agent`, or
    /// the gateway's base URL `http://host:port` (see [`agent_url`]).
    pub fn new(url: impl Into<String>) -> Self {
        ClientBuilder {
            url: url.into(),
            key: None,
            backoff: Backoff::default(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            ping_interval: DEFAULT_PING_INTERVAL,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
        }
    }

    /// The agent key, sent as `Authorization: Bearer <key>`; a gateway in local mode needs
    /// none.
    #[must_use]
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The reconnect schedule.
    #[must_use]
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// See [`DEFAULT_CONNECT_TIMEOUT`].
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// See [`DEFAULT_PING_INTERVAL`]; kept between [`MIN_PING_INTERVAL`] and
    /// [`MAX_PING_INTERVAL`].
    #[must_use]
    pub fn ping_interval(mut self, interval: Duration) -> Self {
        self.ping_interval = interval;
        self
    }

    /// See [`DEFAULT_MAX_FRAME_BYTES`]; match the gateway's `--max-agent-frame-bytes`.
    #[must_use]
    pub fn max_frame_bytes(mut self, bytes: usize) -> Self {
        self.max_frame_bytes = bytes;
        self
    }

    /// Connects, and starts the task that keeps the connection up.
    ///
    /// Only the first connection is made here; later ones happen in the background. A
    /// gateway that refuses the key accepts the upgrade and then closes with 4401, so a wrong
    /// key shows on the first call, as [`ClientError::Fatal`], not here.
    ///
    /// # Errors
    /// [`ClientError::Url`] for an unusable URL; [`ClientError::Connect`] when the gateway
    /// cannot be reached (or the key is not a valid header value); [`ClientError::Fatal`]
    /// when the upgrade is refused with an HTTP client error.
    pub async fn connect(self) -> Result<Client, ClientError> {
        let url = agent_url(&self.url)?;
        let authorization =
            match &self.key {
                None => None,
                Some(key) => Some(HeaderValue::from_str(&format!("Bearer {key}")).map_err(
                    |_| ClientError::Connect {
                        url: url.clone(),
                        message: "the key is not a valid HTTP header value".to_owned(),
                    },
                )?),
            };
        let settings = Arc::new(Settings {
            url,
            authorization,
            backoff: self.backoff,
            connect_timeout: self.connect_timeout,
            ping_interval: self
                .ping_interval
                .clamp(MIN_PING_INTERVAL, MAX_PING_INTERVAL),
            max_frame_bytes: self.max_frame_bytes,
        });
        match dial(&settings).await {
            Ok(socket) => Ok(Client::spawn(settings, socket)),
            Err(DialError::Retry(message)) => Err(ClientError::Connect {
                url: settings.url.clone(),
                message,
            }),
            Err(DialError::Fatal(error)) => Err(error),
        }
    }
}

/// The two ways to start a client.
impl Client {
    /// Connects to the gateway at `url` with the default settings (see [`ClientBuilder`] for
    /// the others).
    ///
    /// `url` is the agent endpoint `ws://host:port/v1/agent`, or the gateway's base URL
    /// `http://host:port`, from which the endpoint is derived (see
    /// [`agent_url`]). `key` is the agent key, if the gateway requires one.
    ///
    /// # Errors
    /// As [`ClientBuilder::connect`].
    pub async fn connect(url: &str, key: Option<String>) -> Result<Client, ClientError> {
        let mut builder = ClientBuilder::new(url);
        if let Some(key) = key {
            builder = builder.key(key);
        }
        builder.connect().await
    }

    /// A builder, for a key, backoff or timeouts.
    pub fn builder(url: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(url)
    }
}
