//! How long to wait before reconnecting: exponential, capped, with jitter.
//!
//! Jitter matters when a gateway restarts: every agent it dropped comes back, and without it
//! they would all come back in the same millisecond, again and again.

use std::time::Duration;

use rand::Rng as _;

/// The reconnect schedule: attempt `n` waits about `initial × factorⁿ`, at most `max`, less a
/// random share of up to `jitter` of it.
///
/// The count of attempts starts again once a connection has heard from the gateway, so a
/// connection that served for a while reconnects quickly, while a gateway that closes every
/// new connection (1013, try again later) is retried ever more slowly. A close that asks the
/// client to slow down (4429, 4408, 1013, 1011) does not start the count again, even after
/// frames came: the waits keep growing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    /// The wait before the first reconnect.
    pub initial: Duration,
    /// The longest wait.
    pub max: Duration,
    /// How much each failed attempt multiplies the wait (at least 1).
    pub factor: f64,
    /// The share of each wait that is random, from 0 (none) to 1 (anywhere from 0 to the
    /// wait).
    pub jitter: f64,
}

impl Default for Backoff {
    /// 100 ms, doubling to at most 5 s, up to half of it random.
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(5),
            factor: 2.0,
            jitter: 0.5,
        }
    }
}

impl Backoff {
    /// The wait before reconnect attempt `attempt` (0 for the first), jitter included.
    pub fn delay(&self, attempt: u32) -> Duration {
        let ceiling = self.ceiling(attempt);
        let jitter = if self.jitter.is_finite() {
            self.jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let share = 1.0 - jitter * rand::rng().random::<f64>();
        ceiling.mul_f64(share)
    }

    /// The wait before attempt `attempt` without jitter: the most [`delay`](Self::delay)
    /// returns.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let max = self.max.max(self.initial);
        let factor = if self.factor.is_finite() {
            self.factor.max(1.0)
        } else {
            1.0
        };
        let exponent = i32::try_from(attempt).unwrap_or(i32::MAX);
        let seconds = self.initial.as_secs_f64() * factor.powi(exponent);
        Duration::try_from_secs_f64(seconds).map_or(max, |wait| wait.min(max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_to_the_cap() {
        let backoff = Backoff::default();
        assert_eq!(backoff.ceiling(0), Duration::from_millis(100));
        assert_eq!(backoff.ceiling(1), Duration::from_millis(200));
        assert_eq!(backoff.ceiling(5), Duration::from_millis(3200));
        assert_eq!(backoff.ceiling(6), Duration::from_secs(5));
        assert_eq!(backoff.ceiling(u32::MAX), Duration::from_secs(5));
    }

    #[test]
    fn jitter_only_shortens() {
        let backoff = Backoff::default();
        for attempt in 0..20 {
            let delay = backoff.delay(attempt);
            let ceiling = backoff.ceiling(attempt);
            assert!(
                delay <= ceiling && delay >= ceiling / 2,
                "{delay:?} vs {ceiling:?}"
            );
        }
    }

    #[test]
    fn odd_settings_stay_sane() {
        let backoff = Backoff {
            initial: Duration::from_secs(1),
            max: Duration::ZERO,
            factor: f64::NAN,
            jitter: 7.0,
        };
        assert_eq!(backoff.ceiling(3), Duration::from_secs(1));
        assert!(backoff.delay(3) <= Duration::from_secs(1));
    }
}
