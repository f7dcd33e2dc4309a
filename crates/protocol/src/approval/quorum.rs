//! Approvals that need several people: an ask's `quorum` (and `veto`), each person's vote,
//! and the tally that decides each call.
//!
//! A call is approved once `needed` different people have approved it. With `veto` (the
//! default) one rejection rejects it; without, it is rejected once `needed` people have
//! rejected it, whichever comes first. The request ends when every call is decided. A person's
//! second vote replaces their first on the calls not yet decided; a decided call stays so.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::calls::{Call, DecisionKind};
use super::decisions::Decision;
use crate::error::{ErrorCode, FieldError, json_kind};

/// The fewest people a quorum may need.
pub const MIN_QUORUM: u8 = 2;
/// The most people a quorum may need.
pub const MAX_QUORUM: u8 = 10;

/// How many people must decide each call, and whether one rejection is enough.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quorum {
    /// Approvals (or, without veto, rejections) that decide a call.
    pub needed: u8,
    /// Whether one rejection rejects a call.
    pub veto: bool,
}

/// One person's vote: for each call, approve (`Some(true)`), reject (`Some(false)`), or
/// nothing counted (a call already decided when they voted).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vote {
    /// Who.
    pub user: String,
    /// Per call, in order.
    pub approve: Vec<Option<bool>>,
    /// Per call, the reason given with a rejection, if any (the agent is told).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<Option<String>>,
}

/// One call's votes, as tabs are shown them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallTally {
    /// Who approved it, in the order they voted.
    pub approved_by: Vec<String>,
    /// Who rejected it, in the order they voted.
    pub rejected_by: Vec<String>,
}

impl Quorum {
    /// Reads an ask's `quorum` and `veto` (the fields no dialect names).
    ///
    /// # Errors
    /// A quorum out of range or not a whole number, a `veto` that is not a boolean or comes
    /// without a quorum; each at its path.
    pub fn read(rest: &Map<String, Value>) -> Result<Option<Quorum>, Vec<FieldError>> {
        let quorum = rest.get("quorum").filter(|v| !v.is_null());
        let veto = rest.get("veto").filter(|v| !v.is_null());
        let mut errors = Vec::new();
        let needed = quorum.and_then(|value| match value.as_u64() {
            Some(n) if (u64::from(MIN_QUORUM)..=u64::from(MAX_QUORUM)).contains(&n) => {
                u8::try_from(n).ok()
            }
            _ => {
                errors.push(FieldError::new(
                    "quorum",
                    if value.is_number() {
                        ErrorCode::InvalidValue
                    } else {
                        ErrorCode::WrongType
                    },
                    format!(
                        "must be a whole number of people from {MIN_QUORUM} to {MAX_QUORUM}, got {}",
                        if value.is_number() {
                            value.to_string()
                        } else {
                            json_kind(value).to_owned()
                        }
                    ),
                ));
                None
            }
        });
        let veto = match veto {
            None => true,
            Some(Value::Bool(veto)) if quorum.is_some() => *veto,
            Some(Value::Bool(_)) => {
                errors.push(FieldError::new(
                    "veto",
                    ErrorCode::InvalidValue,
                    "takes effect only with a `quorum`",
                ));
                true
            }
            Some(other) => {
                errors.push(FieldError::new(
                    "veto",
                    ErrorCode::WrongType,
                    format!("must be true or false, got {}", json_kind(other)),
                ));
                true
            }
        };
        if errors.is_empty() {
            Ok(needed.map(|needed| Quorum { needed, veto }))
        } else {
            Err(errors)
        }
    }

