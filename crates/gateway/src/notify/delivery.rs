//! What a notification says, and when a failed one is tried again.
//!
//! A notification's body is made once, when the change it tells of is committed, and kept
//! with it: every try sends the same bytes under the same id, so a receiver can drop repeats.

use std::time::Duration;

use askgate_protocol::wire::Via;
use askgate_protocol::{Dialect, RequestId, SessionId};
use rand::Rng as _;
use serde_json::{Map, Value, json};

use super::settings::EventKind;
use crate::store::{DeliveryTarget, StoredDelivery, StoredResolution};

/// The first retry comes within this long of the failure.
pub const FIRST_RETRY: Duration = Duration::from_secs(5);
/// The longest wait between two tries.
pub const MAX_RETRY_INTERVAL: Duration = Duration::from_secs(600);
/// How long a failing notification is tried before it is given up, by default
/// (`--notify-retry-for-s`).
pub const DEFAULT_RETRY_FOR: Duration = Duration::from_secs(86_400);

/// What a notification tells of a request.
#[derive(Clone, Debug)]
pub struct RequestFacts {
    /// Its session.
    pub session: SessionId,
    /// Its id.
    pub id: RequestId,
    /// Its dialect.
    pub dialect: Dialect,
    /// Its title, if it has one.
    pub title: Option<String>,
    /// The request's own payload, normalised (questions, tool calls, a form).
    pub questions: Value,
    /// Who alone may answer, as the ask named them.
    pub answerers: Option<Vec<String>>,
    /// When it times out (Unix ms), if it does.
    pub deadline_ms: Option<u64>,
    /// The session's viewer link.
    pub url: String,
    /// Who follows its session: the people told of it when it names no answerers.
    pub followers: Vec<String>,
    /// Where its outcome is POSTed when it ends (the ask's `callback`).
    pub callback: Option<askgate_protocol::wire::callback::Callback>,
    /// Whether only its callback is told (a request rules answered at once: no person was
    /// asked, so none is told it ended).
    pub quiet: bool,
}

impl RequestFacts {
    /// The body of a `kind` notification made at `at_ms`, with `extra` members in `data`.
    pub fn body(&self, kind: EventKind, at_ms: u64, extra: Map<String, Value>) -> String {
        let mut data = Map::new();
        data.insert("session".into(), json!(self.session.as_str()));
        data.insert("id".into(), json!(self.id.as_str()));
        data.insert("dialect".into(), json!(self.dialect));
        if let Some(title) = &self.title {
            data.insert("title".into(), json!(title));
        }
        data.insert("questions".into(), self.questions.clone());
        data.insert("answerers".into(), json!(self.answerers));
        data.insert("deadline_ms".into(), json!(self.deadline_ms));
        data.insert("url".into(), json!(self.url));
        data.extend(extra);
        let body = json!({
            "type": kind.as_str(),
            "timestamp": rfc3339(at_ms),
            "data": data,
        });
        body.to_string()
    }
}

/// The members `request.resolved` adds to `data`: how it ended, who ended it and how the
/// gateway knew them, and what the agent receives.
pub fn resolved_members(resolution: &StoredResolution) -> Map<String, Value> {
    let mut extra = Map::new();
    extra.insert("outcome".into(), json!(resolution.settlement.outcome));
    extra.insert("user".into(), json!(resolution.user));
    extra.insert("via".into(), json!(resolution.via));
    extra.insert("response".into(), resolution.settlement.response.clone());
    extra
}

