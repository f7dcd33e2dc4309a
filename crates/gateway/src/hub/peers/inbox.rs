//! A connection's inbox: what the hub has for it (frames in order, a tab's latest presence,
//! the code to close with) and the one waker of the task that empties it.
//!
//! One small structure per connection, not a channel, a watch and a cancellation token each
//! with its own allocation and its own waiting future: an idle tab holds this and nothing
//! else of the hub's, and its task waits on one waker. The frames are bounded: a peer that
//! cannot keep up is closed with 4408 (see [`Link::send`](super::super::Link)) rather than allowed
//! to grow memory.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll};

use futures_util::task::AtomicWaker;

use super::frame::Frame;
use super::queued::TabBudget;
use super::wakes::Wakes;

/// Shared by the hub's links to a connection and the connection's [`Queue`].
#[derive(Debug)]
pub(in crate::hub) struct Inbox {
    pending: Mutex<Pending>,
    /// The close code asked for (0: none); the first asked for wins.
    close: AtomicU16,
    /// The connection's task, waiting for any of the above.
    waker: AtomicWaker,
    /// Links the hub holds. None left, the hub has let go of the connection.
    links: AtomicUsize,
    /// The most frames queued at once.
    capacity: usize,
    /// A tab's share of the queued-bytes budgets, set when it joins a session (agents and
    /// tabs not yet joined: none).
    budget: OnceLock<TabBudget>,
}

#[derive(Debug, Default)]
struct Pending {
    frames: VecDeque<Frame>,
    /// A tab's latest `presence`. Presence is state, not an event: a burst of joins replaces
    /// it rather than queueing one frame per join (which would overflow the queue of every
    /// tab already there).
    presence: Option<Frame>,
    /// The connection's task has let go of its queue: nothing more is taken.
    gone: bool,
}

/// Why a frame was not queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::hub) enum Refused {
    /// The queue holds its capacity already.
    Full,
    /// The connection has gone.
    Gone,
}

impl Inbox {
    /// An inbox for `capacity` frames, with one link holding it.
    pub(in crate::hub) fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Inbox {
            pending: Mutex::default(),
            close: AtomicU16::new(0),
            waker: AtomicWaker::new(),
            links: AtomicUsize::new(1),
            capacity: capacity.max(1),
            budget: OnceLock::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        // Nothing panics while holding it; should something, what it guards stays whole.
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `frame` behind the others, waking the connection's task as `wakes` says.
    pub(in crate::hub) fn push(&self, frame: Frame, wakes: &mut Wakes) -> Result<(), Refused> {
        {
            let mut pending = self.lock();
            if pending.gone {
                return Err(Refused::Gone);
            }
            if pending.frames.len() >= self.capacity {
                return Err(Refused::Full);
            }
            pending.frames.push_back(frame);
        }
        wakes.wake(&self.waker);
        Ok(())
    }

    /// Replaces the pending `presence`, waking the connection's task as `wakes` says.
    pub(in crate::hub) fn set_presence(&self, frame: Frame, wakes: &mut Wakes) {
        {
            let mut pending = self.lock();
            if pending.gone {
                return;
            }
            pending.presence = Some(frame);
        }
        wakes.wake(&self.waker);
    }

    /// Asks the connection to close with `code` (not 0); `true` if this was the first ask.
    pub(in crate::hub) fn close(&self, code: u16) -> bool {
        let first = self
            .close
            .compare_exchange(0, code.max(1), Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        self.waker.wake();
        first
    }

    /// Whether the connection has been asked to close.
    pub(in crate::hub) fn is_closing(&self) -> bool {
        self.close.load(Ordering::Acquire) != 0
    }

    /// The tab's budget, once it has joined.
    pub(in crate::hub) fn budget(&self) -> Option<&TabBudget> {
        self.budget.get()
    }

    /// Gives the tab its share of the budgets (once; later calls change nothing).
    pub(in crate::hub) fn set_budget(&self, budget: TabBudget) {
        let _ = self.budget.set(budget);
    }

    /// One more link holds it.
    pub(in crate::hub) fn link_added(&self) {
        self.links.fetch_add(1, Ordering::Relaxed);
    }

    /// A link let go; the last one wakes the connection, which has nothing more coming.
    pub(in crate::hub) fn link_dropped(&self) {
        if self.links.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.waker.wake();
        }
    }

    fn taken(&self, frame: &Frame) {
        if let Some(budget) = self.budget.get() {
            budget.release(frame.len());
        }
    }
}

/// What a connection is handed next, most urgent first.
#[derive(Debug)]
pub enum Delivery {
    /// Close with this code.
    Close(u16),
    /// The next queued frame.
    Frame(Frame),
    /// The tab's latest presence (queued frames go first: a tab's snapshot precedes it).
    Presence(Frame),
    /// The hub has let go of the connection: nothing more will come.
    LetGo,
}

/// The connection's end of its inbox. Frames are given back to the budgets as they are
/// taken, and those still queued when it is dropped.
#[derive(Debug)]
pub struct Queue {
    inbox: Arc<Inbox>,
}

impl Queue {
    pub(in crate::hub) fn new(inbox: Arc<Inbox>) -> Self {
        Queue { inbox }
    }

