//! The last hour, minute by minute: asks, answers, how long the gateway took to show an ask
//! and to hand an answer back, notifications by channel, and the latest notification errors,
//! for `GET /v1/ops/history`.
//!
//! A fixed ring of [`MINUTES_SHOWN`] minutes, each slot reused when its minute comes round
//! again: the memory is the same after a year as after a minute. Every method takes the time
//! (Unix ms) it records at, so the ring is tested on a clock of the test's own.
//!
//! Latencies go into a histogram of fixed logarithmic buckets, a quarter of a doubling wide
//! ([`LatencyHistogram`]): a percentile read from it is within 10% of a sample in its bucket,
//! and never outside the smallest and largest sample of the minute.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::notify::CHANNELS;

/// How long one slot of the ring covers.
pub const MINUTE_MS: u64 = 60_000;

/// Minutes kept and shown: the last 60 whole ones and the current one.
pub const MINUTES_SHOWN: usize = 61;

/// The most notification errors kept (the newest); older ones are dropped as new ones come.
pub const MAX_NOTIFICATION_ERRORS: usize = 20;

/// The longest error text kept, in characters; longer ones are cut and end in `…`.
pub const MAX_ERROR_CHARS: usize = 300;

/// The longest target kept (a URL's host, an address, a channel), in characters.
pub const MAX_TARGET_CHARS: usize = 120;

/// Upper bounds (seconds) of the ask-to-answer distribution: from a quick click to a day.
/// One more count than bounds: the last counts answers slower than a day.
pub const ANSWER_TIME_BOUNDS_S: [f64; 12] = [
    5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 21_600.0, 86_400.0,
];

/// The smallest latency told apart (ms): everything up to it is one bucket.
const SMALLEST_MS: f64 = 0.01;

/// Buckets per doubling of the latency: each is 2^(1/4) ≈ 1.19 times as wide as the last.
const STEPS_PER_DOUBLING: f64 = 4.0;

/// Latency buckets: from [`SMALLEST_MS`] up by quarter doublings to about six days; slower
/// samples count in the last, whose quantile is the slowest sample.
const LATENCY_BUCKETS: usize = 144;

/// How a notification try ended, as the minute counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tried {
    /// Sent and taken.
    Sent,
    /// Failed, and tried again later.
    Retried,
    /// Given up after `--notify-retry-for-s` of failures.
    GivenUp,
}

/// Latencies of one minute, in fixed logarithmic buckets.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    counts: [u32; LATENCY_BUCKETS],
    count: u32,
    min_ms: f64,
    max_ms: f64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            counts: [0; LATENCY_BUCKETS],
            count: 0,
            min_ms: f64::INFINITY,
            max_ms: 0.0,
        }
    }
}

impl LatencyHistogram {
    /// The bucket of `ms`: 0 up to [`SMALLEST_MS`], then one per quarter doubling.
    fn bucket(ms: f64) -> usize {
        if ms.is_nan() || ms <= SMALLEST_MS {
            return 0;
        }
        let steps = ((ms / SMALLEST_MS).log2() * STEPS_PER_DOUBLING).ceil();
        // Saturating float-to-int: an infinite sample lands in the last bucket.
        (steps as usize).min(LATENCY_BUCKETS - 1)
    }

    /// The geometric middle of bucket `index`, in ms.
    fn middle(index: usize) -> f64 {
        if index == 0 {
            return SMALLEST_MS / 2.0;
        }
        SMALLEST_MS * ((index as f64 - 0.5) / STEPS_PER_DOUBLING).exp2()
    }

    /// Counts one sample of `ms`.
    pub fn observe(&mut self, ms: f64) {
        let ms = if ms.is_finite() { ms.max(0.0) } else { 0.0 };
        self.counts[Self::bucket(ms)] = self.counts[Self::bucket(ms)].saturating_add(1);
        self.count = self.count.saturating_add(1);
        self.min_ms = self.min_ms.min(ms);
        self.max_ms = self.max_ms.max(ms);
    }