/// The request a notification's body tells of, read back from the body (a mail or a Slack
/// message is written from it, at each try).
#[derive(Clone, Debug)]
pub struct Told {
    /// The event (`request.opened`, ...).
    pub kind: String,
    /// The request's session.
    pub session: SessionId,
    /// The request.
    pub id: RequestId,
    /// Its dialect.
    pub dialect: Dialect,
    /// Its title, if any.
    pub title: Option<String>,
    /// Its normalised payload.
    pub questions: Value,
    /// Who alone may answer, as the ask named them.
    pub answerers: Option<Vec<String>>,
    /// When it times out (Unix ms), if it does.
    pub deadline_ms: Option<u64>,
    /// For `request.resolved`: how it ended (`answered`, ...).
    pub outcome: Option<String>,
    /// For `request.resolved`: who ended it, when a person did.
    pub user: Option<String>,
    /// For `request.resolved`: how the gateway knew them.
    pub via: Option<Via>,
    /// For `request.resolved`: what the agent receives.
    pub response: Value,
    /// For `request.escalated`: whom it added.
    pub to: Vec<String>,
}

impl Told {
    /// The request `body` (a notification's body this gateway wrote) tells of.
    ///
    /// # Errors
    /// The body is not a request notification this gateway wrote.
    pub fn read(body: &str) -> Result<Told, String> {
        let body: Value =
            serde_json::from_str(body).map_err(|e| format!("the notification is not JSON: {e}"))?;
        let data = &body["data"];
        let text = |name: &str| {
            data[name]
                .as_str()
                .ok_or_else(|| format!("the notification has no data.{name}"))
        };
        let strings = |name: &str| -> Vec<String> {
            data[name]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|item| item.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok(Told {
            kind: body["type"].as_str().unwrap_or_default().to_owned(),
            session: SessionId::parse(text("session")?)
                .map_err(|e| format!("data.session: {e}"))?,
            id: RequestId::parse(text("id")?).map_err(|e| format!("data.id: {e}"))?,
            dialect: Dialect::parse(text("dialect")?).map_err(|e| format!("data.dialect: {e}"))?,
            title: data["title"].as_str().map(str::to_owned),
            questions: data["questions"].clone(),
            answerers: data["answerers"].is_array().then(|| strings("answerers")),
            deadline_ms: data["deadline_ms"].as_u64(),
            outcome: data["outcome"].as_str().map(str::to_owned),
            user: data["user"].as_str().map(str::to_owned),
            via: serde_json::from_value(data["via"].clone()).ok(),
            response: data["response"].clone(),
            to: strings("to"),
        })
    }
}

/// Why one try of a notification failed.
#[derive(Debug)]
pub enum SendError {
    /// Tried, and may succeed later (no answer, a timeout, any status but a 2xx, a mail
    /// server's refusal).
    Failed(String),
    /// The target's address is refused: counted and logged, and tried again later (the name
    /// may resolve elsewhere by then).
    Refused(String),
    /// The target asks to be called less often (an HTTP 429): tried again after the wait it
    /// gave, rather than the usual backoff.
    Throttled {
        /// What it said.
        why: String,
        /// How long it asked to be left alone (`Retry-After`).
        wait: Duration,
    },
    /// The target took the call and refused what it was asked, for good (Slack's
    /// `ok: false`): counted and logged, and not tried again.
    Rejected(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Failed(why)
            | SendError::Refused(why)
            | SendError::Rejected(why)
            | SendError::Throttled { why, .. } => f.write_str(why),
        }
    }
}

/// An error and its causes, in one line (what a failed try is logged as).
pub(super) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}

/// One notification of `kind` about `facts`' request for `target`, with a new id.
pub fn delivery(
    facts: &RequestFacts,
    kind: EventKind,
    target: DeliveryTarget,
    body: &str,
    at_ms: u64,
) -> StoredDelivery {
    StoredDelivery {
        session: facts.session.clone(),
        request: facts.id.clone(),
        id: new_id(),
        event: kind.as_str().to_owned(),
        target,
        body: body.to_owned(),
        created_ms: at_ms,
    }
}

/// A notification id: `msg_` and 128 random bits in hex, unique across nodes and restarts.
pub fn new_id() -> String {
    let bits: u128 = rand::rng().random();
    format!("msg_{bits:032x}")
}

