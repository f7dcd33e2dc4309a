//! # askgate
//!
//! The gateway between AI agents that ask people structured questions and the people who
//! answer them in a browser, around the pure [`askgate_protocol`] core.
//!
//! # Layout
//! - [`config`]: listen address, keys, every limit as a named default.
//! - [`keys`]: agent keys and per-session viewer keys (HMAC of the session id).
//! - [`scope`]: the sessions an agent key may act on (all, or those under a prefix).
//! - [`people`]: who a tab is (personal links, a trusted proxy), who may answer, groups.
//! - [`hub`]: sessions, requests, tabs and agents; who wins. Sees queues, never sockets.
//! - [`notify`]: telling people of requests: webhooks, mail; the delivery queue.
//! - [`audit`]: the audit trail's entries, their hash chain, verifying it, the page's history.
//! - [`store`]: the `Store` seam the hub commits through: in memory, embedded (redb and a
//!   write-ahead log), Redis.
//! - [`connections`]: TCP connections: caps, timeouts, the HTTP/1 serving loop.
//! - [`transport`]: the WebSocket endpoints for agents and tabs, and plain HTTP.
//! - [`web`]: the answer page and the landing page, embedded.
//! - [`shown_text`]: agent text in the gateway's own HTML and mail: inert, bidi shown.
//! - [`server`]: the router, `run(listener, config, shutdown)`, graceful shutdown.
//! - [`metrics`]: counters and gauges, in Prometheus text format.
//! - [`memory`]: giving the system back the memory of requests that ended (mimalloc's collect).
//! - [`clock`]: Unix milliseconds.
//! - [`pacer`]: a token bucket (frames per second, joins per second).
//! - [`cli`]: the `askgate` command line: serve, demo, validate, schema, audit, store.

pub mod audit;
pub mod cli;
pub mod clock;
pub mod config;
pub mod connections;
pub mod hub;
pub mod keys;
pub mod memory;
pub mod metrics;
pub mod notify;
pub mod pacer;
pub mod people;
pub mod scope;
pub mod server;
pub mod shown_text;
pub mod store;
pub mod transport;
pub mod web;
