//! The kept tables on Redis ([`KeptTable`]): a hash per table and key, read key by key by
//! whichever node needs it (the node that sends a request's last Slack update need not be
//! the one that posted its messages).

use super::Inner;
use super::lua::redis_error;
use crate::store::{KeptTable, StoreError, Verdict};

impl Inner {
    /// Sets a field under `key` of `table`, or deletes it (`None`).
    pub(super) async fn keep(
        &self,
        table: KeptTable,
        key: &str,
        field: &str,
        value: Option<&str>,
    ) -> Result<Verdict, StoreError> {
        let name = self.keys.kept(table, key);
        let mut command = match value {
            Some(value) => {
                let mut command = redis::cmd("HSET");
                command.arg(&name).arg(field).arg(value);
                command
            }
            None => {
                let mut command = redis::cmd("HDEL");
                command.arg(&name).arg(field);
                command
            }
        };
        self.command(&mut command, "writing a kept field").await?;
        if let (Some(expires_after), Some(_)) = (table.expires_after(field), value) {
            let mut expire = redis::cmd("PEXPIRE");
            expire
                .arg(&name)
                .arg(u64::try_from(expires_after.as_millis()).unwrap_or(u64::MAX));
            self.command(&mut expire, "setting a kept key's expiry")
                .await?;
        }
        Ok(Verdict::Done)
    }

    /// Deletes every field under `key` of `table`.
    pub(super) async fn unkeep(&self, table: KeptTable, key: &str) -> Result<Verdict, StoreError> {
        let mut command = redis::cmd("DEL");
        command.arg(self.keys.kept(table, key));
        self.command(&mut command, "deleting kept fields").await?;
        Ok(Verdict::Done)
    }

    /// Every field under `key` of `table`, with its value, sorted by field.
    pub(super) async fn kept(
        &self,
        table: KeptTable,
        key: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let mut conn = self.conn.clone();
        let started = std::time::Instant::now();
        let fields: Result<Vec<(String, String)>, _> = redis::cmd("HGETALL")
            .arg(self.keys.kept(table, key))
            .query_async(&mut conn)
            .await;
        self.metrics.shared.round_trip(started.elapsed());
        let mut fields = fields.map_err(|e| redis_error("reading kept fields", &e))?;
        fields.sort();
        Ok(fields)
    }

    async fn command(&self, command: &mut redis::Cmd, doing: &str) -> Result<(), StoreError> {
        let mut conn = self.conn.clone();
        let started = std::time::Instant::now();
        let done: Result<(), _> = command.query_async(&mut conn).await;
        self.metrics.shared.round_trip(started.elapsed());
        done.map_err(|e| redis_error(doing, &e))
    }
}
