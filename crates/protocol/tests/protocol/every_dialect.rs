//! What holds for every dialect in the registry, found through the common face: nothing an
//! agent or a tab sends makes one panic, a normalised request validates as itself, and a
//! request that ends unanswered settles for every ending.

use askgate_protocol::{Dialect, Outcome, QuestionSet};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Any JSON, a few levels deep, with the keys the dialects read among others.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::from),
    ];
    let keys = prop::sample::select(vec![
        "questions",
        "question",
        "header",
        "options",
        "label",
        "description",
        "multiSelect",
        "calls",
        "name",
        "args",
        "decisions",
        "type",
        "message",
        "schema",
        "properties",
        "required",
        "enum",
        "items",
        "mode",
        "url",
        "content",
        "answers",
        "response",
        "x",
    ]);
    leaf.prop_recursive(4, 32, 5, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::btree_map(keys.clone().prop_map(str::to_owned), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// One valid request of each dialect, as an agent would send it.
fn valid_request(dialect: Dialect) -> Value {
    match dialect.as_str() {
        "harness" => json!([{"question": "Which?", "header": "Pick",
                             "options": [{"label": "A"}, {"label": "B"}]}]),
        "deepagents" => json!([{"question": "Why?", "type": "text"}]),
        "approval" => json!([{"name": "rm", "args": {"path": "/tmp/x"}}]),
        "form" => json!({"message": "m", "schema": {"type": "object", "properties": {
            "n": {"type": "integer"}}}}),
        "claude" => json!([{"question": "Which?", "header": "Pick", "multiSelect": false,
                            "options": [{"label": "A", "description": "a"}, {"label": "B", "description": "b"}]}]),
        other => panic!("no sample request for the {other} dialect: add one here"),
    }
}

#[test]
fn every_dialect_has_a_sample_that_validates_as_itself_and_settles() {
    for dialect in Dialect::all() {
        let set = QuestionSet::validate(dialect, &valid_request(dialect))
            .unwrap_or_else(|e| panic!("{dialect}: {e}"));
        let again = QuestionSet::validate(dialect, &set.to_json())
            .unwrap_or_else(|e| panic!("{dialect}: the normalised request: {e}"));
        assert_eq!(again, set, "{dialect}");
        for outcome in [Outcome::Declined, Outcome::TimedOut, Outcome::Withdrawn] {
            assert_eq!(
                set.settle_without_answer(outcome).outcome,
                outcome,
                "{dialect}"
            );
        }
    }
}

proptest! {
    #![proptest_config(crate::support::proptest_config(256))]

    #[test]
    fn nothing_sent_panics(request in any_json(), response in any_json()) {
        for dialect in Dialect::all() {
            if let Ok(set) = QuestionSet::validate(dialect, &request) {
                let again = QuestionSet::validate(dialect, &set.to_json());
                prop_assert!(again.is_ok(), "{dialect}: {request}");
                let _ = set.settle_answer(&response);
            }
            let sample = QuestionSet::validate(dialect, &valid_request(dialect)).unwrap();
            let _ = sample.settle_answer(&response);
        }
    }
}
