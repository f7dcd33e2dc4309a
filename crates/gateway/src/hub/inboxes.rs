//! Who holds an inbox: one person's open requests across every session, live. An inbox is
//! shown a request addressed to its person (by name, or a group of theirs, escalations
//! included) or of a session they follow, and is told as the session's tabs are: the same
//! frames, each with its `session`, sent under the same lock as the tabs' so that the two
//! never disagree on order.
//!
//! Bounded as tabs are (a queue per inbox, closed with 4408 when full) and in number: at most
//! [`INBOXES_PER_PERSON`] per person and [`MAX_INBOXES`] in all, so one person's many windows
//! cannot crowd out everyone else's, nor inboxes the gateway's memory.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use askgate_protocol::wire::{ToTab, You};
use askgate_protocol::{RequestId, SessionId, TabId, close};
use bytes::Bytes;
use serde_json::Value;

use super::Hub;
use super::ending::{Ending, Refusal};
use super::hub_core::Sessions;
use super::peers::frame::Frame;
use super::peers::links::Link;
use super::request::Entry;
use super::session::{Session, generated_tab_id};
use crate::audit::{Note, Who};
use crate::clock::now_ms;
use crate::metrics::{Metrics, count};
use crate::people::Person;

/// Most inboxes one person may have open at once (windows, devices).
pub const INBOXES_PER_PERSON: usize = 8;
/// Most inboxes the gateway holds at once.
pub const MAX_INBOXES: usize = 1024;

/// Why an inbox was turned away.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InboxRefused {
    /// Its person has [`INBOXES_PER_PERSON`] open.
    #[error("you have the most inboxes open at once; close one")]
    TooManyOfYours,
    /// The gateway holds [`MAX_INBOXES`].
    #[error("the gateway holds the most inboxes it may; try again later")]
    TooMany,
}

impl InboxRefused {
    /// The close code to send.
    pub fn close_code(self) -> u16 {
        close::TRY_AGAIN_LATER
    }

    /// The close frame's reason.
    pub fn reason(self) -> &'static str {
        match self {
            InboxRefused::TooManyOfYours => "you have the most inboxes open at once; close one",
            InboxRefused::TooMany => "the gateway holds the most inboxes it may; try again later",
        }
    }
}

/// One open inbox.
#[derive(Debug)]
struct InboxSlot {
    user: Arc<str>,
    /// The operator's groups the person is in, as when the inbox opened.
    groups: Vec<String>,
    /// What its snapshots say of who it is.
    you: You,
    /// Its id, as `resolved.by` names an ending from it.
    tab: TabId,
    link: Link,
    /// On a shared store: the sessions this node holds for it (see [`Hub::gather_inbox`]).
    held: HashSet<SessionId>,
}

impl InboxSlot {
    /// Whether a request reaching `reach`, of a session `followers` follow, is this inbox's
    /// to show.
    fn shows(&self, reach: &Reach, followers: &[Arc<str>]) -> bool {
        shows(&self.user, &self.groups, reach, followers)
    }
}

/// Whom an open request is for, as inboxes see it: those its answerers name, and once it has
/// escalated those its escalation named, even where anyone with the link may answer it.
#[derive(Clone, Debug, Default)]
pub(super) struct Reach {
    answerers: Option<Arc<[String]>>,
    /// Absent until it escalates (most never do: nothing is copied for them).
    escalated_to: Option<Vec<String>>,
}

impl Reach {
    /// The reach of `entry` as it stands.
    pub(super) fn of(entry: &Entry) -> Reach {
        Reach {
            answerers: entry.answerers.clone(),
            escalated_to: entry
                .follow_ups
                .escalated
                .then(|| entry.follow_ups.escalate_to.clone()),
        }
    }

    /// The reach of `entry` before it escalates: those its answerers name. (Its follow-ups
    /// are marked done before they are stored, so they cannot tell.)
    pub(super) fn unescalated(entry: &Entry) -> Reach {
        Reach {
            answerers: entry.answerers.clone(),
            escalated_to: None,
        }
    }

    /// Whether it names `user`, or one of `groups`.
    fn names(&self, user: &str, groups: &[String]) -> bool {
        let named = |entry: &String| match entry.strip_prefix("group:") {
            Some(group) => groups.iter().any(|g| g == group),
            None => entry == user,
        };
        self.answerers
            .iter()
            .flat_map(|list| list.iter())
            .any(named)
            || self.escalated_to.iter().flatten().any(named)
    }
}

