//! What a person's edit of an approval changed, as the demo agent tells it: `edited deploy:
//! env "prod" → "staging"`.

use serde_json::Value;

/// Shown for an argument on the side of an edit where it is not.
const ABSENT: &str = "(absent)";

/// A line per edited call of an approval's `result` (`[{name, decision, args}]`, in the order
/// of `calls`, the approval's `[{name, args, ...}]` as asked): each argument the edit changed,
/// added or left out, with its value before and after, as JSON. An edit that changed nothing
/// says so.
pub(super) fn edit_lines(calls: &Value, result: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let Some(entries) = result.as_array() else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        if entry["decision"] != "edit" {
            continue;
        }
        let name = entry["name"].as_str().unwrap_or("?");
        let before = calls[i]["args"].as_object().unwrap_or(&empty);
        let after = entry["args"].as_object().unwrap_or(&empty);
        let shown = |value: Option<&Value>| value.map_or(ABSENT.to_owned(), Value::to_string);
        let mut changes = Vec::new();
        for (key, old) in before {
            let new = after.get(key);
            if new != Some(old) {
                changes.push(format!("{key} {old} → {}", shown(new)));
            }
        }
        for (key, new) in after.iter().filter(|(key, _)| !before.contains_key(*key)) {
            changes.push(format!("{key} {ABSENT} → {new}"));
        }
        if changes.is_empty() {
            lines.push(format!("edited {name}: no argument changed"));
        } else {
            lines.push(format!("edited {name}: {}", changes.join(", ")));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_edit_is_told_argument_by_argument() {
        let calls = json!([
            {"name": "deploy", "args": {"env": "prod", "force": true, "replicas": 3}},
            {"name": "notify", "args": {"to": "team"}},
            {"name": "tag", "args": {"name": "v1"}},
        ]);
        let result = json!([
            {"name": "deploy", "decision": "edit",
             "args": {"env": "staging", "replicas": 3, "note": "canary"}},
            {"name": "notify", "decision": "approve", "args": {"to": "team"}},
            {"name": "tag", "decision": "edit", "args": {"name": "v1"}},
        ]);
        assert_eq!(
            edit_lines(&calls, &result),
            [
                r#"edited deploy: env "prod" → "staging", force true → (absent), note (absent) → "canary""#,
                "edited tag: no argument changed",
            ]
        );
        assert!(edit_lines(&calls, &Value::Null).is_empty());
    }
}
