//! Waking the tasks a fan-out queued frames for: at once for a few, a few at a time for many.
//!
//! The runtime keeps each worker's woken tasks in a local queue of 256; past that they spill
//! into its global queue, the one where every task woken from another thread also goes (an
//! answer's commit, finished by the store's syncer thread). Woken all at once, a fan-out to
//! 10,000 tabs put some 9,700 tab tasks in that queue ahead of such a wake, and the commit's
//! caller waited for the whole fan-out to be written: 10-140 ms for an answer on a gateway
//! with one big room (`bench/history/`). Woken [`WAKE_AT_ONCE`] at a time by a task that yields
//! between batches, the tabs never fill the local queue, and a wake from another thread is
//! taken up between two batches.
//!
//! The hub's fan-outs share one queue of wakers ([`FanOutWakes`]), emptied in order by one
//! task: a `resolved` that follows its `request` wakes the tabs already written after every
//! tab still waiting for the `request`, as waking all at once did. A tab not yet woken when
//! the `resolved` is queued has given its waker to the first fan-out, and writes both frames
//! at once when it runs.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use futures_util::task::AtomicWaker;

/// Tasks woken in one batch. Under the 61 tasks the runtime runs between two looks at its
/// timers and sockets (where a yielded task is resumed), so the batches do not pile up in the
/// local queue.
pub(in crate::hub) const WAKE_AT_ONCE: usize = 32;

/// Wakers the queue keeps room for once it is empty.
const ROOM_KEPT: usize = 1024;

/// The wakers of the hub's big fan-outs, in the order they were queued, and whether a task
/// is emptying them.
#[derive(Debug, Default)]
pub(in crate::hub) struct FanOutWakes {
    waiting: Mutex<Waiting>,
}

#[derive(Debug, Default)]
struct Waiting {
    wakers: VecDeque<Waker>,
    /// A task is waking them: more are added behind, not given a task of their own.
    waking: bool,
}

impl FanOutWakes {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `wakers` behind those already waiting, and starts a task to wake them unless
    /// one is at it. Outside a runtime they are woken at once.
    fn add(self: &Arc<Self>, wakers: Vec<Waker>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            wakers.into_iter().for_each(Waker::wake);
            return;
        };
        let mut waiting = self.lock();
        waiting.wakers.extend(wakers);
        if !waiting.waking {
            waiting.waking = true;
            drop(waiting);
            let mut waking = Waking {
                queue: Arc::clone(self),
                done: false,
            };
            drop(runtime.spawn(async move { waking.run().await }));
        }
    }
}

/// The task waking a [`FanOutWakes`]' wakers. Dropped before it is done (its runtime
/// shutting down), it wakes the rest at once, so that no tab is left unwoken and the next
/// fan-out starts a task again.
struct Waking {
    queue: Arc<FanOutWakes>,
    /// It found the queue empty and said so: what is queued since is another task's.
    done: bool,
}

impl Waking {
    /// Wakes [`WAKE_AT_ONCE`] at a time, in order, yielding to the runtime between batches,
    /// until none are left.
    async fn run(&mut self) {
        let mut batch = Vec::with_capacity(WAKE_AT_ONCE);
        loop {
            {
                let mut waiting = self.queue.lock();
                let take = waiting.wakers.len().min(WAKE_AT_ONCE);
                if take == 0 {
                    waiting.waking = false;
                    self.done = true;
                    // Room for a 10,000-tab fan-out is not kept for good after one.
                    if waiting.wakers.capacity() > ROOM_KEPT {
                        waiting.wakers = VecDeque::new();
                    }
                    return;
                }
                batch.extend(waiting.wakers.drain(..take));
            }
            batch.drain(..).for_each(Waker::wake);
            tokio::task::yield_now().await;
        }
    }
}

impl Drop for Waking {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let left = {
            let mut waiting = self.queue.lock();
            waiting.waking = false;
            std::mem::take(&mut waiting.wakers)
        };
        left.into_iter().for_each(Waker::wake);
    }
}

/// When the tasks given frames are woken.
pub(in crate::hub) enum Wakes {
    /// Each as its frame is queued.
    Now,
    /// Once the fan-out has queued every frame: these wakers so far, handed to the hub's
    /// [`FanOutWakes`] when this is dropped.
    Later(Vec<Waker>, Arc<FanOutWakes>),
}

impl Wakes {
    /// How to wake a fan-out to `tasks` tasks: later, through `queue`, for more than
    /// [`WAKE_AT_ONCE`].
    pub(in crate::hub) fn for_fan_out(tasks: usize, queue: &Arc<FanOutWakes>) -> Wakes {
        if tasks > WAKE_AT_ONCE {
            Wakes::Later(Vec::with_capacity(tasks), Arc::clone(queue))
        } else {
            Wakes::Now
        }
    }

