//! askgate's integration, conformance, differential and browser tests as one test binary, so
//! the gateway is linked once rather than once per file, and the browser tests share one
//! Chromium (`askgate_tests::browser`). Run one area by its module, e.g.
//! `cargo test -p askgate-tests --test integration -- browser_form::`.
//!
//! The tests share this process: each starts its own gateway on port 0 with its own temporary
//! files and browser window, and none changes the environment, the working directory or any
//! other global.
//!
//! - [`agent_scopes`]: agent keys, how one is presented and which sessions it may act on.
//! - [`approval`]: tool-call approvals through the gateway.
//! - [`browser`]: the answer page in Chromium, agent on one side, the page on the other.
//! - [`browser_approval`]: the page's tool-call approval cards.
//! - [`browser_claude`]: the page's Claude `AskUserQuestion` cards.
//! - [`browser_email`]: a mail's answer link, from the mail the gateway sent to its button.
//! - [`browser_deepagents`]: the page's deepagents `ask_user` cards.
//! - [`browser_form`]: the page's MCP elicitation cards (forms and web addresses).
//! - [`browser_formats`]: the page's e-mail and URI checks against the gateway's.
//! - [`browser_ops`]: the operator console (`/ops`): its key, open requests, charts, restarts.
//! - [`browser_people`]: the page with people in it (personal links, who answered).
//! - [`browser_push`]: "Notify me on this device" (Web Push) on the page and the inbox.
//! - [`client`]: the Rust agent client against a live gateway.
//! - [`conformance`]: every conformance vector, answered as the real packages did.
//! - [`deepagents_gateway`]: a LangGraph host resuming deepagents from askgate's outcome.
//! - [`differential_deepagents`]: generated inputs against the real deepagents-code.
//! - [`differential_form`]: the `form` dialect against the MCP Python SDK.
//! - [`differential_harness`]: generated inputs against the real pydantic-ai-harness.
//! - [`durable_steps`]: a request is shown once stored and accepted once durable.
//! - [`fuzz_seeds`]: every fuzz target's seeds, replayed through the targets' bodies.
//! - [`form_and_claude`]: MCP forms and Claude's questions through the gateway.
//! - [`gateway_flow`]: ask, fan-out, answer, decline, timeout, withdraw over real sockets.
//! - [`gateway_limits`]: keys, limits and backpressure, each with its close code or error.
//! - [`gateway_races`]: rival answers, idempotent re-asks, agents that come and go.
//! - [`hangups`]: the gateway while its store is slow or failing.
//! - [`hardening`]: peers that misbehave on purpose.
//! - [`http_api`]: the HTTP API for paused runs.
//! - [`notify_refused`]: a webhook on a refused address, not called; the request unharmed.
//! - [`people`]: personal links, a trusted proxy's header, `--require-identity`, `answerers`.
//! - [`store`]: nothing lost across a restart, clear errors when storage fails.
//! - [`tab_costs`]: what a tab's frames cost the gateway, bounded.

mod agent_scopes;
mod approval;
mod browser;
mod browser_approval;
mod browser_claude;
mod browser_deepagents;
mod browser_email;
mod browser_form;
mod browser_formats;
mod browser_inbox;
mod browser_ops;
mod browser_people;
mod browser_push;
mod client;
mod conformance;
mod deepagents_gateway;
mod differential_deepagents;
mod differential_form;
mod differential_harness;
mod durable_steps;
mod form_and_claude;
mod fuzz_seeds;
mod gateway_flow;
mod gateway_limits;
mod gateway_races;
mod hangups;
mod hardening;
mod http_api;
mod notify_refused;
mod people;
mod store;
mod tab_costs;
