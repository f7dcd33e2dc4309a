//! The frames a request's ending makes: the agent's `outcome` and every tab's `resolved`,
//! encoded straight from the stored resolution. They are byte for byte what serde_json writes
//! for [`ToAgent::Outcome`](askgate_protocol::wire::ToAgent) and
//! [`ToTab::Resolved`](askgate_protocol::wire::ToTab) (the tests below hold them to it), but
//! borrow the response and result instead of cloning their JSON trees for every frame.

use askgate_protocol::dialect::Settlement;
use askgate_protocol::wire::Via;
use askgate_protocol::{RequestId, SessionId};
use serde::Serialize;
use serde_json::Value;

use super::super::peers::frame::Frame;
use crate::store::StoredResolution;

/// `ToAgent::Outcome`, borrowed.
#[derive(Serialize)]
#[serde(tag = "type", rename = "outcome")]
struct OutcomeOut<'a> {
    session: &'a str,
    id: &'a str,
    #[serde(flatten)]
    settlement: &'a Settlement,
    by: &'a Option<String>,
    user: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    via: Option<Via>,
    #[serde(skip_serializing_if = "Option::is_none")]
    voters: &'a Option<Value>,
    at_ms: u64,
}

/// `ToTab::Resolved`, borrowed.
#[derive(Serialize)]
#[serde(tag = "type", rename = "resolved")]
struct ResolvedOut<'a> {
    id: &'a str,
    outcome: askgate_protocol::dialect::Outcome,
    by: &'a Option<String>,
    user: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    via: Option<Via>,
    response: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    voters: &'a Option<Value>,
}

/// The `outcome` frame of request `id` of `session`, which ended as `resolution`.
pub(in crate::hub) fn outcome_frame(
    session: &SessionId,
    id: &RequestId,
    resolution: &StoredResolution,
) -> Frame {
    Frame::encode(&OutcomeOut {
        session: session.as_str(),
        id: id.as_str(),
        settlement: &resolution.settlement,
        by: &resolution.by,
        user: &resolution.user,
        via: resolution.via,
        voters: &resolution.voters,
        at_ms: resolution.at_ms,
    })
}

/// The `resolved` frame every tab gets when request `id` ends as `resolution`.
pub(in crate::hub) fn resolved_frame(id: &RequestId, resolution: &StoredResolution) -> Frame {
    Frame::encode(&ResolvedOut {
        id: id.as_str(),
        outcome: resolution.settlement.outcome,
        by: &resolution.by,
        user: &resolution.user,
        via: resolution.via,
        response: &resolution.settlement.response,
        voters: &resolution.voters,
    })
}

#[cfg(test)]
mod tests {
    use askgate_protocol::dialect::Outcome;
    use askgate_protocol::wire::{OutcomeFrame, ToAgent, ToTab};
    use serde_json::json;

    use super::*;

    fn resolutions() -> Vec<StoredResolution> {
        let answered = StoredResolution {
            settlement: Settlement {
                outcome: Outcome::Answered,
                response: json!({"answers": [{"question": "Q \"1\"", "selected": ["é"]}], "cancelled": false}),
                result: json!({"ask_user_result": [1, 2.5, null]}),
                model_text: Some("line\nnext".to_owned()),
            },
            by: Some("tab-1".to_owned()),
            user: Some("ada@example.com".to_owned()),
            via: Some(Via::Proxy),
            voters: None,
            at_ms: 1_764_000_000_123,
        };
        let withdrawn = StoredResolution {
            settlement: Settlement::withdrawn(),
            by: None,
            user: None,
            via: None,
            voters: None,
            at_ms: 7,
        };
        vec![answered, withdrawn]
    }

    fn text(frame: &Frame) -> Vec<u8> {
        frame.whole(usize::MAX).expect("one piece").to_vec()
    }

    #[test]
    fn an_outcome_frame_is_what_the_wire_type_writes() {
        let session = SessionId::parse("s-1").unwrap();
        let id = RequestId::parse("r-1").unwrap();
        for resolution in resolutions() {
            let owned = ToAgent::Outcome(Box::new(OutcomeFrame {
                session: session.to_string(),
                id: id.to_string(),
                settlement: resolution.settlement.clone(),
                by: resolution.by.clone(),
                user: resolution.user.clone(),
                via: resolution.via,
                voters: resolution.voters.clone(),
                at_ms: resolution.at_ms,
            }));
            let expected = serde_json::to_vec(&owned).unwrap();
            assert_eq!(
                String::from_utf8(text(&outcome_frame(&session, &id, &resolution))).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
    }

    #[test]
    fn a_resolved_frame_is_what_the_wire_type_writes() {
        let id = RequestId::parse("r-1").unwrap();
        for resolution in resolutions() {
            let owned = ToTab::Resolved {
                id: id.to_string(),
                outcome: resolution.settlement.outcome,
                by: resolution.by.clone(),
                user: resolution.user.clone(),
                via: resolution.via,
                response: resolution.settlement.response.clone(),
                voters: resolution.voters.clone(),
            };
            let expected = serde_json::to_vec(&owned).unwrap();
            assert_eq!(
                String::from_utf8(text(&resolved_frame(&id, &resolution))).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
    }
}
