//! What the trail records: the events, and the entry each change to the store makes.
//!
//! The entry's text is written here, once, by the node; a store only numbers, times and
//! seals it. Members come in a fixed order, so two nodes write the same bytes for one event.

use std::borrow::Cow;

use askgate_protocol::wire::Via;
use askgate_protocol::{Dialect, Outcome, RequestId, SessionId, TabId};
use serde::Serialize;
use serde_json::Value;

use super::chain::sha256_hex;
use crate::clock::now_ms;
use crate::people::Person;
use crate::store::{FollowUp, StoreOp, StoredRequest, StoredResolution};

/// Who did something: the person (if known), the tab, and how the person was known.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Who {
    /// The person, or null.
    pub user: Option<String>,
    /// The tab, or null.
    pub tab: Option<String>,
    /// How the person was known (absent when no tab acted).
    pub via: Option<Via>,
}

impl Who {
    /// The person of `tab`, as a tab's event names them.
    pub fn of(tab: &TabId, person: &Person) -> Who {
        Who {
            user: person.name().map(str::to_owned),
            tab: Some(tab.to_string()),
            via: Some(person.via),
        }
    }
}

/// One thing that happened to a request (or, for `link_issued`, to a session). The JSON it
/// carries is borrowed from the store change that made it, when one did.
#[derive(Clone, Debug, PartialEq)]
pub enum Event<'a> {
    /// An agent asked.
    Asked {
        /// The dialect.
        dialect: Dialect,
        /// `questions_digest` of the questions.
        digest: String,
        /// The title, if any.
        title: Option<String>,
        /// The questions as shown.
        questions: Cow<'a, Value>,
        /// Who alone may answer, if the ask said.
        answerers: Option<Vec<String>>,
        /// The timeout asked for, in ms.
        timeout_ms: Option<u64>,
    },
    /// A tab's answer won.
    Answered {
        /// Who answered.
        who: Who,
        /// The dialect's response.
        answer: Cow<'a, Value>,
    },
    /// A tab's decline won.
    Declined {
        /// Who declined.
        who: Who,
    },
    /// An answer or decline was refused because of who sent it.
    Refused {
        /// Who tried.
        who: Who,
        /// `answer` or `decline`.
        action: &'static str,
        /// Why.
        reason: String,
        /// How many times in all this tab was refused on this request for this reason,
        /// recorded once they are counted (none on the entry of the first).
        count: Option<u64>,
    },
    /// A person voted on a request that needs several people's (its quorum).
    Voted {
        /// Who.
        who: Who,
        /// Their vote, a decision per call (`approve`, `reject`, or null for one not
        /// counted).
        decisions: Value,
    },
    /// The deadline passed, and the ask's default was given (`tab` and `via` say `default`;
    /// no person).
    Defaulted {
        /// `by` and `via` of the ending: `default`.
        who: Who,
        /// How it ended: answered, or declined (a form's default may decline).
        outcome: Outcome,
        /// The dialect's response the default made.
        answer: Cow<'a, Value>,
    },
    /// Every call of an approval was approved by remembered rules, without asking anyone
    /// (`tab` is `rule:{id}`, `via` `rule`, `user` the rule's maker).
    AutoApproved {
        /// `by` and `via` of the ending.
        who: Who,
        /// The rule (of the first call, when rules approved several; the request's `ruled`
        /// names each call's).
        rule: String,
        /// The approvals the agent was given.
        answer: Cow<'a, Value>,
    },
    /// A person's approval was remembered: calls the rule matches are approved without asking.
    RuleMade {
        /// Who approved.
        who: Who,
        /// The rule (`id`, `tool`, `scope`, `args`, `user`, `created_ms`, `expires_ms`...).
        rule: Value,
    },
    /// A rule was revoked: it approves nothing from now on (`via` says by whom: `agent`,
    /// `operator`, or the person's).
    RuleRevoked {
        /// Who revoked it.
        who: Who,
        /// Its id.
        rule: String,
    },
    /// The deadline passed.
    TimedOut,
    /// It was withdrawn: `via` says by whom (`agent`, `operator`, `gateway`).
    Withdrawn {
        /// Its `via`.
        who: Who,
    },
    /// The agent acknowledged its outcome.
    Acked,
    /// The request was still open after its `remind_after_s`: its people were told again.
    Reminded,
    /// The request was still open after its `escalate.after_s`: these were added and told.
    Escalated {
        /// Whom (people and `group:NAME`s).
        to: Vec<String>,
    },
    /// A person began to follow the session (told of its requests that name no answerers).
    Followed {
        /// Who.
        user: String,
    },
    /// A person stopped following the session.
    Unfollowed {
        /// Who.
        user: String,
    },
    /// A personal link was issued for the session.
    LinkIssued {
        /// The person it names.
        user: String,
        /// When it stops working.
        expires_ms: u64,
    },
}

