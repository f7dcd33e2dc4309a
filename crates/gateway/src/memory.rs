//! Giving the operating system back memory the gateway freed.
//!
//! glibc's allocator keeps what a program frees in its arenas and returns pages only from the
//! top of a heap. Open requests are the gateway's largest allocations (up to
//! `--max-open-bytes` in all); when they end, later allocations that live on (finished lists,
//! maps, the store's cache) sit above them, so without help the process stays at its peak:
//! 565 MB kept after 97 MB of requests ended (bench/history/58fb855-memory-return.txt), 33 MB
//! once `malloc_trim(0)` ran. So the gateway watches its open bytes and, once at least
//! [`TRIM_AFTER_FREED`] of them ended since the last trim, asks glibc to trim, on a blocking
//! thread, at most every [`TRIM_CHECK_EVERY`]. Other allocators (musl, macOS) return memory
//! themselves; there this does nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

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

/// The open bytes seen since the last trim: whether the next look should trim.
#[derive(Debug, Default)]
struct SinceTrim {
    peak: usize,
}

impl SinceTrim {
    /// Looks at `open` bytes now: true when at least [`TRIM_AFTER_FREED`] have ended since
    /// the peak after the last trim (and the peak starts again from `open`).
    fn freed_enough(&mut self, open: usize) -> bool {
        self.peak = self.peak.max(open);
        if self.peak - open >= TRIM_AFTER_FREED {
            self.peak = open;
            return true;
        }
        false
    }
}

/// Trims after open requests that held at least [`TRIM_AFTER_FREED`] end, until `stop`.
pub async fn give_back_after_requests_end(open_bytes: Arc<AtomicUsize>, stop: CancellationToken) {
    let mut since_trim = SinceTrim::default();
    let mut every = tokio::time::interval(TRIM_CHECK_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = every.tick() => {}
        }
        if since_trim.freed_enough(open_bytes.load(Ordering::Relaxed)) {
            let returned = tokio::task::spawn_blocking(give_back_free_memory).await;
            tracing::debug!(?returned, "asked the allocator to return freed memory");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trim_follows_enough_freed_bytes_and_only_them() {
        let mut since_trim = SinceTrim::default();
        assert!(!since_trim.freed_enough(0));
        assert!(!since_trim.freed_enough(20 << 20));
        // Requests came and went below the threshold: nothing to give back yet.
        assert!(!since_trim.freed_enough(13 << 20));
        assert!(since_trim.freed_enough(12 << 20));
        // The peak starts again from what is open now.
        assert!(!since_trim.freed_enough(12 << 20));
        assert!(!since_trim.freed_enough(5 << 20));
        assert!(!since_trim.freed_enough(30 << 20));
        assert!(since_trim.freed_enough(0));
    }

    #[tokio::test(start_paused = true)]
    async fn the_watch_stops_when_told() {
        let stop = CancellationToken::new();
        let watch = tokio::spawn(give_back_after_requests_end(
            Arc::new(AtomicUsize::new(0)),
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
