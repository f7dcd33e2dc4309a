//! The frames between an agent and the gateway: what the agent sends (an `ask`'s own fields
//! are in [`ask`](super::ask)) and what it is sent back.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dialect::Settlement;
use crate::error::FieldError;

use super::AskFrame;

/// agent → gateway.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentFrame {
    /// Creates the session if new; the gateway replies `opened`.
    Open {
        /// The session; generated when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
    },
    /// Asks a question set; the gateway replies `accepted` or `rejected`.
    Ask(Box<AskFrame>),
    /// Asks for a personal link: a viewer link for one named person, signed for the session,
    /// that person and an expiry; the gateway replies `link`.
    Link {
        /// The session.
        session: String,
        /// The person, as the link will name them (an e-mail address, a user name).
        user: String,
        /// Seconds the link stays valid; absent for the gateway's default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ttl_s: Option<Value>,
    },
    /// Withdraws a pending request (the run was cancelled).
    Cancel {
        /// The session.
        session: String,
        /// The request.
        id: String,
    },
    /// The agent has the outcome; the gateway may forget it.
    Ack {
        /// The session.
        session: String,
        /// The request.
        id: String,
    },
}

/// gateway → agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToAgent {
    /// The session exists; here is the link for people.
    Opened {
        /// The session.
        session: String,
        /// `{public_url}/s/{session}#k={viewer key}`.
        viewer_url: String,
    },
    /// The request is stored and shown to every tab.
    Accepted {
        /// The session.
        session: String,
        /// The request id (the agent's, or the generated one).
        id: String,
        /// When it times out (Unix ms), or null.
        deadline_ms: Option<u64>,
        /// The link for people.
        viewer_url: String,
    },
    /// The request was refused; nothing was stored.
    Rejected {
        /// The session, as sent.
        session: String,
        /// The request id, as sent (null if none was given).
        id: Option<String>,
        /// Every problem, with its path.
        errors: Vec<FieldError>,
    },
    /// How a request ended. Re-sent on every re-ask until acked. (Boxed: the other frames
    /// are small.)
    Outcome(Box<OutcomeFrame>),
    /// A personal link, as asked for by `link`.
    Link {
        /// The session.
        session: String,
        /// The person it names.
        user: String,
        /// `{public_url}/s/{session}#k={personal key}`.
        url: String,
        /// When it stops working (Unix ms).
        expires_ms: u64,
    },
    /// A frame the gateway could not take.
    Error {
        /// A stable code, one of the error-frame codes of [`ReplyCode`](crate::ReplyCode)
        /// (`bad_frame`, `not_found`, `unavailable`...); text, so that a newer gateway's code
        /// still reads.
        code: String,
        /// What was wrong, in words.
        message: String,
        /// The session of the request the frame named, when it named one (a `cancel`):
        /// askgate's addition, so a client can tell which of its withdrawals this answers.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        /// The request the frame named, likewise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
}

/// The `outcome` frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutcomeFrame {
    /// The session.
    pub session: String,
    /// The request.
    pub id: String,
    /// The settlement: outcome, response, result, model text.
    #[serde(flatten)]
    pub settlement: Settlement,
    /// The tab that answered or declined, else null.
    pub by: Option<String>,
    /// The person who answered or declined, if the gateway knew them; else null.
    #[serde(default)]
    pub user: Option<String>,
    /// How the gateway knew who ended it (`personal-link`, `proxy`, `email`...), or
    /// `default` when the ask's default answered at the deadline; absent for endings no one
    /// made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<crate::people::Via>,
    /// For a quorum's ending, every voter and their vote (`[{user, decisions}]`); `user` is
    /// the person whose vote ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voters: Option<Value>,
    /// When it ended (Unix ms).
    pub at_ms: u64,
}
