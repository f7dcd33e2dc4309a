//! Store changes for the tests that drive a store directly: requests asked and declined in
//! session `s`.

use askgate::store::{StoreOp, StoredRequest, StoredResolution};
use askgate_protocol::{Dialect, Outcome, QuestionSet, RequestId, SessionId};
use serde_json::json;

/// One question, Color: Red or Blue.
pub fn questions() -> QuestionSet {
    let questions = json!([{"header": "Color", "question": "Which?",
                            "options": [{"label": "Red"}, {"label": "Blue"}]}]);
    QuestionSet::validate(Dialect::HARNESS, &questions).unwrap()
}

/// Request `id` of session `s`, asked at 1,000 ms.
pub fn put(id: &str) -> StoreOp {
    StoreOp::Put(StoredRequest {
        quorum: None,
        asked_by: None,
        callback: None,
        ruled: None,
        remember: Vec::new(),
        votes: Vec::new(),
        default: None,
        session: SessionId::parse("s").unwrap(),
        id: RequestId::parse(id).unwrap(),
        dialect: Dialect::HARNESS,
        questions: questions().to_json(),
        title: None,
        asked_at_ms: 1_000,
        deadline_ms: None,
        answerers: None,
        follow_ups: Default::default(),
        resolution: None,
    })
}

/// Request `id` of session `s` declined by tab `t-1` at 2,000 ms.
pub fn resolve(id: &str) -> StoreOp {
    StoreOp::Resolve {
        session: SessionId::parse("s").unwrap(),
        id: RequestId::parse(id).unwrap(),
        resolution: StoredResolution {
            settlement: questions().settle_without_answer(Outcome::Declined),
            by: Some("t-1".into()),
            user: None,
            via: None,
            voters: None,
            at_ms: 2_000,
        },
        if_late: None,
    }
}
