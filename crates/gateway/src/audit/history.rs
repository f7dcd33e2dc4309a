//! A session's recent history, for the page: its ended requests, newest first, each with what
//! was asked, how it ended, by whom and when. Drawn from the trail, so a tab that comes late
//! (or after the outcomes were acknowledged and forgotten) sees it too; read back a window at
//! a time ([`read_history`]) until it holds enough endings.

use std::collections::{HashMap, HashSet};

use askgate_protocol::SessionId;
use serde_json::{Map, Value, json};

use crate::store::{StoreError, Trails};

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
    matches!(
        event,
        "answered" | "declined" | "timed_out" | "withdrawn" | "defaulted" | "auto_approved"
    )
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
            Some(event) if is_ending(event) => {
                // A default's entry names the outcome it made; every other ending's event is
                // its outcome.
                let outcome = match event {
                    "auto_approved" => "answered",
                    "defaulted" => entry
                        .get("outcome")
                        .and_then(Value::as_str)
                        .unwrap_or("answered"),
                    outcome => outcome,
                };
                let question = asked.get(&id);
                let field = |name: &str| {
                    question
                        .and_then(|q| q.get(name))
                        .cloned()
                        .unwrap_or(Value::Null)
                };
                let mut shown = json!({
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
                });
                // An approval by rules names the rule.
                if let (Some(rule), Value::Object(shown)) = (entry.get("rule"), &mut shown) {
                    shown.insert("rule".to_owned(), rule.clone());
                }
                ended.push(shown);
            }
            _ => {}
        }
    }
    ended.reverse();
    ended.truncate(HISTORY_LENGTH);
    ended
}

/// The history's entries of `session` (newest first), read from its trail: the newest
/// entries first; older ones too while refusals and links leave fewer than
/// [`HISTORY_LENGTH`] ended requests among them, up to [`HISTORY_ENTRIES_SCANNED`] entries
/// and about [`HISTORY_BYTES_READ`] bytes in all. Only the newest endings and their asks are
/// kept of what is read.
///
/// # Errors
/// The trail could not be read.
pub async fn read_history(
    trails: &dyn Trails,
    session: &SessionId,
) -> Result<Vec<Value>, StoreError> {
    let mut window = HISTORY_ENTRIES_READ;
    let mut lines = trails.recent_audit(session, window).await?;
    let mut scanned = lines.len();
    let mut bytes_read: usize = lines.iter().map(String::len).sum();
    let mut full = lines.len() == window;
    let mut oldest_seq = lines.first().and_then(|line| entry_seq(line));
    keep_shown(&mut lines);
    while full
        && scanned < HISTORY_ENTRIES_SCANNED
        && bytes_read < HISTORY_BYTES_READ
        && endings(&lines) < HISTORY_LENGTH
    {
        // Windows below the oldest read: seqs run 1, 2, 3... in a session's trail.
        let Some(before) = oldest_seq.filter(|seq| *seq > 1) else {
            break;
        };
        // As many entries as the byte budget has room for, at the size read so far.
        let average = bytes_read.div_ceil(scanned.max(1)).max(1);
        window = (window * 4)
            .min(HISTORY_ENTRIES_SCANNED - scanned)
            .min((HISTORY_BYTES_READ - bytes_read).div_ceil(average));
        let after = before.saturating_sub(1 + window as u64);
        let mut older = trails
            .audit(session, after, (before - 1 - after) as usize)
            .await?;
        scanned += older.len();
        bytes_read += older.iter().map(String::len).sum::<usize>();
        full = after > 0;
        oldest_seq = older
            .first()
            .and_then(|line| entry_seq(line))
            .or(Some(after + 1));
        older.append(&mut lines);
        lines = older;
        keep_shown(&mut lines);
    }
    Ok(history(&lines))
}

