//! # askgate-client
//!
//! The agent side of [askgate](https://github.com/askgate/askgate): put structured questions
//! to people through the gateway and await their answers, over one WebSocket that survives
//! drops.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use askgate_client::{Ask, Client};
//! use serde_json::json;
//!
//! # async fn demo() -> Result<(), askgate_client::ClientError> {
//! // The agent endpoint, or the gateway's base URL `http://127.0.0.1:8080`.
//! let client = Client::connect("ws://127.0.0.1:8080/v1/agent", None).await?;
//! let opened = client.open(Some("thread-42")).await?;
//! println!("answer at {}", opened.viewer_url);
//!
//! let questions = json!([{
//!     "header": "Color",
//!     "question": "Which colour should the button be?",
//!     "options": [{"label": "Red"}, {"label": "Blue"}]
//! }]);
//! let ask = Ask::new("thread-42", questions).with_timeout(Duration::from_secs(600));
//! let answered = client.ask(ask).await?;
//! // What the model reads: the `ask_user_result` JSON, or the DECLINED / TIMED_OUT sentence.
//! println!("{:?}: {}", answered.outcome(), answered.model_text().unwrap_or_default());
//! # Ok(())
//! # }
//! ```
//!
//! # Guarantees
//! - **Idempotent re-sends.** Every request id is fixed before the first send. After a
//!   reconnect the client re-sends each ask still waiting; the gateway answers `accepted`
//!   again, or with the outcome given while the agent was away.
//! - **Exactly-once hand-back.** An outcome reaches its caller once, however often the
//!   gateway sends it, and every outcome received is acknowledged so the gateway can forget
//!   it.
//! - **Cancellation withdraws.** Dropping an `ask` future withdraws its request (after the
//!   next reconnect if the socket is down at that moment; one dropped before it was ever sent
//!   is simply not sent). A request asked elsewhere (by an earlier run) is withdrawn with
//!   [`Client::withdraw`], and an outcome collected elsewhere acknowledged with
//!   [`Client::acknowledge`].
//! - **Fatal closes stop the client.** A wrong key (4401), malformed frames (4400) or a frame
//!   too large (4413) end the client with [`ClientError::Fatal`] instead of a reconnect loop.
//! - **Scope refusals end the call.** A session outside the agent key's scope
//!   (`--agent-key KEY:PREFIX`) fails `open`, `ask` and `withdraw` with
//!   [`ClientError::Forbidden`] at once; nothing about it is sent again.
//!
//! Plain `ws://` only: this build of the client has no TLS; put a `wss://` gateway behind a
//! local proxy or build tokio-tungstenite with a TLS feature.
//!
//! # Layout
//! - [`client`] — [`Client`], the cloneable handle, and the drop guard that withdraws.
//! - [`builder`] — [`ClientBuilder`]: URL, key, backoff, timeouts.
//! - [`ask`] — [`Ask`], [`Answered`], [`Opened`].
//! - [`error`] — [`ClientError`].
//! - [`backoff`] — [`Backoff`], the reconnect schedule.
//! - [`endpoint`] — [`agent_url`], the WebSocket URL derived from a base URL.
//! - `connection` (private) — the task that owns the socket and reconnects.
//! - `pending` (private) — the ledger of opens and asks in flight, keyed by `(session, id)`.
//! - `shared` (private) — what the handles and the connection task share.

pub mod ask;
pub mod backoff;
pub mod builder;
pub mod client;
mod connection;
pub mod endpoint;
pub mod error;
mod pending;
mod shared;

pub use ask::{Answered, Ask, Opened};
pub use askgate_protocol::harness::{Question, QuestionOption};
pub use askgate_protocol::{Dialect, FieldError, Outcome};
pub use backoff::Backoff;
pub use builder::ClientBuilder;
pub use client::Client;
pub use endpoint::agent_url;
pub use error::ClientError;
