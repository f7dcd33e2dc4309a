//! The audit trail beside the store's own entries: refusals, which change nothing else, are
//! recorded as notes; and a tab reads the session's recent history from the trail.

use askgate_protocol::wire::ToTab;

use super::frame::Frame;
use super::links::TabHandle;
use crate::audit::history::{HISTORY_ENTRIES_READ, history};
use crate::audit::{Event, Note, Who};
use crate::clock::now_ms;
use crate::people::NotAllowed;
use crate::store::StoreOp;

impl TabHandle {
    /// Records that this tab's `action` (`answer` or `decline`) on request `id` was refused.
    /// A store that cannot take it is logged: the refusal itself stands either way.
    pub(super) async fn record_refusal(&self, id: &str, action: &'static str, why: &NotAllowed) {
        let Ok(id) = askgate_protocol::RequestId::parse(id) else {
            return;
        };
        let note = Note {
            session: self.session.clone(),
            id: Some(id),
            at_ms: now_ms(),
            event: Event::Refused {
                who: Who {
                    user: self.person.name().map(str::to_owned),
                    tab: Some(self.tab.to_string()),
                    via: Some(self.person.via),
                },
                action,
                reason: why.reason().to_owned(),
            },
        };
        if let Err(error) = self.hub.store.commit(vec![StoreOp::Note(note)]).await {
            tracing::warn!(session = %self.session, %error, "could not record a refused answer in the audit trail");
        }
    }

    /// The `history` frame: the session's recent ended requests, from its trail.
    pub async fn history(&self) -> Frame {
        match self
            .hub
            .store
            .trails()
            .recent_audit(&self.session, HISTORY_ENTRIES_READ)
            .await
        {
            Ok(lines) => Frame::encode(&ToTab::History {
                entries: history(&lines),
            }),
            Err(error) => Frame::encode(&ToTab::Error {
                code: "unavailable".to_owned(),
                message: format!("the history could not be read ({error}); try again"),
            }),
        }
    }
}