/// Keeps of `lines` (oldest first) the newest [`HISTORY_LENGTH`] endings and the asks of
/// their requests: all the history shows of them.
fn keep_shown(lines: &mut Vec<String>) {
    let mut shown = HashSet::new();
    let mut keep = vec![false; lines.len()];
    for (at, line) in lines.iter().enumerate().rev() {
        let Some(event) = own_event(line) else {
            continue;
        };
        if is_ending(event) && shown.len() < HISTORY_LENGTH {
            keep[at] = entry_id(line).is_some_and(|id| shown.insert(id.to_owned()));
        }
    }
    for (at, line) in lines.iter().enumerate() {
        if own_event(line) == Some("asked") {
            keep[at] = entry_id(line).is_some_and(|id| shown.contains(id));
        }
    }
    let mut keep = keep.into_iter();
    lines.retain(|_| keep.next().unwrap_or(false));
}

/// How many of `lines` end a request.
fn endings(lines: &[String]) -> usize {
    lines
        .iter()
        .filter(|line| own_event(line).is_some_and(is_ending))
        .count()
}

/// An entry's request id, read as [`own_event`] reads its event (ids hold no quotes).
fn entry_id(line: &str) -> Option<&str> {
    const MEMBER: &str = r#""id":""#;
    let start = line.find(MEMBER)? + MEMBER.len();
    let rest = &line[start..];
    Some(&rest[..rest.find('"')?])
}

/// An entry's `seq`, its first member.
fn entry_seq(line: &str) -> Option<u64> {
    let digits = line.strip_prefix(r#"{"seq":"#)?;
    let end = digits.find(|c: char| !c.is_ascii_digit())?;
    digits[..end].parse().ok()
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

    /// A trail held as lines, seq 1 first.
    struct Lines(Vec<String>);

    impl Trails for Lines {
        fn audit(
            &self,
            _: &SessionId,
            after_seq: u64,
            limit: usize,
        ) -> crate::store::StoreFuture<'_, Vec<String>> {
            let from = (after_seq as usize).min(self.0.len());
            let to = from.saturating_add(limit).min(self.0.len());
            Box::pin(std::future::ready(Ok(self.0[from..to].to_vec())))
        }

        fn recent_audit(
            &self,
            _: &SessionId,
            count: usize,
        ) -> crate::store::StoreFuture<'_, Vec<String>> {
            let from = self.0.len().saturating_sub(count);
            Box::pin(std::future::ready(Ok(self.0[from..].to_vec())))
        }

        fn audit_sessions(&self) -> crate::store::StoreFuture<'_, Vec<SessionId>> {
            Box::pin(std::future::ready(Ok(Vec::new())))
        }
    }

    /// Endings the newest window does not hold (refusals crowd it) are read from older
    /// windows; what is read beyond the endings and their asks is not shown.
    #[tokio::test]
    async fn older_windows_are_read_while_refusals_crowd_the_newest() {
        let mut lines = Vec::new();
        let mut entry = |id: &str, event: &str| {
            let seq = lines.len() + 1;
            lines.push(format!(
                r#"{{"seq":{seq},"at_ms":{seq},"session":"s","id":"{id}","event":"{event}","user":null,"tab":null}}"#
            ));
        };
        entry("old", "asked");
        entry("old", "withdrawn");
        for _ in 0..HISTORY_ENTRIES_READ * 2 {
            entry("new", "refused");
        }
        entry("new", "asked");
        entry("new", "withdrawn");
        let session = SessionId::parse("s").unwrap();
        let shown = read_history(&Lines(lines), &session).await.unwrap();
        let ids: Vec<_> = shown.iter().map(|entry| entry["id"].clone()).collect();
        assert_eq!(ids, [json!("new"), json!("old")]);
    }

    #[test]
    fn an_entry_s_seq_and_id_are_read_without_parsing_it() {
        let line = r#"{"seq":42,"at_ms":7,"session":"s","id":"r-1","event":"asked"}"#;
        assert_eq!((entry_seq(line), entry_id(line)), (Some(42), Some("r-1")));
        assert_eq!(entry_seq("not an entry"), None);
        assert_eq!(entry_id(r#"{"seq":1,"id":null}"#), None);
    }
}
