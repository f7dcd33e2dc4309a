//! Bringing requests back after a restart: open ones with their deadlines (those that passed
//! while the gateway was down time out now), resolved ones until their agent collects them.

use std::sync::Arc;

use askgate_protocol::QuestionSet;
use askgate_protocol::wire::RequestView;
use tokio::sync::Notify;

use super::Hub;
use super::entry::{EncodedRequest, Entry, EntryState};
use super::resolving::Ending;
use super::session::Session;
use crate::clock::now_ms;
use crate::metrics::gauge_add;
use crate::store::StoredRequest;

/// What a restore found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Requests open again.
    pub open: usize,
    /// Requests whose deadline passed while down, now timed out.
    pub timed_out: usize,
    /// Resolved requests kept for their agents.
    pub resolved: usize,
    /// Records that could not be read back (logged and left in the store).
    pub unreadable: usize,
}

impl Hub {
    /// Loads `records` (from [`Store::load`](crate::store::Store::load)) into an empty hub.
    pub async fn restore(self: &Arc<Self>, mut records: Vec<StoredRequest>) -> Restored {
        records.sort_by_key(|r| r.asked_at_ms);
        let mut restored = Restored::default();
        let mut overdue = Vec::new();
        {
            let mut sessions = self.lock();
            for record in records {
                let questions = match QuestionSet::read_back(record.dialect, &record.questions) {
                    Ok(questions) => Arc::new(questions),
                    Err(errors) => {
                        tracing::error!(session = %record.session, request = %record.id, %errors, "a stored request no longer validates; left in the store");
                        restored.unreadable += 1;
                        continue;
                    }
                };
                let session = sessions.entry(record.session.clone()).or_insert_with(|| {
                    gauge_add(&self.metrics.sessions, 1);
                    Box::new(self.new_session(record.session.clone()))
                });
                let seq = session.next_seq;
                session.next_seq += 1;
                let was_resolved = record.resolution.is_some();
                let (session_id, id, deadline_ms) = (
                    record.session.clone(),
                    record.id.clone(),
                    record.deadline_ms,
                );
                let mut entry = record_entry(session, record, questions, seq);
                if was_resolved {
                    restored.resolved += 1;
                    gauge_add(&self.metrics.kept_outcomes, 1);
                } else {
                    gauge_add(&self.metrics.open_requests, 1);
                }
                if matches!(entry.state, EntryState::Open) {
                    match deadline_ms {
                        Some(deadline) if deadline <= now_ms() => {
                            overdue.push((session_id, id.clone()));
                        }
                        Some(deadline) => {
                            entry.timer = Some(self.arm_timer(&session_id, &id, deadline));
                            restored.open += 1;
                        }
                        None => restored.open += 1,
                    }
                }
                session.requests.insert(id, entry);
            }
        }
        // All at once, so their commits share the store's group commits: one at a time, each
        // would wait for its own sync while the gateway is not serving yet.
        let timing_out = overdue
            .iter()
            .map(|(session, id)| self.resolve(session, id, Ending::TimedOut));
        let timed_out = futures_util::future::join_all(timing_out).await;
        restored.timed_out += timed_out.iter().filter(|ended| ended.is_ok()).count();
        restored
    }
}

/// The hub's entry for a request the store holds, with the session's counts and its list of
/// finished requests updated: open, or resolved (then listed as finished).
pub(super) fn record_entry(
    session: &mut Session,
    record: StoredRequest,
    questions: Arc<QuestionSet>,
    seq: u64,
) -> Entry {
    let view = RequestView {
        id: record.id.to_string(),
        dialect: record.dialect,
        title: record.title,
        // As read back: what the dialect works out (a form's host) is this askgate's reading.
        questions: questions.to_json(),
        asked_at_ms: record.asked_at_ms,
        deadline_ms: record.deadline_ms,
        answerers: record.answerers.clone(),
    };
    let encoded = EncodedRequest::new(&view);
    let state = match record.resolution {
        Some(resolution) => {
            session.record_ended(&record.id, &encoded.view, &resolution);
            EntryState::Resolved(Box::new(resolution))
        }
        None => {
            session.count_open(encoded.view.len());
            EntryState::Open
        }
    };
    Entry {
        id: record.id,
        seq,
        questions,
        asked_at_ms: record.asked_at_ms,
        deadline_ms: record.deadline_ms,
        answerers: record.answerers.map(Arc::from),
        encoded,
        asker: None,
        state,
        storing: None,
        timer: None,
        resolved: Arc::new(Notify::new()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use askgate_protocol::wire::Via;
    use askgate_protocol::{Dialect, Outcome, RequestId, SessionId, Settlement};
    use serde_json::json;

    use super::*;
    use crate::hub::frame::Frame;
    use crate::store::StoredResolution;

    #[tokio::test]
    async fn a_request_read_back_already_ended_makes_the_history_stale() {
        let mut session = Session::new(SessionId::parse("s").unwrap(), 10, Arc::default());
        let total = Arc::new(AtomicUsize::new(0));
        let built = |text: &'static str| async move {
            Ok(Frame::from_json(bytes::Bytes::from_static(text.as_bytes())))
        };
        let history = Arc::clone(&session.history);
        assert_eq!(
            history.frame(&total, || built("before")).await.text(),
            "before"
        );
        let questions =
            json!([{"header": "H", "question": "Q?", "options": [{"label": "A"}, {"label": "B"}]}]);
        let record = StoredRequest {
            session: session.id.clone(),
            id: RequestId::parse("r").unwrap(),
            dialect: Dialect::HARNESS,
            questions: questions.clone(),
            title: None,
            asked_at_ms: 5,
            deadline_ms: None,
            answerers: None,
            resolution: Some(StoredResolution {
                settlement: Settlement {
                    outcome: Outcome::Withdrawn,
                    response: serde_json::Value::Null,
                    result: serde_json::Value::Null,
                    model_text: None,
                },
                by: None,
                user: None,
                via: Some(Via::SessionLink),
                at_ms: 7,
            }),
        };
        let questions = Arc::new(QuestionSet::validate(Dialect::HARNESS, &questions).unwrap());
        let entry = record_entry(&mut session, record, questions, 0);
        assert!(matches!(entry.state, EntryState::Resolved(_)));
        assert_eq!(
            history.frame(&total, || built("after")).await.text(),
            "after",
            "built again with the ended request"
        );
    }
}