    /// The next delivery, or `Pending` with the task's waker kept for when one comes.
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Delivery> {
        // Registered before looking, so a delivery that lands in between still wakes us.
        self.inbox.waker.register(cx.waker());
        let code = self.inbox.close.load(Ordering::Acquire);
        if code != 0 {
            return Poll::Ready(Delivery::Close(code));
        }
        let presence = {
            let mut pending = self.inbox.lock();
            if let Some(frame) = pop_front(&mut pending) {
                drop(pending);
                self.inbox.taken(&frame);
                return Poll::Ready(Delivery::Frame(frame));
            }
            pending.presence.take()
        };
        if let Some(frame) = presence {
            return Poll::Ready(Delivery::Presence(frame));
        }
        if self.inbox.links.load(Ordering::Acquire) == 0 {
            return Poll::Ready(Delivery::LetGo);
        }
        Poll::Pending
    }

    /// The next queued frame if one is there now.
    pub fn try_frame(&mut self) -> Option<Frame> {
        let frame = pop_front(&mut self.inbox.lock())?;
        self.inbox.taken(&frame);
        Some(frame)
    }

    /// Ready with the close code once the connection is asked to close; until then `Pending`,
    /// with the task's waker kept (any delivery wakes it; only a close makes it ready).
    pub fn poll_closed(&mut self, cx: &mut Context<'_>) -> Poll<u16> {
        self.inbox.waker.register(cx.waker());
        match self.inbox.close.load(Ordering::Acquire) {
            0 => Poll::Pending,
            code => Poll::Ready(code),
        }
    }

