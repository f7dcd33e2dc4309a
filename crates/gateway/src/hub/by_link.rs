//! Answers from mail links and Slack clicks: a person answers without a tab, through the same
//! first-wins ending as a tab's answer ([`Hub::resolve`]), so the audit trail, the tabs'
//! `resolved` and the agent's `outcome` are as for any answer, with `via: "email"` or
//! `"slack"` and no tab.
//!
//! A link names the asking it was made for by its questions' digest: a request asked again
//! under the same id with other questions is not the one the mail asked, and the link does
//! not touch it. The link's page reads the request here too, so that what it shows is what
//! the hub holds.

use std::sync::Arc;

use askgate_protocol::wire::{RequestView, Via};
use askgate_protocol::{Dialect, Outcome};
use bytes::Bytes;
use serde_json::Value;

use super::Hub;
use super::ending::{Ending, Refusal};
use super::request::EntryState;
use crate::audit::{Note, Who, questions_digest};
use crate::people::action_links::{ActionLink, short_digest};
use crate::people::choices::{self, Offer};
use crate::people::{NotAllowed, Person};

/// The request a link was made for, as a link's page shows it.
#[derive(Clone, Debug)]
pub struct LinkedRequest {
    /// The agent's title, if any.
    pub title: Option<String>,
    /// What it asks, a line per question (or call).
    pub asked: Vec<String>,
    /// The answer the link gives, in its words.
    pub offer: Offer,
    /// When it times out, if it does.
    pub deadline_ms: Option<u64>,
    /// The asking it is (Unix ms).
    pub asked_at_ms: u64,
    dialect: Dialect,
    questions: Value,
}

/// How a request ended, as a link's page says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndedAs {
    /// How.
    pub outcome: Outcome,
    /// Who ended it, when a person did.
    pub user: Option<String>,
    /// How the gateway knew them.
    pub via: Option<Via>,
    /// When (Unix ms).
    pub at_ms: u64,
}

/// Where a link's request stands.
#[derive(Clone, Debug)]
pub enum LinkState {
    /// Not held here: never asked on this gateway, or ended and acknowledged by its agent.
    Gone,
    /// The id now names another asking, with other questions: the mail's request has ended.
    Replaced,
    /// Open: the link can answer it.
    Open(LinkedRequest),
    /// Ended, and how.
    Ended(LinkedRequest, EndedAs),
}

/// Why a link's answer was not taken.
#[derive(Clone, Debug)]
pub enum LinkRefused {
    /// The request is not held here (or no longer the mail's): see [`LinkState`].
    Gone,
    /// It had already ended; how, if still known.
    Ended(Option<EndedAs>),
    /// The person may not answer it.
    Forbidden(NotAllowed),
    /// The link ran out while the answer waited for a rival ending to be stored.
    Expired,
    /// The store could not keep the answer; the request stays open.
    Unavailable(String),
}

/// What a request's entry gives a link, read under the lock and parsed after it.
struct Held {
    view: Bytes,
    asked_at_ms: u64,
    ended: Option<EndedAs>,
}

impl Hub {
    /// Where the request `link` was made for stands now.
    pub async fn link_state(self: &Arc<Self>, link: &ActionLink) -> LinkState {
        // On a shared store, what this node holds is brought up to date first; should the
        // store not answer, what is held is shown (the answer itself is decided by the store).
        if let Err(error) = self.synced(&link.session).await {
            tracing::warn!(session = %link.session, %error, "a link's page shows this node's copy: the shared store did not answer");
        }
        let Some(held) = self.held(link) else {
            return LinkState::Gone;
        };
        match read_request(link, &held) {
            None => LinkState::Replaced,
            Some(request) => match held.ended {
                Some(ended) => LinkState::Ended(request, ended),
                None => LinkState::Open(request),
            },
        }
    }

