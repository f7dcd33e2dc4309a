//! The ways peers reach the hub: WebSocket endpoints for agents and tabs, and plain HTTP.
//! The only modules that speak WebSocket (tungstenite, after [`upgrade`]'s handshake).
//!
//! - [`upgrade`]: the WebSocket handshake, done here so the socket is tungstenite's.
//! - [`agent`]: `GET /v1/agent`, an agent's connection carrying any number of sessions.
//! - [`agent_frames`]: an agent's frames turned into hub calls, and the answers into frames.
//! - [`tab`]: `GET /v1/sessions/{session}/live`, a browser tab watching a session.
//! - [`socket`]: what every socket connection shares: settings, the loop's next event.
//! - [`watch`]: what a connection's loop watches besides the socket (inbox, keepalive).
//! - [`writing`]: writing what the hub queued, in batches, while the socket takes frames.
//! - [`closing`]: ending a connection with a close code the peer gets to read.
//! - [`http`]: health, readiness and metrics.
//! - [`http_checks`]: what every HTTP API call checks first, and each refusal's body.
//! - [`http_api`]: the HTTP API for paused runs (ask, long-poll, ack, withdraw).
//! - [`http_links`]: `POST /v1/sessions/{session}/links` and `/v1/inbox/links`, links for people.
//! - [`http_followers`]: `POST` and `DELETE /v1/sessions/{session}/followers`.
//! - [`inbox`]: `GET /v1/inbox/live`, a person's inbox across every session.
//! - [`http_audit`]: `GET /v1/audit`, a session's audit trail as JSON lines.
//! - [`http_operator`]: `GET /v1/requests`, every session's requests for an operator key.
//! - [`http_ops`]: `GET /v1/ops/summary` and `/v1/ops/history`: every node's figures, and
//!   their last hour minute by minute, for an operator.
//! - [`http_openapi`]: `GET /v1/openapi.json`, the HTTP API described for tools (OpenAPI 3.1).
//! - [`http_rules`]: `/v1/sessions/{session}/rules` and `/v1/rules`, remembered approvals.
//! - [`answer_links`]: `GET` and `POST /a/{key}`, a mail's answer link.
//! - [`link_page`]: the pages of answer links, written by the gateway.
//! - [`slack`]: `POST /v1/slack/interactions`, clicks on the Slack app's buttons.
//! - [`push`]: `/v1/push/key` and `/v1/push/subscriptions`, a person's devices for Web Push.

mod agent;
mod agent_frames;
mod answer_links;
mod closing;
mod http;
mod http_api;
mod http_audit;
mod http_checks;
mod http_followers;
mod http_links;
mod http_openapi;
mod http_operator;
mod http_ops;
mod http_rules;
mod inbox;
mod link_page;
mod push;
mod slack;
mod socket;
mod tab;
mod upgrade;
mod watch;
mod writing;

pub use agent::agent_endpoint;
pub use answer_links::{answer_link, open_link};
pub use http::{healthz, metrics, readyz};
pub use http_api::{MAX_WAIT_S, ack_request, delete_request, get_request, post_request};
pub use http_audit::get_audit;
pub use http_checks::single_identity_header;
pub use http_followers::{delete_follower, post_follower};
pub use http_links::{post_inbox_link, post_link};
pub use http_openapi::{OPENAPI_JSON, openapi};
pub use http_operator::list_requests;
pub use http_ops::{ops_history, ops_summary};
pub use http_rules::{delete_key_rule, delete_session_rule, get_key_rules, get_session_rules};
pub use inbox::inbox_endpoint;
pub use push::{delete_subscription, get_push_key, get_subscriptions, post_subscription};
pub use slack::slack_interactions;
pub use tab::tab_endpoint;
pub use upgrade::{NotAnUpgrade, Upgrade};