impl Event<'_> {
    /// The `event` member.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Asked { .. } => "asked",
            Event::Answered { .. } => "answered",
            Event::Declined { .. } => "declined",
            Event::Refused { .. } => "refused",
            Event::Defaulted { .. } => "defaulted",
            Event::Voted { .. } => "voted",
            Event::AutoApproved { .. } => "auto_approved",
            Event::RuleMade { .. } => "rule_made",
            Event::RuleRevoked { .. } => "rule_revoked",
            Event::TimedOut => "timed_out",
            Event::Withdrawn { .. } => "withdrawn",
            Event::Acked => "acked",
            Event::Reminded => "reminded",
            Event::Escalated { .. } => "escalated",
            Event::LinkIssued { .. } => "link_issued",
            Event::Followed { .. } => "followed",
            Event::Unfollowed { .. } => "unfollowed",
        }
    }
}

/// An event to record: where, when (a local store's time; Redis uses its own clock), what.
#[derive(Clone, Debug, PartialEq)]
pub struct Note<'a> {
    /// The session.
    pub session: SessionId,
    /// The request, if the event is about one.
    pub id: Option<RequestId>,
    /// When it happened (Unix ms).
    pub at_ms: u64,
    /// What happened.
    pub event: Event<'a>,
}

/// What `by` of an ending by rules starts with; the first call's rule id follows.
pub const RULE_BY_PREFIX: &str = "rule:";

/// What tells one question set from another: SHA-256 of the dialect, a newline and the
/// questions' JSON, in hex.
pub fn questions_digest(dialect: Dialect, questions: &Value) -> String {
    let mut bytes = dialect.as_str().as_bytes().to_vec();
    bytes.push(b'\n');
    bytes.extend(serde_json::to_vec(questions).unwrap_or_default());
    sha256_hex(&bytes)
}

impl Note<'static> {
    /// The `refused` entry of `who`'s `action` on request `id`: the first refusal of its kind
    /// (no `count`), or how many there were once they are counted.
    pub fn refused(
        session: &SessionId,
        who: &Who,
        id: RequestId,
        action: &'static str,
        reason: &str,
        count: Option<u64>,
    ) -> Note<'static> {
        Note {
            session: session.clone(),
            id: Some(id),
            at_ms: now_ms(),
            event: Event::Refused {
                who: who.clone(),
                action,
                reason: reason.to_owned(),
                count,
            },
        }
    }
}

