//! A session's `history` frame, built from its trail once and served to every tab that asks
//! until a request of the session ends: a flood of `history` frames costs a copy of a
//! pointer each, not a read and a parse of the trail.
//!
//! Held by the session (so it goes with it) and emptied when its last tab leaves. One build
//! at a time: tabs asking while it is built wait for it rather than each read the trail.
//! A frame is at most [`HISTORY_CACHE_BYTES`] (the build leaves older requests out to fit),
//! and the frames kept by all sessions together at most [`HISTORY_CACHES_BYTES`]: past that
//! a frame is built for each tab that asks, each charged to that tab's frame budget.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::super::peers::frame::Frame;

/// The largest `history` frame: the build leaves the oldest requests out to stay within it.
pub(in crate::hub) const HISTORY_CACHE_BYTES: usize = 4 * 1024 * 1024;

/// The most bytes of `history` frames kept by every session of the gateway together.
pub(in crate::hub) const HISTORY_CACHES_BYTES: usize = 64 * 1024 * 1024;

/// A kept frame, counted in the gateway-wide total until it is dropped.
#[derive(Debug)]
struct Kept {
    /// The count of endings it was built at.
    at: u64,
    frame: Frame,
    total: Arc<AtomicUsize>,
}

impl Drop for Kept {
    fn drop(&mut self) {
        self.total.fetch_sub(self.frame.len(), Ordering::AcqRel);
    }
}

/// A session's cached `history` frame.
#[derive(Debug, Default)]
pub(in crate::hub) struct HistoryCache {
    /// Counts the session's endings seen here: the frame built at an older count is stale.
    endings: AtomicU64,
    /// The frame, and the count of endings it was built at.
    built: tokio::sync::Mutex<Option<Kept>>,
}

impl HistoryCache {
    /// A request of the session ended: its entry is in the trail (endings are announced
    /// once stored), and the next `history` is built again.
    pub(in crate::hub) fn ended(&self) {
        self.endings.fetch_add(1, Ordering::AcqRel);
    }

    /// The frame, as built by `build` at the latest ending: built now if it is not, and kept
    /// if it came out whole (`Ok`) and fits in what is left of `total` (the bytes every
    /// session keeps, at most [`HISTORY_CACHES_BYTES`]). `Err` (the trail could not be read)
    /// is handed on and not kept.
    pub(in crate::hub) async fn frame<F>(
        &self,
        total: &Arc<AtomicUsize>,
        build: impl FnOnce() -> F,
    ) -> Frame
    where
        F: Future<Output = Result<Frame, Frame>>,
    {
        let mut built = self.built.lock().await;
        // Read before the trail is: an ending stored meanwhile makes this build stale.
        let endings = self.endings.load(Ordering::Acquire);
        if let Some(kept) = built.as_ref()
            && kept.at == endings
        {
            return kept.frame.clone();
        }
        // The stale frame's bytes are given back before the new one asks for room.
        *built = None;
        match build().await {
            Ok(frame) => {
                let room = total.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                    (held + frame.len() <= HISTORY_CACHES_BYTES).then_some(held + frame.len())
                });
                if room.is_ok() {
                    *built = Some(Kept {
                        at: endings,
                        frame: frame.clone(),
                        total: Arc::clone(total),
                    });
                }
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
        let total = Arc::new(AtomicUsize::new(0));
        for _ in 0..100 {
            assert_eq!(
                cache.frame(&total, || build("one", true)).await.text(),
                "one"
            );
        }
        assert_eq!(builds.load(Ordering::Relaxed), 1);
        cache.ended();
        assert_eq!(
            cache.frame(&total, || build("two", true)).await.text(),
            "two"
        );
        assert_eq!(
            cache.frame(&total, || build("three", true)).await.text(),
            "two"
        );
        assert_eq!(builds.load(Ordering::Relaxed), 2);
        cache.ended();
        assert_eq!(
            cache.frame(&total, || build("failed", false)).await.text(),
            "failed"
        );
        assert_eq!(
            cache.frame(&total, || build("four", true)).await.text(),
            "four"
        );
        assert_eq!(builds.load(Ordering::Relaxed), 4);
    }

    #[tokio::test]
    async fn large_frames_are_kept_within_the_gateway_wide_bound_and_given_back_when_dropped() {
        let total = Arc::new(AtomicUsize::new(0));
        let large = " ".repeat(HISTORY_CACHE_BYTES);
        let caches: Vec<HistoryCache> = (0..HISTORY_CACHES_BYTES / HISTORY_CACHE_BYTES + 1)
            .map(|_| HistoryCache::default())
            .collect();
        let builds = AtomicUsize::new(0);
        for _ in 0..3 {
            for cache in &caches {
                let frame = frame(&large);
                cache
                    .frame(&total, || {
                        builds.fetch_add(1, Ordering::Relaxed);
                        async move { Ok(frame) }
                    })
                    .await;
            }
        }
        // Every cache but the one past the bound built once; that one built each time.
        assert_eq!(builds.load(Ordering::Relaxed), caches.len() - 1 + 3);
        assert_eq!(total.load(Ordering::Relaxed), HISTORY_CACHES_BYTES);
        assert!(caches.last().unwrap().built.lock().await.is_none());
        drop(caches);
        assert_eq!(
            total.load(Ordering::Relaxed),
            0,
            "dropped caches give their bytes back"
        );
    }
}
