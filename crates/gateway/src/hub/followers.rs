//! Who follows each session: people told of its requests that name no answerers (by mail and
//! their webhooks) and shown them in their inbox. A person follows from the session's page or
//! is added by an agent; each change is committed to the store (and recorded in the session's
//! trail) before anyone hears of it.
//!
//! The hub keeps every session's followers apart from the session itself: a session is
//! dropped once nothing is left in it, and who follows it must outlive that. On a local store
//! they come back at a restart; on a shared one they are loaded with the session and kept in
//! step by the other nodes' notices, like its requests.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use askgate_protocol::people::check_user_name;
use askgate_protocol::wire::ToTab;
use askgate_protocol::{ErrorCode, FieldError, ReplyCode, SessionId};

use super::Hub;
use super::peers::frame::Frame;
use super::peers::links::TabHandle;
use crate::clock::now_ms;
use crate::store::{StoreOp, Verdict};

/// Most people who may follow one session. Every request without answerers is sent to each
/// of them (a mail, a webhook call): the bound is on what one ask may set off, and on what
/// one session's entry in the hub holds.
pub const MAX_FOLLOWERS: usize = 256;

/// Every session's followers.
#[derive(Debug, Default)]
pub(super) struct Followers {
    by_session: Mutex<HashMap<SessionId, BTreeSet<Arc<str>>>>,
}

/// What a follow or unfollow came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Followed {
    /// Changed now (and recorded).
    Changed,
    /// It already was so: nothing was recorded.
    Already,
}

/// Why a follow was not taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FollowRefused {
    /// The name is not one a person can have.
    BadUser(String),
    /// The session has [`MAX_FOLLOWERS`] already.
    TooMany,
    /// The store could not keep it.
    Store(String),
}

impl FollowRefused {
    /// The refusal at its path (`user` for the name, the whole body otherwise).
    pub fn errors(&self) -> Vec<FieldError> {
        match self {
            FollowRefused::BadUser(why) => {
                vec![FieldError::new(
                    "user",
                    ErrorCode::InvalidValue,
                    why.clone(),
                )]
            }
            FollowRefused::TooMany => vec![FieldError::new(
                "user",
                ErrorCode::InvalidValue,
                format!(
                    "this session already has {MAX_FOLLOWERS} followers, the most one may have; \
                     remove one first"
                ),
            )],
            FollowRefused::Store(error) => vec![FieldError::new(
                "",
                ErrorCode::Unavailable,
                format!("the gateway could not keep the change ({error}); try again"),
            )],
        }
    }
}

