//! Where inboxes find requests in sessions their node does not hold: an index per person and
//! per group (`{prefix}{inbox}:to:{name}`, a sorted set of sessions scored by when a request
//! there was for them or they began to follow it), and a channel every node hears such news
//! on. Each index keeps its newest [`INBOX_INDEX_SESSIONS`]; an entry whose requests have
//! ended costs an inbox one load of a session with nothing for it, and no more. Entries are
//! only moved later (`ZADD GT`): a node whose clock runs behind another's does not push a
//! session it has just written down the index, below ones that are older.
//!
//! The operator's listing of requests finds sessions the same way, in one index of the
//! sessions asked in (`{prefix}{inbox}:asked`), the newest [`LISTED_SESSIONS`] kept.
//!
//! Written by the node that stored the change (the asked index just before the ask's script,
//! in the same write on one server; the inbox indexes after the script that stored it): an
//! index is where to look, never what is shown (the session, loaded, is), so that it lags or
//! holds a stale entry changes nothing an inbox or the listing shows.

use askgate_protocol::SessionId;

use super::Inner;
use super::lua::Index;
use crate::clock::now_ms;
use crate::store::StoreError;
use crate::store::shared::{INBOX_INDEX_SESSIONS, LISTED_SESSIONS};

impl Inner {
    pub(super) async fn addressed(
        &self,
        session: &SessionId,
        names: &[String],
    ) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        let at_ms = now_ms();
        for name in names {
            let entry = Index {
                key: self.keys.inbox_index(name),
                mode: "GT",
                score: at_ms,
                member: session.as_str().to_owned(),
                keep_newest: Some(INBOX_INDEX_SESSIONS),
            };
            for command in entry.commands() {
                pipe.add_command(command).ignore();
            }
            pipe.cmd(self.publish)
                .arg(self.keys.inbox_channel())
                .arg(format!("{}\n{name}", session.as_str()))
                .ignore();
        }
        let mut conn = self.conn.clone();
        pipe.query_async::<()>(&mut conn)
            .await
            .map_err(|e| StoreError::unavailable(format!("redis, noting an inbox's session: {e}")))
    }

    pub(super) async fn inbox_sessions(
        &self,
        names: &[String],
    ) -> Result<Vec<SessionId>, StoreError> {
        let mut pipe = redis::pipe();
        for name in names {
            pipe.cmd("ZRANGE")
                .arg(self.keys.inbox_index(name))
                .arg(0)
                .arg(-1);
        }
        let mut conn = self.conn.clone();
        let found: Vec<Vec<String>> = pipe.query_async(&mut conn).await.map_err(|e| {
            StoreError::unavailable(format!("redis, reading an inbox's sessions: {e}"))
        })?;
        let mut sessions: Vec<SessionId> = found
            .into_iter()
            .flatten()
            .filter_map(|id| SessionId::parse(&id).ok())
            .collect();
        sessions.sort();
        sessions.dedup();
        Ok(sessions)
    }

    /// The operator listing's index entry for `session`, asked in now: the ask's script is
    /// sent with it (decisions.rs).
    pub(super) fn asked_index(&self, session: &SessionId) -> Index {
        Index {
            key: self.keys.asked_index(),
            mode: "GT",
            score: now_ms(),
            member: session.as_str().to_owned(),
            keep_newest: Some(LISTED_SESSIONS),
        }
    }

    pub(super) async fn asked_sessions(&self) -> Result<Vec<SessionId>, StoreError> {
        let mut conn = self.conn.clone();
        let found: Vec<String> = redis::cmd("ZRANGE")
            .arg(self.keys.asked_index())
            .arg(0)
            .arg(-1)
            .arg("REV")
            .query_async(&mut conn)
            .await
            .map_err(|e| {
                StoreError::unavailable(format!("redis, reading the sessions asked in: {e}"))
            })?;
        Ok(found
            .into_iter()
            .filter_map(|id| SessionId::parse(&id).ok())
            .collect())
    }
}
