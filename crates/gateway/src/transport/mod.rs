//! The ways peers reach the hub: WebSocket endpoints for agents and tabs, and plain HTTP.
//! The only modules that speak WebSocket (tungstenite, after [`upgrade`]'s handshake).

mod agent;
mod closing;
mod http;
mod http_api;
mod http_audit;
mod http_checks;
mod http_links;
mod socket;
mod tab;
mod upgrade;
mod watch;
mod writing;

pub use agent::agent_endpoint;
pub use http::{healthz, metrics, readyz};
pub use http_api::{MAX_WAIT_S, ack_request, delete_request, get_request, post_request};
pub use http_audit::get_audit;
pub use http_checks::single_identity_header;
pub use http_links::post_link;
pub use tab::tab_endpoint;
pub use upgrade::{NotAnUpgrade, Upgrade};