    /// Resolves with the close code once the connection is asked to close.
    pub async fn closed(&mut self) -> u16 {
        std::future::poll_fn(|cx| self.poll_closed(cx)).await
    }
}

/// The first frame, giving back the queue's room once it is empty: most connections sit idle
/// between frames, and the room for even a few (128 bytes for four) was kept by every idle
/// tab, against one allocation per frame that finds the queue empty.
fn pop_front(pending: &mut Pending) -> Option<Frame> {
    let frame = pending.frames.pop_front()?;
    if pending.frames.is_empty() {
        pending.frames = VecDeque::new();
    }
    Some(frame)
}

impl Drop for Queue {
    fn drop(&mut self) {
        // Gone first, so nothing is queued after the last frame is counted out.
        let left = {
            let mut pending = self.inbox.lock();
            pending.gone = true;
            pending.presence = None;
            std::mem::take(&mut pending.frames)
        };
        for frame in &left {
            self.inbox.taken(frame);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::task::Waker;

    use bytes::Bytes;

    use super::super::queued::Budgets;
    use super::*;

    fn frame(text: &str) -> Frame {
        Frame::from_json(Bytes::copy_from_slice(text.as_bytes()))
    }

    fn next(queue: &mut Queue) -> Poll<Delivery> {
        queue.poll_next(&mut Context::from_waker(Waker::noop()))
    }

    fn text(delivery: Poll<Delivery>) -> String {
        match delivery {
            Poll::Ready(Delivery::Frame(frame)) => format!("frame {}", frame.text()),
            Poll::Ready(Delivery::Presence(frame)) => format!("presence {}", frame.text()),
            Poll::Ready(Delivery::Close(code)) => format!("close {code}"),
            Poll::Ready(Delivery::LetGo) => "let go".to_owned(),
            Poll::Pending => "pending".to_owned(),
        }
    }

    #[test]
    fn frames_come_in_order_then_the_latest_presence_and_a_close_before_all() {
        let inbox = Inbox::new(4);
        let mut queue = Queue::new(Arc::clone(&inbox));
        assert_eq!(text(next(&mut queue)), "pending");
        inbox.set_presence(frame("p1"), &mut Wakes::Now);
        inbox.push(frame("a"), &mut Wakes::Now).unwrap();
        inbox.set_presence(frame("p2"), &mut Wakes::Now);
        inbox.push(frame("b"), &mut Wakes::Now).unwrap();
        assert_eq!(text(next(&mut queue)), "frame a");
        assert_eq!(text(next(&mut queue)), "frame b");
        assert_eq!(text(next(&mut queue)), "presence p2");
        assert_eq!(text(next(&mut queue)), "pending");
        inbox.push(frame("c"), &mut Wakes::Now).unwrap();
        assert!(inbox.close(4408), "the first close");
        assert!(!inbox.close(1001), "a later close changes nothing");
        assert!(inbox.is_closing());
        assert_eq!(text(next(&mut queue)), "close 4408");
    }

    #[test]
    fn a_full_queue_refuses_and_a_gone_one_takes_nothing() {
        let inbox = Inbox::new(2);
        let queue = Queue::new(Arc::clone(&inbox));
        inbox.push(frame("a"), &mut Wakes::Now).unwrap();
        inbox.push(frame("b"), &mut Wakes::Now).unwrap();
        assert_eq!(inbox.push(frame("c"), &mut Wakes::Now), Err(Refused::Full));
        drop(queue);
        assert_eq!(inbox.push(frame("d"), &mut Wakes::Now), Err(Refused::Gone));
    }

    #[test]
    fn the_last_link_to_go_tells_the_connection_nothing_more_comes() {
        let inbox = Inbox::new(2);
        let mut queue = Queue::new(Arc::clone(&inbox));
        inbox.link_added();
        inbox.link_dropped();
        assert_eq!(text(next(&mut queue)), "pending");
        inbox.push(frame("last"), &mut Wakes::Now).unwrap();
        inbox.link_dropped();
        assert_eq!(
            text(next(&mut queue)),
            "frame last",
            "what was queued comes first"
        );
        assert_eq!(text(next(&mut queue)), "let go");
    }

    #[test]
    fn a_queue_emptied_gives_its_room_back() {
        let inbox = Inbox::new(64);
        let mut queue = Queue::new(Arc::clone(&inbox));
        for burst in [40, 1] {
            for _ in 0..burst {
                inbox.push(frame("x"), &mut Wakes::Now).unwrap();
            }
            while queue.try_frame().is_some() {}
            assert_eq!(inbox.lock().frames.capacity(), 0, "after {burst} frames");
        }
    }

    #[test]
    fn counts_are_given_back_when_frames_are_taken_or_dropped_with_the_queue() {
        let session = Arc::new(AtomicUsize::new(0));
        let total = Arc::new(AtomicUsize::new(0));
        let budgets = Budgets {
            per_session: 100,
            total: 150,
        };
        let inbox = Inbox::new(8);
        inbox.set_budget(TabBudget::new(
            Arc::clone(&session),
            Arc::clone(&total),
            budgets,
        ));
        let mut queue = Queue::new(Arc::clone(&inbox));
        let budget = inbox.budget().unwrap();
        for bytes in [60, 20] {
            budget.charge(bytes);
            inbox
                .push(frame(&" ".repeat(bytes)), &mut Wakes::Now)
                .unwrap();
        }
        assert!(budget.over(30), "past the session's budget");
        let other = TabBudget::new(Arc::new(AtomicUsize::new(0)), Arc::clone(&total), budgets);
        assert!(other.over(80), "past the gateway's budget");
        assert!(!other.over(60));
        assert_eq!(queue.try_frame().map(|f| f.len()), Some(60));
        assert_eq!(
            (budget.waiting(), session.load(Ordering::Relaxed)),
            (20, 20)
        );
        drop(queue);
        assert_eq!(session.load(Ordering::Relaxed), 0);
        assert_eq!(total.load(Ordering::Relaxed), 0);
    }
}
