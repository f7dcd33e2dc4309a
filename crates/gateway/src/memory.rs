//! Giving the operating system back memory the gateway freed.
//!
//! The `askgate` binary allocates with mimalloc (`main.rs`). mimalloc keeps the pages a thread
//! frees in that thread's heap and gives them back to the system only when the thread next
//! allocates enough to look at them, so a gateway that goes still after a burst of large
//! requests would stay at its peak. Open requests are its largest allocations (up to
//! `--max-open-bytes` in all), so the gateway watches its open bytes and kept outcomes and
//! asks the allocator to collect ([`give_back_free_memory`]) at most every
//! [`TRIM_CHECK_EVERY`]: during a long drain once [`TRIM_AFTER_FREED`] open bytes have ended,
//! and once the gateway is still after requests or outcomes ended. A collect covers the calling
//! thread's heap (and the pages every thread has handed back), so the watch runs on the
//! runtime's worker, where requests are built and dropped, and the embedded store's
//! checkpointer collects its own when it goes idle. With `--worker-threads` above one, the
//! other workers' heaps are given back as they next allocate.
//!
//! Measured (bench/memory-return.py, 6 sessions of ~15 MiB of requests each): glibc with
//! `malloc_trim` came back to 37.9 MB, mimalloc v2 with these collects to 40.6 MB, mimalloc
//! v3 to 58-65 MB (bench/history/*-allocator-mimalloc.txt).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;

/// How often the open bytes are looked at.
pub const TRIM_CHECK_EVERY: Duration = Duration::from_secs(2);

/// How many open bytes must have ended since the last trim (or the peak since then) for a
/// collect to be worth its cost: the allocator walks every page of the heap.
pub const TRIM_AFTER_FREED: usize = 8 << 20;

/// Asks mimalloc to give the system back the free pages of the calling thread's heap and
/// of its shared segments. Harmless where mimalloc is not the global allocator (the library's
/// tests): it then collects an empty heap.
#[expect(unsafe_code, reason = "mi_collect is mimalloc's, reached through FFI")]
pub fn give_back_free_memory() {
    // SAFETY: mi_collect takes no pointers and touches only the calling thread's heap and
    // mimalloc's own segment lists, under their locks; any thread may call it at any time.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// Calls [`give_back_free_memory`] for a thread of its own (the embedded store's
/// checkpointer) each time it goes idle after work: a thread that waits for more does not
/// allocate, so mimalloc would not look at its free pages until it wakes.
#[derive(Debug, Default)]
pub struct IdleCollect {
    worked: bool,
}

impl IdleCollect {
    /// The thread did some work.
    pub fn worked(&mut self) {
        self.worked = true;
    }

    /// The thread is about to wait for more: collects if it worked since the last time.
    pub fn going_idle(&mut self) {
        if std::mem::take(&mut self.worked) {
            give_back_free_memory();
        }
    }
}

/// What the watch looks at: the open requests' bytes and the outcomes kept for their agents
/// (an answered request's memory is freed when its agent acknowledges it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Look {
    open_bytes: usize,
    kept_outcomes: i64,
}

/// What the watch saw since the last trim.
#[derive(Debug, Default)]
struct SinceTrim {
    /// The most open bytes seen since the last trim.
    peak_open_bytes: usize,
    /// The previous look.
    last: Option<Look>,
    /// Whether requests or outcomes have ended since the last trim.
    something_ended: bool,
}

