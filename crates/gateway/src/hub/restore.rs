//! Bringing requests back after a restart: open ones with their deadlines (those that passed
//! while the gateway was down time out now), resolved ones until their agent collects them.

use std::sync::Arc;

use std::collections::HashMap;

use askgate_protocol::{QuestionSet, RequestId, SessionId};

use super::Hub;
use super::ending::Ending;
use super::request::{Admitted, Arrival};
use super::voting;
use crate::metrics::gauge_add;
use crate::store::{KeptTable, StoredRequest};

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
        // Open requests in the order they were asked (snapshots list them so), ended ones in
        // the order they ended (the finished list is in the order its entries come in).
        records.sort_by_key(|r| r.resolution.as_ref().map_or(r.asked_at_ms, |r| r.at_ms));
        let mut restored = Restored::default();
        let mut overdue = Vec::new();
        let mut ruled = Vec::new();
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
                let (session_id, id) = (record.session.clone(), record.id.clone());
                // Asked for rules to answer at once, and stopped before they did.
                let all_ruled = record
                    .ruled
                    .as_ref()
                    .is_some_and(|calls| calls.iter().all(Option::is_some));
                match session.admit_record(record, questions, Arrival::Restored) {
                    Admitted::Open if all_ruled => ruled.push((session_id, id)),
                    Admitted::Open => restored.open += 1,
                    Admitted::Overdue => overdue.push((session_id, id)),
                    Admitted::Resolved => restored.resolved += 1,
                }
            }
        }
        // All at once, so their commits share the store's group commits: one at a time, each
        // would wait for its own sync while the gateway is not serving yet.
        self.restore_votes().await;
        let timing_out = overdue
            .iter()
            .map(|(session, id)| self.resolve(session, id, Ending::TimedOut));
        let timed_out = futures_util::future::join_all(timing_out).await;
        restored.timed_out += timed_out.iter().filter(|ended| ended.is_ok()).count();
        let answering = ruled
            .iter()
            .map(|(session, id)| self.resolve(session, id, Ending::ByRule));
        let answered = futures_util::future::join_all(answering).await;
        restored.resolved += answered.iter().filter(|ended| ended.is_ok()).count();
        restored.open += answered.iter().filter(|ended| ended.is_err()).count();
        restored
    }
}

impl Hub {
    /// The votes kept for requests with a quorum, counted on them again; the remembered
    /// approvals, held again.
    async fn restore_votes(&self) {
        let kept = match self.store.kept().await {
            Ok(kept) => kept,
            Err(error) => {
                tracing::error!(%error, "the votes of requests with a quorum and the remembered approvals could not be read; they count from now");
                return;
            }
        };
        let mut by_request: HashMap<String, Vec<(String, String)>> = HashMap::new();
        let mut rules: HashMap<String, Vec<(String, String)>> = HashMap::new();
        for field in kept {
            let table = match field.table {
                KeptTable::Votes => &mut by_request,
                KeptTable::Rules => &mut rules,
                _ => continue,
            };
            table
                .entry(field.key)
                .or_default()
                .push((field.field, field.value));
        }
        let mut expired = Vec::new();
        for (key, fields) in rules {
            expired.extend(self.rule_book.restore(key, fields));
        }
        if !expired.is_empty()
            && let Err(error) = self.store_commit(expired).await
        {
            tracing::warn!(%error, "expired remembered approvals could not be forgotten; they will be when the next rule is made");
        }
        let mut sessions = self.lock();
        for (key, fields) in by_request {
            let Some((session, id)) = key.split_once('/') else {
                continue;
            };
            let (Ok(session), Ok(id)) = (SessionId::parse(session), RequestId::parse(id)) else {
                continue;
            };
            if let Some(state) = sessions.get_mut(&session) {
                state.record_votes(&id, "", voting::read_votes(fields));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use askgate_protocol::wire::Via;
    use askgate_protocol::{Dialect, RequestId, SessionId, Settlement};
    use serde_json::json;

    use super::*;
    use crate::hub::peers::frame::Frame;
    use crate::hub::request::Ledger;
    use crate::hub::session::Session;
    use crate::store::StoredResolution;

    #[tokio::test]
    async fn a_request_read_back_already_ended_makes_the_history_stale() {
        let mut session = Session::new(SessionId::parse("s").unwrap(), 10, Ledger::detached());
        let total = Arc::new(AtomicUsize::new(0));
        let built = |text: &'static str| async move {
            Ok(Frame::from_json(bytes::Bytes::from_static(text.as_bytes())))
        };
        let history = Arc::clone(session.history.get_or_insert_with(Arc::default));
        assert_eq!(
            history.frame(&total, || built("before")).await.text(),
            "before"
        );
        let questions =
            json!([{"header": "H", "question": "Q?", "options": [{"label": "A"}, {"label": "B"}]}]);
        let record = StoredRequest {
            quorum: None,
            asked_by: None,
            callback: None,
            ruled: None,
            remember: Vec::new(),
            votes: Vec::new(),
            default: None,
            session: session.id.clone(),
            id: RequestId::parse("r").unwrap(),
            dialect: Dialect::HARNESS,
            questions: questions.clone(),
            title: None,
            asked_at_ms: 5,
            deadline_ms: None,
            answerers: None,
            follow_ups: Default::default(),
            resolution: Some(StoredResolution {
                via: Some(Via::SessionLink),
                ..StoredResolution::untouched(Settlement::withdrawn(), 7)
            }),
        };
        let questions = Arc::new(QuestionSet::validate(Dialect::HARNESS, &questions).unwrap());
        let admitted = session.admit_record(record, questions, Arrival::Restored);
        assert_eq!(admitted, Admitted::Resolved);
        assert_eq!(
            history.frame(&total, || built("after")).await.text(),
            "after",
            "built again with the ended request"
        );
    }
}
