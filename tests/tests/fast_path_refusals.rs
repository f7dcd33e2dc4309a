//! The fast path reports broken rules itself when the arguments' shape is right; its error list
//! must be the full validator's, error for error and in the same order. Checked on the
//! differential generator's requests, which break every rule in many scripts, with look-alike
//! headers and labels and keys in any order.

use askgate_protocol::harness::{CheckedArgs, TopLevelExtras, check_args_json, validate_args};
use askgate_tests::harness_gen::mixed_lines;
use serde_json::{Map, Value};

/// The same arguments with every object's keys in reverse order, so the fast path meets the
/// fields in another order than the full validator checks them.
fn keys_reversed(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let reversed: Map<String, Value> = map
                .iter()
                .rev()
                .map(|(key, value)| (key.clone(), keys_reversed(value)))
                .collect();
            Value::Object(reversed)
        }
        Value::Array(items) => Value::Array(items.iter().map(keys_reversed).collect()),
        other => other.clone(),
    }
}

#[test]
fn fast_path_refusals_list_what_the_full_validator_lists() {
    let (mut compared, mut refused) = (0, 0);
    for line in mixed_lines(0x0FA5_7BA7, 8_000) {
        let line: Value = serde_json::from_str(&line).expect("generated lines are JSON");
        if line["kind"] != "request" {
            continue;
        }
        let Some(args) = line["input"].get("args") else {
            continue;
        };
        for args in [args.clone(), keys_reversed(args)] {
            let text = args.to_string();
            for extras in [TopLevelExtras::Forbid, TopLevelExtras::Ignore] {
                let full = validate_args(&args, extras);
                let fast = check_args_json(&text, extras).map(CheckedArgs::into_owned);
                assert_eq!(fast, full, "{extras:?}: {text}");
                compared += 1;
                refused += usize::from(full.is_err());
            }
        }
    }
    // Meaningful only if many requests were compared and many of them refused.
    assert!(compared > 10_000, "only {compared} comparisons");
    assert!(
        refused * 3 > compared,
        "only {refused} of {compared} refused"
    );
}
