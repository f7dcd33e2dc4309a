//! What is open, for an operator: every session's requests, filtered, newest first, a page at
//! a time (`GET /v1/requests`, `askgate requests list`).
//!
//! A local store's hub holds every session with a request. On a shared store this node holds
//! only the sessions it serves: the rest are found in the store's index of sessions asked in
//! (`Shared::asked_sessions`) and read from the store (their records, and the other nodes'
//! presence), without being taken into the hub: a listing neither fills this node with
//! sessions nor counts toward `--max-sessions`.

use std::sync::Arc;

use askgate_protocol::{Dialect, Outcome, RequestId, SessionId};
use serde::Serialize;

use super::Hub;
use super::request::{Entry, EntryState};
use super::session::Session;
use futures_util::StreamExt as _;

use crate::clock::now_ms;
use crate::store::shared::Presence;
use crate::store::{StoreError, StoredRequest};

/// The most requests one page lists.
pub const MAX_LISTED: usize = 1_000;
/// How many one page lists when the caller does not say.
pub const DEFAULT_LISTED: usize = 100;

/// Which requests to list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListState {
    /// Open ones (orphaned ones among them).
    Open,
    /// Open ones whose agent is gone.
    Orphaned,
    /// Ended ones whose outcome is still kept (not yet acknowledged, within the retention).
    Ended,
}

impl ListState {
    /// The state named `text` (`open`, `orphaned`, `ended`).
    ///
    /// # Errors
    /// Any other name, with the ones there are.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "open" => Ok(ListState::Open),
            "orphaned" => Ok(ListState::Orphaned),
            "ended" => Ok(ListState::Ended),
            other => Err(format!(
                "must be one of open, orphaned, ended; got {other:?}"
            )),
        }
    }
}

/// What to list: a state, the sessions whose ids start with a prefix, those asked at least
/// `older_than_ms` ago, and where the last page ended.
#[derive(Clone, Debug)]
pub struct ListFilter {
    /// Which requests.
    pub state: ListState,
    /// Only sessions whose ids start with this (plain `starts_with`: the operator sees every
    /// session, so no scope boundary is kept).
    pub session_prefix: Option<String>,
    /// Only requests asked at least this long ago.
    pub older_than_ms: Option<u64>,
    /// At most this many (1 to [`MAX_LISTED`]).
    pub limit: usize,
    /// After this request in the listing's order (the last page's `next_cursor`).
    pub after: Option<ListCursor>,
}

/// A place in the listing's order: newest first by when asked, then by session and id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListCursor {
    /// When the request was asked; larger comes first. (A session id holds no `~`, so the
    /// encoded cursor splits at its first two; the request id, last, may hold one.)
    pub asked_at_ms: std::cmp::Reverse<u64>,
    /// Its session.
    pub session: String,
    /// Its id.
    pub id: String,
}

impl ListCursor {
    /// The cursor as the caller sends it back: `{asked_at_ms}~{session}~{id}`.
    pub fn encode(&self) -> String {
        format!("{}~{}~{}", self.asked_at_ms.0, self.session, self.id)
    }

    /// A cursor a caller sent.
    ///
    /// # Errors
    /// It is not one this listing gave.
    pub fn decode(text: &str) -> Result<Self, String> {
        let bad = || "not a cursor this listing gave (its next_cursor, as it was)".to_owned();
        let mut parts = text.splitn(3, '~');
        let (Some(at), Some(session), Some(id)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let asked_at_ms = at.parse().map_err(|_| bad())?;
        SessionId::parse(session).map_err(|_| bad())?;
        RequestId::parse(id).map_err(|_| bad())?;
        Ok(ListCursor {
            asked_at_ms: std::cmp::Reverse(asked_at_ms),
            session: session.to_owned(),
            id: id.to_owned(),
        })
    }
}

/// One request as the operator sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Listed {
    /// Its session.
    pub session: String,
    /// Its id.
    pub id: String,
    /// Its dialect.
    pub dialect: Dialect,
    /// Its title, if any.
    pub title: Option<String>,
    /// When it was asked (Unix ms).
    pub asked_at_ms: u64,
    /// When it times out (Unix ms), if it does.
    pub deadline_ms: Option<u64>,
    /// Who alone may answer, if the ask said so.
    pub answerers: Option<Vec<String>>,
    /// Whether an agent waits on its session now.
    pub agent_online: bool,
    /// Whether its agent is gone (see `--agent-grace-s`).
    pub orphaned: bool,
    /// How many tabs watch its session.
    pub tabs_watching: usize,
    /// How it ended, for an ended one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// When it ended, for an ended one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
}

impl ListFilter {
    /// Whether it lists a request that has `ended` or not, is `orphaned` or not, and was asked
    /// at `asked_at_ms`, at `now`.
    fn lists(&self, ended: bool, orphaned: bool, asked_at_ms: u64, now: u64) -> bool {
        let wanted = match self.state {
            ListState::Open => !ended,
            ListState::Orphaned => !ended && orphaned,
            ListState::Ended => ended,
        };
        wanted
            && self
                .older_than_ms
                .is_none_or(|age| now.saturating_sub(asked_at_ms) >= age)
    }
}

