//! The frames of askgate's wire protocol, version 1: agent ↔ gateway and tab ↔ gateway.
//!
//! Every frame is one JSON object in one WebSocket text frame, tagged by `type`. Incoming
//! frames keep loosely typed fields (`String`, `Value`) so that a bad field is answered with a
//! `rejected` naming it, not with a generic parse error; [`AskFrame::check`] does the rest.
//!
//! - `agent`: `AgentFrame` (agent → gateway), `ToAgent` and `OutcomeFrame` (back).
//! - `ask`: the `ask` frame as sent and [`AskFrame::check`].
//! - `callback`: an ask's `callback`, where its outcome is POSTed when it ends.
//! - `inbox`: `FromInbox` (a person's inbox page → gateway); it is sent tab frames back.
//! - `tab`: `FromTab` (tab → gateway), `ToTab`, and the request and ending tabs are shown.
//! - `reading`: the frames that come most often, read without serde's buffering.

mod agent;
mod ask;
pub mod callback;
mod inbox;
mod reading;
mod tab;

pub use agent::{AgentFrame, OutcomeFrame, ToAgent};
pub use ask::{AskFrame, AskedFollowUps, CheckedAsk, MAX_TITLE_CHARS};
pub use inbox::FromInbox;
pub use reading::{read_agent_frame, read_tab_frame};
pub use tab::{FinishedView, FromTab, RequestView, ToTab};

pub use crate::people::{Via, You};

#[cfg(test)]
mod tests;
