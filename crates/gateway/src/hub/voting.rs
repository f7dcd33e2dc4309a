//! Approvals that need several people (an ask's `quorum`): a person's answer or decline is
//! their vote. A vote that decides every call ends the request like any answer (with
//! `voters` beside `user`, the person whose vote ended it); one that does not is kept (the
//! `votes` kept table, and a `voted` entry in the trail, in one commit) while the request
//! waits in `Resolving`, so that two votes at once are counted one after the other.

use std::sync::Arc;

use askgate_protocol::approval::{Decision, Quorum, Vote, check_decisions, quorum};
use askgate_protocol::{RequestId, SessionId};
use serde_json::Value;

use super::Hub;
use super::ending::{Ending, Refusal};
use super::request::Entry;
use crate::clock::now_ms;
use crate::people::{NotAllowed, Person};
use crate::store::{StoreOp, Verdict};

/// What a vote comes to.
pub(super) enum Counted {
    /// Every call is decided: the request ends with this answer (`{"decisions": [...]}`),
    /// and these voters (`votes`, as the outcome gives them).
    Decides {
        answer: Value,
        voters: Value,
        votes: Vec<Vote>,
    },
    /// Calls are still open: the votes as they are with this one, to keep.
    Kept(Vec<Vote>),
}

/// A vote to keep: who cast it, the request's votes with it, and the votes it was counted on.
pub(super) struct VoteCast {
    pub(super) user: String,
    pub(super) votes: Vec<Vote>,
    pub(super) counted_on: Vec<Vote>,
    pub(super) deadline_ms: Option<u64>,
}

/// Counts `ending` (an answer or a decline, by `person`) as a vote on `entry`, which needs
/// `quorum`: a decline rejects every call.
///
/// # Errors
/// The person is anonymous (a quorum counts only people the gateway knows), or the answer
/// does not fit the calls.
pub(super) fn count(
    entry: &Entry,
    quorum: Quorum,
    ending: &Ending,
) -> Result<(Counted, String), Refusal> {
    let (person, decisions) = match ending {
        Ending::Answer {
            person, response, ..
        } => {
            let calls = entry.questions.approval_calls();
            (
                person,
                check_decisions(calls, response).map_err(Refusal::DoesNotFit)?,
            )
        }
        Ending::Decline { person, .. } => (
            person,
            vec![Decision::Reject { message: None }; entry.questions.approval_calls().len()],
        ),
        _ => return Err(Refusal::Unknown),
    };
    let user = voter(person)?;
    let votes = quorum.cast(&entry.votes, &user, &decisions);
    let calls = entry.questions.approval_calls().len();
    let counted = match quorum.decisions(calls, &votes) {
        Some(answer) => Counted::Decides {
            answer,
            voters: quorum::voters(&votes),
            votes,
        },
        None => Counted::Kept(votes),
    };
    Ok((counted, user))
}

/// Who votes: only a person the gateway knows.
fn voter(person: &Person) -> Result<String, Refusal> {
    person
        .name()
        .map(str::to_owned)
        .ok_or(Refusal::Forbidden(NotAllowed::AnonymousVote))
}

/// The key of a request's votes in the `votes` kept table.
pub(super) fn votes_key(session: &SessionId, id: &RequestId) -> String {
    format!("{session}/{id}")
}

/// The votes request `id` of `state` holds now.
fn state_votes(state: &super::session::Session, id: &RequestId) -> Vec<Vote> {
    state
        .requests
        .get(id)
        .map(|entry| entry.votes.clone())
        .unwrap_or_default()
}

/// The votes kept for one request, read back: each field a voter, ordered by when they voted.
pub(super) fn read_votes(fields: Vec<(String, String)>) -> Vec<Vote> {
    let mut votes: Vec<(u64, Vote)> = fields
        .into_iter()
        .filter_map(|(user, value)| {
            let value: Value = serde_json::from_str(&value).ok()?;
            let approve = serde_json::from_value(value.get("approve")?.clone()).ok()?;
            let reasons = value
                .get("reasons")
                .and_then(|reasons| serde_json::from_value(reasons.clone()).ok())
                .unwrap_or_default();
            let at_ms = value["at_ms"].as_u64().unwrap_or(0);
            Some((
                at_ms,
                Vote {
                    user,
                    approve,
                    reasons,
                },
            ))
        })
        .collect();
    votes.sort_by_key(|(at_ms, _)| *at_ms);
    votes.into_iter().map(|(_, vote)| vote).collect()
}

impl Hub {
    /// Keeps a vote that decided nothing: committed with its trail entry, then counted
    /// (`request::record_votes`); should the store fail, the request is open again without it.
    pub(super) async fn keep_vote(
        self: &Arc<Self>,
        session: &SessionId,
        id: &RequestId,
        cast: VoteCast,
    ) -> Result<(), Refusal> {
        let counted_on = cast.counted_on.clone();
        let ops = vec![StoreOp::Vote {
            session: session.clone(),
            id: id.clone(),
            user: cast.user.clone(),
            votes: cast.votes.clone(),
            counted_on: cast.counted_on,
        }];
        let (session_id, request) = (session.clone(), id.clone());
        self.commit_then(ops, move |hub, committed| {
            let mut sessions = hub.lock();
            let Some(state) = sessions.get_mut(&session_id) else {
                return Err(Refusal::Unknown);
            };
            match committed.map(|verdicts| verdicts.into_iter().next()) {
                Ok(None | Some(Verdict::Done)) => {
                    // A notice of a later vote may have come first: its votes stay.
                    let heard_later = state
                        .requests
                        .get(&request)
                        .is_some_and(|entry| entry.votes != counted_on);
                    if heard_later {
                        state.record_votes(&request, &cast.user, state_votes(state, &request));
                    } else {
                        state.record_votes(&request, &cast.user, cast.votes);
                    }
                    Ok(())
                }
                Ok(Some(verdict)) => Err(state.vote_not_kept(&request, verdict, &counted_on)),
                Err(error) => {
                    tracing::error!(session = %session_id, request = %request, %error, "could not keep a vote; the request stays open");
                    // A deadline already past is tried after a pause, as a failed ending's is.
                    let retry_at = cast.deadline_ms.map(|deadline| {
                        deadline.max(now_ms() + super::ending::STORE_RETRY.as_millis() as u64)
                    });
                    state.reopen(&request, retry_at);
                    Err(Refusal::Store(error.to_string()))
                }
            }
        })
        .await
        .unwrap_or_else(|error| Err(Refusal::Store(error.to_string())))
    }
}
