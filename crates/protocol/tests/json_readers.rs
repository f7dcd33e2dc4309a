//! The hand-written JSON readers judge exactly as serde_json's `Value` does: on every harness
//! vector's tool arguments, and on mutations of each that break them in every way a byte can
//! (dropped, doubled, replaced by punctuation, escapes, numbers, duplicate keys).

use askgate_protocol::harness::{
    CheckedArgs, ResponseRef, TopLevelExtras, check_args_json, validate_args,
};
use askgate_protocol::json::mutate;
use askgate_protocol::json::node::Node;
use askgate_protocol::json::scan::Scanner;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

const VECTORS: &str = include_str!("../../../tests/data/conformance/vectors.jsonl");

/// Keys and lax values the harness arguments use, so mutations repeat and misplace them.
const KEYS: [&str; 3] = ["\"yes\"", "\"header\":\"X\",", "\"label\":\"Red\","];

/// The inputs of the harness vectors, their values as written.
#[derive(Deserialize)]
struct Input<'a> {
    #[serde(borrow, default)]
    args: Option<&'a RawValue>,
    #[serde(borrow, default)]
    request: Option<&'a RawValue>,
    #[serde(borrow, default)]
    response: Option<&'a RawValue>,
}

fn harness_inputs() -> impl Iterator<Item = Input<'static>> {
    #[derive(Deserialize)]
    struct Vector<'a> {
        dialect: &'a str,
        #[serde(borrow)]
        input: Input<'a>,
    }
    VECTORS.lines().filter_map(|line| {
        let vector = serde_json::from_str::<Vector<'static>>(line).ok()?;
        (vector.dialect == "harness").then_some(vector.input)
    })
}

/// Every harness vector's `args`, as written, and mutations of each.
fn args_and_mutations() -> Vec<String> {
    let mut texts = Vec::new();
    for input in harness_inputs() {
        for args in [input.args, input.request].into_iter().flatten() {
            let args = args.get();
            texts.push(args.to_owned());
            let seed = texts.len() as u64 + 1;
            texts.extend(mutate::mutations(args, 80, seed, &KEYS));
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

/// The scanner's response reader reads what serde reads into `ResponseRef`, the same way, and
/// gives up on whatever serde refuses: on every harness vector's `response` and mutations.
#[test]
fn responses_read_by_the_scanner_as_serde_reads_them() {
    const RESPONSE_KEYS: [&str; 4] = [
        "\"cancelled\":true,",
        "\"selected\":[\"Red\"],",
        "\"custom_answer\":null,",
        "\"header\":\"Color\",",
    ];
    let mut texts = Vec::new();
    for response in harness_inputs().filter_map(|input| input.response) {
        let seed = texts.len() as u64 + 7;
        texts.push(response.get().to_owned());
        texts.extend(mutate::mutations(response.get(), 80, seed, &RESPONSE_KEYS));
    }
    let (mut read, mut refused, mut left_to_serde) = (0, 0, 0);
    for text in &texts {
        let by_serde = serde_json::from_str::<ResponseRef<'_>>(text);
        let mut scanner = Scanner::new(text);
        let by_scanner = ResponseRef::read_at(&mut scanner).filter(|_| scanner.end().is_some());
        match (by_scanner, by_serde) {
            (Some(ours), Ok(theirs)) => {
                assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{text}");
                read += 1;
            }
            (Some(ours), Err(e)) => panic!("{text}: read as {ours:?}, serde refuses: {e}"),
            (None, Ok(_)) => left_to_serde += 1,
            (None, Err(_)) => refused += 1,
        }
    }
    // Most of what serde reads, the scanner reads too; most mutations break the response.
    assert!(
        read > 500 && refused > 1_000 && left_to_serde * 4 < read,
        "{read} read, {refused} refused, {left_to_serde} left to serde"
    );
}
