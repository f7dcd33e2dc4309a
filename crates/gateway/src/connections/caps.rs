//! How many connections the gateway holds, overall and per client address, and the permit
//! each accepted connection carries until its socket closes.
//!
//! Every open socket is a file descriptor. A peer that opens connections and sends nothing
//! would otherwise use up the process's open-file limit, after which nobody (a health check,
//! an agent, a person) can connect at all. The overall cap keeps a reserve of descriptors for
//! the store and for refusing politely; the per-address cap stops one client from taking the
//! whole of it.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::metrics::{Metrics, gauge_add};

/// Why a connection was turned away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapRefusal {
    /// The gateway holds `--max-connections` already.
    Total,
    /// This client address holds `--max-connections-per-address` already.
    PerAddress,
}

impl CapRefusal {
    /// The sentence the refused client reads (and the log repeats).
    pub fn message(self) -> &'static str {
        match self {
            CapRefusal::Total => {
                "the gateway holds as many connections as it may (--max-connections); try again later"
            }
            CapRefusal::PerAddress => {
                "this address holds as many connections as one address may \
                 (--max-connections-per-address); close some, or try again later"
            }
        }
    }
}

/// The counts, shared by the accept loop and every permit.
#[derive(Debug)]
pub struct ConnectionCaps {
    /// Where the connections held are shown (`askgate_connections`).
    metrics: Arc<Metrics>,
    max_total: usize,
    /// `None`: no per-address cap (behind a reverse proxy every client has its address).
    max_per_address: Option<usize>,
    total: AtomicUsize,
    per_address: Mutex<HashMap<AddressKey, usize>>,
}

/// What the per-address cap counts by: an IPv4 address, or an IPv6 /64 (one host's share of
/// a network: a client given a /64 can pick any address in it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AddressKey(IpAddr);

impl AddressKey {
    /// The key of `ip` (an IPv4 address mapped into IPv6 counts as itself).
    pub fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => AddressKey(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => AddressKey(IpAddr::V4(v4)),
                None => {
                    let network = u128::from(v6) & !((1u128 << 64) - 1);
                    AddressKey(IpAddr::V6(Ipv6Addr::from(network)))
                }
            },
        }
    }
}

impl ConnectionCaps {
    /// Caps of `max_total` connections, and `max_per_address` per address (`None`: no cap),
    /// counted in `metrics`.
    pub fn new(
        max_total: usize,
        max_per_address: Option<usize>,
        metrics: Arc<Metrics>,
    ) -> Arc<Self> {
        Arc::new(ConnectionCaps {
            metrics,
            max_total: max_total.max(1),
            max_per_address: max_per_address.map(|cap| cap.max(1)),
            total: AtomicUsize::new(0),
            per_address: Mutex::new(HashMap::new()),
        })
    }

    /// The overall cap.
    pub fn max_total(&self) -> usize {
        self.max_total
    }

    /// The per-address cap, if any.
    pub fn max_per_address(&self) -> Option<usize> {
        self.max_per_address
    }

    /// Connections held now.
    pub fn held(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    /// A permit for a connection from `ip`, held until the connection closes.
    ///
    /// # Errors
    /// Which cap it would exceed.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Permit, CapRefusal> {
        let key = AddressKey::of(ip);
        // The per-address map and the total change together under the map's lock, so two
        // connections arriving at once cannot both take the last place.
        let mut per_address = self
            .per_address
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.total.load(Ordering::Relaxed) >= self.max_total {
            return Err(CapRefusal::Total);
        }
        let held = per_address.get(&key).copied().unwrap_or(0);
        if self.max_per_address.is_some_and(|cap| held >= cap) {
            return Err(CapRefusal::PerAddress);
        }
        *per_address.entry(key).or_insert(0) += 1;
        self.total.fetch_add(1, Ordering::Relaxed);
        gauge_add(&self.metrics.connections, 1);
        Ok(Permit {
            caps: Arc::clone(self),
            key,
        })
    }

    fn release(&self, key: AddressKey) {
        let mut per_address = self
            .per_address
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(held) = per_address.get_mut(&key) {
            *held -= 1;
            if *held == 0 {
                per_address.remove(&key);
            }
        }
        self.total.fetch_sub(1, Ordering::Relaxed);
        gauge_add(&self.metrics.connections, -1);
    }
}

/// One connection's place under the caps; given back when dropped (when its socket closes).
#[derive(Debug)]
pub struct Permit {
    caps: Arc<ConnectionCaps>,
    key: AddressKey,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.caps.release(self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn one_address_cannot_take_every_place() {
        let caps = ConnectionCaps::new(4, Some(2), Arc::default());
        let a1 = caps.admit(ip("10.0.0.1")).unwrap();
        let _a2 = caps.admit(ip("10.0.0.1")).unwrap();
        assert_eq!(
            caps.admit(ip("10.0.0.1")).unwrap_err(),
            CapRefusal::PerAddress
        );
        let _b1 = caps.admit(ip("10.0.0.2")).unwrap();
        let _b2 = caps.admit(ip("::ffff:10.0.0.2")).unwrap();
        assert_eq!(caps.admit(ip("10.0.0.3")).unwrap_err(), CapRefusal::Total);
        assert_eq!(caps.held(), 4);
        assert_eq!(caps.metrics.connections.load(Ordering::Relaxed), 4);
        drop(a1);
        assert_eq!(caps.held(), 3);
        let _a3 = caps.admit(ip("10.0.0.1")).unwrap();
    }

    #[test]
    fn an_ipv6_network_counts_as_one_address() {
        let caps = ConnectionCaps::new(100, Some(1), Arc::default());
        let _one = caps.admit(ip("2001:db8:1:2::1")).unwrap();
        assert_eq!(
            caps.admit(ip("2001:db8:1:2:ffff::9")).unwrap_err(),
            CapRefusal::PerAddress
        );
        let _other = caps.admit(ip("2001:db8:1:3::1")).unwrap();
    }

    #[test]
    fn without_a_per_address_cap_only_the_total_counts() {
        let caps = ConnectionCaps::new(3, None, Arc::default());
        let permits: Vec<_> = (0..3)
            .map(|_| caps.admit(ip("127.0.0.1")).unwrap())
            .collect();
        assert_eq!(caps.admit(ip("127.0.0.1")).unwrap_err(), CapRefusal::Total);
        drop(permits);
        assert_eq!(caps.held(), 0);
        assert!(caps.per_address.lock().unwrap().is_empty());
    }
}