impl<'a> Note<'a> {
    /// The `asked` entry of a new request.
    pub fn asked(request: &'a StoredRequest) -> Note<'a> {
        Note {
            session: request.session.clone(),
            id: Some(request.id.clone()),
            at_ms: request.asked_at_ms,
            event: Event::Asked {
                dialect: request.dialect,
                digest: questions_digest(request.dialect, &request.questions),
                title: request.title.clone(),
                questions: Cow::Borrowed(&request.questions),
                answerers: request.answerers.clone(),
                timeout_ms: request
                    .deadline_ms
                    .map(|deadline| deadline.saturating_sub(request.asked_at_ms)),
            },
        }
    }

    /// The entry of a request's ending.
    pub fn ended(
        session: &SessionId,
        id: &RequestId,
        resolution: &'a StoredResolution,
    ) -> Note<'a> {
        let who = Who {
            user: resolution.user.clone(),
            tab: resolution.by.clone(),
            via: resolution.via,
        };
        let event = match resolution.settlement.outcome {
            Outcome::Answered if resolution.via == Some(Via::Rule) => Event::AutoApproved {
                rule: who
                    .tab
                    .as_deref()
                    .and_then(|by| by.strip_prefix(RULE_BY_PREFIX))
                    .unwrap_or_default()
                    .to_owned(),
                who,
                answer: Cow::Borrowed(&resolution.settlement.response),
            },
            outcome if resolution.via == Some(Via::Default) => Event::Defaulted {
                who,
                outcome,
                answer: Cow::Borrowed(&resolution.settlement.response),
            },
            Outcome::Answered => Event::Answered {
                who,
                answer: Cow::Borrowed(&resolution.settlement.response),
            },
            Outcome::Declined => Event::Declined { who },
            Outcome::TimedOut => Event::TimedOut,
            Outcome::Withdrawn => Event::Withdrawn { who },
        };
        Note {
            session: session.clone(),
            id: Some(id.clone()),
            at_ms: resolution.at_ms,
            event,
        }
    }

