//! One target's queue of notifications, and the task that sends them one at a time.
//!
//! Each webhook has its own queue and task, and mail one for its server, so a slow or dead
//! target holds up only itself. A queue holds at most [`MAX_QUEUED_PER_TARGET`]; a
//! notification routed to a full one is shed (counted, never stored). What a queue holds is
//! also in the store: the queue is the node's working copy, rebuilt from the store at start.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::clock::now_ms;
use crate::store::StoredDelivery;

/// Notifications one target's queue holds, queued or about to be.
pub const MAX_QUEUED_PER_TARGET: usize = 10_000;

/// A notification in a queue, with its failures so far.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) delivery: StoredDelivery,
    pub(super) failures: u32,
    /// On a shared store: the end of this node's claim on it (the score of its index entry).
    pub(super) claim: Option<u64>,
}

#[derive(Debug, Default)]
struct Held {
    /// By due time (Unix ms), then arrival.
    pending: BTreeMap<(u64, u64), Pending>,
    /// Places promised to notifications whose commit is under way.
    reserved: usize,
    /// The notification being sent, if one is.
    sending: usize,
    next: u64,
}

/// One target's queue.
#[derive(Debug)]
pub(super) struct Queue {
    held: Mutex<Held>,
    wake: tokio::sync::Notify,
    /// The due time of its earliest notification (0: none), for `/metrics`.
    pub(super) earliest_due_ms: Arc<AtomicU64>,
    capacity: usize,
}

impl Queue {
    pub(super) fn new(capacity: usize) -> Queue {
        Queue {
            held: Mutex::new(Held::default()),
            wake: tokio::sync::Notify::new(),
            earliest_due_ms: Arc::new(AtomicU64::new(0)),
            capacity,
        }
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        // Nothing under this lock can panic halfway through a change: a poisoned lock still
        // holds a whole queue.
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Promises a place to one notification about to be committed; `false` if full.
    pub(super) fn reserve(&self) -> bool {
        let mut held = self.held();
        if held.pending.len() + held.reserved + held.sending >= self.capacity {
            return false;
        }
        held.reserved += 1;
        true
    }

    /// Gives back a place promised to a notification whose commit failed.
    pub(super) fn release(&self) {
        let mut held = self.held();
        held.reserved = held.reserved.saturating_sub(1);
    }

    /// Queues a committed notification, due at `due_ms`; `reserved` if a place was promised
    /// to it (one read back from the store at start was not, and is taken whatever the
    /// bound: it was accepted).
    pub(super) fn push(&self, pending: Pending, due_ms: u64, reserved: bool) {
        self.insert(pending, due_ms, |held| {
            if reserved {
                held.reserved = held.reserved.saturating_sub(1);
            }
        });
    }

    /// Inserts `pending`, due at `due_ms`, after `account` has moved its place in the bound
    /// (from promised, or from being sent), and wakes the sender.
    fn insert(&self, pending: Pending, due_ms: u64, account: impl FnOnce(&mut Held)) {
        let mut held = self.held();
        account(&mut held);
        let seq = held.next;
        held.next += 1;
        held.pending.insert((due_ms, seq), pending);
        self.publish_earliest(&held);
        drop(held);
        self.wake.notify_one();
    }

    /// The next notification once it is due, taken out of the queue (it counts against the
    /// bound until [`Queue::done`]).
    pub(super) async fn next_due(&self) -> Pending {
        loop {
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let wait = {
                let mut held = self.held();
                match held.pending.first_key_value().map(|(key, _)| *key) {
                    None => None,
                    Some((due_ms, seq)) => {
                        let now = now_ms();
                        if due_ms <= now {
                            let pending = held.pending.remove(&(due_ms, seq));
                            if let Some(pending) = pending {
                                held.sending += 1;
                                self.publish_earliest(&held);
                                return pending;
                            }
                            continue;
                        }
                        Some(Duration::from_millis(due_ms - now))
                    }
                }
            };
            match wait {
                None => woken.await,
                Some(wait) => {
                    tokio::select! {
                        () = &mut woken => {}
                        () = tokio::time::sleep(wait) => {}
                    }
                }
            }
        }
    }

    /// The notification taken by [`Queue::next_due`] failed: it is queued again, due at
    /// `due_ms`, in the place it held.
    pub(super) fn retry(&self, pending: Pending, due_ms: u64) {
        self.insert(pending, due_ms, |held| {
            held.sending = held.sending.saturating_sub(1);
        });
    }

    /// The notification taken by [`Queue::next_due`] is done with.
    pub(super) fn done(&self) {
        let mut held = self.held();
        held.sending = held.sending.saturating_sub(1);
    }

    /// How many it holds, queued or being sent.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        let held = self.held();
        held.pending.len() + held.sending
    }

    fn publish_earliest(&self, held: &Held) {
        let earliest = held.pending.keys().next().map_or(0, |(due, _)| *due);
        self.earliest_due_ms.store(earliest, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::DeliveryTarget;
    use askgate_protocol::{RequestId, SessionId};

    fn pending(id: &str) -> Pending {
        Pending {
            delivery: StoredDelivery {
                session: SessionId::parse("s").unwrap(),
                request: RequestId::parse("r").unwrap(),
                id: id.to_owned(),
                event: "request.opened".into(),
                target: DeliveryTarget::Webhook("ops".into()),
                body: "{}".into(),
                created_ms: 0,
            },
            failures: 0,
            claim: None,
        }
    }

    #[test]
    fn a_full_queue_sheds_and_a_released_place_comes_back() {
        let queue = Queue::new(2);
        assert!(queue.reserve());
        assert!(queue.reserve());
        assert!(!queue.reserve(), "full with two promised");
        queue.release();
        assert!(queue.reserve());
        queue.push(pending("a"), 0, true);
        queue.push(pending("b"), 0, true);
        assert!(!queue.reserve(), "full with two queued");
        // Read back from the store: taken past the bound.
        queue.push(pending("c"), 0, false);
        assert_eq!(queue.len(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn notifications_come_out_by_due_time_and_not_before() {
        let queue = Arc::new(Queue::new(10));
        let now = now_ms();
        queue.push(pending("later"), now + 60_000, false);
        queue.push(pending("now"), now, false);
        let first = queue.next_due().await;
        assert_eq!(first.delivery.id, "now");
        queue.done();
        assert_eq!(queue.earliest_due_ms.load(Ordering::Relaxed), now + 60_000);
        // Not due: the wait ends only when a due one is pushed.
        let waiting = tokio::spawn({
            let queue = Arc::clone(&queue);
            async move { queue.next_due().await.delivery.id }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        queue.push(pending("pushed"), now, false);
        assert_eq!(waiting.await.unwrap(), "pushed");
    }
}
