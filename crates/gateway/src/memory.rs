//! Giving the operating system back memory the gateway freed.
//!
//! glibc's allocator keeps what a program frees in its arenas and returns pages only from the
//! top of a heap. Open requests are the gateway's largest allocations (up to
//! `--max-open-bytes` in all); when they end, later allocations that live on (finished lists,
//! maps, the store's cache) sit above them, so without help the process stays at its peak:
//! 565 MB kept after 97 MB of requests ended; 32-45 MB with the trims below
//! (bench/history/18f5b09-memory-trim.txt), and 29-33 MB once the embedded store's page
//! cache was cut from 16 to 4 MiB (bench/history/*-memory-redb-cache.txt). What stays beyond
//! the start is that cache and glibc's fragmentation: the partial pages at the ends of its
//! free chunks. So the gateway watches its open bytes and kept outcomes and asks
//! glibc to trim, on a blocking thread, at most every [`TRIM_CHECK_EVERY`]: during a long drain
//! once [`TRIM_AFTER_FREED`] open bytes have ended, and once the gateway is still after
//! requests or outcomes ended. Other allocators (musl, macOS) return memory
//! themselves; there this does nothing.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;

/// How often the open bytes are looked at.
pub const TRIM_CHECK_EVERY: Duration = Duration::from_secs(2);

/// How many open bytes must have ended since the last trim (or the peak since then) for a
/// trim to be worth its cost: glibc walks and locks every arena in turn.
pub const TRIM_AFTER_FREED: usize = 8 << 20;

/// Asks the allocator to return the free pages of every arena; whether it returned any.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[expect(unsafe_code, reason = "malloc_trim is glibc's, reached through FFI")]
pub fn give_back_free_memory() -> bool {
    // SAFETY: malloc_trim takes no pointers and touches only glibc's own free lists, under
    // the arenas' locks; it is safe to call from any thread at any time.
    unsafe { libc::malloc_trim(0) == 1 }
}

/// Elsewhere the allocator returns memory itself.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn give_back_free_memory() -> bool {
    false
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
            let returned = tokio::task::spawn_blocking(give_back_free_memory).await;
            tracing::debug!(?returned, "asked the allocator to return freed memory");
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
        let _ = give_back_free_memory();
    }
}