impl Listed {
    fn cursor(&self) -> ListCursor {
        ListCursor {
            asked_at_ms: std::cmp::Reverse(self.asked_at_ms),
            session: self.session.clone(),
            id: self.id.clone(),
        }
    }
}

impl Hub {
    /// One page of the requests `filter` asks for, and the cursor of the next page if there
    /// is more.
    ///
    /// # Errors
    /// A shared store could not be read.
    pub async fn list_requests(
        self: &Arc<Self>,
        filter: &ListFilter,
    ) -> Result<(Vec<Listed>, Option<String>), StoreError> {
        let now = now_ms();
        let wanted = |session: &SessionId| {
            filter
                .session_prefix
                .as_deref()
                .is_none_or(|prefix| session.as_str().starts_with(prefix))
        };
        let mut elsewhere = Vec::new();
        if let Some(shared) = self.shared() {
            let indexed = shared.asked_sessions().await?;
            let not_held: Vec<SessionId> = {
                let sessions = self.lock();
                indexed
                    .into_iter()
                    .filter(|session| wanted(session) && !sessions.contains_key(session))
                    .collect()
            };
            let read = futures_util::stream::iter(not_held)
                .map(|session| {
                    let shared = Arc::clone(&shared);
                    async move {
                        let records = shared.load_session(&session).await;
                        // This node holds no part of it: writing no presence only reads the
                        // others'.
                        let presence = shared
                            .presence(&session, Presence::default(), Vec::new())
                            .await
                            .map(|(presence, _)| presence);
                        (session, records.and_then(|r| presence.map(|p| (r, p))))
                    }
                })
                .buffer_unordered(SESSIONS_READ_AT_ONCE)
                .collect::<Vec<_>>()
                .await;
            for (session, read) in read {
                match read {
                    Ok((records, presence)) => elsewhere.extend(
                        records
                            .requests
                            .iter()
                            .filter_map(|record| listed_record(record, presence, filter, now)),
                    ),
                    // Left out of this page, not the page refused: the rest are worth seeing.
                    Err(error) => {
                        tracing::warn!(%session, %error, "a session was left out of the operator's listing");
                    }
                }
            }
        }
        let mut listed: Vec<Listed> = {
            let sessions = self.lock();
            sessions
                .values()
                .filter(|session| {
                    filter
                        .session_prefix
                        .as_deref()
                        .is_none_or(|prefix| session.id.as_str().starts_with(prefix))
                })
                .flat_map(|session| {
                    session
                        .requests
                        .values()
                        .filter_map(|entry| listed(session, entry, filter, now))
                })
                .collect()
        };
        listed.extend(elsewhere);
        listed.sort_by_cached_key(Listed::cursor);
        if let Some(after) = &filter.after {
            listed.retain(|request| request.cursor() > *after);
        }
        let limit = filter.limit.clamp(1, MAX_LISTED);
        let next = (listed.len() > limit).then(|| listed[limit - 1].cursor().encode());
        listed.truncate(limit);
        Ok((listed, next))
    }
}

/// How many sessions held by other nodes are read from the store at once.
const SESSIONS_READ_AT_ONCE: usize = 16;

/// A request of a session this node does not hold, as the store has it, if `filter` lists
/// it. Orphaning is not judged on a shared store (yet): `orphaned` is false.
fn listed_record(
    record: &StoredRequest,
    presence: Presence,
    filter: &ListFilter,
    now: u64,
) -> Option<Listed> {
    let ended = record.resolution.as_ref();
    if !filter.lists(ended.is_some(), false, record.asked_at_ms, now) {
        return None;
    }
    Some(Listed {
        session: record.session.to_string(),
        id: record.id.to_string(),
        dialect: record.dialect,
        title: record.title.clone(),
        asked_at_ms: record.asked_at_ms,
        deadline_ms: record.deadline_ms,
        answerers: crate::hub::request::answerers_now(
            record.answerers.as_deref(),
            &record.follow_ups,
        ),
        agent_online: presence.agent_online,
        orphaned: false,
        tabs_watching: presence.tabs,
        outcome: ended.map(|resolution| resolution.settlement.outcome),
        at_ms: ended.map(|resolution| resolution.at_ms),
    })
}

/// `entry` of `session` as listed, if `filter` lists it.
fn listed(session: &Session, entry: &Entry, filter: &ListFilter, now: u64) -> Option<Listed> {
    let (outcome, at_ms) = match &entry.state {
        EntryState::Open | EntryState::Resolving => (None, None),
        EntryState::Resolved(resolution) => {
            (Some(resolution.settlement.outcome), Some(resolution.at_ms))
        }
        EntryState::Committing => return None,
    };
    let orphaned = entry.orphaned_since_ms.is_some();
    if !filter.lists(outcome.is_some(), orphaned, entry.asked_at_ms, now) {
        return None;
    }
    let (tabs_watching, agent_online) = session.shown_presence();
    Some(Listed {
        session: session.id.to_string(),
        id: entry.id.to_string(),
        dialect: entry.questions.dialect(),
        title: entry.title.clone(),
        asked_at_ms: entry.asked_at_ms,
        deadline_ms: entry.deadline_ms,
        answerers: entry.answerers.as_deref().map(<[String]>::to_vec),
        agent_online,
        orphaned,
        tabs_watching,
        outcome,
        at_ms,
    })
}
