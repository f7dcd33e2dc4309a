//! A session's recent history, for the page: its ended requests, newest first, each with what
//! was asked, how it ended, by whom and when. Drawn from the trail, so a tab that comes late
//! (or after the outcomes were acknowledged and forgotten) sees it too.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

/// Most ended requests the history shows.
pub const HISTORY_LENGTH: usize = 50;
/// Entries read back from the trail first to build it: enough for 50 requests' asks, endings
/// and acknowledgements, with room for refusals and links.
pub const HISTORY_ENTRIES_READ: usize = 400;
/// Most entries looked through to find [`HISTORY_LENGTH`] ended requests: when the newest
/// [`HISTORY_ENTRIES_READ`] hold fewer (refusals and links crowd them), older ones are read
/// too, in windows each four times the last, up to this many in all.
pub const HISTORY_ENTRIES_SCANNED: usize = 25_600;
/// Most bytes of entries read to build the history (about: the windows are sized to it at
/// the entries' size so far): large refusals or asks end the search sooner.
pub const HISTORY_BYTES_READ: usize = 8 * 1024 * 1024;

/// The event an entry records, read from its own `event` member without parsing the entry.
/// Its first `"event":"` is its own: the members before it (numbers, and ids that hold no
/// quote) cannot hold one, and one inside a later string would be escaped.
pub fn own_event(line: &str) -> Option<&str> {
    const MEMBER: &str = r#""event":""#;
    let start = line.find(MEMBER)? + MEMBER.len();
    let rest = &line[start..];
    Some(&rest[..rest.find('"')?])
}

/// Whether an entry recording `event` ends a request (and so is shown in the history).
pub fn is_ending(event: &str) -> bool {
    matches!(event, "answered" | "declined" | "timed_out" | "withdrawn")
}

/// Whether the history needs an entry recording `event`: an ending, or the ask it shows.
pub fn is_shown(event: &str) -> bool {
    event == "asked" || is_ending(event)
}

/// The history in `lines` (a trail's newest entries, oldest first): at most
/// [`HISTORY_LENGTH`] ended requests, newest first. Lines that do not read are skipped.
pub fn history(lines: &[String]) -> Vec<Value> {
    let mut asked: HashMap<String, Map<String, Value>> = HashMap::new();
    let mut ended = Vec::new();
    for line in lines {
        let Ok(Value::Object(entry)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(id) = entry.get("id").and_then(Value::as_str).map(str::to_owned) else {
            continue;
        };
        match entry.get("event").and_then(Value::as_str) {
            Some("asked") => {
                asked.insert(id, entry);
            }
            Some(outcome) if is_ending(outcome) => {
                let question = asked.get(&id);
                let field = |name: &str| {
                    question
                        .and_then(|q| q.get(name))
                        .cloned()
                        .unwrap_or(Value::Null)
                };
                ended.push(json!({
                    "id": id,
                    "dialect": field("dialect"),
                    "title": field("title"),
                    "questions": field("questions"),
                    "asked_at_ms": field("at_ms"),
                    "outcome": outcome,
                    "answer": entry.get("answer").cloned().unwrap_or(Value::Null),
                    "user": entry.get("user").cloned().unwrap_or(Value::Null),
                    "via": entry.get("via").cloned().unwrap_or(Value::Null),
                    "tab": entry.get("tab").cloned().unwrap_or(Value::Null),
                    "at_ms": entry.get("at_ms").cloned().unwrap_or(Value::Null),
                }));
            }
            _ => {}
        }
    }
    ended.reverse();
    ended.truncate(HISTORY_LENGTH);
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_requests_come_newest_first_with_what_was_asked() {
        let lines: Vec<String> = [
            r#"{"seq":1,"at_ms":10,"session":"s","id":"a","event":"asked","user":null,"tab":null,"title":"Deploy?","questions":[1]}"#,
            r#"{"seq":2,"at_ms":11,"session":"s","id":"b","event":"asked","user":null,"tab":null,"title":null,"questions":[2]}"#,
            r#"{"seq":3,"at_ms":12,"session":"s","id":"a","event":"answered","user":"alice","tab":"t-1","via":"personal-link","answer":{"x":1}}"#,
            r#"{"seq":4,"at_ms":13,"session":"s","id":"b","event":"timed_out","user":null,"tab":null}"#,
            r#"{"seq":5,"at_ms":14,"session":"s","id":"a","event":"acked","user":null,"tab":null}"#,
        ]
        .map(str::to_owned)
        .to_vec();
        let shown = history(&lines);
        assert_eq!(shown.len(), 2);
        assert_eq!(shown[0]["id"], "b");
        assert_eq!(shown[0]["outcome"], "timed_out");
        assert_eq!(shown[1]["title"], "Deploy?");
        assert_eq!(shown[1]["user"], "alice");
        assert_eq!(shown[1]["asked_at_ms"], 10);
        assert_eq!(shown[1]["answer"], json!({"x": 1}));
    }

    #[test]
    fn an_entry_s_own_event_is_read_without_parsing_it() {
        let answered = r#"{"seq":3,"at_ms":12,"session":"s","id":"a","event":"answered","user":"alice","tab":"t-1","answer":{"event":"refused"}}"#;
        assert_eq!(own_event(answered), Some("answered"));
        let escaped = r#"{"seq":3,"at_ms":12,"session":"s","id":null,"event":"link_issued","user":"\"event\":\"asked\""}"#;
        assert_eq!(own_event(escaped), Some("link_issued"));
        assert_eq!(own_event("not an entry"), None);
        assert!(is_shown("asked") && is_shown("withdrawn") && !is_shown("refused"));
    }

    #[test]
    fn at_most_50_are_shown() {
        let lines: Vec<String> = (0..60)
            .map(|i| {
                format!(
                    r#"{{"seq":{i},"at_ms":{i},"session":"s","id":"r{i}","event":"withdrawn","user":null,"tab":null}}"#
                )
            })
            .collect();
        let shown = history(&lines);
        assert_eq!(shown.len(), HISTORY_LENGTH);
        assert_eq!(shown[0]["id"], "r59");
        assert_eq!(shown[49]["id"], "r10");
    }
}
