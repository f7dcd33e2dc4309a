//! The hand-written JSON readers judge exactly as serde_json's `Value` does: on every harness
//! vector's tool arguments, and on mutations of each that break them in every way a byte can
//! (dropped, doubled, replaced by punctuation, escapes, numbers, duplicate keys).

use askgate_protocol::harness::{CheckedArgs, TopLevelExtras, check_args_json, validate_args};
use askgate_protocol::json_mutate;
use askgate_protocol::json_node::Node;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

const VECTORS: &str = include_str!("../../../tests/data/conformance/vectors.jsonl");

/// Keys and lax values the harness arguments use, so mutations repeat and misplace them.
const KEYS: [&str; 3] = ["\"yes\"", "\"header\":\"X\",", "\"label\":\"Red\","];

/// Every harness vector's `args`, as written, and mutations of each.
fn args_and_mutations() -> Vec<String> {
    #[derive(Deserialize)]
    struct Vector<'a> {
        dialect: &'a str,
        #[serde(borrow)]
        input: Input<'a>,
    }
    #[derive(Deserialize)]
    struct Input<'a> {
        #[serde(borrow, default)]
        args: Option<&'a RawValue>,
        #[serde(borrow, default)]
        request: Option<&'a RawValue>,
    }
    let mut texts = Vec::new();
    for line in VECTORS.lines() {
        let Ok(vector) = serde_json::from_str::<Vector<'_>>(line) else {
            continue;
        };
        if vector.dialect != "harness" {
            continue;
        }
        for args in [vector.input.args, vector.input.request]
            .into_iter()
            .flatten()
        {
            let args = args.get();
            texts.push(args.to_owned());
            let seed = texts.len() as u64 + 1;
            texts.extend(json_mutate::mutations(args, 80, seed, &KEYS));
        }
    }
    texts
}

#[test]
fn borrowed_readers_judge_as_serde_json_values_do() {
    let (mut compared, mut as_trees) = (0, 0);
    let out_of_range = r#"{"questions": [{"header": "H", "question": "Q?", "options": [{"label": "A"}, {"label": "B"}]}], "x": 1e400}"#;
    for text in args_and_mutations()
        .into_iter()
        .chain([out_of_range.to_owned()])
    {
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            // Text serde_json refuses is refused, whatever the reader.
            for extras in [TopLevelExtras::Forbid, TopLevelExtras::Ignore] {
                assert!(
                    check_args_json(&text, extras).is_err(),
                    "{extras:?}: {text}"
                );
            }
            continue;
        };
        if let Some(tree) = Node::parse(&text) {
            assert_eq!(tree.to_value(), value, "{text}");
            as_trees += 1;
        }
        for extras in [TopLevelExtras::Forbid, TopLevelExtras::Ignore] {
            let ours = check_args_json(&text, extras).map(CheckedArgs::into_owned);
            assert_eq!(ours, validate_args(&value, extras), "{extras:?}: {text}");
            compared += 1;
        }
    }
    // The comparison means something only if most texts were JSON and read as trees.
    assert!(compared > 10_000, "only {compared} comparisons");
    assert!(
        as_trees * 4 > compared,
        "only {as_trees} trees of {compared}"
    );
}
