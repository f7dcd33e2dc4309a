//! Properties of the approval dialect that hold for every input: a valid request and a
//! valid answer survive a round trip, and nothing an agent or a tab sends panics.

use askgate_protocol::{Dialect, QuestionSet};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn approval() -> Dialect {
    Dialect::parse("approval").unwrap()
}

/// Any JSON, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn args() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::btree_map("[a-z_]{1,8}", any_json(), 0..5)
        .prop_map(|m| m.into_iter().collect())
}

fn decisions() -> impl Strategy<Value = Vec<&'static str>> {
    proptest::sample::subsequence(vec!["approve", "edit", "reject", "respond"], 1..=4)
        .prop_shuffle()
}

/// A schema for `args`: each present key typed as its value is, so the args themselves fit.
fn schema_for(args: &Map<String, Value>) -> Value {
    let properties: Map<String, Value> = args
        .iter()
        .map(|(key, value)| {
            let kind = match value {
                Value::Null => "null",
                Value::Bool(_) => "boolean",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            };
            (
                key.clone(),
                json!({"type": kind, "description": "from the tool"}),
            )
        })
        .collect();
    let required: Vec<&String> = args.keys().collect();
    json!({"type": "object", "properties": properties, "required": required,
           "additionalProperties": false})
}

fn call() -> impl Strategy<Value = Value> {
    (
        "[a-z_.]{1,20}",
        args(),
        decisions(),
        any::<bool>(),
        proptest::option::of("\\PC{1,40}"),
    )
        .prop_map(|(name, args, decisions, with_schema, description)| {
            let mut call = json!({"name": name, "args": args, "decisions": decisions});
            if with_schema {
                call["args_schema"] = schema_for(&args);
            }
            if let Some(description) = description.filter(|d| !d.trim().is_empty()) {
                call["description"] = json!(description);
            }
            call
        })
}

/// A decision each call allows: edits send the call's own arguments, which fit its schema.
fn answer_for(calls: &Value, picks: &[usize]) -> Value {
    let decisions: Vec<Value> = calls
        .as_array()
        .unwrap()
        .iter()
        .zip(picks)
        .map(|(call, pick)| {
            let allowed = call["decisions"].as_array().unwrap();
            match allowed[pick % allowed.len()].as_str().unwrap() {
                "edit" => json!({"type": "edit", "args": call["args"]}),
                "reject" => json!({"type": "reject", "message": "no"}),
                "respond" => json!({"type": "respond", "message": "use staging"}),
                _ => json!({"type": "approve"}),
            }
        })
        .collect();
    json!({ "decisions": decisions })
}

proptest! {
    #![proptest_config(crate::support::proptest_config(256))]

    #[test]
    fn a_valid_request_and_answer_round_trip(
        calls in proptest::collection::vec(call(), 1..6),
        picks in proptest::collection::vec(0usize..4, 6),
    ) {
        let calls = Value::Array(calls);
        let set = QuestionSet::validate(approval(), &calls).expect("valid calls");
        let normalised = set.to_json();
        let again = QuestionSet::validate(approval(), &normalised).expect("normalised calls validate");
        prop_assert_eq!(&again, &set);
        prop_assert_eq!(&again.to_json(), &normalised);
        let answer = answer_for(&normalised, &picks);
        let settled = set.settle_answer(&answer).expect("a valid answer");
        // What the agent receives is the answer, normalised: answering with it again gives it.
        prop_assert_eq!(&settled.response, &answer);
        let twice = set.settle_answer(&settled.response).expect("the response answers again");
        prop_assert_eq!(twice, settled);
    }

    #[test]
    fn nothing_sent_panics(calls in any_json(), response in any_json()) {
        if let Ok(set) = QuestionSet::validate(approval(), &calls) {
            let _ = set.settle_answer(&response);
        }
        let _ = QuestionSet::validate(approval(), &json!([{"name": "t", "args": {}, "args_schema": calls}]))
            .map(|set| set.settle_answer(&json!({"decisions": [{"type": "edit", "args": response}]})));
    }
}