/// How long a target that answered 429 is left alone when it says nothing of how long.
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(30);
/// The longest `Retry-After` taken as given; a longer one is cut to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// The `Retry-After` of an answer, in seconds as Slack and push services send it.
pub fn retry_after_header(headers: &hyper::HeaderMap) -> Option<Duration> {
    headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// A 429's try, failed as `why`: tried again after the wait the target asked for
/// ([`DEFAULT_RETRY_AFTER`] when none, between 1 s and [`MAX_RETRY_AFTER`]).
pub fn throttled(why: String, retry_after: Option<Duration>) -> SendError {
    let wait = retry_after
        .unwrap_or(DEFAULT_RETRY_AFTER)
        .clamp(Duration::from_secs(1), MAX_RETRY_AFTER);
    SendError::Throttled { why, wait }
}

/// How long to wait after a failed try of a notification made `age` ago: as long as it has
/// been tried so far, at least [`FIRST_RETRY`] and at most [`MAX_RETRY_INTERVAL`], each wait
/// drawn between half and all of that so that notifications failing together do not come
/// back together. Waiting as long again as so far makes the waits grow about twofold, with
/// nothing to keep between tries: a node that claims another's notification on a shared store
/// goes on with the same schedule.
pub fn retry_after(age: Duration) -> Duration {
    let step = age.clamp(FIRST_RETRY, MAX_RETRY_INTERVAL);
    let half = step / 2;
    half + Duration::from_millis(rand::rng().random_range(0..=half.as_millis() as u64))
}

/// `at_ms` (Unix ms) as an RFC 3339 UTC timestamp with milliseconds.
pub fn rfc3339(at_ms: u64) -> String {
    let seconds = at_ms / 1000;
    let (days, of_day) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        at_ms % 1000
    )
}

/// The Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339(1_796_558_645_007), "2026-12-06T12:04:05.007Z");
        assert_eq!(rfc3339(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
    }

    #[test]
    fn retries_grow_with_age_from_five_seconds_to_ten_minutes_within_their_jitter() {
        for _ in 0..200 {
            let first = retry_after(Duration::ZERO);
            assert!(
                first <= FIRST_RETRY && first >= FIRST_RETRY / 2,
                "{first:?}"
            );
            let later = retry_after(Duration::from_secs(20));
            assert!(
                later <= Duration::from_secs(20) && later >= Duration::from_secs(10),
                "{later:?}"
            );
            let late = retry_after(Duration::from_secs(86_400));
            assert!(
                late <= MAX_RETRY_INTERVAL && late >= MAX_RETRY_INTERVAL / 2,
                "{late:?}"
            );
        }
    }

    #[test]
    fn a_body_carries_the_request_and_the_extra_members() {
        let facts = RequestFacts {
            session: SessionId::parse("billing-1").unwrap(),
            id: RequestId::parse("r1").unwrap(),
            dialect: Dialect::HARNESS,
            title: None,
            questions: json!([{"question": "Ship?"}]),
            answerers: Some(vec!["group:oncall".into()]),
            deadline_ms: None,
            url: "https://askgate.example/s/billing-1#k=abc".into(),
            followers: Vec::new(),
            callback: None,
            quiet: false,
        };
        let mut extra = Map::new();
        extra.insert("to".into(), json!(["carol@example.com"]));
        let body: Value =
            serde_json::from_str(&facts.body(EventKind::Escalated, 0, extra)).unwrap();
        assert_eq!(
            body,
            json!({"type": "request.escalated", "timestamp": "1970-01-01T00:00:00.000Z",
                "data": {"session": "billing-1", "id": "r1", "dialect": "harness",
                    "questions": [{"question": "Ship?"}], "answerers": ["group:oncall"],
                    "deadline_ms": null, "url": "https://askgate.example/s/billing-1#k=abc",
                    "to": ["carol@example.com"]}})
        );
        assert_ne!(new_id(), new_id());
        assert!(new_id().starts_with("msg_"));
    }
}
