//! Sockets: connecting agents and tabs, getting viewer keys with `open`, closing.
//!
//! Client sockets use small tungstenite buffers (its 128 KiB default read buffer would cost
//! the generator over a gigabyte for 10,000 tabs) and `TCP_NODELAY`, so the generator adds
//! no Nagle delay of its own to what it measures.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, bail};
use futures_util::{FutureExt as _, SinkExt as _, StreamExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::frames::{self, Kind};

/// A client WebSocket.
pub(crate) type Ws = WebSocketStream<TcpStream>;

/// How long connecting, the handshake, or waiting for a setup reply may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Sessions opened per setup agent connection (its frame rate limit allows bursts of 10,000).
const OPENS_PER_CONNECTION: usize = 2_500;
/// `open` frames written before reading their replies.
const OPEN_BATCH: usize = 500;

fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(8 * 1024)
        .write_buffer_size(8 * 1024)
}

/// Connects to `ws://addr{path}`.
///
/// # Errors
/// TCP or the WebSocket handshake fails or takes over [`CONNECT_TIMEOUT`].
pub(crate) async fn connect(addr: SocketAddr, path: &str) -> anyhow::Result<Ws> {
    let handshake = async {
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let url = format!("ws://{addr}{path}");
        let (ws, _) = tokio_tungstenite::client_async_with_config(url, tcp, Some(config())).await?;
        anyhow::Ok(ws)
    };
    tokio::time::timeout(CONNECT_TIMEOUT, handshake)
        .await
        .context("connect timed out")?
}

/// A tab on `session`: connects, says hello, and waits for the snapshot.
///
/// # Errors
/// The connection fails, or the server closes or says anything but `snapshot` first.
pub(crate) async fn join_tab(
    addr: SocketAddr,
    session: &str,
    key: &str,
    tab: &str,
) -> anyhow::Result<Ws> {
    let mut ws = connect(addr, &format!("/v1/sessions/{session}/live")).await?;
    ws.send(Message::text(frames::hello(key, tab))).await?;
    let first = tokio::time::timeout(CONNECT_TIMEOUT, ws.next())
        .await
        .context("no snapshot in time")?;
    match first {
        Some(Ok(Message::Text(text))) => match frames::parse(&text) {
            Some(f) if f.kind == Kind::Snapshot => Ok(ws),
            _ => bail!("expected a snapshot, got {}", truncate(&text)),
        },
        Some(Ok(Message::Close(frame))) => bail!("closed instead of a snapshot: {frame:?}"),
        Some(Ok(other)) => bail!("expected a snapshot, got {other:?}"),
        Some(Err(e)) => Err(e).context("reading the snapshot"),
        None => bail!("the server hung up before the snapshot"),
    }
}

/// Closes cleanly: a close frame, then read until the server closes (at most a second).
pub(crate) async fn close(mut ws: Ws) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = ws.close(None).await;
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
}

/// Opens every session in `names` (over as few agent connections as the agent rate limit
/// allows, in parallel) and returns each one's viewer key. The connections are closed
/// afterwards, so sessions nobody watches are dropped again.
///
/// # Errors
/// A connection fails, or a session gets no `opened` or no key in its viewer URL.
pub(crate) async fn open_sessions(
    addr: SocketAddr,
    names: &[String],
) -> anyhow::Result<HashMap<String, String>> {
    let chunks = names.chunks(OPENS_PER_CONNECTION.max(1));
    let opened =
        futures_util::future::try_join_all(chunks.map(|chunk| open_chunk(addr, chunk))).await?;
    Ok(opened.into_iter().flatten().collect())
}

async fn open_chunk(addr: SocketAddr, names: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    let mut ws = connect(addr, "/v1/agent").await?;
    let mut keys = Vec::with_capacity(names.len());
    for batch in names.chunks(OPEN_BATCH) {
        for name in batch {
            ws.feed(Message::text(frames::open(name))).await?;
        }
        ws.flush().await?;
        let mut waiting = batch.len();
        while waiting > 0 {
            let message = tokio::time::timeout(CONNECT_TIMEOUT, ws.next())
                .await
                .context("no reply to open in time")?;
            let text = match message {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(Message::Close(frame))) => bail!("agent closed during open: {frame:?}"),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e).context("reading opened"),
                None => bail!("agent connection ended during open"),
            };
            let Some(frame) = frames::parse(&text) else {
                continue;
            };
            match frame.kind {
                Kind::Opened => {
                    let session = frame.session.context("opened without a session")?;
                    let url = frame.viewer_url.context("opened without a viewer_url")?;
                    let key = frames::viewer_key(&url)
                        .with_context(|| format!("no #k= in the viewer URL {url}"))?;
                    keys.push((session.into_owned(), key.to_owned()));
                    waiting -= 1;
                }
                Kind::Error => bail!("open refused: {}", truncate(&text)),
                _ => {}
            }
        }
    }
    close(ws).await;
    Ok(keys)
}

/// At most 200 characters of `text`, for error messages.
pub(crate) fn truncate(text: &str) -> String {
    text.chars().take(200).collect()
}

/// Awaits a socket write until `deadline`; whether it completed without error. (A server
/// that stops reading must not hang the generator: its give-up deadline still holds.)
pub(crate) async fn wrote<E>(
    deadline: std::time::Instant,
    write: impl Future<Output = Result<(), E>>,
) -> bool {
    matches!(
        tokio::time::timeout_at(deadline.into(), write).await,
        Ok(Ok(()))
    )
}

/// Hands the text of `first`, then of each frame already waiting (at most `max` in all), to
/// `on_text`: frames that arrived together are handled in one turn, and a frame is taken off
/// the socket only when it will be handled. `Err(code)`: the server closed the socket (1006:
/// without a close frame).
pub(crate) fn texts_ready(
    ws: &mut Ws,
    first: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
    max: usize,
    mut on_text: impl FnMut(&str),
) -> Result<(), u16> {
    let mut message = Some(first);
    let mut handled = 0;
    while let Some(current) = message.take() {
        match current {
            Some(Ok(Message::Text(text))) => on_text(&text),
            Some(Ok(Message::Close(frame))) => return Err(frame.map_or(1005, |f| f.code.into())),
            Some(Ok(_)) => {}
            Some(Err(_)) | None => return Err(1006),
        }
        handled += 1;
        if handled < max {
            message = ws.next().now_or_never();
        }
    }
    Ok(())
}
