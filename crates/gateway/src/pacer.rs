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
        let now = Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(self.capacity);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
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
}
