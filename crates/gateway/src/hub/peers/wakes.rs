//! Waking the tasks a fan-out queued frames for: at once for a few, a few at a time for many.
//!
//! The runtime keeps each worker's woken tasks in a local queue of 256; past that they spill
//! into its global queue, the one where every task woken from another thread also goes (an
//! answer's commit, finished by the store's syncer thread). Woken all at once, a fan-out to
//! 10,000 tabs put some 9,700 tab tasks in that queue ahead of such a wake, and the commit's
//! caller waited for the whole fan-out to be written: 10-140 ms for an answer on a gateway
//! with one big room (`bench/history/`). Woken [`WAKE_AT_ONCE`] at a time by a task that yields
//! between batches, the tabs never fill the local queue, and a wake from another thread is
//! taken up between two batches. A tab woken later also finds more queued to it (the
//! `resolved` often lands before its `request` is written), and writes both at once.

use std::task::Waker;

use futures_util::task::AtomicWaker;

/// Tasks woken in one batch. Under the 61 tasks the runtime runs between two looks at its
/// timers and sockets (where a yielded task is resumed), so the batches do not pile up in the
/// local queue.
pub(in crate::hub) const WAKE_AT_ONCE: usize = 32;

/// When the tasks given frames are woken.
pub(in crate::hub) enum Wakes {
    /// Each as its frame is queued.
    Now,
    /// Once the fan-out has queued every frame (these tasks so far), [`WAKE_AT_ONCE`] at a
    /// time by a task of their own; dropping a `Later` starts it.
    Later(Vec<Waker>),
}

impl Wakes {
    /// How to wake a fan-out to `tasks` tasks: [`Wakes::Later`] for more than
    /// [`WAKE_AT_ONCE`], when there is a runtime to wake them from.
    pub(in crate::hub) fn for_fan_out(tasks: usize) -> Wakes {
        if tasks > WAKE_AT_ONCE && tokio::runtime::Handle::try_current().is_ok() {
            Wakes::Later(Vec::with_capacity(tasks))
        } else {
            Wakes::Now
        }
    }

    /// Wakes the task waiting on `waker`, now or later.
    pub(super) fn wake(&mut self, waker: &AtomicWaker) {
        match self {
            Wakes::Now => waker.wake(),
            // A task not waiting has no waker here; it will look at its queue anyway.
            Wakes::Later(wakers) => wakers.extend(waker.take()),
        }
    }
}

impl Drop for Wakes {
    fn drop(&mut self) {
        let Wakes::Later(wakers) = self else {
            return;
        };
        let wakers = std::mem::take(wakers);
        if wakers.is_empty() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn(wake_a_few_at_a_time(wakers))),
            Err(_) => wakers.into_iter().for_each(Waker::wake),
        }
    }
}

/// Wakes `wakers` [`WAKE_AT_ONCE`] at a time, yielding to the runtime between batches.
async fn wake_a_few_at_a_time(wakers: Vec<Waker>) {
    let mut left = wakers.into_iter();
    loop {
        left.by_ref().take(WAKE_AT_ONCE).for_each(Waker::wake);
        if left.len() == 0 {
            return;
        }
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::task::Poll;

    use super::*;

    /// A runtime like the gateway's by default: the multi-thread scheduler, one worker.
    fn one_worker() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap()
    }

    /// How many of `tabs` tasks had run when a task woken from another thread ran, the tabs
    /// woken by a fan-out from `fan_out` and the other thread's wake landing as the first
    /// tab runs.
    fn tabs_run_before_a_wake_from_another_thread(
        tabs: usize,
        fan_out: fn(usize) -> Wakes,
    ) -> usize {
        // In a task, as the hub's fan-outs run: `block_on`'s own future is not on the worker.
        let fan_out_in_a_task = async move {
            let ran = Arc::new(AtomicUsize::new(0));
            let wakers: Arc<Mutex<Vec<Arc<AtomicWaker>>>> = Arc::default();
            let (remote, heard) = tokio::sync::oneshot::channel::<()>();
            let remote = Arc::new(Mutex::new(Some(remote)));
            let mut tab_tasks = Vec::new();
            for _ in 0..tabs {
                let (ran, wakers, remote) =
                    (Arc::clone(&ran), Arc::clone(&wakers), Arc::clone(&remote));
                tab_tasks.push(tokio::spawn(async move {
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
                    ran.fetch_add(1, Ordering::SeqCst);
                    // The first tab to run has a thread outside the runtime wake the waiter,
                    // as the syncer wakes a commit's caller; joined, so the wake is queued
                    // before this tab goes on.
                    if let Some(remote) = remote.lock().unwrap().take() {
                        std::thread::spawn(move || remote.send(()).unwrap())
                            .join()
                            .unwrap();
                    }
                }));
            }
            // Every tab task has run once and registered its waker.
            while wakers.lock().unwrap().len() < tabs {
                tokio::task::yield_now().await;
            }
            let waiter = {
                let ran = Arc::clone(&ran);
                tokio::spawn(async move {
                    heard.await.unwrap();
                    ran.load(Ordering::SeqCst)
                })
            };
            tokio::task::yield_now().await;
            {
                let mut wakes = fan_out(tabs);
                for waker in wakers.lock().unwrap().iter() {
                    wakes.wake(waker);
                }
            }
            let tabs_before = waiter.await.unwrap();
            for task in tab_tasks {
                task.await.unwrap();
            }
            assert_eq!(ran.load(Ordering::SeqCst), tabs, "every tab was woken");
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
        let in_batches = tabs_run_before_a_wake_from_another_thread(tabs, Wakes::for_fan_out);
        assert!(
            in_batches <= 8 * WAKE_AT_ONCE,
            "{in_batches} of {tabs} tabs ran before the other thread's wake, in batches"
        );
        let at_once = tabs_run_before_a_wake_from_another_thread(tabs, |_| Wakes::Now);
        assert!(
            at_once > tabs / 2,
            "the control: woken at once, {at_once} of {tabs} tabs ran first"
        );
    }

    /// A small fan-out, or one outside a runtime, wakes each task as its frame is queued.
    #[test]
    fn a_few_tasks_or_no_runtime_are_woken_at_once() {
        assert!(matches!(Wakes::for_fan_out(5_000), Wakes::Now));
        let runtime = one_worker();
        let _inside = runtime.enter();
        assert!(matches!(Wakes::for_fan_out(WAKE_AT_ONCE), Wakes::Now));
        assert!(matches!(
            Wakes::for_fan_out(WAKE_AT_ONCE + 1),
            Wakes::Later(_)
        ));
    }
}
