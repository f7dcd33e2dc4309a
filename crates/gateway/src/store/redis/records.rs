//! Requests as Redis holds them (a hash of plain fields, the JSON parts as JSON), and the
//! notices scripts publish: both directions, and the digest that tells re-asks apart.

use askgate_protocol::wire::Via;
use askgate_protocol::{Dialect, RequestId, SessionId, Settlement};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::audit::questions_digest;
use crate::store::shared::Change;
use crate::store::{FollowUp, FollowUps, StoredRequest, StoredResolution};

/// What tabs are shown of a request, as the `body` field.
#[derive(Serialize, Deserialize)]
struct Body {
    dialect: Dialect,
    title: Option<String>,
    questions: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answerers: Option<Vec<String>>,
    /// When it is reminded and escalated (which have happened is the `follows` field).
    #[serde(default, skip_serializing_if = "FollowUps::is_empty")]
    follow_ups: FollowUps,
    /// The answer given should the deadline pass with none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    default: Option<Value>,
    /// How many people must decide each call of an approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    quorum: Option<askgate_protocol::approval::Quorum>,
    /// The id of the agent key that asked it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    asked_by: Option<String>,
    /// The rule of each call rules approved when it was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ruled: Option<Vec<Option<askgate_protocol::approval::rules::RuledCall>>>,
    /// Where an approval of it may be remembered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    remember: Vec<askgate_protocol::approval::rules::RuleScope>,
    /// Where its outcome is POSTed when it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    callback: Option<askgate_protocol::wire::callback::Callback>,
}

/// A follow-up's letter in the `follows` field, and in a `followed` notice.
pub(super) fn follow_up_letter(follow_up: FollowUp) -> &'static str {
    match follow_up {
        FollowUp::Remind => "r",
        FollowUp::Escalate => "e",
    }
}

/// How a request ended, as the `resolution` field (its time is the `resolved` field).
#[derive(Serialize, Deserialize)]
struct Ending {
    settlement: Settlement,
    by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    via: Option<Via>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    voters: Option<Value>,
}

/// The `body` field of `request`.
pub(super) fn body(request: &StoredRequest) -> String {
    let body = Body {
        dialect: request.dialect,
        title: request.title.clone(),
        questions: request.questions.clone(),
        answerers: request.answerers.clone(),
        follow_ups: FollowUps {
            reminded: false,
            escalated: false,
            ..request.follow_ups.clone()
        },
        default: request.default.clone(),
        quorum: request.quorum,
        asked_by: request.asked_by.clone(),
        ruled: request.ruled.clone(),
        remember: request.remember.clone(),
        callback: request.callback.as_deref().cloned(),
    };
    serde_json::to_string(&body).unwrap_or_default()
}

/// What tells one request's questions from another's: a re-ask with the same digest is the
/// same request. The title is not part of it, as on one node.
pub(super) fn digest(request: &StoredRequest) -> String {
    questions_digest(request.dialect, &request.questions)
}

/// The `resolution` field of `resolution` (its time is left out: the script sets it).
pub(super) fn ending(resolution: &StoredResolution) -> String {
    let ending = Ending {
        settlement: resolution.settlement.clone(),
        by: resolution.by.clone(),
        user: resolution.user.clone(),
        via: resolution.via,
        voters: resolution.voters.clone(),
    };
    serde_json::to_string(&ending).unwrap_or_default()
}

/// A resolution from its `resolution` and `resolved` fields.
pub(super) fn resolution(ending: &str, at: &str) -> Result<StoredResolution, String> {
    let Ending {
        settlement,
        by,
        user,
        via,
        voters,
    } = serde_json::from_str(ending).map_err(|e| format!("a stored resolution: {e}"))?;
    Ok(StoredResolution {
        settlement,
        by,
        user,
        via,
        voters,
        at_ms: millis(at)?,
    })
}

/// A time field.
pub(super) fn millis(field: &str) -> Result<u64, String> {
    field
        .parse()
        .map_err(|_| format!("a stored time is not a number: {field:?}"))
}

/// A deadline field (empty: none).
pub(super) fn deadline(field: &str) -> Result<Option<u64>, String> {
    if field.is_empty() {
        Ok(None)
    } else {
        millis(field).map(Some)
    }
}

/// The fields of one request, as `ask.lua` and `session.lua` return them.
pub(super) struct Fields<'a> {
    pub(super) asked: &'a str,
    pub(super) deadline: &'a str,
    pub(super) state: &'a str,
    pub(super) resolution: &'a str,
    pub(super) resolved: &'a str,
    pub(super) body: &'a str,
    /// The follow-ups that have happened: a letter each ([`follow_up_letter`]).
    pub(super) follows: &'a str,
    /// The votes of a request with a quorum ([`votes`]; empty: none yet).
    pub(super) votes: &'a str,
}