    /// The `q` quantile (0 < q ≤ 1) in ms, `None` without samples: the middle of the bucket
    /// holding the sample of rank ⌈q·n⌉, kept within the smallest and largest sample.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * f64::from(self.count)).ceil() as u32).clamp(1, self.count);
        let mut seen = 0u32;
        for (index, count) in self.counts.iter().enumerate() {
            seen = seen.saturating_add(*count);
            if seen >= rank && index == LATENCY_BUCKETS - 1 {
                // Open-ended: its middle means nothing.
                return Some(self.max_ms);
            }
            if seen >= rank {
                return Some(Self::middle(index).clamp(self.min_ms, self.max_ms));
            }
        }
        Some(self.max_ms)
    }

    /// Its p50 and p99, `None` without samples.
    pub fn quantiles(&self) -> Option<Quantiles> {
        Some(Quantiles {
            p50: self.quantile(0.5)?,
            p99: self.quantile(0.99)?,
        })
    }
}

/// A minute's p50 and p99 latency, in ms.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quantiles {
    /// Half the samples took at most this.
    pub p50: f64,
    /// 99 in 100 took at most this.
    pub p99: f64,
}

/// One channel's notifications in a minute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelMinute {
    /// Sent and taken.
    pub sent: u64,
    /// Failed, to be tried again.
    pub retried: u64,
    /// Given up.
    pub given_up: u64,
}

/// One minute as `GET /v1/ops/history` shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MinuteFigures {
    /// When the minute began (Unix ms, a multiple of [`MINUTE_MS`]).
    pub start_ms: u64,
    /// Requests accepted.
    pub asks: u64,
    /// Requests a person decided (answered or declined).
    pub answers: u64,
    /// From accepting an ask to its request frame queued to the first tab.
    pub ask_to_tab_ms: Option<Quantiles>,
    /// From the deciding answer to the outcome handed to the agent that waits.
    pub answer_to_agent_ms: Option<Quantiles>,
    /// By channel (every one of [`CHANNELS`], zeros included).
    pub notifications: std::collections::BTreeMap<String, ChannelMinute>,
    /// How long the requests a person decided this minute had waited for them, counted by
    /// [`ANSWER_TIME_BOUNDS_S`] (one more for slower): kept by the minute so that a reader
    /// sums exactly the hour it shows, whenever each node last reported.
    #[serde(default)]
    pub answer_time_counts: Vec<u64>,
}

impl MinuteFigures {
    /// A minute with nothing in it.
    pub fn empty(start_ms: u64) -> MinuteFigures {
        MinuteFigures {
            start_ms,
            asks: 0,
            answers: 0,
            ask_to_tab_ms: None,
            answer_to_agent_ms: None,
            notifications: CHANNELS
                .iter()
                .map(|channel| ((*channel).to_owned(), ChannelMinute::default()))
                .collect(),
            answer_time_counts: vec![0; ANSWER_TIME_BOUNDS_S.len() + 1],
        }
    }
}

/// A notification that could not be delivered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationError {
    /// When the try failed (Unix ms).
    pub at_ms: u64,
    /// Its channel (one of [`CHANNELS`]).
    pub channel: String,
    /// Where it was going: a URL's host, a mail address, a Slack channel or person.
    pub target: String,
    /// What went wrong.
    pub error: String,
}

/// One slot of the ring.
#[derive(Clone, Debug)]
struct Minute {
    start_ms: u64,
    asks: u64,
    answers: u64,
    ask_to_tab: LatencyHistogram,
    answer_to_agent: LatencyHistogram,
    /// Indexed like [`ANSWER_TIME_BOUNDS_S`], one more for slower.
    answer_time: [u64; ANSWER_TIME_BOUNDS_S.len() + 1],
    /// By channel (indexed like [`CHANNELS`]): sent, retried, given up.
    notifications: [ChannelMinute; CHANNELS.len()],
}

impl Minute {
    fn starting(start_ms: u64) -> Minute {
        Minute {
            start_ms,
            asks: 0,
            answers: 0,
            ask_to_tab: LatencyHistogram::default(),
            answer_to_agent: LatencyHistogram::default(),
            answer_time: [0; ANSWER_TIME_BOUNDS_S.len() + 1],
            notifications: [ChannelMinute::default(); CHANNELS.len()],
        }
    }

    fn figures(&self) -> MinuteFigures {
        MinuteFigures {
            start_ms: self.start_ms,
            asks: self.asks,
            answers: self.answers,
            ask_to_tab_ms: self.ask_to_tab.quantiles(),
            answer_to_agent_ms: self.answer_to_agent.quantiles(),
            notifications: CHANNELS
                .iter()
                .zip(&self.notifications)
                .map(|(channel, counts)| ((*channel).to_owned(), *counts))
                .collect(),
            answer_time_counts: self.answer_time.to_vec(),
        }
    }
}