    /// Wakes the task waiting on `waker`, now or later.
    pub(super) fn wake(&mut self, waker: &AtomicWaker) {
        match self {
            Wakes::Now => waker.wake(),
            // A task not waiting has no waker here; it will look at its queue anyway.
            Wakes::Later(wakers, _) => wakers.extend(waker.take()),
        }
    }
}

impl Drop for Wakes {
    fn drop(&mut self) {
        if let Wakes::Later(wakers, queue) = self {
            let wakers = std::mem::take(wakers);
            if !wakers.is_empty() {
                queue.add(wakers);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Poll;

    use futures_util::task::ArcWake;

    use super::*;

    /// A runtime like the gateway's by default: the multi-thread scheduler, one worker.
    fn one_worker() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap()
    }

    /// The wakers tasks registered, each as it first waited.
    type Registered = Arc<Mutex<Vec<Arc<AtomicWaker>>>>;

    /// `count` tasks, each of which waits once (its waker in the returned list), then records
    /// `(group, its index)` in `ran` and runs `then`.
    fn waiting_tasks(
        group: usize,
        count: usize,
        ran: &Arc<Mutex<Vec<(usize, usize)>>>,
        then: impl Fn() + Clone + Send + 'static,
    ) -> (Vec<tokio::task::JoinHandle<()>>, Registered) {
        let wakers: Registered = Arc::default();
        let tasks = (0..count)
            .map(|index| {
                let (ran, wakers, then) = (Arc::clone(ran), Arc::clone(&wakers), then.clone());
                tokio::spawn(async move {
                    let waker = Arc::new(AtomicWaker::new());
                    let mut registered = false;
                    poll_fn(|cx| {
                        if registered {
                            return Poll::Ready(());
                        }
                        waker.register(cx.waker());
                        wakers.lock().unwrap().push(Arc::clone(&waker));
                        registered = true;
                        Poll::Pending
                    })
                    .await;
                    ran.lock().unwrap().push((group, index));
                    then();
                })
            })
            .collect();
        (tasks, wakers)
    }

    /// Until every one of `count` tasks has registered its waker.
    async fn until_registered(wakers: &Mutex<Vec<Arc<AtomicWaker>>>, count: usize) {
        while wakers.lock().unwrap().len() < count {
            tokio::task::yield_now().await;
        }
    }

    /// How many of `tabs` tasks had run when a task woken from another thread ran, the tabs
    /// woken by a fan-out from `fan_out` and the other thread's wake landing as the first
    /// tab runs.
    fn tabs_run_before_a_wake_from_another_thread(tabs: usize, batched: bool) -> usize {
        // In a task, as the hub's fan-outs run: `block_on`'s own future is not on the worker.
        let fan_out_in_a_task = async move {
            let ran: Arc<Mutex<Vec<(usize, usize)>>> = Arc::default();
            let (remote, heard) = tokio::sync::oneshot::channel::<()>();
            let remote = Arc::new(Mutex::new(Some(remote)));
            // The first tab to run has a thread outside the runtime wake the waiter, as the
            // syncer wakes a commit's caller; joined, so the wake is queued before the tab
            // goes on.
            let wake_from_another_thread = move || {
                if let Some(remote) = remote.lock().unwrap().take() {
                    std::thread::spawn(move || remote.send(()).unwrap())
                        .join()
                        .unwrap();
                }
            };
            let (tab_tasks, wakers) = waiting_tasks(0, tabs, &ran, wake_from_another_thread);
            until_registered(&wakers, tabs).await;
            let waiter = {
                let ran = Arc::clone(&ran);
                tokio::spawn(async move {
                    heard.await.unwrap();
                    ran.lock().unwrap().len()
                })
            };
            tokio::task::yield_now().await;
            {
                let queue = Arc::new(FanOutWakes::default());
                let mut wakes = match batched {
                    true => Wakes::for_fan_out(tabs, &queue),
                    false => Wakes::Now,
                };
                for waker in wakers.lock().unwrap().iter() {
                    wakes.wake(waker);
                }
            }
            let tabs_before = waiter.await.unwrap();
            for task in tab_tasks {
                task.await.unwrap();
            }
            assert_eq!(ran.lock().unwrap().len(), tabs, "every tab was woken");
            tabs_before
        };
        one_worker().block_on(async { tokio::spawn(fan_out_in_a_task).await.unwrap() })
    }

    /// The scheduling the fan-out's batches are for: a task woken from another thread while
    /// 5,000 tabs are being woken runs within a few batches, not after all of them. Woken all
    /// at once (the control), nearly every tab runs first.
    #[test]
    fn a_wake_from_another_thread_is_not_kept_behind_a_big_fan_out() {
        let tabs = 5_000;
        let in_batches = tabs_run_before_a_wake_from_another_thread(tabs, true);
        assert!(
            in_batches <= 8 * WAKE_AT_ONCE,
            "{in_batches} of {tabs} tabs ran before the other thread's wake, in batches"
        );
        let at_once = tabs_run_before_a_wake_from_another_thread(tabs, false);
        assert!(
            at_once > tabs / 2,
            "the control: woken at once, {at_once} of {tabs} tabs ran first"
        );
    }

    /// Two fan-outs through one queue wake in the order they were queued: the first's tasks
    /// before the second's, and the waking task ends once both are woken.
    #[test]
    fn fan_outs_through_one_queue_wake_in_order() {
        let (first, second) = (100, 70);
        let ran = one_worker().block_on(async move {
            tokio::spawn(async move {
                let ran: Arc<Mutex<Vec<(usize, usize)>>> = Arc::default();
                let (mut tasks, first_wakers) = waiting_tasks(0, first, &ran, || {});
                let (more, second_wakers) = waiting_tasks(1, second, &ran, || {});
                tasks.extend(more);
                until_registered(&first_wakers, first).await;
                until_registered(&second_wakers, second).await;
                let queue = Arc::new(FanOutWakes::default());
                for (wakers, count) in [(&first_wakers, first), (&second_wakers, second)] {
                    let mut wakes = Wakes::for_fan_out(count, &queue);
                    for waker in wakers.lock().unwrap().iter() {
                        wakes.wake(waker);
                    }
                }
                for task in tasks {
                    task.await.unwrap();
                }
                // The waking task ends once it next finds the queue empty.
                for _ in 0..100 {
                    if !queue.lock().waking {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
                assert!(!queue.lock().waking, "the waking task has ended");
                Arc::try_unwrap(ran).unwrap().into_inner().unwrap()
            })
            .await
            .unwrap()
        });
        // In order by batches (the runtime may run a batch's last woken task first, and the
        // batch that ends the first fan-out begins the second).
        let groups: Vec<usize> = ran.iter().map(|(group, _)| *group).collect();
        let last_of_first = groups.iter().rposition(|group| *group == 0).unwrap();
        let first_of_second = groups.iter().position(|group| *group == 1).unwrap();
        assert_eq!(groups.len(), first + second);
        assert!(
            last_of_first < first + WAKE_AT_ONCE && first_of_second >= first - WAKE_AT_ONCE,
            "the first fan-out's tasks ran first, batch by batch: {groups:?}"
        );
    }

    struct Counted(AtomicUsize);

    impl ArcWake for Counted {
        fn wake_by_ref(this: &Arc<Self>) {
            this.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A waking task over a queue of `count` wakers (a task at it) is dropped, `done` or not:
    /// how many were woken, and what the queue then holds and says.
    fn drop_a_waking_task(count: usize, done: bool) -> (usize, usize, bool) {
        let woken = Arc::new(Counted(AtomicUsize::new(0)));
        let queue = Arc::new(FanOutWakes::default());
        {
            let mut waiting = queue.lock();
            waiting.wakers = (0..count)
                .map(|_| futures_util::task::waker(Arc::clone(&woken)))
                .collect();
            waiting.waking = true;
        }
        drop(Waking {
            queue: Arc::clone(&queue),
            done,
        });
        let waiting = queue.lock();
        (
            woken.0.load(Ordering::SeqCst),
            waiting.wakers.len(),
            waiting.waking,
        )
    }

    /// A waking task dropped before it is done (its runtime stopping) wakes the rest at once,
    /// and the next fan-out gets a task again.
    #[test]
    fn a_waking_task_dropped_early_wakes_the_rest() {
        assert_eq!(drop_a_waking_task(50, false), (50, 0, false));
    }

    /// A waking task that finished leaves alone what was queued after it: that belongs to
    /// the task the next fan-out started, which wakes it in batches.
    #[test]
    fn a_finished_waking_task_leaves_the_next_ones_wakers() {
        assert_eq!(drop_a_waking_task(5, true), (0, 5, true));
    }

    /// A fan-out to a few tasks wakes each at once; a big one outside a runtime wakes them all
    /// when it is done.
    #[test]
    fn a_few_tasks_or_no_runtime_are_woken_at_once() {
        let queue = Arc::new(FanOutWakes::default());
        assert!(matches!(
            Wakes::for_fan_out(WAKE_AT_ONCE, &queue),
            Wakes::Now
        ));
        let woken = Arc::new(Counted(AtomicUsize::new(0)));
        let mut wakes = Wakes::for_fan_out(WAKE_AT_ONCE + 1, &queue);
        let waker = AtomicWaker::new();
        for _ in 0..=WAKE_AT_ONCE {
            waker.register(&futures_util::task::waker(Arc::clone(&woken)));
            wakes.wake(&waker);
        }
        assert_eq!(
            woken.0.load(Ordering::SeqCst),
            0,
            "not before the fan-out is done"
        );
        drop(wakes);
        assert_eq!(woken.0.load(Ordering::SeqCst), WAKE_AT_ONCE + 1);
        assert!(!queue.lock().waking);
    }
}
