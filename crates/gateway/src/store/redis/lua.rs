//! Running the Lua scripts: each loaded once (and again by `EVALSHA`'s fallback when Redis
//! forgot them), timed for the metrics, and on one server sent in the same write as the index
//! entries they rely on.

use redis::Script;

use super::Inner;
use crate::store::StoreError;

/// The scripts, loaded once (and again by `EVALSHA`'s fallback when Redis forgot them).
pub(super) struct Scripts {
    pub(super) ask: Script,
    pub(super) resolve: Script,
    pub(super) forget: Script,
    pub(super) session: Script,
    pub(super) claim: Script,
    pub(super) unclaim: Script,
    pub(super) presence: Script,
    pub(super) note: Script,
    pub(super) follow_up: Script,
    pub(super) follow: Script,
    pub(super) vote: Script,
}

/// A script that seals audit entries: SHA-256 and the chain in front of its own text.
macro_rules! with_chain {
    ($file:literal) => {
        concat!(
            include_str!("scripts/sha256.lua"),
            include_str!("scripts/chain.lua"),
            include_str!($file)
        )
    };
}
impl Scripts {
    pub(super) fn new() -> Scripts {
        Scripts {
            ask: Script::new(with_chain!("scripts/ask.lua")),
            resolve: Script::new(with_chain!("scripts/resolve.lua")),
            forget: Script::new(with_chain!("scripts/forget.lua")),
            note: Script::new(with_chain!("scripts/note.lua")),
            follow_up: Script::new(with_chain!("scripts/follow_up.lua")),
            follow: Script::new(with_chain!("scripts/follow.lua")),
            vote: Script::new(with_chain!("scripts/vote.lua")),
            session: Script::new(include_str!("scripts/session.lua")),
            claim: Script::new(include_str!("scripts/claim.lua")),
            unclaim: Script::new(include_str!("scripts/unclaim.lua")),
            presence: Script::new(include_str!("scripts/presence.lua")),
        }
    }
}

/// One entry of a sorted set nodes look things up in: `ZADD key mode score member`.
pub(super) struct Index {
    pub(super) key: String,
    /// `LT` (only bring it forward) or `GT` (only push it later).
    pub(super) mode: &'static str,
    pub(super) score: u64,
    pub(super) member: String,
    /// Keep only the entries with the highest scores, this many (`ZREMRANGEBYRANK`); `None`
    /// for an index of every entry.
    pub(super) keep_newest: Option<usize>,
}

impl Index {
    /// The commands that write it.
    pub(super) fn commands(&self) -> impl Iterator<Item = redis::Cmd> {
        let mut add = redis::cmd("ZADD");
        add.arg(&self.key)
            .arg(self.mode)
            .arg(self.score)
            .arg(&self.member);
        let trim = self.keep_newest.map(|bound| {
            let mut trim = redis::cmd("ZREMRANGEBYRANK");
            // Ranks 0 up to the count past the bound are the lowest scored.
            trim.arg(&self.key)
                .arg(0)
                .arg(-i64::try_from(bound).unwrap_or(i64::MAX) - 1);
            trim
        });
        std::iter::once(add).chain(trim)
    }
}

pub(super) fn redis_error(doing: &str, error: &redis::RedisError) -> StoreError {
    StoreError::unavailable(format!("redis unavailable while {doing}: {error}"))
}

impl Inner {
    /// Runs `script` with its keys and arguments, timing it for the metrics.
    pub(super) async fn run<T: redis::FromRedisValue>(
        &self,
        doing: &str,
        invocation: &mut redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        let started = std::time::Instant::now();
        let mut conn = self.conn.clone();
        let result = invocation.invoke_async(&mut conn).await;
        self.metrics.shared.round_trip(started.elapsed());
        result.map_err(|e| redis_error(doing, &e))
    }

    /// Writes `indexes` (entries of the sorted sets nodes look things up in), then runs
    /// `script`. On one server all go in one write (a pipeline: Redis runs them in order, so
    /// the entries are there before the script's change is), saving the round trip an answer
    /// would otherwise wait for; on a Cluster the keys are in different slots, so the entries
    /// go together and the script after them.
    pub(super) async fn index_then_run<T: redis::FromRedisValue>(
        &self,
        doing: &str,
        indexes: &[Index],
        script: &mut redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        if indexes.is_empty() {
            return self.run(doing, script).await;
        }
        if self.conn.is_cluster() {
            // In slots of their own: written all at once, then the script.
            futures_util::future::try_join_all(indexes.iter().map(|index| self.index(index)))
                .await?;
            return self.run(doing, script).await;
        }
        let mut pipe = redis::pipe();
        for command in indexes.iter().flat_map(Index::commands) {
            pipe.add_command(command).ignore();
        }
        pipe.invoke_script(script);
        let started = std::time::Instant::now();
        let mut conn = self.conn.clone();
        let result: redis::RedisResult<(T,)> = pipe.query_async(&mut conn).await;
        self.metrics.shared.round_trip(started.elapsed());
        match result {
            Ok((reply,)) => Ok(reply),
            // Redis does not have the script (it restarted): the entries are in; load and run it.
            Err(error)
                if error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
            {
                self.run(doing, script).await
            }
            Err(error) => Err(redis_error(doing, &error)),
        }
    }

    /// Writes one index entry.
    pub(super) async fn index(&self, index: &Index) -> Result<(), StoreError> {
        let started = std::time::Instant::now();
        let mut conn = self.conn.clone();
        let mut pipe = redis::pipe();
        for command in index.commands() {
            pipe.add_command(command).ignore();
        }
        let result: Result<(), _> = pipe.query_async(&mut conn).await;
        self.metrics.shared.round_trip(started.elapsed());
        result.map_err(|e| redis_error("writing an index", &e))
    }
}
