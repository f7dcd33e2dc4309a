//! The audit key: the secret audit chains are keyed with (HMAC-SHA256), read from
//! `--audit-key-file`, or for the embedded store without it, generated into the data directory
//! on first start and reused, with a warning at each start that a key beside the data proves
//! less. A Redis store without it is refused: there is no data directory, and every node must
//! seal with the same key.
//!
//! A store given a key (either way) refuses to be marked unkeyed while it holds trails: the
//! mark is in the store, and whoever can write the store could otherwise undo the key. So no
//! key is made for a store that holds trails sealed before audit keys: it stays unkeyed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};

use crate::audit::chain::AuditKey;
use crate::config::StoreKind;

/// The key file generated in a data directory when no `--audit-key-file` is given.
pub const GENERATED_KEY_FILE: &str = "audit-key";

/// Reads the key in `path`.
///
/// # Errors
/// The file cannot be read or does not hold exactly 64 hex digits (and perhaps a newline).
pub fn read_key_file(path: &Path) -> anyhow::Result<AuditKey> {
    let text = std::fs::read(path)
        .with_context(|| format!("reading the audit key file {}", path.display()))?;
    AuditKey::parse(&text)
        .map_err(|why| anyhow::anyhow!("the audit key file {}: {why}", path.display()))
}

/// The key `serve` seals with: `given`'s, or the data directory's (made on first start).
///
/// # Errors
/// A key file is malformed or cannot be read or made; Redis without `--audit-key-file`.
pub fn for_serve(
    given: Option<&Path>,
    store: &StoreKind,
    data_dir: &Path,
) -> anyhow::Result<Option<Arc<AuditKey>>> {
    if let Some(path) = given {
        return read_key_file(path).map(|key| Some(Arc::new(key)));
    }
    match store {
        StoreKind::Memory => Ok(None),
        StoreKind::Redis(_) => bail!(
            "a Redis store needs --audit-key-file (ASKGATE_AUDIT_KEY_FILE): the audit chain is \
             keyed with a secret Redis does not hold, the same file on every node (64 hex \
             digits: `openssl rand -hex 32`)"
        ),
        StoreKind::Embedded => {
            let path = data_dir.join(GENERATED_KEY_FILE);
            let key = if path.exists() {
                read_key_file(&path)?
            } else if crate::store::holds_unkeyed_trails(data_dir)? {
                // Its trails go on unkeyed (the store warns so): a key made now would only
                // refuse them at the next start.
                return Ok(None);
            } else {
                let key = AuditKey::random();
                std::fs::create_dir_all(data_dir).with_context(|| {
                    format!("creating the data directory {}", data_dir.display())
                })?;
                super::serve::write_private(&path, format!("{}\n", key.to_hex()).as_bytes())
                    .with_context(|| format!("creating the audit key file {}", path.display()))?;
                key
            };
            tracing::warn!(
                key = %path.display(),
                "the audit chain is keyed with a key kept beside the data: it shows a rewrite by someone who can write the store but not read this file, not by someone who can read the data directory. Give --audit-key-file a key kept elsewhere"
            );
            Ok(Some(Arc::new(key)))
        }
    }
}

/// The key `audit` checks and signs with: `given`'s, or the data directory's if it has one.
///
/// # Errors
/// A key file is malformed or cannot be read.
pub fn for_audit(given: Option<&Path>, data_dir: &Path) -> anyhow::Result<Option<AuditKey>> {
    let path: PathBuf = match given {
        Some(path) => path.to_owned(),
        None => {
            let path = data_dir.join(GENERATED_KEY_FILE);
            if !path.exists() {
                return Ok(None);
            }
            path
        }
    };
    read_key_file(&path).map(Some)
}
