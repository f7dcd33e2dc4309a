//! A token bucket, for anything counted per second: frames a peer sends, tabs joining a
//! session.

use tokio::time::Instant;

/// `rate` events a second, in bursts of up to twice that.
#[derive(Debug)]
pub struct Pacer {
    tokens: f64,
    capacity: f64,
    rate: f64,
    last: Instant,
}

impl Pacer {
    /// A full bucket.
    pub fn new(rate: u32) -> Self {
        let rate = f64::from(rate.max(1));
        Pacer {
            tokens: rate * 2.0,
            capacity: rate * 2.0,
            rate,
            last: Instant::now(),
        }
    }

    /// Takes a token; `false` when the events come faster than the rate allows.
    pub fn admit(&mut self) -> bool {
        self.take(1)
    }

    /// Takes `tokens` more for an event already admitted that costs as much as that many
    /// more events; `false` (and none taken) when there are not that many. Never more than a
    /// full burst less the event's own token: at a low rate a costly event is still possible.
    pub fn charge(&mut self, tokens: u32) -> bool {
        let most = (self.capacity - 1.0).max(0.0) as u32;
        self.take(tokens.min(most))
    }

    fn take(&mut self, tokens: u32) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(self.capacity);
        self.last = now;
        let tokens = f64::from(tokens);
        if self.tokens >= tokens {
            self.tokens -= tokens;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_twice_the_rate_then_the_rate() {
        let mut pacer = Pacer::new(5);
        assert_eq!((0..20).filter(|_| pacer.admit()).count(), 10);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!((0..20).filter(|_| pacer.admit()).count(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn a_charge_is_never_more_than_a_burst_holds() {
        let mut pacer = Pacer::new(1);
        assert!(
            pacer.admit() && pacer.charge(4),
            "the burst of two, taken whole"
        );
        assert!(!pacer.admit());
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(pacer.admit() && pacer.charge(4));
    }

    #[tokio::test(start_paused = true)]
    async fn a_costly_event_takes_as_many_tokens_as_it_costs() {
        let mut pacer = Pacer::new(5);
        assert!(pacer.admit() && pacer.charge(4), "five of the burst's ten");
        assert!(pacer.admit() && pacer.charge(3));
        assert!(pacer.admit(), "the last token");
        assert!(!pacer.charge(1), "none left");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(!pacer.charge(6), "more than there are: none taken");
        assert_eq!((0..20).filter(|_| pacer.admit()).count(), 5);
    }
}
