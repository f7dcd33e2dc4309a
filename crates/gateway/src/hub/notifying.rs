//! The hub's side of notifications: what a request is, told to the notifier, and whether it
//! is still open.

use askgate_protocol::wire::RequestView;
use askgate_protocol::{RequestId, SessionId};

use super::hub_core::Hub;
use super::request::Entry;
use crate::notify::{RequestFacts, RequestLookup};
use crate::store::StoredRequest;

impl Hub {
    /// What notifications tell of a request about to be stored.
    pub(super) fn facts_of_record(&self, record: &StoredRequest) -> RequestFacts {
        RequestFacts {
            session: record.session.clone(),
            id: record.id.clone(),
            dialect: record.dialect,
            title: record.title.clone(),
            questions: record.questions.clone(),
            answerers: record.answerers.clone(),
            deadline_ms: record.deadline_ms,
            url: self.keys.viewer_url(&record.session),
            followers: self.followers_of(&record.session),
            callback: record.callback.as_deref().cloned(),
            quiet: false,
        }
    }

    /// What notifications tell of a request the hub holds, read back from what its tabs are
    /// sent (the hub keeps no other copy of its title and payload).
    pub(super) fn facts_of_entry(
        &self,
        session: &SessionId,
        entry: &Entry,
    ) -> Option<RequestFacts> {
        let view: RequestView = match serde_json::from_slice(&entry.encoded.view) {
            Ok(view) => view,
            Err(error) => {
                tracing::error!(%session, request = %entry.id, %error, "a request's view did not read back; its notifications are not sent");
                return None;
            }
        };
        Some(RequestFacts {
            session: session.clone(),
            id: entry.id.clone(),
            dialect: view.dialect,
            title: view.title,
            questions: view.questions,
            answerers: view.answerers,
            deadline_ms: entry.deadline_ms,
            url: self.keys.viewer_url(session),
            followers: self.followers_of(session),
            callback: entry.callback.as_deref().cloned(),
            quiet: false,
        })
    }
}

impl Hub {
    /// Who follows `session`, by name.
    fn followers_of(&self, session: &SessionId) -> Vec<String> {
        self.ledger
            .followers
            .of(session)
            .iter()
            .map(ToString::to_string)
            .collect()
    }
}

impl RequestLookup for Hub {
    fn is_open(&self, session: &SessionId, id: &RequestId) -> Option<bool> {
        let sessions = self.lock();
        let state = sessions.get(session)?;
        // A session held here is in step with the store: a request it does not hold has
        // been forgotten.
        Some(
            state.requests.get(id).is_some_and(|entry| {
                !matches!(entry.state, super::request::EntryState::Resolved(_))
            }),
        )
    }
}