/// Whether `user` (in `groups`) is shown a request reaching `reach` in a session `followers`
/// follow.
fn shows(user: &str, groups: &[String], reach: &Reach, followers: &[Arc<str>]) -> bool {
    reach.names(user, groups) || followers.iter().any(|f| &**f == user)
}

/// Every open inbox, by connection id.
#[derive(Debug, Default)]
pub(super) struct Inboxes {
    slots: Mutex<HashMap<u64, InboxSlot>>,
    /// How many there are, read without the lock: a request's change looks here first, and
    /// a gateway without inboxes pays nothing more.
    held: AtomicUsize,
}

impl Inboxes {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, InboxSlot>> {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn is_empty(&self) -> bool {
        self.held.load(Ordering::Relaxed) == 0
    }

    fn admit(&self, id: u64, slot: InboxSlot) -> Result<(), InboxRefused> {
        let mut slots = self.lock();
        if slots.len() >= MAX_INBOXES {
            return Err(InboxRefused::TooMany);
        }
        let mine = slots.values().filter(|s| s.user == slot.user).count();
        if mine >= INBOXES_PER_PERSON {
            return Err(InboxRefused::TooManyOfYours);
        }
        slots.insert(id, slot);
        self.held.store(slots.len(), Ordering::Relaxed);
        Ok(())
    }

    /// Takes inbox `id` away: the sessions held for it, to let go of.
    fn leave(&self, id: u64) -> HashSet<SessionId> {
        let mut slots = self.lock();
        let slot = slots.remove(&id);
        self.held.store(slots.len(), Ordering::Relaxed);
        slot.map(|slot| slot.held).unwrap_or_default()
    }

    /// Marks `session` held for every inbox `name` (a person or `group:NAME`) is for, and
    /// for inbox `only` alone when given; how many newly hold it.
    fn hold(&self, session: &SessionId, name: &str, only: Option<u64>) -> u32 {
        let mut newly: u32 = 0;
        for (id, slot) in self.lock().iter_mut() {
            if only.is_some_and(|only| only != *id) {
                continue;
            }
            let theirs = match name.strip_prefix("group:") {
                Some(group) => slot.groups.iter().any(|g| g == group),
                None => &*slot.user == name,
            };
            if theirs && slot.held.insert(session.clone()) {
                newly = newly.saturating_add(1);
            }
        }
        newly
    }

    /// Sends `frame` (already naming its session) to every inbox shown a request reaching
    /// `reach` in a session `followers` follow.
    fn tell(&self, reach: &Reach, followers: &[Arc<str>], frame: &Frame, metrics: &Metrics) {
        for slot in self.lock().values() {
            if slot.shows(reach, followers) {
                slot.link.send(frame.clone(), metrics);
            }
        }
    }

    /// A request's reach widened from `before` to `after`: inboxes that showed it are told
    /// `escalated`, those that now show it are sent it whole (`request`).
    fn tell_widened(
        &self,
        (before, after): (&Reach, &Reach),
        followers: &[Arc<str>],
        (escalated, request): (&Frame, &Frame),
        metrics: &Metrics,
    ) {
        for slot in self.lock().values() {
            if slot.shows(before, followers) {
                slot.link.send(escalated.clone(), metrics);
            } else if slot.shows(after, followers) {
                slot.link.send(request.clone(), metrics);
            }
        }
    }
}

/// The inbox side of a session's changes, called by the transitions in
/// [`request`](super::request) with the frames they send the session's tabs.
impl Session {
    /// Tells the inboxes that show a request reaching `reach` `frame`, as sent to this
    /// session's tabs.
    pub(super) fn tell_inboxes(&self, reach: &Reach, frame: &Frame) {
        let ledger = &self.open.ledger;
        if ledger.inboxes.is_empty() {
            return;
        }
        let followers = ledger.followers.of(&self.id);
        let frame = frame.with_session(self.id.as_str());
        ledger
            .inboxes
            .tell(reach, &followers, &frame, &ledger.metrics);
    }

