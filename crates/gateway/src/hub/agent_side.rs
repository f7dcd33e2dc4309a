//! An agent connection's calls into the hub, as typed results: the connection is the one an
//! ask's replies and outcome go to. What the agent sent and what it is told back are the
//! transport's ([`agent_frames`](crate::transport)); only the replies that must be queued
//! under the hub's lock, in its order (`accepted`, `rejected` and `outcome` of an ask), are
//! encoded here.

use std::sync::Arc;

use askgate_protocol::wire::CheckedAsk;
use askgate_protocol::{RequestId, SessionId};

use super::Hub;
use super::asking::AskReply;
use super::hub_core::JoinRefused;
use super::outcomes::Withdrawal;
use super::peers::frame::Frame;
use super::peers::links::AgentHandle;
use crate::scope::SessionScope;

impl AgentHandle {
    /// The hub this connection is attached to.
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// The sessions this connection may act on.
    pub fn scope(&self) -> &SessionScope {
        &self.scope
    }

    /// Queues a reply to this agent, behind what the hub queued for it.
    pub fn reply(&self, frame: Frame) {
        self.link.send(frame, &self.hub.metrics);
    }

    /// `open`: creates `session` if new and marks this agent present in it.
    ///
    /// # Errors
    /// [`JoinRefused::TooManySessions`]: the session is new and the gateway holds the most
    /// sessions allowed.
    pub fn open(&self, session: &SessionId) -> Result<(), JoinRefused> {
        let hub = &self.hub;
        let mut sessions = hub.lock();
        let session = hub
            .session_entry(&mut sessions, session)
            .ok_or(JoinRefused::TooManySessions)?;
        hub.attach_agent_to(session, &self.link);
        Ok(())
    }

    /// Asks for this connection, which is sent `accepted`, `rejected` or the stored `outcome`
    /// of a repeat (and the outcome when it comes).
    pub async fn ask(&self, checked: CheckedAsk) -> AskReply {
        self.hub
            .ask_as(checked, Some(&self.link), &self.key_id)
            .await
    }

    /// Withdraws request `id` of `session`; its outcome comes to this connection as a frame.
    pub async fn withdraw(&self, session: &SessionId, id: &RequestId) -> Withdrawal {
        self.hub
            .withdraw(
                session,
                id,
                Some(&self.link),
                askgate_protocol::wire::Via::Agent,
            )
            .await
    }
}
