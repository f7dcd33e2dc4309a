//! A session's `history` frame, built from its trail once and served to every tab that asks
//! until a request of the session ends: a flood of `history` frames costs a copy of a
//! pointer each, not a read and a parse of the trail.
//!
//! Held by the session (so it goes with it) and emptied when its last tab leaves. One build
//! at a time: tabs asking while it is built wait for it rather than each read the trail.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use super::frame::Frame;

/// The largest `history` frame kept: a larger one (requests with large questions or
/// answers) is built for each tab that asks, each charged to that tab's frame budget.
pub(super) const HISTORY_CACHE_BYTES: usize = 4 * 1024 * 1024;

/// A session's cached `history` frame.
#[derive(Debug, Default)]
pub(super) struct HistoryCache {
    /// Counts the session's endings seen here: the frame built at an older count is stale.
    endings: AtomicU64,
    /// The frame, and the count of endings it was built at.
    built: tokio::sync::Mutex<Option<(u64, Frame)>>,
}

impl HistoryCache {
    /// A request of the session ended: its entry is in the trail (endings are announced
    /// once stored), and the next `history` is built again.
    pub(super) fn ended(&self) {
        self.endings.fetch_add(1, Ordering::AcqRel);
    }

    /// The frame, as built by `build` at the latest ending: built now if it is not, and kept
    /// if it came out whole (`Ok`) and within [`HISTORY_CACHE_BYTES`]. `Err` (the trail could
    /// not be read) is handed on and not kept.
    pub(super) async fn frame<F>(&self, build: impl FnOnce() -> F) -> Frame
    where
        F: Future<Output = Result<Frame, Frame>>,
    {
        let mut built = self.built.lock().await;
        // Read before the trail is: an ending stored meanwhile makes this build stale.
        let endings = self.endings.load(Ordering::Acquire);
        if let Some((at, frame)) = built.as_ref()
            && *at == endings
        {
            return frame.clone();
        }
        match build().await {
            Ok(frame) => {
                *built = (frame.len() <= HISTORY_CACHE_BYTES).then(|| (endings, frame.clone()));
                frame
            }
            Err(frame) => frame,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use bytes::Bytes;

    use super::*;

    fn frame(text: &str) -> Frame {
        Frame::from_json(Bytes::copy_from_slice(text.as_bytes()))
    }

    #[tokio::test]
    async fn built_once_until_a_request_ends_and_never_kept_when_the_trail_failed() {
        let cache = HistoryCache::default();
        let builds = AtomicUsize::new(0);
        let build = |text: &'static str, ok: bool| {
            builds.fetch_add(1, Ordering::Relaxed);
            let frame = frame(text);
            async move { if ok { Ok(frame) } else { Err(frame) } }
        };
        for _ in 0..100 {
            assert_eq!(cache.frame(|| build("one", true)).await.text(), "one");
        }
        assert_eq!(builds.load(Ordering::Relaxed), 1);
        cache.ended();
        assert_eq!(cache.frame(|| build("two", true)).await.text(), "two");
        assert_eq!(cache.frame(|| build("three", true)).await.text(), "two");
        assert_eq!(builds.load(Ordering::Relaxed), 2);
        cache.ended();
        assert_eq!(
            cache.frame(|| build("failed", false)).await.text(),
            "failed"
        );
        assert_eq!(cache.frame(|| build("four", true)).await.text(), "four");
        assert_eq!(builds.load(Ordering::Relaxed), 4);
    }

    #[tokio::test]
    async fn a_frame_past_the_bound_is_not_kept() {
        let cache = HistoryCache::default();
        let large = " ".repeat(HISTORY_CACHE_BYTES + 1);
        let builds = AtomicUsize::new(0);
        for _ in 0..3 {
            let frame = frame(&large);
            cache
                .frame(|| {
                    builds.fetch_add(1, Ordering::Relaxed);
                    async move { Ok(frame) }
                })
                .await;
        }
        assert_eq!(builds.load(Ordering::Relaxed), 3);
        assert!(cache.built.lock().await.is_none());
    }
}
