//! TCP connections before they are requests: admitted under the caps or refused, served as
//! HTTP/1 with upgrades, and closed when they overstay. Nothing here knows a route.
//!
//! - [`caps`]: connections held overall, per client address and before a key is shown, and
//!   each one's permit and standing.
//! - [`watchdog`]: a connection's activity, and when it has been silent or slow too long.
//! - [`accept`]: the accept loop and the serving of one connection.
//! - [`fd_limit`]: the open-file limit, raised at start, and the cap that fits under it.

pub mod accept;
pub mod caps;
pub mod fd_limit;
pub mod watchdog;

pub use accept::{KeyCheck, ServeSettings, accept_loop};
pub use caps::{CapRefusal, ConnectionCaps, Cut, Permit, Standing};
pub use watchdog::HttpTimeouts;