/// The ring and the latest errors.
#[derive(Debug)]
struct Ring {
    /// Slot `(start_ms / MINUTE_MS) % MINUTES_SHOWN` holds that minute, or an older one
    /// (then it is stale, and read as empty).
    minutes: Vec<Minute>,
    /// Newest first.
    errors: VecDeque<NotificationError>,
}

impl Ring {
    /// The slot of the minute holding `now_ms`, emptied first if it held an older minute.
    fn minute(&mut self, now_ms: u64) -> &mut Minute {
        let start_ms = now_ms - now_ms % MINUTE_MS;
        let slot = &mut self.minutes[slot_of(start_ms)];
        if slot.start_ms != start_ms {
            *slot = Minute::starting(start_ms);
        }
        slot
    }
}

fn slot_of(start_ms: u64) -> usize {
    // The remainder is below MINUTES_SHOWN, which fits.
    ((start_ms / MINUTE_MS) % MINUTES_SHOWN as u64) as usize
}

/// What the ring holds, read at one time.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryFigures {
    /// The [`MINUTES_SHOWN`] minutes up to the one holding the time read, oldest first
    /// (fewer only on a clock within an hour of 1970).
    pub minutes: Vec<MinuteFigures>,
    /// Ask-to-answer times over those minutes, counted by [`ANSWER_TIME_BOUNDS_S`].
    pub answer_time_counts: Vec<u64>,
    /// The latest errors, newest first: at most [`MAX_NOTIFICATION_ERRORS`].
    pub notification_errors: Vec<NotificationError>,
}

/// This node's last hour.
#[derive(Debug)]
pub struct History {
    ring: Mutex<Ring>,
}

impl Default for History {
    fn default() -> Self {
        History {
            ring: Mutex::new(Ring {
                minutes: (0..MINUTES_SHOWN)
                    .map(|_| Minute::starting(u64::MAX))
                    .collect(),
                errors: VecDeque::with_capacity(MAX_NOTIFICATION_ERRORS),
            }),
        }
    }
}

impl History {
    /// Runs `change` on the minute of `now_ms`. A std lock: held for a few additions, never
    /// across an await.
    fn record(&self, now_ms: u64, change: impl FnOnce(&mut Minute)) {
        let mut ring = self
            .ring
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        change(ring.minute(now_ms));
    }

    /// An ask accepted at `now_ms`.
    pub fn asked(&self, now_ms: u64) {
        self.record(now_ms, |minute| minute.asks += 1);
    }

    /// An ask's request frame queued to its first tab, `took` after the ask was accepted.
    pub fn shown(&self, now_ms: u64, took: Duration) {
        self.record(now_ms, |minute| {
            minute.ask_to_tab.observe(took.as_secs_f64() * 1000.0);
        });
    }

    /// A request decided by a person, `after_ms` after it was asked.
    pub fn answered(&self, now_ms: u64, after_ms: u64) {
        let seconds = after_ms as f64 / 1000.0;
        let index = ANSWER_TIME_BOUNDS_S
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(ANSWER_TIME_BOUNDS_S.len());
        self.record(now_ms, |minute| {
            minute.answers += 1;
            minute.answer_time[index] += 1;
        });
    }

    /// An outcome handed to the agent waiting for it, `took` after the deciding answer came.
    pub fn handed_back(&self, now_ms: u64, took: Duration) {
        self.record(now_ms, |minute| {
            minute.answer_to_agent.observe(took.as_secs_f64() * 1000.0);
        });
    }

    /// A notification try on `channel` (an index of [`CHANNELS`]) that ended as `tried`.
    pub fn notified(&self, now_ms: u64, channel: usize, tried: Tried) {
        self.record(now_ms, |minute| {
            let Some(counts) = minute.notifications.get_mut(channel) else {
                return;
            };
            match tried {
                Tried::Sent => counts.sent += 1,
                Tried::Retried => counts.retried += 1,
                Tried::GivenUp => counts.given_up += 1,
            }
        });
    }