    /// The entry a store change makes, if it makes one (a deletion other than an ack makes
    /// none).
    pub fn of(op: &'a StoreOp, now_ms: u64) -> Option<Note<'a>> {
        match op {
            StoreOp::Put(request) => Some(Note::asked(request)),
            StoreOp::Resolve {
                session,
                id,
                resolution,
                ..
            } => Some(Note::ended(session, id, resolution)),
            StoreOp::Delete {
                session,
                id,
                acked: true,
            } => Some(Note {
                session: session.clone(),
                id: Some(id.clone()),
                at_ms: now_ms,
                event: Event::Acked,
            }),
            StoreOp::FollowedUp {
                session,
                id,
                follow_up,
                to,
                at_ms,
            } => Some(Note {
                session: session.clone(),
                id: Some(id.clone()),
                at_ms: *at_ms,
                event: match follow_up {
                    FollowUp::Remind => Event::Reminded,
                    FollowUp::Escalate => Event::Escalated { to: to.clone() },
                },
            }),
            StoreOp::Follow {
                session,
                user,
                on,
                at_ms,
            } => Some(Note {
                session: session.clone(),
                id: None,
                at_ms: *at_ms,
                event: if *on {
                    Event::Followed { user: user.clone() }
                } else {
                    Event::Unfollowed { user: user.clone() }
                },
            }),
            StoreOp::Vote {
                session,
                id,
                user,
                votes,
                ..
            } => {
                let vote = votes.iter().find(|vote| vote.user == *user)?;
                let decisions = askgate_protocol::approval::quorum::voters(std::slice::from_ref(
                    vote,
                ))[0]["decisions"]
                    .clone();
                Some(Note {
                    session: session.clone(),
                    id: Some(id.clone()),
                    at_ms: now_ms,
                    event: Event::Voted {
                        who: Who {
                            user: Some(user.clone()),
                            tab: None,
                            via: None,
                        },
                        decisions,
                    },
                })
            }
            StoreOp::Delete { .. }
            | StoreOp::DropStaleTrails { .. }
            | StoreOp::Notify { .. }
            | StoreOp::Delivered { .. }
            | StoreOp::Keep { .. }
            | StoreOp::Unkeep { .. } => None,
            StoreOp::Note(note) => Some(note.clone()),
        }
    }
}

/// Appends `,"name":value` to `out`.
fn member(out: &mut Vec<u8>, name: &str, value: &impl Serialize) {
    out.push(b',');
    // Names are ours, plain ASCII; values are plain data: neither can fail to serialise.
    let _ = serde_json::to_writer(&mut *out, name);
    out.push(b':');
    let _ = serde_json::to_writer(&mut *out, value);
}

/// The entry's members after `seq` and `at_ms`, as sealed: `"session":…,"id":…,"event":…,
/// "user":…,"tab":…` and the event's own.
pub fn tail(note: &Note<'_>) -> String {
    let mut out = Vec::with_capacity(160);
    out.extend_from_slice(br#""session":"#);
    let _ = serde_json::to_writer(&mut out, note.session.as_str());
    member(&mut out, "id", &note.id.as_ref().map(RequestId::as_str));
    member(&mut out, "event", &note.event.name());
    let nobody = Who::default();
    let who = match &note.event {
        Event::Answered { who, .. }
        | Event::Defaulted { who, .. }
        | Event::Voted { who, .. }
        | Event::AutoApproved { who, .. }
        | Event::RuleMade { who, .. }
        | Event::RuleRevoked { who, .. }
        | Event::Withdrawn { who }
        | Event::Declined { who }
        | Event::Refused { who, .. } => who,
        _ => &nobody,
    };
    let user = match &note.event {
        Event::LinkIssued { user, .. } | Event::Followed { user } | Event::Unfollowed { user } => {
            Some(user.as_str())
        }
        _ => who.user.as_deref(),
    };
    member(&mut out, "user", &user);
    member(&mut out, "tab", &who.tab);
    if let Some(via) = who.via {
        member(&mut out, "via", &via);
    }
    match &note.event {
        Event::Asked {
            dialect,
            digest,
            title,
            questions,
            answerers,
            timeout_ms,
        } => {
            member(&mut out, "dialect", dialect);
            member(&mut out, "digest", digest);
            member(&mut out, "title", title);
            member(&mut out, "timeout_ms", timeout_ms);
            if let Some(answerers) = answerers {
                member(&mut out, "answerers", answerers);
            }
            member(&mut out, "questions", questions);
        }
        Event::Answered { answer, .. } => member(&mut out, "answer", answer),
        Event::Voted { decisions, .. } => member(&mut out, "decisions", decisions),
        Event::AutoApproved { rule, answer, .. } => {
            member(&mut out, "rule", rule);
            member(&mut out, "answer", answer);
        }
        Event::RuleMade { rule, .. } => member(&mut out, "rule", rule),
        Event::RuleRevoked { rule, .. } => member(&mut out, "rule", rule),
        Event::Defaulted {
            outcome, answer, ..
        } => {
            member(&mut out, "outcome", outcome);
            member(&mut out, "answer", answer);
        }
        Event::Refused {
            action,
            reason,
            count,
            ..
        } => {
            member(&mut out, "action", action);
            member(&mut out, "reason", reason);
            if let Some(count) = count {
                member(&mut out, "count", count);
            }
        }
        Event::LinkIssued { expires_ms, .. } => member(&mut out, "expires_ms", expires_ms),
        Event::Escalated { to } => member(&mut out, "to", to),
        Event::Declined { .. }
        | Event::TimedOut
        | Event::Withdrawn { .. }
        | Event::Acked
        | Event::Reminded
        | Event::Followed { .. }
        | Event::Unfollowed { .. } => {}
    }
    // serde_json writes UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_names_the_event_and_who() {
        let note = Note {
            session: SessionId::parse("s").unwrap(),
            id: Some(RequestId::parse("r").unwrap()),
            at_ms: 5,
            event: Event::Answered {
                who: Who {
                    user: Some("alice@example.com".into()),
                    tab: Some("t-1".into()),
                    via: Some(Via::PersonalLink),
                },
                answer: Cow::Owned(serde_json::json!({"answers": []})),
            },
        };
        assert_eq!(
            tail(&note),
            r#""session":"s","id":"r","event":"answered","user":"alice@example.com","tab":"t-1","via":"personal-link","answer":{"answers":[]}"#
        );
        let issued = Note {
            id: None,
            event: Event::LinkIssued {
                user: "bob".into(),
                expires_ms: 9,
            },
            ..note
        };
        assert_eq!(
            tail(&issued),
            r#""session":"s","id":null,"event":"link_issued","user":"bob","tab":null,"expires_ms":9"#
        );
    }
}
