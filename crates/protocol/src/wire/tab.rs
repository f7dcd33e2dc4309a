//! The frames between a tab and the gateway, and a request and its ending as tabs see them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::dialect::{Dialect, Outcome};
use crate::error::FieldError;
use crate::ids::TabId;
use crate::people::{Via, You};

/// A request as tabs see it.
///
/// The normalised request goes under its dialect's field names: `questions`; `calls` for
/// approvals; a form's `message`, `schema`, `fields`... at the top.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestView {
    /// The request id.
    pub id: String,
    /// The dialect.
    pub dialect: Dialect,
    /// The agent's title, if any.
    pub title: Option<String>,
    /// The normalised request: questions, tool calls, a form (see
    /// [`Dialect::spread`]).
    pub questions: Value,
    /// When it was asked (Unix ms).
    pub asked_at_ms: u64,
    /// When it times out (Unix ms), or null.
    pub deadline_ms: Option<u64>,
    /// Who alone may answer (people and `group:NAME`s), when the ask said so; with an
    /// escalation's people added once it has escalated.
    pub answerers: Option<Vec<String>>,
    /// Whom it was escalated to, once it has been (the ask's `escalate.to`).
    pub escalated_to: Option<Vec<String>>,
    /// The answer given should the deadline pass with none (the ask's `default`), so that the
    /// page can say so beforehand.
    pub default: Option<Value>,
    /// Whether the agent that asked it is gone (see the gateway's `--agent-grace-s`): still
    /// answerable, its answer kept for an agent that comes back.
    pub orphaned: bool,
    /// For an approval that needs several people: how many, and the votes so far per call.
    pub quorum: Option<(crate::approval::Quorum, Vec<crate::approval::CallTally>)>,
    /// For an approval some of whose calls remembered rules approved when it was asked: per
    /// call, the rule that did (the page shows those calls approved; the rest are asked).
    pub ruled: Option<Vec<Option<crate::approval::rules::RuledCall>>>,
    /// The scopes an approval of this request may be remembered for (`session`, `key`):
    /// empty when none (rules off, `rules: false`, a quorum, another dialect).
    pub remember: Vec<crate::approval::rules::RuleScope>,
}

impl Serialize for RequestView {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("dialect", &self.dialect)?;
        map.serialize_entry("title", &self.title)?;
        for (name, value) in self.dialect.spread(&self.questions) {
            map.serialize_entry(name, value)?;
        }
        map.serialize_entry("asked_at_ms", &self.asked_at_ms)?;
        map.serialize_entry("deadline_ms", &self.deadline_ms)?;
        if let Some(answerers) = &self.answerers {
            map.serialize_entry("answerers", answerers)?;
        }
        if let Some(escalated_to) = &self.escalated_to {
            map.serialize_entry("escalated_to", escalated_to)?;
        }
        if let Some(default) = &self.default {
            map.serialize_entry("default", default)?;
        }
        if self.orphaned {
            map.serialize_entry("orphaned", &true)?;
        }
        if let Some((quorum, tally)) = &self.quorum {
            map.serialize_entry("quorum", quorum)?;
            map.serialize_entry("tally", tally)?;
        }
        if let Some(ruled) = &self.ruled {
            map.serialize_entry("ruled", ruled)?;
        }
        if !self.remember.is_empty() {
            map.serialize_entry("remember", &self.remember)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for RequestView {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut fields = Map::<String, Value>::deserialize(deserializer)?;
        let mut take = |name: &str| fields.remove(name).unwrap_or(Value::Null);
        let id = String::deserialize(take("id")).map_err(D::Error::custom)?;
        let dialect = Dialect::deserialize(take("dialect")).map_err(D::Error::custom)?;
        let title = Option::deserialize(take("title")).map_err(D::Error::custom)?;
        let asked_at_ms = u64::deserialize(take("asked_at_ms")).map_err(D::Error::custom)?;
        let deadline_ms = Option::deserialize(take("deadline_ms")).map_err(D::Error::custom)?;
        let answerers = Option::deserialize(take("answerers")).map_err(D::Error::custom)?;
        let escalated_to = Option::deserialize(take("escalated_to")).map_err(D::Error::custom)?;
        let default = Some(take("default")).filter(|value| !value.is_null());
        let orphaned = take("orphaned") == Value::Bool(true);
        let quorum = match (take("quorum"), take("tally")) {
            (Value::Null, _) => None,
            (quorum, tally) => Some((
                serde_json::from_value(quorum).map_err(D::Error::custom)?,
                serde_json::from_value(tally).map_err(D::Error::custom)?,
            )),
        };
        let ruled = Option::deserialize(take("ruled")).map_err(D::Error::custom)?;
        let remember = Option::<Vec<_>>::deserialize(take("remember"))
            .map_err(D::Error::custom)?
            .unwrap_or_default();
        let questions = dialect.gather(|name| fields.get(name));
        Ok(RequestView {
            ruled,
            remember,
            id,
            dialect,
            title,
            questions,
            asked_at_ms,
            deadline_ms,
            answerers,
            escalated_to,
            default,
            orphaned,
            quorum,
        })
    }
}

/// A request that has ended, as a tab that joins later sees it: the request and how it
/// ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FinishedView {
    /// The request as it was shown.
    #[serde(flatten)]
    pub request: RequestView,
    /// How it ended.
    pub outcome: Outcome,
    /// The dialect's response (null when withdrawn).
    pub response: Value,
    /// The tab that answered or declined, if one did.
    pub by: Option<String>,
    /// The person who did, if known.
    #[serde(default)]
    pub user: Option<String>,
    /// How that person was known, when a tab answered or declined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
    /// When it ended (Unix ms).
    pub at_ms: u64,
}

