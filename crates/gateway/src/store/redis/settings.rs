//! What a node checks of Redis at start: the settings "nothing accepted is lost" rests on, and
//! the viewer-link secret every node of a deployment shares.

use super::conn::Conn;

use crate::store::StoreError;

/// The durability settings a node found, and what each lacks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Durability {
    /// Plain-words warnings, one per missing setting; empty when all is as needed.
    pub warnings: Vec<String>,
}

/// Reads the server's settings.
pub(super) async fn read(conn: &mut Conn) -> Result<Durability, StoreError> {
    let mut warnings = Vec::new();
    match config_get(conn, "maxmemory-policy").await? {
        Some(policy) if policy == "noeviction" => {}
        Some(policy) => warnings.push(format!(
            "redis evicts keys under memory pressure (maxmemory-policy {policy}): it may silently drop open requests and outcomes; set maxmemory-policy noeviction"
        )),
        None => warnings.push(CONFIG_REFUSED.replace("SETTING", "maxmemory-policy")),
    }
    match config_get(conn, "appendonly").await? {
        Some(on) if on == "yes" => match config_get(conn, "appendfsync").await? {
            Some(policy) if policy == "always" => {}
            Some(policy) if policy == "everysec" => warnings.push(
                "redis syncs its append-only file once a second (appendfsync everysec): a power loss can undo up to a second of answers people were told were taken; set appendfsync always".to_owned(),
            ),
            Some(policy) => warnings.push(format!(
                "redis leaves syncing its append-only file to the kernel (appendfsync {policy}): a power loss can undo up to about 30 s of answers; set appendfsync always"
            )),
            None => warnings.push(CONFIG_REFUSED.replace("SETTING", "appendfsync")),
        },
        Some(_) => warnings.push(
            "redis keeps no append-only file (appendonly no): a restart of redis loses every open request and outcome since its last snapshot; set appendonly yes and appendfsync always".to_owned(),
        ),
        None => warnings.push(CONFIG_REFUSED.replace("SETTING", "appendonly")),
    }
    Ok(Durability { warnings })
}

const CONFIG_REFUSED: &str = "redis would not say its SETTING (CONFIG GET refused): askgate cannot tell whether nothing is lost";

/// One setting, or `None` if the server refuses `CONFIG GET` (managed services rename it).
async fn config_get(conn: &mut Conn, name: &str) -> Result<Option<String>, StoreError> {
    let reply: redis::RedisResult<Vec<String>> = redis::cmd("CONFIG")
        .arg("GET")
        .arg(name)
        .query_async(conn)
        .await;
    match reply {
        Ok(pair) => Ok(pair.into_iter().nth(1)),
        Err(error) if error.kind() == redis::ErrorKind::Io => Err(StoreError::unavailable(
            format!("redis unavailable while reading its settings: {error}"),
        )),
        Err(_) => Ok(None),
    }
}

/// The secret under `key`, created (32 random bytes, hex) by the first node to ask.
pub(super) async fn shared_secret(conn: &mut Conn, key: &str) -> Result<Vec<u8>, StoreError> {
    let fresh: String = rand::random::<[u8; 32]>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let failed = |e: redis::RedisError| {
        StoreError::unavailable(format!(
            "redis unavailable while reading the shared secret: {e}"
        ))
    };
    let _: Option<String> = redis::cmd("SET")
        .arg(key)
        .arg(&fresh)
        .arg("NX")
        .query_async(conn)
        .await
        .map_err(failed)?;
    let secret: String = redis::cmd("GET")
        .arg(key)
        .query_async(conn)
        .await
        .map_err(failed)?;
    Ok(secret.into_bytes())
}

/// Says what the settings lack; `Err` (refusing to start) if `strict` and anything does.
///
/// # Errors
/// `strict` and at least one warning: the message lists them.
pub fn check_durability(durability: &Durability, strict: bool) -> Result<(), String> {
    for warning in &durability.warnings {
        tracing::warn!("{warning}");
    }
    if strict && !durability.warnings.is_empty() {
        return Err(format!(
            "--strict-durability: refusing to start: {}",
            durability.warnings.join("; ")
        ));
    }
    Ok(())
}