impl SinceTrim {
    /// Whether to trim now: when at least [`TRIM_AFTER_FREED`] open bytes have ended since
    /// the last trim (a long drain), or when something ended and the gateway has been still
    /// for one look since (the memory of the last requests to end comes back too).
    fn trim_now(&mut self, now: Look) -> bool {
        self.peak_open_bytes = self.peak_open_bytes.max(now.open_bytes);
        let still = self.last == Some(now);
        if let Some(last) = self.last {
            self.something_ended |=
                now.open_bytes < last.open_bytes || now.kept_outcomes < last.kept_outcomes;
        }
        self.last = Some(now);
        let drained = self.peak_open_bytes - now.open_bytes >= TRIM_AFTER_FREED;
        if drained {
            // What the requests held is freed after the look too (queued frames, the store's
            // buffers): once still, trim again.
            self.peak_open_bytes = now.open_bytes;
            self.something_ended = true;
            return true;
        }
        if still && self.something_ended {
            self.something_ended = false;
            return true;
        }
        false
    }
}

/// Trims after open requests or kept outcomes end, as [`SinceTrim::trim_now`] says, until
/// `stop`.
pub async fn give_back_after_requests_end(
    open_bytes: impl Fn() -> usize + Send,
    metrics: Arc<Metrics>,
    stop: CancellationToken,
) {
    let mut since_trim = SinceTrim::default();
    let mut every = tokio::time::interval(TRIM_CHECK_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = every.tick() => {}
        }
        let now = Look {
            open_bytes: open_bytes(),
            kept_outcomes: metrics.kept_outcomes.load(Ordering::Relaxed),
        };
        if since_trim.trim_now(now) {
            // Here, not on a blocking thread: the collect covers the calling thread's heap,
            // and this task runs on a worker, where requests are built and dropped.
            give_back_free_memory();
            tracing::debug!("asked the allocator to return freed memory");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(open_bytes: usize, kept_outcomes: i64) -> Look {
        Look {
            open_bytes,
            kept_outcomes,
        }
    }

    #[test]
    fn a_long_drain_trims_every_8_mib() {
        let mut since_trim = SinceTrim::default();
        assert!(!since_trim.trim_now(look(0, 0)));
        assert!(!since_trim.trim_now(look(30 << 20, 0)));
        assert!(!since_trim.trim_now(look(23 << 20, 0)));
        assert!(since_trim.trim_now(look(22 << 20, 0)));
        // The peak starts again from what is open then.
        assert!(!since_trim.trim_now(look(15 << 20, 0)));
        assert!(since_trim.trim_now(look(14 << 20, 0)));
        // Once still, once more: what those requests held is also freed after the look.
        assert!(since_trim.trim_now(look(14 << 20, 0)));
        assert!(!since_trim.trim_now(look(14 << 20, 0)));
    }

    #[test]
    fn a_trim_follows_the_last_ends_once_the_gateway_is_still() {
        let mut since_trim = SinceTrim::default();
        assert!(!since_trim.trim_now(look(1 << 20, 0)));
        // A request answered: its bytes leave, an outcome is kept; then it is acknowledged.
        assert!(!since_trim.trim_now(look(0, 1)));
        assert!(!since_trim.trim_now(look(0, 0)));
        assert!(since_trim.trim_now(look(0, 0)));
        // Nothing ended since: no more trims while it stays still.
        assert!(!since_trim.trim_now(look(0, 0)));
        assert!(!since_trim.trim_now(look(0, 0)));
    }

    #[test]
    fn new_work_alone_never_trims() {
        let mut since_trim = SinceTrim::default();
        for step in 0..10 {
            assert!(!since_trim.trim_now(look(step << 20, step as i64)));
            assert!(!since_trim.trim_now(look(step << 20, step as i64)));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_watch_stops_when_told() {
        let stop = CancellationToken::new();
        let watch = tokio::spawn(give_back_after_requests_end(
            || 0,
            Arc::default(),
            stop.clone(),
        ));
        tokio::time::sleep(TRIM_CHECK_EVERY * 3).await;
        assert!(!watch.is_finished());
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(1), watch)
            .await
            .expect("the watch ended when told")
            .unwrap();
    }

    #[test]
    fn giving_back_is_safe_to_call_at_any_time() {
        let held: Vec<Vec<u8>> = (0..64).map(|n| vec![n as u8; 64 << 10]).collect();
        drop(held);
        give_back_free_memory();
    }
}
