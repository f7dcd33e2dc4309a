//! Latency histograms (HDR, 3 significant digits, microseconds from 1 µs to 2 minutes) shared
//! by the tasks that record into them, and their summaries in milliseconds.
//!
//! A std `Mutex` per histogram: a record is a few nanoseconds of work under it and nothing
//! awaits while holding it; with one or two generator threads it is all but uncontended.

use std::sync::Mutex;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest value tracked, µs (2 minutes); larger values are clamped to it.
const MAX_US: u64 = 120_000_000;

/// One latency distribution.
pub(crate) struct Hist {
    inner: Mutex<Histogram<u64>>,
}

impl std::fmt::Debug for Hist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hist").finish_non_exhaustive()
    }
}

impl Default for Hist {
    fn default() -> Self {
        Hist::new()
    }
}

impl Hist {
    /// An empty histogram.
    pub(crate) fn new() -> Hist {
        let histogram = Histogram::new_with_bounds(1, MAX_US, 3)
            .unwrap_or_else(|_| unreachable!("the bounds are valid"));
        Hist {
            inner: Mutex::new(histogram),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Histogram<u64>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a latency given in nanoseconds.
    pub(crate) fn record_ns(&self, ns: u64) {
        let us = (ns / 1_000).clamp(1, MAX_US);
        self.lock().saturating_record(us);
    }

    /// Percentiles in milliseconds.
    pub(crate) fn summary(&self) -> Summary {
        let h = self.lock();
        let ms = |us: u64| us as f64 / 1_000.0;
        if h.is_empty() {
            return Summary::default();
        }
        Summary {
            count: h.len(),
            mean_ms: h.mean() / 1_000.0,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p90_ms: ms(h.value_at_quantile(0.90)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        }
    }
}

/// A distribution's summary, in milliseconds.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub(crate) struct Summary {
    /// Values recorded.
    pub(crate) count: u64,
    /// Mean.
    pub(crate) mean_ms: f64,
    /// Median.
    pub(crate) p50_ms: f64,
    /// 90th percentile.
    pub(crate) p90_ms: f64,
    /// 99th percentile.
    pub(crate) p99_ms: f64,
    /// 99.9th percentile.
    pub(crate) p999_ms: f64,
    /// Largest.
    pub(crate) max_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nanoseconds go in, milliseconds come out; sub-microsecond values count as 1 µs.
    #[test]
    fn summarises_in_milliseconds() {
        let h = Hist::new();
        for ms in 1..=100u64 {
            h.record_ns(ms * 1_000_000);
        }
        h.record_ns(10);
        let s = h.summary();
        assert_eq!(s.count, 101);
        assert!((s.p50_ms - 50.0).abs() < 0.1, "{s:?}");
        assert!((s.max_ms - 100.0).abs() < 0.1, "{s:?}");
    }
}
