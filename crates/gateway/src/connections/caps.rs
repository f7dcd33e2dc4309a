//! How many connections the gateway holds, overall and per client address, and the permit
//! each accepted connection carries until its socket closes.
//!
//! Every open socket is a file descriptor. A peer that opens connections and sends nothing
//! would otherwise use up the process's open-file limit, after which nobody (a health check,
//! an agent, a person) can connect at all. The overall cap keeps a reserve of descriptors for
//! the store and for refusing politely; the per-address cap stops one client from taking the
//! whole of it.
//!
//! A connection that has shown no key yet (an agent key on a request or an upgrade, or a
//! tab's accepted `hello`) is *keyless*. Keyless connections may hold at most
//! [`keyless_share`] of the overall cap: the rest, the keyed reserve (a quarter), is kept for
//! connections that have shown a key. A new connection that would pass the keyless share, or
//! the overall cap while keyless connections hold places, is let in and the oldest keyless
//! connection is cut to make room: whoever holds sockets open without a key can delay others
//! by the moment a cut takes, never lock them out. A keyless connection is also cut when its
//! handshake deadline passes (`--handshake-timeout-s`, see [`Standing`]).

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::metrics::{Metrics, gauge_add};

/// Keyless connections being cut at once (each still holds its descriptor until its task
/// notices, a moment later): past it a new connection is refused rather than let in on the
/// promise of a place, so descriptors stay within the open-file reserve.
pub const CUTS_AT_ONCE: usize = 32;

/// How much of an overall cap of `max_total` connections that have shown no key may hold: all
/// but a quarter (the keyed reserve), and at least one.
pub fn keyless_share(max_total: usize) -> usize {
    (max_total - max_total / 4).max(1)
}

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
    /// See [`keyless_share`].
    max_keyless: usize,
    /// Connections held, for readers that do not take the lock (logs, `held`).
    total: AtomicUsize,
    held: Mutex<Held>,
}

/// Who holds the places, changed together under one lock so that two connections arriving
/// at once cannot both take the last place.
#[derive(Debug, Default)]
struct Held {
    per_address: HashMap<AddressKey, usize>,
    /// The keyless connections by age (their serial), each with its standing to cut it by.
    keyless: BTreeMap<u64, Arc<Standing>>,
    /// Connections that have shown a key.
    keyed: usize,
    /// Keyless connections cut to make room whose sockets have not closed yet.
    cutting: usize,
    next_serial: u64,
}

impl Held {
    fn total(&self) -> usize {
        self.keyless.len() + self.keyed + self.cutting
    }
}

/// Why a connection that showed no key was cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Its handshake deadline passed.
    Deadline,
    /// Its place was given to a newer connection ([`keyless_share`]).
    Crowded,
}

impl Cut {
    /// The sentence the log and a tab's close frame give.
    pub fn message(self) -> &'static str {
        match self {
            Cut::Deadline => "no key shown in time (--handshake-timeout-s)",
            Cut::Crowded => "the gateway is full of connections that have shown no key; try again",
        }
    }
}

/// A connection's standing: whether it has shown a key, and whether it has been cut. Shared
/// by its permit, its handlers (through the request's extensions) and its deadline.
///
/// Two flags in one byte and one [`Notify`] rather than a cancellation token each: every
/// connection holds a standing for as long as it is open, and two tokens made it 280 bytes
/// of the heap, a fifteenth of an idle tab.
pub struct Standing {
    caps: Arc<ConnectionCaps>,
    serial: u64,
    /// [`KEYED`], [`CUT`] and, with a cut, [`CROWDED`] for why; each set once, never cleared.
    flags: AtomicU8,
    /// Woken whenever a flag is set.
    settled: Notify,
}

/// The connection has shown a key.
const KEYED: u8 = 1;
/// The connection is cut (or its permit given back): it closes.
const CUT: u8 = 2;
/// The cut was to make room ([`Cut::Crowded`]); without it, for the deadline.
const CROWDED: u8 = 4;

impl std::fmt::Debug for Standing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Standing")
            .field("serial", &self.serial)
            .field("keyed", &self.is_keyed())
            .field("cut", &self.cut_already())
            .finish()
    }
}

impl Standing {
    fn flags(&self) -> u8 {
        self.flags.load(Ordering::Acquire)
    }