    /// Refuses a quorum over calls that allow `edit` or `respond`: one person cannot edit
    /// what others approved.
    ///
    /// # Errors
    /// The first such call, at path `quorum`.
    pub fn check_calls(&self, calls: &[Call]) -> Result<(), FieldError> {
        for (index, call) in calls.iter().enumerate() {
            let single = call
                .decisions
                .iter()
                .find(|kind| matches!(kind, DecisionKind::Edit | DecisionKind::Respond));
            if let Some(kind) = single {
                return Err(FieldError::new(
                    "quorum",
                    ErrorCode::InvalidValue,
                    format!(
                        "a quorum takes approve and reject only, and calls[{index}].decisions \
                         allows {}: one person cannot {} what others approved",
                        kind.as_str(),
                        kind.as_str()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Each of `calls` calls' tally from `votes` (in the order they were cast), and what it
    /// has come to: approved (`Some(true)`), rejected (`Some(false)`) or open (`None`).
    pub fn tally(&self, calls: usize, votes: &[Vote]) -> Vec<(CallTally, Option<bool>)> {
        (0..calls)
            .map(|call| {
                let mut tally = CallTally::default();
                for vote in votes {
                    match vote.approve.get(call).copied().flatten() {
                        Some(true) => tally.approved_by.push(vote.user.clone()),
                        Some(false) => tally.rejected_by.push(vote.user.clone()),
                        None => {}
                    }
                }
                let needed = usize::from(self.needed);
                let decided = if (self.veto && !tally.rejected_by.is_empty())
                    || (!self.veto && tally.rejected_by.len() >= needed)
                {
                    Some(false)
                } else if tally.approved_by.len() >= needed {
                    Some(true)
                } else {
                    None
                };
                (tally, decided)
            })
            .collect()
    }

    /// `votes` with `user`'s vote `decisions` (approve or reject, one per call) counted: it
    /// replaces their earlier one on the calls not decided before it; a decided call keeps
    /// what it had.
    pub fn cast(&self, votes: &[Vote], user: &str, decisions: &[Decision]) -> Vec<Vote> {
        let before = self.tally(decisions.len(), votes);
        let earlier = votes.iter().find(|vote| vote.user == user);
        let (approve, reasons): (Vec<Option<bool>>, Vec<Option<String>>) = decisions
            .iter()
            .enumerate()
            .map(|(call, decision)| {
                if before[call].1.is_some() {
                    let kept = |vote: &Vote| {
                        (
                            vote.approve.get(call).copied().flatten(),
                            vote.reasons.get(call).cloned().flatten(),
                        )
                    };
                    earlier.map_or((None, None), kept)
                } else {
                    match decision {
                        Decision::Reject { message } => (Some(false), message.clone()),
                        _ => (Some(true), None),
                    }
                }
            })
            .unzip();
        let reasons = if reasons.iter().all(Option::is_none) {
            Vec::new()
        } else {
            reasons
        };
        let mut after: Vec<Vote> = votes
            .iter()
            .filter(|vote| vote.user != user)
            .cloned()
            .collect();
        after.push(Vote {
            user: user.to_owned(),
            approve,
            reasons,
        });
        after
    }

    /// The decisions a finished tally makes: `{"decisions": [...]}` as a tab would send
    /// them, each call approved or rejected (with the reasons its rejecters gave, joined, so
    /// that the agent is told them). `None` while a call is open.
    pub fn decisions(&self, calls: usize, votes: &[Vote]) -> Option<Value> {
        let decided: Option<Vec<Value>> = self
            .tally(calls, votes)
            .into_iter()
            .enumerate()
            .map(|(call, (_, decided))| {
                decided.map(|approved| {
                    if approved {
                        return json!({"type": "approve"});
                    }
                    let reasons: Vec<&str> = votes
                        .iter()
                        .filter(|vote| vote.approve.get(call).copied().flatten() == Some(false))
                        .filter_map(|vote| vote.reasons.get(call).and_then(Option::as_deref))
                        .filter(|reason| !reason.trim().is_empty())
                        .collect();
                    if reasons.is_empty() {
                        json!({"type": "reject"})
                    } else {
                        json!({"type": "reject", "message": reasons.join("; ")})
                    }
                })
            })
            .collect();
        decided.map(|decisions| json!({ "decisions": decisions }))
    }
}

/// Each voter with what they voted, for the outcome's `voters`: `[{user, decisions}]`, a
/// decision per call (`approve`, `reject`, or null for one not counted).
pub fn voters(votes: &[Vote]) -> Value {
    Value::Array(
        votes
            .iter()
            .map(|vote| {
                let decisions: Vec<Value> = vote
                    .approve
                    .iter()
                    .map(|choice| match choice {
                        Some(true) => json!("approve"),
                        Some(false) => json!("reject"),
                        None => Value::Null,
                    })
                    .collect();
                json!({"user": vote.user, "decisions": decisions})
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approve() -> Decision {
        Decision::Approve
    }

    fn reject() -> Decision {
        Decision::Reject { message: None }
    }

    #[test]
    fn a_call_needs_its_quorum_and_one_rejection_vetoes_it() {
        let quorum = Quorum {
            needed: 2,
            veto: true,
        };
        let votes = quorum.cast(&[], "alice", &[approve(), approve()]);
        assert_eq!(quorum.decisions(2, &votes), None);
        let tally = quorum.tally(2, &votes);
        assert_eq!(tally[0].0.approved_by, ["alice"]);
        // A second vote of the same person replaces the first; it is still one person.
        let votes = quorum.cast(&votes, "alice", &[approve(), reject()]);
        assert_eq!(votes.len(), 1);
        let tally = quorum.tally(2, &votes);
        assert_eq!(
            tally[1],
            (
                CallTally {
                    approved_by: vec![],
                    rejected_by: vec!["alice".into()]
                },
                Some(false)
            )
        );
        let votes = quorum.cast(&votes, "bob", &[approve(), approve()]);
        assert_eq!(
            quorum.decisions(2, &votes),
            Some(json!({"decisions": [{"type": "approve"}, {"type": "reject"}]}))
        );
        // A decided call keeps what it had: alice cannot take her veto back.
        let again = quorum.cast(&votes, "alice", &[approve(), approve()]);
        assert_eq!(quorum.tally(2, &again)[1].1, Some(false));
    }

    #[test]
    fn a_rejections_reason_reaches_the_agent() {
        let quorum = Quorum {
            needed: 2,
            veto: true,
        };
        let why = Decision::Reject {
            message: Some("not on a Friday".into()),
        };
        let votes = quorum.cast(&[], "bob", &[why]);
        assert_eq!(
            quorum.decisions(1, &votes),
            Some(json!({"decisions": [{"type": "reject", "message": "not on a Friday"}]}))
        );
    }

    #[test]
    fn without_veto_the_first_to_reach_the_quorum_decides() {
        let quorum = Quorum {
            needed: 2,
            veto: false,
        };
        let votes = quorum.cast(&[], "alice", &[reject()]);
        assert_eq!(quorum.tally(1, &votes)[0].1, None);
        let votes = quorum.cast(&votes, "bob", &[approve()]);
        assert_eq!(quorum.tally(1, &votes)[0].1, None);
        let votes = quorum.cast(&votes, "carol", &[reject()]);
        assert_eq!(quorum.tally(1, &votes)[0].1, Some(false));
        assert_eq!(
            voters(&votes),
            json!([
                {"user": "alice", "decisions": ["reject"]},
                {"user": "bob", "decisions": ["approve"]},
                {"user": "carol", "decisions": ["reject"]}
            ])
        );
    }

    #[test]
    fn an_asks_quorum_is_read_at_its_paths() {
        let read = |value: Value| Quorum::read(value.as_object().unwrap());
        assert_eq!(
            read(json!({"quorum": 3})).unwrap(),
            Some(Quorum {
                needed: 3,
                veto: true
            })
        );
        assert_eq!(
            read(json!({"quorum": 2, "veto": false})).unwrap(),
            Some(Quorum {
                needed: 2,
                veto: false
            })
        );
        assert_eq!(read(json!({})).unwrap(), None);
        let paths = |value: Value| {
            read(value)
                .unwrap_err()
                .into_iter()
                .map(|e| format!("{}: {}", e.path, e.message))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            paths(json!({"quorum": 1})),
            ["quorum: must be a whole number of people from 2 to 10, got 1"]
        );
        assert_eq!(
            paths(json!({"quorum": "two"})),
            ["quorum: must be a whole number of people from 2 to 10, got a string"]
        );
        assert_eq!(
            paths(json!({"veto": false})),
            ["veto: takes effect only with a `quorum`"]
        );
    }
}
