//! The flags that say where a gateway keeps its state, shared by `serve` and `audit`, so the
//! audit commands read a store exactly as `serve` was told to open it.

use std::path::PathBuf;

use clap::Args;

use crate::config::{DEFAULT_REDIS_PREFIX, StoreKind};

/// `--data-dir`, `--store`, `--redis-prefix` (each also an environment variable).
#[derive(Debug, Args)]
pub struct StoreFlags {
    /// Directory for durable state (the store and the secret).
    #[arg(
        long,
        hide_env_values = true,
        env = "ASKGATE_DATA_DIR",
        default_value = "askgate-data"
    )]
    pub data_dir: PathBuf,

    /// Where requests and outcomes are kept: `embedded` (durable, in the data directory),
    /// `memory` (lost on restart; for throwaway runs), or `redis://HOST:PORT[/DB]` /
    /// `rediss://...` (TLS): Redis, shared by any number of nodes.
    #[arg(long, hide_env_values = true, env = "ASKGATE_STORE", default_value_t = StoreKind::Embedded, value_name = "embedded|memory|redis://...")]
    pub store: StoreKind,

    /// What every key in Redis starts with, so several deployments can share one Redis.
    #[arg(long, hide_env_values = true, env = "ASKGATE_REDIS_PREFIX", default_value = DEFAULT_REDIS_PREFIX)]
    pub redis_prefix: String,
}