    /// Sets `flags` unless one of `unless` is set already; wakes the waiters if it did.
    fn set_unless(&self, flags: u8, unless: u8) {
        let set = self
            .flags
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now & unless == 0).then_some(now | flags)
            })
            .is_ok();
        if set {
            self.settled.notify_waiters();
        }
    }

    /// Waits until one of `flags` is set; the flags then.
    async fn settled(&self, flags: u8) -> u8 {
        loop {
            // Made before the check: a flag set in between still wakes it.
            let notified = self.settled.notified();
            let now = self.flags();
            if now & flags != 0 {
                return now;
            }
            notified.await;
        }
    }

    /// The connection has shown a valid key: it leaves the keyless share for good, and is no
    /// longer cut for its deadline or to make room. Whether it is keyed now (not, if it was
    /// cut first: then it is to close, as [`cut_already`](Self::cut_already) says why).
    pub fn show_key(&self) -> bool {
        if self.is_keyed() {
            return true;
        }
        let mut held = self.caps.lock();
        // Under the lock: a cut to make room takes the connection out of `keyless` first.
        if self.flags() & CUT == 0 && held.keyless.remove(&self.serial).is_some() {
            held.keyed += 1;
            self.set_unless(KEYED, 0);
        }
        self.is_keyed()
    }

    /// Why the connection was cut, if it was.
    pub fn cut_already(&self) -> Option<Cut> {
        why_cut(self.flags())
    }

    /// Whether it has shown a key.
    pub fn is_keyed(&self) -> bool {
        self.flags() & KEYED != 0
    }

    /// Waits until the connection is cut; why.
    pub async fn cut(&self) -> Cut {
        why_cut(self.settled(CUT).await).unwrap_or(Cut::Deadline)
    }

    /// Cuts the connection, for `why` unless it was cut already.
    fn cut_for(&self, why: Cut) {
        let why = match why {
            Cut::Deadline => 0,
            Cut::Crowded => CROWDED,
        };
        self.set_unless(CUT | why, CUT);
    }

    /// Cuts the connection for its deadline unless it has shown a key. Under the caps' lock,
    /// as [`show_key`](Self::show_key) is: a key shown while the deadline passes either
    /// comes first (and nothing is cut) or finds the connection cut (and it closes), never
    /// both a keyed connection and a cut one.
    fn cut_unless_keyed(&self) {
        let _held = self.caps.lock();
        if !self.is_keyed() {
            self.cut_for(Cut::Deadline);
        }
    }

    /// Cuts the connection when `deadline` passes unless it has shown a key by then.
    pub async fn enforce_deadline(&self, deadline: std::time::Duration) {
        tokio::select! {
            () = tokio::time::sleep(deadline) => self.cut_unless_keyed(),
            _ = self.settled(KEYED | CUT) => {}
        }
    }
}

/// Why a connection whose flags are `flags` was cut, if it was.
fn why_cut(flags: u8) -> Option<Cut> {
    (flags & CUT != 0).then_some(if flags & CROWDED != 0 {
        Cut::Crowded
    } else {
        Cut::Deadline
    })
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
            max_keyless: keyless_share(max_total.max(1)),
            total: AtomicUsize::new(0),
            held: Mutex::new(Held::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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

    /// A permit for a connection from `ip`, held until the connection closes. It starts
    /// keyless; to make room for it the oldest keyless connection may be cut.
    ///
    /// # Errors
    /// Which cap it would exceed.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Permit, CapRefusal> {
        let key = AddressKey::of(ip);
        let mut held = self.lock();
        let from_address = held.per_address.get(&key).copied().unwrap_or(0);
        if self.max_per_address.is_some_and(|cap| from_address >= cap) {
            return Err(CapRefusal::PerAddress);
        }
        if held.total() >= self.max_total || held.keyless.len() >= self.max_keyless {
            // Keyless connections never keep one out that may show a key: the oldest gives
            // its place, unless too many are being cut already or none holds one.
            if held.cutting >= CUTS_AT_ONCE {
                return Err(CapRefusal::Total);
            }
            let Some((_, oldest)) = held.keyless.pop_first() else {
                return Err(CapRefusal::Total);
            };
            oldest.cut_for(Cut::Crowded);
            held.cutting += 1;
        }
        *held.per_address.entry(key).or_insert(0) += 1;
        let serial = held.next_serial;
        held.next_serial += 1;
        let standing = Arc::new(Standing {
            caps: Arc::clone(self),
            serial,
            flags: AtomicU8::new(0),
            settled: Notify::new(),
        });
        held.keyless.insert(serial, Arc::clone(&standing));
        self.total.store(held.total(), Ordering::Relaxed);
        gauge_add(&self.metrics.connections, 1);
        Ok(Permit { standing, key })
    }

    fn release(&self, key: AddressKey, standing: &Standing) {
        let mut held = self.lock();
        if let Some(from_address) = held.per_address.get_mut(&key) {
            *from_address -= 1;
            if *from_address == 0 {
                held.per_address.remove(&key);
            }
        }
        if held.keyless.remove(&standing.serial).is_none() {
            if standing.is_keyed() {
                held.keyed -= 1;
            } else {
                held.cutting -= 1;
            }
        }
        self.total.store(held.total(), Ordering::Relaxed);
        gauge_add(&self.metrics.connections, -1);
    }
}