/// gateway → tab.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToTab {
    /// The state of the session, sent right after `hello`.
    Snapshot {
        /// The session.
        session: String,
        /// This tab's id.
        tab: String,
        /// The server's clock, to count deadlines down against.
        now_ms: u64,
        /// How many tabs are watching.
        tabs: usize,
        /// Whether an agent is connected to the session.
        agent_online: bool,
        /// Who this tab is, and whether it may answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        you: Option<You>,
        /// Every open request, oldest first.
        requests: Vec<RequestView>,
        /// The largest frame the gateway takes from a tab, in bytes: a page checks an answer
        /// against it before sending, rather than have the socket closed with 4413.
        max_frame_bytes: usize,
        /// The session's recent finished requests, oldest ending first: so a person who
        /// looked away (or reloads) can see what was asked and how it ended.
        #[serde(default)]
        finished: Vec<FinishedView>,
    },
    /// A new open request.
    Request {
        /// The request.
        request: RequestView,
    },
    /// A request ended; sent to every tab, the winner included.
    Resolved {
        /// The request.
        id: String,
        /// How it ended.
        outcome: Outcome,
        /// The tab that answered or declined, else null.
        by: Option<String>,
        /// The person who did, if known; else null.
        #[serde(default)]
        user: Option<String>,
        /// How that person was known, when a tab answered or declined.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        via: Option<Via>,
        /// The response given (null when withdrawn).
        response: Value,
        /// For a quorum's ending, every voter and their vote.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        voters: Option<Value>,
    },
    /// A vote on a request with a quorum was counted: the votes so far, per call.
    Tally {
        /// The request.
        id: String,
        /// Per call, who approved and who rejected it.
        calls: Vec<crate::approval::CallTally>,
        /// How many people decide a call.
        needed: u8,
        /// Whose vote was counted (empty when votes were read back at a restart).
        user: String,
    },
    /// The agent that asked a request still open is gone: the request stays answerable, and a
    /// `request` frame follows should an agent ask it again.
    Orphaned {
        /// The request.
        id: String,
    },
    /// A request still open was escalated: more people may answer it now.
    Escalated {
        /// The request.
        id: String,
        /// Whom it was escalated to (people and `group:NAME`s).
        to: Vec<String>,
        /// Who may answer now, the escalation's people added (null: anyone with the link).
        answerers: Option<Vec<String>>,
    },
    /// This tab's answer did not count; the request stays open unless already resolved.
    AnswerRejected {
        /// The request.
        id: String,
        /// Why, with paths (`response.answers[0].selected`...).
        errors: Vec<FieldError>,
    },
    /// Who is here.
    Presence {
        /// How many tabs are watching.
        tabs: usize,
        /// Whether an agent is connected to the session.
        agent_online: bool,
    },
    /// The session's recent history, newest first, as asked for by `history`.
    History {
        /// Ended requests, from the audit trail: what was asked, how it ended, by whom.
        entries: Vec<Value>,
    },
    /// The session's remembered approvals (its own, and the agent keys' made in it), after
    /// a `rules` of this tab's, or a change to them.
    Rules {
        /// Each rule, oldest first.
        rules: Vec<crate::approval::rules::Rule>,
    },
    /// Whether this tab's person follows the session, after a `follow` from any of their
    /// tabs (or an agent's change).
    Following {
        /// Following or not.
        on: bool,
    },
    /// A frame the gateway could not take.
    Error {
        /// A stable code, one of the error-frame codes of [`ReplyCode`](crate::ReplyCode)
        /// (`bad_frame`, `unavailable`).
        code: String,
        /// What was wrong, in words.
        message: String,
    },
}

/// tab → gateway.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromTab {
    /// The first frame: the viewer key, and the tab's id if it has one.
    Hello {
        /// The viewer key from the URL fragment.
        key: String,
        /// The tab's id (kept in `sessionStorage`); generated when absent or invalid.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tab: Option<String>,
    },
    /// An answer to an open request.
    Answer {
        /// The request.
        id: String,
        /// The dialect's answer (harness: `{"answers":[...]}`).
        response: Value,
    },
    /// Declines an open request.
    Decline {
        /// The request.
        id: String,
        /// The person put it aside rather than refused it (a form's "Not now"): the dialect
        /// settles it as dismissed, where it tells the two apart (MCP's `cancel`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        dismiss: bool,
    },
    /// Asks for the session's recent history (answered by `history`).
    History,
    /// Follows the session (`on`), or stops: a named person only (answered by `following`).
    Follow {
        /// Following from now on, or no longer.
        on: bool,
    },
    /// Asks for the session's remembered approvals (answered by `rules`).
    Rules,
    /// Revokes a remembered approval of the session: a named person only (every tab of the
    /// session is then sent `rules`).
    RevokeRule {
        /// The rule's id.
        id: String,
    },
}

impl FromTab {
    /// The tab id a `hello` asks for, if it is a valid one.
    pub fn requested_tab(tab: Option<&str>) -> Option<TabId> {
        tab.and_then(|t| TabId::parse(t).ok())
    }
}
