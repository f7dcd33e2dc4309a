//! One Redis connection for commands, standalone or Cluster, found out at start: a server
//! that says `cluster_enabled:1` is used through the Cluster client (every command routed by
//! its first key's slot; session keys share one slot, so each script runs whole on one
//! primary), with sharded pub/sub (`SPUBLISH`, `SSUBSCRIBE`, Redis 7).

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{Client, Cmd, Pipeline, PushInfo, RedisFuture, Value};
use tokio::sync::mpsc;

use crate::store::StoreError;

/// A connection for commands.
#[derive(Clone)]
pub(super) enum Conn {
    /// One server (reconnects by itself).
    Single(ConnectionManager),
    /// A Cluster (follows its slots, reconnects by itself).
    Cluster(ClusterConnection),
}

/// What the subscriber connects with.
pub(super) enum Subscribing {
    /// Its own pub/sub connection to the one server.
    Single(Box<Client>),
    /// A Cluster connection of its own whose pushes (sharded messages, resubscriptions) come
    /// through the receiver.
    Cluster(ClusterConnection, mpsc::UnboundedReceiver<PushInfo>),
}

impl Conn {
    /// Connects to the server at `url`, as a Cluster if it is one; and what to subscribe with.
    pub(super) async fn open(
        url: &str,
        timeout: Duration,
    ) -> Result<(Conn, Subscribing), StoreError> {
        let shown = super::redact(url);
        let client =
            Client::open(url).map_err(|e| StoreError::refused(format!("--store {shown}: {e}")))?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let mut single = tokio::time::timeout(
            timeout * 2,
            client.get_connection_manager_with_config(config),
        )
        .await
        .map_err(|_| StoreError::unavailable(format!("redis at {shown} did not answer")))?
        .map_err(|e| StoreError::unavailable(format!("redis at {shown}: {e}")))?;
        let info: String = redis::cmd("INFO")
            .arg("cluster")
            .query_async(&mut single)
            .await
            .map_err(|e| StoreError::unavailable(format!("redis at {shown}: {e}")))?;
        if !info.lines().any(|line| line.trim() == "cluster_enabled:1") {
            return Ok((Conn::Single(single), Subscribing::Single(Box::new(client))));
        }
        let cluster = |pushes: Option<mpsc::UnboundedSender<PushInfo>>| async {
            let mut builder = ClusterClientBuilder::new(vec![url])
                .connection_timeout(timeout)
                .response_timeout(timeout)
                .retries(2);
            if let Some(pushes) = pushes {
                builder = builder
                    .use_protocol(redis::ProtocolVersion::RESP3)
                    .push_sender(pushes);
            }
            let client = builder
                .build()
                .map_err(|e| StoreError::unavailable(format!("redis cluster at {shown}: {e}")))?;
            tokio::time::timeout(timeout * 2, client.get_async_connection())
                .await
                .map_err(|_| {
                    StoreError::unavailable(format!("redis cluster at {shown} did not answer"))
                })?
                .map_err(|e| StoreError::unavailable(format!("redis cluster at {shown}: {e}")))
        };
        let commands = cluster(None).await?;
        let (pushes, received) = mpsc::unbounded_channel();
        let subscriptions = cluster(Some(pushes)).await?;
        Ok((
            Conn::Cluster(commands),
            Subscribing::Cluster(subscriptions, received),
        ))
    }

    /// Whether this is a Cluster.
    pub(super) fn is_cluster(&self) -> bool {
        matches!(self, Conn::Cluster(_))
    }

    /// The command that publishes a session's notice: sharded on a Cluster, so that a script
    /// may publish to its own slot's channel.
    pub(super) fn publish_command(&self) -> &'static str {
        if self.is_cluster() {
            "SPUBLISH"
        } else {
            "PUBLISH"
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(conn) => conn.req_packed_command(cmd),
            Conn::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(conn) => conn.get_db(),
            Conn::Cluster(conn) => conn.get_db(),
        }
    }
}