    /// A notification to `target` on `channel` that failed with `error`: kept among the
    /// newest [`MAX_NOTIFICATION_ERRORS`], each text cut to its bound.
    pub fn failed(&self, now_ms: u64, channel: &str, target: &str, error: &str) {
        let error = NotificationError {
            at_ms: now_ms,
            channel: channel.to_owned(),
            target: cut(target, MAX_TARGET_CHARS),
            error: cut(&urls_to_hosts(error), MAX_ERROR_CHARS),
        };
        let mut ring = self
            .ring
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ring.errors.push_front(error);
        ring.errors.truncate(MAX_NOTIFICATION_ERRORS);
    }

    /// The ring as of `now_ms`: every minute shown, empty ones included.
    pub fn figures(&self, now_ms: u64) -> HistoryFigures {
        let ring = self
            .ring
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let current = now_ms - now_ms % MINUTE_MS;
        let mut minutes = Vec::with_capacity(MINUTES_SHOWN);
        let mut answer_time_counts = vec![0u64; ANSWER_TIME_BOUNDS_S.len() + 1];
        for back in (0..MINUTES_SHOWN as u64).rev() {
            let Some(start_ms) = current.checked_sub(back * MINUTE_MS) else {
                continue;
            };
            let slot = &ring.minutes[slot_of(start_ms)];
            if slot.start_ms == start_ms {
                minutes.push(slot.figures());
                for (total, count) in answer_time_counts.iter_mut().zip(&slot.answer_time) {
                    *total += count;
                }
            } else {
                minutes.push(MinuteFigures::empty(start_ms));
            }
        }
        HistoryFigures {
            minutes,
            answer_time_counts,
            notification_errors: ring.errors.iter().cloned().collect(),
        }
    }
}

/// The ask-to-answer counts of `minutes`, summed bucket by bucket.
pub fn answer_time_counts<'m>(minutes: impl IntoIterator<Item = &'m MinuteFigures>) -> Vec<u64> {
    let mut totals = vec![0u64; ANSWER_TIME_BOUNDS_S.len() + 1];
    for minute in minutes {
        for (total, count) in totals.iter_mut().zip(&minute.answer_time_counts) {
            *total = total.saturating_add(*count);
        }
    }
    totals
}

/// `text` with every `http://` or `https://` URL in it cut to its scheme and host: the
/// errors operators read name where a notification went, never the path, query or user
/// information, which may hold a token (a callback's URL is the agent's, a webhook's may be a
/// secret one).
pub fn urls_to_hosts(text: &str) -> String {
    let mut kept = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = ["http://", "https://"]
        .iter()
        .filter_map(|scheme| rest.find(scheme))
        .min()
    {
        kept.push_str(&rest[..at]);
        let token = rest[at..]
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | '"' | '\'' | '>' | ','))
            .unwrap_or(rest.len() - at);
        // Punctuation that ends a sentence or a clause is the text's, not the URL's.
        let url = rest[at..at + token].trim_end_matches([':', ';', '.']);
        let url_len = url.len();
        match url::Url::parse(url) {
            Ok(parsed) => {
                kept.push_str(parsed.scheme());
                kept.push_str("://");
                kept.push_str(parsed.host_str().unwrap_or("(no host)"));
                if let Some(port) = parsed.port() {
                    kept.push_str(&format!(":{port}"));
                }
            }
            // Not one a client could call either; still nothing of it is shown.
            Err(_) => kept.push_str("(a URL)"),
        }
        rest = &rest[at + url_len..];
    }
    kept.push_str(rest);
    kept
}