/// The `votes` field: every vote, in the order cast ('' for none).
pub(super) fn votes(votes: &[askgate_protocol::approval::Vote]) -> String {
    if votes.is_empty() {
        String::new()
    } else {
        serde_json::to_string(votes).unwrap_or_default()
    }
}

/// The votes of a `votes` field.
pub(super) fn read_votes(field: &str) -> Result<Vec<askgate_protocol::approval::Vote>, String> {
    if field.is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(field).map_err(|e| format!("stored votes: {e}"))
}

/// A request from its fields.
pub(super) fn request(
    session: &SessionId,
    id: &RequestId,
    fields: &Fields<'_>,
) -> Result<StoredRequest, String> {
    let Body {
        dialect,
        title,
        questions,
        answerers,
        mut follow_ups,
        default,
        quorum,
        asked_by,
        ruled,
        remember,
        callback,
    } = serde_json::from_str(fields.body).map_err(|e| format!("a stored request: {e}"))?;
    for follow_up in [FollowUp::Remind, FollowUp::Escalate] {
        if fields.follows.contains(follow_up_letter(follow_up)) {
            follow_ups.mark(follow_up);
        }
    }
    let resolution = match fields.state {
        "open" => None,
        "resolved" => Some(resolution(fields.resolution, fields.resolved)?),
        other => return Err(format!("a stored request in an unknown state {other:?}")),
    };
    Ok(StoredRequest {
        session: session.clone(),
        id: id.clone(),
        dialect,
        questions,
        title,
        asked_at_ms: millis(fields.asked)?,
        deadline_ms: deadline(fields.deadline)?,
        answerers,
        follow_ups,
        default,
        quorum,
        asked_by,
        callback: callback.map(Box::new),
        ruled,
        remember,
        votes: read_votes(fields.votes)?,
        resolution,
    })
}

/// An inbox notice as a node published it: `{session}\n{name}`.
pub(super) fn addressed(payload: &str) -> Option<crate::store::shared::Notice> {
    let (session, name) = payload.split_once('\n')?;
    Some(crate::store::shared::Notice::Addressed {
        session: SessionId::parse(session).ok()?,
        name: name.to_owned(),
    })
}

/// A notice as a script published it: its sequence number, the trail's head if the script
/// sealed an entry (`seq hash`, after the notice's number and a space), and the change.
pub(super) fn notice<'p>(
    session: &SessionId,
    payload: &'p str,
) -> Result<(u64, Option<&'p str>, Change), String> {
    let mut parts = payload.splitn(3, '\n');
    let (Some(first), Some(kind), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("a notice without its parts: {payload:?}"));
    };
    let (seq, trail_head) = match first.split_once(' ') {
        Some((seq, head)) => (seq, Some(head)),
        None => (first, None),
    };
    let seq = millis(seq)?;
    let id_of = |text: &str| RequestId::parse(text).map_err(|e| format!("a notice's id: {e}"));
    let change = match kind {
        "put" => {
            let mut parts = rest.splitn(4, '\n');
            let (Some(id), Some(asked), Some(deadline), Some(body)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err("a put notice without its parts".into());
            };
            let id = id_of(id)?;
            let fields = Fields {
                asked,
                deadline,
                state: "open",
                resolution: "",
                resolved: "",
                body,
                follows: "",
                votes: "",
            };
            Change::Put(Box::new(request(session, &id, &fields)?))
        }
        "resolved" => {
            let mut parts = rest.splitn(3, '\n');
            let (Some(id), Some(at), Some(ending)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err("a resolved notice without its parts".into());
            };
            Change::Resolved {
                id: id_of(id)?,
                resolution: Box::new(resolution(ending, at)?),
            }
        }
        "forgot" => Change::Forgot { id: id_of(rest)? },
        "voted" => {
            let mut parts = rest.splitn(3, '\n');
            let (Some(id), Some(user), Some(votes)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err("a voted notice without its parts".into());
            };
            Change::Voted {
                id: id_of(id)?,
                user: user.to_owned(),
                votes: read_votes(votes)?,
            }
        }
        "followed" => {
            let Some((id, letter)) = rest.split_once('\n') else {
                return Err("a followed notice without its parts".into());
            };
            let follow_up = [FollowUp::Remind, FollowUp::Escalate]
                .into_iter()
                .find(|f| follow_up_letter(*f) == letter)
                .ok_or_else(|| format!("a followed notice of an unknown follow-up {letter:?}"))?;
            Change::FollowedUp {
                id: id_of(id)?,
                follow_up,
            }
        }
        "presence" => Change::Presence,
        "followers" => {
            let Some((on, user)) = rest.split_once('\n') else {
                return Err("a followers notice without its parts".into());
            };
            Change::Followers {
                user: user.to_owned(),
                on: on == "1",
            }
        }
        other => return Err(format!("a notice of an unknown kind {other:?}")),
    };
    Ok((seq, trail_head, change))
}