    /// Tells the inboxes of a request escalated from reaching `before` to `after`: those
    /// that showed it `escalated`, those that show it now `request` (the view as it is now).
    pub(super) fn tell_inboxes_widened(
        &self,
        (before, after): (&Reach, &Reach),
        (escalated, request): (&Frame, &Frame),
    ) {
        let ledger = &self.open.ledger;
        if ledger.inboxes.is_empty() {
            return;
        }
        let followers = ledger.followers.of(&self.id);
        let session = self.id.as_str();
        ledger.inboxes.tell_widened(
            (before, after),
            &followers,
            (
                &escalated.with_session(session),
                &request.with_session(session),
            ),
            &ledger.metrics,
        );
    }
}

/// One person's inbox, attached to the hub until dropped.
#[derive(Debug)]
pub struct InboxHandle {
    hub: Arc<Hub>,
    link_id: u64,
    person: Person,
    /// What `resolved.by` names an ending from this inbox by: the page knows its own.
    tab: TabId,
}

impl Hub {
    /// Opens `person`'s inbox: it is sent its snapshot, then every change to what it shows.
    /// The person must be named: an inbox shows what is addressed to someone.
    ///
    /// # Errors
    /// The person, or the gateway, has the most inboxes open.
    pub fn open_inbox(
        self: &Arc<Self>,
        person: Person,
        link: Link,
    ) -> Result<InboxHandle, InboxRefused> {
        let link = self.assign_id(link);
        let user: Arc<str> = person.user.clone().unwrap_or_else(|| Arc::from(""));
        let you = self.people.you(&person);
        let tab = generated_tab_id();
        // Under the hub's lock, as every request's change is: nothing changes between the
        // snapshot and the first frame after it.
        let sessions = self.lock();
        let snapshot = self.inbox_snapshot(&sessions, &tab, &you);
        let link_id = link.id;
        self.ledger.inboxes.admit(
            link_id,
            InboxSlot {
                user,
                groups: you.groups.clone(),
                you,
                tab: tab.clone(),
                link: link.clone(),
                held: HashSet::new(),
            },
        )?;
        link.send(snapshot, &self.metrics);
        drop(sessions);
        Ok(InboxHandle {
            hub: Arc::clone(self),
            link_id,
            person,
            tab,
        })
    }

    /// Sends every inbox of `user` its snapshot again: what it shows has changed other than by
    /// a request's change (they follow a session now, or no longer).
    pub(super) fn refresh_inboxes_of(&self, sessions: &Sessions, user: &str) {
        let inboxes = &self.ledger.inboxes;
        if inboxes.is_empty() {
            return;
        }
        for slot in inboxes.lock().values() {
            if &*slot.user == user {
                let snapshot = self.inbox_snapshot(sessions, &slot.tab, &slot.you);
                slot.link.send(snapshot, &self.metrics);
            }
        }
    }

    /// The inbox's `snapshot`: every open request it shows, the oldest deadline first and
    /// those without one last (then in the order they were asked), each with its `session`.
    fn inbox_snapshot(&self, sessions: &Sessions, tab: &TabId, you: &You) -> Frame {
        let user = you.user.as_deref().unwrap_or_default();
        let mut shown: Vec<(Option<u64>, u64, &SessionId, &Bytes)> = Vec::new();
        for session in sessions.values() {
            let followers = self.ledger.followers.of(&session.id);
            for entry in session.requests.values().filter(|e| e.is_open()) {
                if shows(user, &you.groups, &Reach::of(entry), &followers) {
                    shown.push((
                        entry.deadline_ms,
                        entry.asked_at_ms,
                        &session.id,
                        &entry.encoded.view,
                    ));
                }
            }
        }
        shown.sort_by_key(|(deadline, asked, ..)| (deadline.is_none(), *deadline, *asked));
        let mut requests = Vec::with_capacity(shown.len());
        for (_, _, session, view) in shown {
            let view = Frame::from_json(view.clone()).with_session(session.as_str());
            // A view is JSON the hub encoded: it reads back.
            requests.push(serde_json::from_str::<Value>(&view.text()).unwrap_or_default());
        }
        Frame::encode(&serde_json::json!({
            "type": "snapshot",
            "tab": tab.as_str(),
            "now_ms": now_ms(),
            "you": you,
            "max_frame_bytes": self.limits.max_frame_bytes,
            "requests": requests,
        }))
    }
}

impl InboxHandle {
    /// Who the inbox's person is.
    pub fn person(&self) -> &Person {
        &self.person
    }