    /// Answers the request `link` was made for as the person it names, with its choice, known
    /// `via` a mail's link or a Slack click; a rejection carries `reason` as its message. The
    /// request's answerers are checked as for a tab, and the first ending wins.
    ///
    /// # Errors
    /// Why the answer was not taken.
    pub async fn answer_by_link(
        self: &Arc<Self>,
        link: &ActionLink,
        via: Via,
        reason: Option<&str>,
    ) -> Result<LinkedRequest, LinkRefused> {
        self.synced(&link.session)
            .await
            .map_err(|error| LinkRefused::Unavailable(error.to_string()))?;
        let held = self.held(link).ok_or(LinkRefused::Gone)?;
        let request = read_request(link, &held).ok_or(LinkRefused::Gone)?;
        if let Some(ended) = held.ended {
            return Err(LinkRefused::Ended(Some(ended)));
        }
        let Some(mut response) =
            choices::response(request.dialect, &request.questions, link.choice)
        else {
            return Err(LinkRefused::Gone);
        };
        if let (Some(reason), choices::Choice::Reject) = (reason, link.choice) {
            response["decisions"][0]["message"] = Value::from(reason);
        }
        let person = Person::named(&link.user, via).until(link.expires_ms);
        let ending = Ending::Answer {
            tab: None,
            person,
            response,
            asked_at_ms: Some(request.asked_at_ms),
        };
        match self.resolve(&link.session, &link.request, ending).await {
            Ok(_) => Ok(request),
            Err(Refusal::AlreadyResolved) => Err(LinkRefused::Ended(
                self.held(link).and_then(|held| held.ended),
            )),
            Err(Refusal::Forbidden(why)) => {
                self.record_link_refusal(link, via, &why).await;
                Err(LinkRefused::Forbidden(why))
            }
            Err(Refusal::LinkExpired) => Err(LinkRefused::Expired),
            Err(Refusal::Store(error)) => Err(LinkRefused::Unavailable(error)),
            Err(Refusal::Recount) => Err(LinkRefused::Unavailable(
                "other votes kept coming in while this one was counted".to_owned(),
            )),
            Err(Refusal::Unknown | Refusal::DoesNotFit(_)) => Err(LinkRefused::Gone),
        }
    }

    /// Whether `user` may answer request `id` of `session` now, and when it times out: for
    /// the link a Slack channel post's page button sends its clicker.
    ///
    /// # Errors
    /// Why not: the request is gone or ended, or `user` may not answer it.
    pub async fn may_answer_as(
        self: &Arc<Self>,
        session: &askgate_protocol::SessionId,
        id: &askgate_protocol::RequestId,
        user: &str,
    ) -> Result<Option<u64>, LinkRefused> {
        self.synced(session)
            .await
            .map_err(|error| LinkRefused::Unavailable(error.to_string()))?;
        let sessions = self.lock();
        let entry = sessions
            .get(session)
            .and_then(|held| held.requests.get(id))
            .ok_or(LinkRefused::Gone)?;
        if let EntryState::Resolved(resolution) = &entry.state {
            return Err(LinkRefused::Ended(Some(EndedAs {
                outcome: resolution.settlement.outcome,
                user: resolution.user.clone(),
                via: resolution.via,
                at_ms: resolution.at_ms,
            })));
        }
        self.people
            .may_answer(&Person::named(user, Via::Slack), entry.answerers.as_deref())
            .map_err(LinkRefused::Forbidden)?;
        Ok(entry.deadline_ms)
    }

    /// What the request `link` names holds, copied under the lock (the view's bytes are
    /// shared, not copied); `None` if there is none.
    fn held(&self, link: &ActionLink) -> Option<Held> {
        let sessions = self.lock();
        let entry = sessions.get(&link.session)?.requests.get(&link.request)?;
        let ended = match &entry.state {
            EntryState::Resolved(resolution) => Some(EndedAs {
                outcome: resolution.settlement.outcome,
                user: resolution.user.clone(),
                via: resolution.via,
                at_ms: resolution.at_ms,
            }),
            EntryState::Committing | EntryState::Open | EntryState::Resolving => None,
        };
        Some(Held {
            view: entry.encoded.view.clone(),
            asked_at_ms: entry.asked_at_ms,
            ended,
        })
    }

    /// A refused link answer in the audit trail, as a tab's first refusal is.
    async fn record_link_refusal(&self, link: &ActionLink, via: Via, why: &NotAllowed) {
        let who = Who {
            user: Some(link.user.clone()),
            tab: None,
            via: Some(via),
        };
        let note = Note::refused(
            &link.session,
            &who,
            link.request.clone(),
            "answer",
            why.reason(),
            None,
        );
        self.record_notes(vec![note]).await;
    }
}

/// The request in `held`, if it is the asking `link` was made for and offers its choice.
fn read_request(link: &ActionLink, held: &Held) -> Option<LinkedRequest> {
    let view: RequestView = match serde_json::from_slice(&held.view) {
        Ok(view) => view,
        Err(error) => {
            tracing::error!(session = %link.session, request = %link.request, %error, "a request's view did not read back for a mail link");
            return None;
        }
    };
    if short_digest(&questions_digest(view.dialect, &view.questions)) != link.digest {
        return None;
    }
    let offer = choices::offered(view.dialect, &view.questions, link.choice)?;
    Some(LinkedRequest {
        asked: choices::asked(&view.questions),
        title: view.title,
        offer,
        deadline_ms: view.deadline_ms,
        asked_at_ms: held.asked_at_ms,
        dialect: view.dialect,
        questions: view.questions,
    })
}
