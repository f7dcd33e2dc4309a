//! Writing what the hub queued: at once, in batches, while the socket takes frames without
//! waiting; else fragment by fragment, each step guarded by the [`Watch`].

use std::task::Poll;

use futures_util::SinkExt as _;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::Frame as WireFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

use super::upgrade::WebSocket;
use super::watch::Watch;
use crate::hub::{FRAGMENT_BYTES, Frame, Queue};

/// Frames written per flush when a queue has several waiting.
const BATCH_FRAMES: usize = 32;

/// What writing without waiting came to.
pub(super) enum Written {
    /// Every frame written and flushed.
    Done,
    /// The socket failed.
    Failed,
    /// The socket would block, or a frame must go in fragments: the rest is for the
    /// socket loop to wait on.
    Rest(Option<Frame>),
}

/// Writes `first` and whatever else is queued (up to a batch), then flushes, for as long as
/// the socket takes them without waiting; stops at a frame too large for one fragment.
pub(super) fn write_now(
    socket: &mut WebSocket,
    cx: &mut std::task::Context<'_>,
    first: Frame,
    queue: &mut Queue,
) -> Written {
    let mut frame = first;
    let mut written = 0;
    loop {
        let Some(whole) = frame.whole(FRAGMENT_BYTES) else {
            return Written::Rest(Some(frame));
        };
        match socket.poll_ready_unpin(cx) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(_)) => return Written::Failed,
            Poll::Pending => return Written::Rest(Some(frame)),
        }
        // As in `write_frame`: serde_json's output goes out without being checked again.
        let wire = WireFrame::message(whole.clone(), OpCode::Data(Data::Text), true);
        if socket.start_send_unpin(Message::Frame(wire)).is_err() {
            return Written::Failed;
        }
        written += 1;
        if written == BATCH_FRAMES {
            break;
        }
        match queue.try_frame() {
            Some(next) => frame = next,
            None => break,
        }
    }
    match socket.poll_flush_unpin(cx) {
        Poll::Ready(Ok(())) => Written::Done,
        Poll::Ready(Err(_)) => Written::Failed,
        Poll::Pending => Written::Rest(None),
    }
}

/// Writes `first` and whatever else is queued (up to a batch), then flushes, each step
/// guarded by [`Watch::guard`].
pub(super) async fn write_frames(
    socket: &mut WebSocket,
    first: Frame,
    watch: &mut Watch<'_>,
) -> Result<(), Option<u16>> {
    write_frame(socket, &first, watch).await?;
    drop(first);
    // Guarded fragment by fragment: a peer that reads slowly but steadily gets a whole batch
    // however long it takes; one that takes nothing for a ping interval is closed.
    for _ in 1..BATCH_FRAMES {
        let Some(frame) = watch.queue.try_frame() else {
            break;
        };
        write_frame(socket, &frame, watch).await?;
    }
    watch.guard(socket.flush()).await
}

/// Writes one frame (without a final flush), in fragments when it is larger than one.
pub(super) async fn write_frame(
    socket: &mut WebSocket,
    frame: &Frame,
    watch: &mut Watch<'_>,
) -> Result<(), Option<u16>> {
    let fragments = frame.len().div_ceil(FRAGMENT_BYTES).max(1);
    let mut pieces = frame.fragments(FRAGMENT_BYTES).peekable();
    let mut first = true;
    while let Some(piece) = pieces.next() {
        let last = pieces.peek().is_none();
        let opcode = if first { Data::Text } else { Data::Continue };
        first = false;
        // Frames are encoded by serde_json (valid UTF-8) and cut between characters, so they
        // go out as they are, without being checked again for every tab.
        let wire = WireFrame::message(piece, OpCode::Data(opcode), last);
        watch.guard(socket.feed(Message::Frame(wire))).await?;
        // A large frame is flushed fragment by fragment, so the write buffer holds one.
        if fragments > 1 && !last {
            watch.guard(socket.flush()).await?;
        }
    }
    Ok(())
}

/// Sends a keepalive ping, guarded by [`Watch::guard`].
pub(super) async fn send_ping(
    socket: &mut WebSocket,
    ping: Message,
    watch: &mut Watch<'_>,
) -> Result<(), Option<u16>> {
    watch.guard(socket.send(ping)).await
}