    /// Queues a reply to this inbox, behind what the hub queued for it.
    pub fn reply(&self, frame: Frame) {
        if let Some(slot) = self.hub.ledger.inboxes.lock().get(&self.link_id) {
            slot.link.send(frame, &self.hub.metrics);
        }
    }

    /// An `answer` from this inbox to request `id` of `session`: through the same first-wins
    /// ending as a tab's, the person's right to answer checked the same way. `None` if it won;
    /// else the `answer_rejected` frame, naming its session.
    pub async fn answer(&self, session: &str, id: &str, response: Value) -> Option<Frame> {
        let ending = Ending::Answer {
            tab: Some(self.tab.clone()),
            person: self.person.clone(),
            response,
            asked_at_ms: None,
        };
        self.end(session, id, "answer", ending).await
    }

    /// A `decline` from this inbox (with `dismiss`: put aside). As [`InboxHandle::answer`].
    pub async fn decline(&self, session: &str, id: &str, dismiss: bool) -> Option<Frame> {
        let ending = Ending::Decline {
            tab: Some(self.tab.clone()),
            person: self.person.clone(),
            dismiss,
        };
        self.end(session, id, "decline", ending).await
    }

    async fn end(
        &self,
        session: &str,
        id: &str,
        action: &'static str,
        ending: Ending,
    ) -> Option<Frame> {
        let refusal = match (SessionId::parse(session), RequestId::parse(id)) {
            (Ok(session), Ok(request)) => {
                // On a shared store the session may be one no peer of this node watches.
                if let Err(error) = self.hub.synced(&session).await {
                    tracing::warn!(%session, %error, "an inbox answered in a session that could not be loaded");
                }
                let refusal = self.hub.resolve(&session, &request, ending).await.err()?;
                // Recorded each time, where a tab's repeats are only counted: an inbox pays
                // five frames of its budget for each, so they stay few.
                if let Refusal::Forbidden(why) = &refusal {
                    let who = Who::of(&self.tab, &self.person);
                    let note = Note::refused(&session, &who, request, action, why.reason(), None);
                    self.hub.record_notes(vec![note]).await;
                }
                refusal
            }
            _ => Refusal::Unknown,
        };
        count(&self.hub.metrics.rejected_answers);
        let frame = Frame::encode(&ToTab::AnswerRejected {
            id: id.to_owned(),
            errors: refusal.into_errors(),
        });
        Some(frame.with_session(session))
    }
}

impl Drop for InboxHandle {
    fn drop(&mut self) {
        let held = self.hub.ledger.inboxes.leave(self.link_id);
        if held.is_empty() {
            return;
        }
        let mut sessions = self.hub.lock();
        for id in held {
            if let Some(session) = sessions.get_mut(&id) {
                session.inbox_holds = session.inbox_holds.saturating_sub(1);
            }
            self.hub.drop_if_idle(&mut sessions, &id);
        }
    }
}

/// On a store several nodes share, an inbox shows requests of sessions its node would not
/// otherwise hold: it holds them itself. The sessions come from the store's index of whom
/// requests were for (`Shared::inbox_sessions`) when the inbox opens, and from every node's
/// announcements (`Notice::Addressed`) while it is open; each is loaded, and kept in step
/// with the store, until the inbox closes. A local store's hub holds every session already.
impl Hub {
    /// Tells the other nodes that `session` has a request for `names` (or that they follow
    /// it), so that their inboxes load it. A local store's hub has no one to tell.
    pub(super) fn announce_addressed(self: &Arc<Self>, session: &SessionId, names: Vec<String>) {
        let Some(shared) = self.shared() else {
            return;
        };
        let session = session.clone();
        tokio::spawn(async move {
            if let Err(error) = shared.addressed(&session, names).await {
                tracing::warn!(%session, %error, "other nodes' inboxes were not told of a request; they see it when they open again");
            }
        });
    }