/// `text` cut to at most `max` characters (the last of them `…` when cut).
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut kept: String = text.chars().take(max.saturating_sub(1)).collect();
    kept.push('…');
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A time well past 1970, at the start of a minute.
    const T0: u64 = 1_700_000_040_000;

    #[test]
    fn an_error_names_the_hosts_of_its_urls_and_nothing_after_them() {
        let said = "callback to https://u:pw@hooks.example:8443/cb?token=SECRET: error sending \
                    request for url (https://hooks.example:8443/cb?token=SECRET), then \
                    http://[::1]/x#frag and a bare http:// at the end";
        let shown = urls_to_hosts(said);
        assert!(!shown.contains("SECRET") && !shown.contains("pw") && !shown.contains("/cb"));
        assert_eq!(
            shown,
            "callback to https://hooks.example:8443: error sending request for url \
             (https://hooks.example:8443), then http://[::1] and a bare (a URL) at the end"
        );
        let history = History::default();
        history.failed(T0, "callback", "hooks.example", said);
        let errors = history.figures(T0).notification_errors;
        assert!(!errors[0].error.contains("SECRET"), "{errors:?}");
    }

    #[test]
    fn the_bounds_are_named_and_hold() {
        assert_eq!(T0 % MINUTE_MS, 0);
        assert_eq!(MINUTES_SHOWN, 61);
        assert!(ANSWER_TIME_BOUNDS_S.windows(2).all(|w| w[0] < w[1]));
        // The last latency bucket starts past four days, in ms.
        assert!(LatencyHistogram::middle(LATENCY_BUCKETS - 1) > 4.0 * 86_400_000.0);
    }

    #[test]
    fn a_minute_with_nothing_in_it_still_shows_with_zeros_and_nulls() {
        let history = History::default();
        let figures = history.figures(T0 + 5_000);
        assert_eq!(figures.minutes.len(), MINUTES_SHOWN);
        assert_eq!(figures.minutes[60], MinuteFigures::empty(T0));
        assert_eq!(figures.minutes[0].start_ms, T0 - 60 * MINUTE_MS);
        assert!(
            figures
                .minutes
                .windows(2)
                .all(|w| w[1].start_ms == w[0].start_ms + MINUTE_MS)
        );
        assert_eq!(figures.minutes[60].notifications.len(), CHANNELS.len());
        assert_eq!(
            figures.answer_time_counts,
            vec![0; ANSWER_TIME_BOUNDS_S.len() + 1]
        );
        assert!(figures.notification_errors.is_empty());
    }

    #[test]
    fn what_is_recorded_lands_in_the_minute_of_its_time_and_rolls_over() {
        let history = History::default();
        history.asked(T0 + 1_000);
        history.asked(T0 + 59_999);
        history.asked(T0 + 60_000);
        history.answered(T0 + 61_000, 3_000);
        history.notified(T0 + 61_000, 4, Tried::Sent);
        history.notified(T0 + 61_000, 0, Tried::GivenUp);
        let figures = history.figures(T0 + 61_500);
        let (before, now) = (&figures.minutes[59], &figures.minutes[60]);
        assert_eq!((before.start_ms, before.asks, before.answers), (T0, 2, 0));
        assert_eq!(
            (now.start_ms, now.asks, now.answers),
            (T0 + MINUTE_MS, 1, 1)
        );
        assert_eq!(now.notifications["callback"].sent, 1);
        assert_eq!(now.notifications["webhook"].given_up, 1);
        assert_eq!(before.notifications["callback"], ChannelMinute::default());
    }

    #[test]
    fn a_gap_of_minutes_reads_as_empty_and_an_hour_old_minute_is_forgotten() {
        let history = History::default();
        history.asked(T0);
        history.asked(T0 + 10 * MINUTE_MS);
        // Ten minutes later: both shown, the nine between empty.
        let figures = history.figures(T0 + 10 * MINUTE_MS);
        assert_eq!(figures.minutes[50].asks, 1);
        assert!(figures.minutes[51..60].iter().all(|m| m.asks == 0));
        assert_eq!(figures.minutes[60].asks, 1);
        // 61 minutes after the first: its slot is the current minute's, reused and emptied.
        history.asked(T0 + 61 * MINUTE_MS);
        let figures = history.figures(T0 + 61 * MINUTE_MS);
        assert_eq!(figures.minutes[60].asks, 1, "{:?}", figures.minutes[60]);
        assert_eq!(figures.minutes.iter().map(|m| m.asks).sum::<u64>(), 2);
        // Much later, nothing: every minute is stale.
        let figures = history.figures(T0 + 500 * MINUTE_MS);
        assert!(figures.minutes.iter().all(|m| m.asks == 0));
        assert_eq!(figures.minutes.len(), MINUTES_SHOWN);
    }

    #[test]
    fn a_minute_without_samples_has_no_percentiles_and_one_sample_is_its_own() {
        let history = History::default();
        history.asked(T0);
        let figures = history.figures(T0);
        assert_eq!(figures.minutes[60].ask_to_tab_ms, None);
        assert_eq!(figures.minutes[60].answer_to_agent_ms, None);
        history.shown(T0, Duration::from_micros(1_234));
        history.handed_back(T0, Duration::from_millis(40));
        let figures = history.figures(T0);
        assert_eq!(
            figures.minutes[60].ask_to_tab_ms,
            Some(Quantiles {
                p50: 1.234,
                p99: 1.234
            })
        );
        assert_eq!(
            figures.minutes[60].answer_to_agent_ms,
            Some(Quantiles {
                p50: 40.0,
                p99: 40.0
            })
        );
    }

    #[test]
    fn percentiles_are_within_a_bucket_of_the_samples() {
        let mut histogram = LatencyHistogram::default();
        // 1..=1000 ms: p50 is 500, p99 is 990.
        for ms in 1..=1000 {
            histogram.observe(f64::from(ms));
        }
        let q = histogram.quantiles().unwrap();
        assert!((q.p50 / 500.0 - 1.0).abs() < 0.10, "{q:?}");
        assert!((q.p99 / 990.0 - 1.0).abs() < 0.10, "{q:?}");
        // One slow sample among many fast ones moves p99 only when it is over 1 in 100.
        let mut histogram = LatencyHistogram::default();
        for _ in 0..199 {
            histogram.observe(2.0);
        }
        histogram.observe(5_000.0);
        let q = histogram.quantiles().unwrap();
        assert!((q.p99 / 2.0 - 1.0).abs() < 0.10, "{q:?}");
        histogram.observe(5_000.0);
        histogram.observe(5_000.0);
        let q = histogram.quantiles().unwrap();
        assert!((q.p99 / 5_000.0 - 1.0).abs() < 0.10, "{q:?}");
    }

    #[test]
    fn samples_at_the_edges_land_in_the_first_and_last_buckets() {
        let mut histogram = LatencyHistogram::default();
        histogram.observe(0.0);
        histogram.observe(-3.0);
        histogram.observe(f64::NAN);
        assert_eq!(histogram.quantile(0.99), Some(0.0));
        histogram.observe(1e15);
        histogram.observe(f64::INFINITY);
        assert_eq!(histogram.counts[LATENCY_BUCKETS - 1], 1);
        assert_eq!(histogram.quantile(1.0), Some(1e15));
    }

    #[test]
    fn answer_times_count_by_bound_and_past_the_last() {
        let history = History::default();
        for after_ms in [0, 5_000, 5_001, 86_400_000, 86_400_001] {
            history.answered(T0, after_ms);
        }
        let counts = history.figures(T0).answer_time_counts;
        assert_eq!(counts.len(), ANSWER_TIME_BOUNDS_S.len() + 1);
        assert_eq!(counts[0], 2, "{counts:?}");
        assert_eq!(counts[1], 1, "{counts:?}");
        assert_eq!(counts[ANSWER_TIME_BOUNDS_S.len() - 1], 1, "{counts:?}");
        assert_eq!(counts[ANSWER_TIME_BOUNDS_S.len()], 1, "{counts:?}");
        // An hour and a minute later they are out of the window.
        let counts = history.figures(T0 + 61 * MINUTE_MS).answer_time_counts;
        assert!(counts.iter().all(|c| *c == 0), "{counts:?}");
    }

    #[test]
    fn errors_keep_the_newest_first_each_cut_to_its_bound() {
        let history = History::default();
        for n in 0..(MAX_NOTIFICATION_ERRORS as u64 + 5) {
            history.failed(
                T0 + n,
                "webhook",
                "hooks.example.com",
                &format!("error {n}"),
            );
        }
        history.failed(T0 + 100, "email", &"t".repeat(500), &"e".repeat(5_000));
        let errors = history.figures(T0 + 100).notification_errors;
        assert_eq!(errors.len(), MAX_NOTIFICATION_ERRORS);
        assert_eq!(errors[0].channel, "email");
        assert_eq!(errors[0].error.chars().count(), MAX_ERROR_CHARS);
        assert!(errors[0].error.ends_with('…'));
        assert_eq!(errors[0].target.chars().count(), MAX_TARGET_CHARS);
        assert_eq!(
            errors[1].error,
            format!("error {}", MAX_NOTIFICATION_ERRORS + 4)
        );
        assert!(errors.windows(2).all(|w| w[0].at_ms >= w[1].at_ms));
    }
}