#[cfg(test)]
mod tests {
    use askgate_protocol::Outcome;
    use serde_json::json;

    use super::*;

    fn sample() -> StoredRequest {
        StoredRequest {
            quorum: None,
            asked_by: None,
            callback: None,
            ruled: None,
            remember: Vec::new(),
            votes: Vec::new(),
            default: None,
            session: SessionId::parse("s").unwrap(),
            id: RequestId::parse("r").unwrap(),
            dialect: Dialect::HARNESS,
            questions: json!([{"header": "H", "question": "Q?\nnext line", "options": []}]),
            title: Some("a title".into()),
            asked_at_ms: 5,
            deadline_ms: Some(9),
            answerers: Some(vec!["alice@example.com".into(), "group:ops".into()]),
            follow_ups: Default::default(),
            resolution: None,
        }
    }

    #[test]
    fn a_put_notice_reads_back_as_the_request() {
        let request = sample();
        let payload = format!("7\nput\nr\n5\n9\n{}", body(&request));
        let (seq, head, change) = notice(&request.session, &payload).unwrap();
        assert_eq!((seq, head), (7, None));
        let Change::Put(read) = change else {
            panic!("{change:?}")
        };
        assert_eq!(*read, request);
    }

    #[test]
    fn a_resolved_notice_reads_back_as_the_resolution() {
        let settlement = Settlement {
            outcome: Outcome::Declined,
            response: json!({"answers": [], "cancelled": true}),
            result: json!("declined\nsecond line"),
            model_text: Some("declined".into()),
        };
        let kept = StoredResolution {
            settlement: settlement.clone(),
            by: Some("t-1".into()),
            user: Some("alice@example.com".into()),
            via: Some(Via::PersonalLink),
            voters: None,
            at_ms: 0,
        };
        // A script that sealed an entry gives the trail's new head after the number.
        let hash = "e3".repeat(32);
        let payload = format!("8 5 {hash}\nresolved\nr\n12\n{}", ending(&kept));
        let (seq, head, change) = notice(&SessionId::parse("s").unwrap(), &payload).unwrap();
        assert_eq!(seq, 8);
        assert_eq!(head, Some(format!("5 {hash}").as_str()));
        let Change::Resolved { id, resolution } = change else {
            panic!("{change:?}")
        };
        assert_eq!(id.as_str(), "r");
        assert_eq!(resolution.settlement, settlement);
        assert_eq!(*resolution, StoredResolution { at_ms: 12, ..kept });
    }

    #[test]
    fn a_followers_notice_and_an_inbox_notice_read_back() {
        let session = SessionId::parse("s").unwrap();
        let (seq, _, change) = notice(&session, "0\nfollowers\n1\nalice@example.com").unwrap();
        assert_eq!(seq, 0);
        let Change::Followers { user, on } = change else {
            panic!("{change:?}")
        };
        assert_eq!((user.as_str(), on), ("alice@example.com", true));
        let (_, _, change) = notice(&session, "0\nfollowers\n0\nbob").unwrap();
        assert!(matches!(change, Change::Followers { on: false, .. }));
        assert!(notice(&session, "0\nfollowers\n1").is_err());
        let Some(crate::store::shared::Notice::Addressed { session, name }) =
            addressed("team-1\ngroup:oncall")
        else {
            panic!("an inbox notice")
        };
        assert_eq!(
            (session.as_str(), name.as_str()),
            ("team-1", "group:oncall")
        );
        assert!(addressed("no newline").is_none());
        assert!(addressed("bad id!\nalice").is_none());
    }

    #[test]
    fn a_notice_that_is_not_one_is_an_error_not_a_panic() {
        let session = SessionId::parse("s").unwrap();
        for payload in [
            "",
            "x",
            "1\nput\nr",
            "1\nresolved\nr\n5\n{",
            "1\nwhat\nr",
            "a\nforgot\nr",
            "x 1 h\nforgot\nr",
        ] {
            assert!(notice(&session, payload).is_err(), "{payload:?}");
        }
    }

    #[test]
    fn the_digest_follows_the_questions_not_the_title() {
        let a = sample();
        let mut b = sample();
        b.title = None;
        assert_eq!(digest(&a), digest(&b));
        b.questions = json!([]);
        assert_ne!(digest(&a), digest(&b));
    }
}