/// One connection's place under the caps; given back when dropped (when its socket closes).
#[derive(Debug)]
pub struct Permit {
    standing: Arc<Standing>,
    key: AddressKey,
}

impl Permit {
    /// The connection's standing.
    pub fn standing(&self) -> &Arc<Standing> {
        &self.standing
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.standing.caps.release(self.key, &self.standing);
        // Its deadline has nothing left to cut: it stops waiting now, not seconds later.
        self.standing.set_unless(CUT, CUT);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_standing_is_one_small_allocation() {
        // Every open connection holds one, for as long as it is open: two cancellation
        // tokens made it 280 bytes over three allocations.
        assert!(
            size_of::<Standing>() <= 64,
            "a standing takes {} bytes",
            size_of::<Standing>()
        );
    }

    /// A permit for a connection that has shown a key.
    fn keyed(caps: &Arc<ConnectionCaps>, from: &str) -> Result<Permit, CapRefusal> {
        let permit = caps.admit(ip(from))?;
        assert!(permit.standing().show_key());
        Ok(permit)
    }

    #[test]
    fn one_address_cannot_take_every_place() {
        let caps = ConnectionCaps::new(4, Some(2), Arc::default());
        let a1 = keyed(&caps, "10.0.0.1").unwrap();
        let _a2 = keyed(&caps, "10.0.0.1").unwrap();
        assert_eq!(
            keyed(&caps, "10.0.0.1").unwrap_err(),
            CapRefusal::PerAddress
        );
        let _b1 = keyed(&caps, "10.0.0.2").unwrap();
        let _b2 = keyed(&caps, "::ffff:10.0.0.2").unwrap();
        assert_eq!(keyed(&caps, "10.0.0.3").unwrap_err(), CapRefusal::Total);
        assert_eq!(caps.held(), 4);
        assert_eq!(caps.metrics.connections.load(Ordering::Relaxed), 4);
        drop(a1);
        assert_eq!(caps.held(), 3);
        let _a3 = keyed(&caps, "10.0.0.1").unwrap();
    }

    #[test]
    fn keyless_connections_hold_at_most_their_share_and_the_oldest_gives_way() {
        // A cap of 8: a reserve of 2 for keyed connections, 6 for keyless ones.
        let caps = ConnectionCaps::new(8, None, Arc::default());
        let keyless: Vec<_> = (0..6)
            .map(|_| caps.admit(ip("10.0.0.1")).unwrap())
            .collect();
        let newcomer = caps.admit(ip("10.0.0.2")).unwrap();
        assert_eq!(keyless[0].standing().cut_already(), Some(Cut::Crowded));
        assert!(
            keyless[1..]
                .iter()
                .all(|p| p.standing().cut_already().is_none())
        );
        // The cut one cannot show a key any more; the newcomer can, and leaves the share.
        assert!(!keyless[0].standing().show_key());
        assert!(newcomer.standing().show_key());
        // Six keyless, the newcomer keyed, and the cut one until its socket closes.
        assert_eq!(caps.held(), 7);
        drop(keyless);
        assert_eq!(caps.held(), 1);
        let held = caps.lock();
        assert_eq!((held.keyless.len(), held.keyed, held.cutting), (0, 1, 0));
    }

    #[test]
    fn keyed_connections_are_never_refused_while_keyless_ones_hold_places() {
        let caps = ConnectionCaps::new(8, None, Arc::default());
        let agents: Vec<_> = (0..4).map(|_| keyed(&caps, "10.0.0.1").unwrap()).collect();
        let keyless: Vec<_> = (0..4)
            .map(|_| caps.admit(ip("10.0.0.2")).unwrap())
            .collect();
        assert_eq!(caps.held(), 8);
        // Full: each newcomer takes the place of the oldest keyless connection.
        let newcomers: Vec<_> = (0..4).map(|_| keyed(&caps, "10.0.0.3").unwrap()).collect();
        assert!(
            keyless
                .iter()
                .all(|p| p.standing().cut_already() == Some(Cut::Crowded))
        );
        // Every place is keyed now: the next one is refused.
        drop(keyless);
        assert_eq!(caps.admit(ip("10.0.0.4")).unwrap_err(), CapRefusal::Total);
        drop((agents, newcomers));
        assert_eq!(caps.held(), 0);
    }

    #[test]
    fn only_so_many_connections_are_cut_at_once() {
        let caps = ConnectionCaps::new(4, None, Arc::default());
        // Sockets cut but not closed yet still hold their descriptors.
        let mut held: Vec<_> = (0..3)
            .map(|_| caps.admit(ip("10.0.0.1")).unwrap())
            .collect();
        for _ in 0..CUTS_AT_ONCE {
            held.push(caps.admit(ip("10.0.0.1")).unwrap());
        }
        assert_eq!(caps.lock().cutting, CUTS_AT_ONCE);
        assert_eq!(caps.admit(ip("10.0.0.1")).unwrap_err(), CapRefusal::Total);
        held.remove(0);
        assert!(caps.admit(ip("10.0.0.1")).is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_without_a_key_is_cut_at_its_deadline_and_a_keyed_one_is_not() {
        let caps = ConnectionCaps::new(8, None, Arc::default());
        let silent = caps.admit(ip("10.0.0.1")).unwrap();
        let agent = caps.admit(ip("10.0.0.1")).unwrap();
        assert!(agent.standing().show_key());
        let deadline = Duration::from_secs(5);
        let started = tokio::time::Instant::now();
        tokio::join!(
            silent.standing().enforce_deadline(deadline),
            agent.standing().enforce_deadline(deadline)
        );
        assert_eq!(silent.standing().cut().await, Cut::Deadline);
        assert_eq!(started.elapsed(), deadline);
        assert_eq!(agent.standing().cut_already(), None);
    }

    /// A key shown on one thread while the deadline passes on another: the connection ends
    /// either keyed or cut, never both (a keyed connection must not close for its deadline).
    #[test]
    fn a_key_shown_as_the_deadline_passes_is_either_kept_or_cut_never_both() {
        let caps = ConnectionCaps::new(1 << 20, None, Arc::default());
        let rounds: usize = std::env::var("ASKGATE_CAPS_RACE_ROUNDS")
            .ok()
            .and_then(|text| text.parse().ok())
            .unwrap_or(20_000);
        let mut both = 0;
        for _ in 0..rounds {
            let permit = caps.admit(ip("10.0.0.1")).unwrap();
            let standing = Arc::clone(permit.standing());
            let start = Arc::new(std::sync::Barrier::new(2));
            let deadline = {
                let (standing, start) = (Arc::clone(&standing), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    standing.cut_unless_keyed();
                })
            };
            start.wait();
            let keyed = standing.show_key();
            deadline.join().unwrap();
            if keyed && standing.cut_already().is_some() {
                both += 1;
            }
        }
        assert_eq!(both, 0, "{both} of {rounds} connections were keyed and cut");
    }

    #[tokio::test(start_paused = true)]
    async fn a_closed_connection_stops_waiting_for_its_deadline() {
        let caps = ConnectionCaps::new(8, None, Arc::default());
        let permit = caps.admit(ip("10.0.0.1")).unwrap();
        let standing = Arc::clone(permit.standing());
        let started = tokio::time::Instant::now();
        drop(permit);
        standing.enforce_deadline(Duration::from_secs(5)).await;
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert_eq!(caps.held(), 0);
    }

    #[test]
    fn an_ipv6_network_counts_as_one_address() {
        let caps = ConnectionCaps::new(100, Some(1), Arc::default());
        let _one = keyed(&caps, "2001:db8:1:2::1").unwrap();
        assert_eq!(
            caps.admit(ip("2001:db8:1:2:ffff::9")).unwrap_err(),
            CapRefusal::PerAddress
        );
        let _other = caps.admit(ip("2001:db8:1:3::1")).unwrap();
    }

    #[test]
    fn without_a_per_address_cap_only_the_total_counts() {
        let caps = ConnectionCaps::new(3, None, Arc::default());
        let permits: Vec<_> = (0..3).map(|_| keyed(&caps, "127.0.0.1").unwrap()).collect();
        assert_eq!(keyed(&caps, "127.0.0.1").unwrap_err(), CapRefusal::Total);
        drop(permits);
        assert_eq!(caps.held(), 0);
        assert!(caps.lock().per_address.is_empty());
    }
}