impl Followers {
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, BTreeSet<Arc<str>>>> {
        self.by_session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Who follows `session`.
    pub(super) fn of(&self, session: &SessionId) -> Vec<Arc<str>> {
        self.lock()
            .get(session)
            .map(|users| users.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether `user` follows `session`.
    pub(super) fn follows(&self, session: &SessionId, user: &str) -> bool {
        self.lock()
            .get(session)
            .is_some_and(|users| users.contains(user))
    }

    /// Makes `user` follow `session` or not; `false` if it already was so. A follow past
    /// [`MAX_FOLLOWERS`] is refused, and nothing changes.
    pub(super) fn set(
        &self,
        session: &SessionId,
        user: &str,
        on: bool,
    ) -> Result<bool, FollowRefused> {
        let mut sessions = self.lock();
        if !on {
            let Some(users) = sessions.get_mut(session) else {
                return Ok(false);
            };
            let removed = users.remove(user);
            if users.is_empty() {
                sessions.remove(session);
            }
            return Ok(removed);
        }
        let users = sessions.entry(session.clone()).or_default();
        if users.contains(user) {
            return Ok(false);
        }
        if users.len() >= MAX_FOLLOWERS {
            return Err(FollowRefused::TooMany);
        }
        users.insert(Arc::from(user));
        Ok(true)
    }

    /// Holds `user` as following `session` or not, as the store decided (another node's
    /// change): `false` if it already was so here.
    pub(super) fn hold(&self, session: &SessionId, user: &str, on: bool) -> bool {
        let mut sessions = self.lock();
        if on {
            sessions
                .entry(session.clone())
                .or_default()
                .insert(Arc::from(user))
        } else {
            let Some(users) = sessions.get_mut(session) else {
                return false;
            };
            let removed = users.remove(user);
            if users.is_empty() {
                sessions.remove(session);
            }
            removed
        }
    }

    /// `session`'s followers are `users`, as the store holds them.
    pub(super) fn replace(&self, session: &SessionId, users: impl IntoIterator<Item = String>) {
        let users: BTreeSet<Arc<str>> = users.into_iter().map(Arc::from).collect();
        let mut sessions = self.lock();
        if users.is_empty() {
            sessions.remove(session);
        } else {
            sessions.insert(session.clone(), users);
        }
    }
}

impl Hub {
    /// Makes `user` follow `session` (`on`) or stop: the store keeps it, then the person's
    /// tabs in the session and their inboxes hear of it.
    ///
    /// # Errors
    /// The name is not a person's, the session has the most followers, or the store failed;
    /// nothing changed.
    pub async fn set_following(
        self: &Arc<Self>,
        session: &SessionId,
        user: &str,
        on: bool,
    ) -> Result<Followed, FollowRefused> {
        check_user_name(user).map_err(FollowRefused::BadUser)?;
        if let Err(error) = self.synced(session).await {
            return Err(FollowRefused::Store(error.to_string()));
        }
        let followers = &self.ledger.followers;
        // Taken here first, so that two follows at once cannot both pass the bound; given
        // back if the store does not keep it.
        if !followers.set(session, user, on)? {
            return Ok(Followed::Already);
        }
        let op = StoreOp::Follow {
            session: session.clone(),
            user: user.to_owned(),
            on,
            at_ms: now_ms(),
        };
        let verdict = self.store.decide(vec![op]).await;
        let refused = match verdict.as_deref() {
            Ok([Verdict::Done, ..]) => None,
            // A shared store judges the bound across every node's follows.
            Ok([Verdict::Conflict, ..]) => Some(FollowRefused::TooMany),
            Ok([Verdict::Unknown, ..]) => {
                // Another node made the same change first: it is so, and recorded once.
                self.told_following(session, user, on);
                return Ok(Followed::Already);
            }
            Ok(other) => Some(FollowRefused::Store(format!(
                "the store answered {other:?} to a follow"
            ))),
            Err(error) => Some(FollowRefused::Store(error.to_string())),
        };
        if let Some(refused) = refused {
            let _ = followers.set(session, user, !on);
            return Err(refused);
        }
        self.told_following(session, user, on);
        if on {
            self.announce_addressed(session, vec![user.to_owned()]);
        }
        Ok(Followed::Changed)
    }

    /// Who followed each session when the gateway stopped, as a local store kept it.
    pub fn restore_followers(&self, followers: Vec<(SessionId, String)>) {
        let mut by_session: HashMap<SessionId, Vec<String>> = HashMap::new();
        for (session, user) in followers {
            by_session.entry(session).or_default().push(user);
        }
        for (session, users) in by_session {
            self.ledger.followers.replace(&session, users);
        }
    }

    /// Whether `user` follows `session`, as this node holds it.
    pub fn follows(&self, session: &SessionId, user: &str) -> bool {
        self.ledger.followers.follows(session, user)
    }

    /// `user` follows `session` (`on`) or not, as decided (here, or on another node): their
    /// tabs in the session are told, and their inboxes shown what that adds or takes away.
    pub(super) fn told_following(&self, session: &SessionId, user: &str, on: bool) {
        let frame = Frame::encode(&ToTab::Following { on });
        let sessions = self.lock();
        if let Some(entry) = sessions.get(session) {
            for (link_id, slot) in entry.tabs.iter() {
                if slot.person.name() == Some(user) {
                    entry.send_to(link_id, frame.clone(), &self.metrics);
                }
            }
        }
        self.refresh_inboxes_of(&sessions, user);
    }
}

impl TabHandle {
    /// A `follow` from this tab: its person follows the session (`on`) or stops. Every tab of
    /// theirs in the session is told `following` once it is kept, this one too; the reply is
    /// an `error` frame when it was not.
    pub async fn follow(&self, on: bool) -> Option<Frame> {
        let error = |code: ReplyCode, message: String| {
            Some(Frame::encode(&ToTab::Error {
                code: code.as_str().to_owned(),
                message,
            }))
        };
        let Some(user) = self.person.name() else {
            return error(
                ReplyCode::Forbidden,
                "only a named person can follow a session: open a personal link, or sign in \
                 through the gateway's proxy"
                    .to_owned(),
            );
        };
        match self.hub.set_following(&self.session, user, on).await {
            Ok(Followed::Changed) => None,
            // Nothing changed, so no one else is told: this tab hears how it stands.
            Ok(Followed::Already) => Some(Frame::encode(&ToTab::Following { on })),
            Err(FollowRefused::TooMany) => error(
                ReplyCode::Unavailable,
                format!("this session already has {MAX_FOLLOWERS} followers, the most it may have"),
            ),
            Err(FollowRefused::Store(why)) => error(
                ReplyCode::StoreFailed,
                format!("the gateway could not keep the change ({why}); try again"),
            ),
            Err(FollowRefused::BadUser(why)) => error(
                ReplyCode::Forbidden,
                format!("this name cannot follow: {why}"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str) -> SessionId {
        SessionId::parse(id).unwrap()
    }

    #[test]
    fn a_follow_is_kept_once_and_an_unfollow_takes_it_back() {
        let followers = Followers::default();
        let s = session("s-1");
        assert_eq!(followers.set(&s, "alice", true), Ok(true));
        assert_eq!(followers.set(&s, "alice", true), Ok(false));
        assert!(followers.follows(&s, "alice"));
        assert!(!followers.follows(&session("s-2"), "alice"));
        assert_eq!(followers.set(&s, "bob", false), Ok(false));
        assert_eq!(followers.set(&s, "alice", false), Ok(true));
        assert!(followers.of(&s).is_empty());
        assert!(followers.lock().is_empty(), "an empty session's entry goes");
    }

    #[test]
    fn a_session_takes_at_most_its_bound_of_followers() {
        let followers = Followers::default();
        let s = session("s-1");
        for n in 0..MAX_FOLLOWERS {
            assert_eq!(followers.set(&s, &format!("u{n}"), true), Ok(true));
        }
        assert_eq!(
            followers.set(&s, "one-more", true),
            Err(FollowRefused::TooMany)
        );
        // One already following is not one more.
        assert_eq!(followers.set(&s, "u0", true), Ok(false));
        assert_eq!(followers.of(&s).len(), MAX_FOLLOWERS);
        let errors = FollowRefused::TooMany.errors();
        assert_eq!(errors[0].path, "user");
        assert!(errors[0].message.contains("256"), "{}", errors[0].message);
    }

    #[test]
    fn followers_as_loaded_replace_what_was_held() {
        let followers = Followers::default();
        let s = session("s-1");
        followers.set(&s, "alice", true).unwrap();
        followers.replace(&s, ["bob".to_owned(), "carol".to_owned()]);
        let names: Vec<String> = followers.of(&s).iter().map(ToString::to_string).collect();
        assert_eq!(names, ["bob", "carol"]);
        followers.replace(&s, []);
        assert!(followers.of(&s).is_empty());
    }
}