    /// Loads and holds, for `handle`'s inbox, the sessions where requests were for its person
    /// or their groups, or that they follow, as the store's index has them.
    pub async fn gather_inbox(self: &Arc<Self>, handle: &InboxHandle) {
        let Some(shared) = self.shared() else {
            return;
        };
        let Some(user) = handle.person.name() else {
            return;
        };
        let mut names = vec![user.to_owned()];
        names.extend(
            self.people
                .groups
                .groups_of(user)
                .into_iter()
                .map(|group| format!("group:{group}")),
        );
        let sessions = match shared.inbox_sessions(names).await {
            Ok(sessions) => sessions,
            Err(error) => {
                tracing::warn!(%error, "an inbox could not read where its requests are; it shows what this node holds");
                return;
            }
        };
        for session in sessions {
            self.hold_for_inboxes(&session, user, Some(handle.link_id))
                .await;
        }
    }

    /// A request of `session` is for `name`, or `name` follows it now (another node said so):
    /// every inbox here that it is for holds and loads the session.
    pub(super) fn inbox_addressed(self: &Arc<Self>, session: &SessionId, name: &str) {
        if self.ledger.inboxes.is_empty() {
            return;
        }
        let hub = Arc::clone(self);
        let (session, name) = (session.clone(), name.to_owned());
        tokio::spawn(async move { hub.hold_for_inboxes(&session, &name, None).await });
    }

    /// Holds `session` for the inboxes `name` is for (or inbox `only`), and loads it.
    async fn hold_for_inboxes(
        self: &Arc<Self>,
        session: &SessionId,
        name: &str,
        only: Option<u64>,
    ) {
        {
            let mut sessions = self.lock();
            let Some(entry) = self.session_entry(&mut sessions, session) else {
                return;
            };
            // Counted under the hub's lock, so the session cannot be dropped in between.
            let held = self.ledger.inboxes.hold(session, name, only);
            entry.inbox_holds = entry.inbox_holds.saturating_add(held);
        }
        if let Err(error) = self.synced(session).await {
            tracing::warn!(%session, %error, "an inbox's session could not be loaded; it is tried again");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn an_inbox_shows_what_names_its_person_their_group_or_a_session_they_follow() {
        let groups = names(&["oncall"]);
        let reach = |answerers: Option<&[&str]>, escalated_to: Option<&[&str]>| Reach {
            answerers: answerers.map(|list| Arc::from(names(list))),
            escalated_to: escalated_to.map(names),
        };
        let alice =
            |reach: Reach, followers: &[Arc<str>]| shows("alice", &groups, &reach, followers);
        assert!(alice(reach(Some(&["alice"]), None), &[]));
        assert!(alice(reach(Some(&["bob", "group:oncall"]), None), &[]));
        assert!(!alice(reach(Some(&["bob", "group:leads"]), None), &[]));
        // A request naming no one is only its session's followers', until it escalates to her.
        assert!(!alice(reach(None, None), &[]));
        assert!(alice(reach(None, None), &[Arc::from("alice")]));
        assert!(!alice(reach(None, None), &[Arc::from("bob")]));
        assert!(alice(reach(None, Some(&["group:oncall"])), &[]));
        // Names are compared as given, and a group's name is not a person's.
        assert!(!alice(reach(Some(&["Alice", "oncall"]), None), &[]));
    }

    #[test]
    fn a_person_and_the_gateway_have_a_bound_on_inboxes() {
        let inboxes = Inboxes::default();
        let slot = |user: &str| InboxSlot {
            user: Arc::from(user),
            groups: Vec::new(),
            you: crate::people::People::default()
                .you(&Person::named(user, askgate_protocol::wire::Via::Proxy)),
            tab: generated_tab_id(),
            link: Link::new(4).0,
            held: HashSet::new(),
        };
        for id in 0..INBOXES_PER_PERSON as u64 {
            inboxes.admit(id, slot("alice")).unwrap();
        }
        assert_eq!(
            inboxes.admit(100, slot("alice")),
            Err(InboxRefused::TooManyOfYours)
        );
        inboxes.admit(101, slot("bob")).unwrap();
        inboxes.leave(0);
        inboxes.admit(100, slot("alice")).unwrap();
        assert!(!inboxes.is_empty());
        for id in 200..(200 + MAX_INBOXES as u64) {
            let _ = inboxes.admit(id, slot(&format!("u{id}")));
        }
        assert_eq!(inboxes.lock().len(), MAX_INBOXES);
        assert_eq!(
            inboxes.admit(9_999, slot("zed")),
            Err(InboxRefused::TooMany)
        );
    }
}
