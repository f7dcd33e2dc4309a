//! The `askgate` binary's integration tests, in one test binary: each module was a binary of
//! its own, and each linked the whole gateway again. Tests of every module run side by side on
//! the harness's threads, so none may rely on a process-wide setting: each starts its own
//! gateways, Redis servers and proxies on ports the system picks, in scratch directories of
//! its own ([`support::tempdir`]), and passes settings to the processes it starts, never
//! through this process's environment or working directory.
//!
//! The soak-length tests run a short form here and their long form with `ASKGATE_SOAK=1`
//! (`bench/soak.sh`, [`support::soak_or`]); every randomized test prints its seed and takes
//! one from `ASKGATE_TEST_SEED` ([`support::seeded_rng`]).

mod support;

/// `askgate audit key` and a keyed chain that cannot be rewritten without the key.
mod audit_keys;
/// `--audit-retention-days` on every store.
mod audit_retention;
/// The audit trail end to end, on the embedded store and on three nodes over Redis.
mod audit_trail;
/// One suite against every store.
mod backends;
/// An ask's callback: its outcome POSTed where it said, kept across a SIGKILL.
mod callbacks;
/// `askgate validate` and `askgate schema` as a user runs them.
mod cli;
/// `serve --config FILE`, `config check` and `config example`.
mod config_file;
/// SIGKILL under load on the embedded store, round after round.
mod crash;
/// A damaged log refuses the start; `askgate store check` and `repair`.
mod damaged_log;
/// `askgate demo`.
mod demo;
/// `askgate demo` telling what a person's edit of an approval changed.
mod demo_edits;
/// The serving process against crowds, silent sockets and tabs that never read.
mod door;
/// The embedded store's log: one record per commit, grouped syncs.
mod durable_writes;
/// Mail told of requests, and its links answering as their person.
mod email;
/// Followers and the inbox: the endpoints, a follower's mail, restarts, two nodes on Redis.
mod followers;
/// `--log-format`: JSON lines or text, the listening line plain either way.
mod log_format;
/// Several nodes on one Redis, through proxies the tests cut.
mod multi_node;
/// Nodes and Redis killed at random under load.
mod multi_node_crash;
/// Webhooks told of requests: signed, routed, retried, kept across a SIGKILL.
mod notify;
/// An operator's view: every session's requests listed and withdrawn with an operator key.
mod operator;
/// `GET /v1/ops/history` and operators named by a trusted proxy, on one node and on Redis.
mod ops_history;
/// `GET /v1/ops/summary`: a node's figures for an operator key, refused to any other.
mod ops_summary;
/// `--user-header` and `--trusted-proxy`.
mod proxy_header;
/// Web Push to a person's devices, against a push service of the test's own.
mod push;
/// The Redis store's scripts one at a time.
mod redis_scripts;
/// The Lua SHA-256 of the audit chain against the `sha2` crate.
mod redis_sha256;
/// Remembered approvals: made by a person, answering later asks, listed and revoked.
mod rules;
/// Slack messages with buttons that answer, against a stand-in for Slack's Web API.
mod slack;
/// Web Push messages and VAPID tokens, decrypted and verified by Python's `http_ece` and
/// `py_vapid`.
mod web_push;
