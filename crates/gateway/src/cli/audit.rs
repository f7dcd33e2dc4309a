//! `askgate audit export` and `askgate audit verify`: a store's audit trails, read the way
//! `serve` opens the store (the same `--data-dir` / `--store` / `--redis-prefix`).
//!
//! The embedded store is one file a running gateway holds locked: stop it first, or read a
//! running gateway's trails over HTTP (`GET /v1/audit`). It is read read-only: never repaired,
//! its log never replayed or deleted, so checking a store does not change it (a store that
//! needs repair is read from a copy in a scratch directory beside it, removed at the end, on a
//! panic, and on SIGINT or SIGTERM). A Redis store is read live.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};

use askgate_protocol::SessionId;

use super::NotFound;
use super::store_flags::StoreFlags;
use crate::audit::chain::{AuditKey, ChainKey};
use crate::audit::checkpoint::{self, Checkpoint};
use crate::audit::verify::ChainCheck;
use crate::config::{StoreKind, check_redis_prefix};
use crate::metrics::Metrics;
use crate::store::redis::{RedisOptions, RedisStore};
use crate::store::{FILE_NAME, ReadOnlyTrails, Store, Trails};

/// Entries read from the store at a time.
const PAGE: usize = 1000;

/// What to do with the trails.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Write every entry of every trail (or of `--session`) as JSON lines, each session's
    /// oldest first, then one signed checkpoint per session (its last entry's seq and hash,
    /// signed with the Ed25519 key derived from the audit key).
    Export(AuditArgs),
    /// Check every chain; exit 1 naming, for each broken one, its first broken entry.
    Verify(VerifyArgs),
}

/// `audit verify`'s options.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Which store, as `serve` was given it.
    #[command(flatten)]
    pub audit: AuditArgs,

    /// Also check the checkpoints in FILE (an earlier export, or its checkpoint lines): each
    /// signature must hold, and the session's chain must reach that seq with that hash (a
    /// trail cut short or rewritten since fails).
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
}

/// Which store, as `serve` was given it.
// The doc comments here are `--help` text, where `<data-dir>` means a placeholder.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Where the store is, as given to `serve`.
    #[command(flatten)]
    pub stored: StoreFlags,

    /// Only this session's trail.
    #[arg(long)]
    pub session: Option<String>,

    /// The file holding the audit key the chains are sealed with, as given to `serve`.
    /// Default: <data-dir>/audit-key, if there is one. Without a key, keyed chains are checked
    /// for their shape, numbering and links only, and no checkpoint is written.
    #[arg(long, hide_env_values = true, env = "ASKGATE_AUDIT_KEY_FILE")]
    pub audit_key_file: Option<PathBuf>,
}

/// A store opened for its trails.
enum Opened {
    /// The embedded store, read-only.
    Embedded(Box<ReadOnlyTrails>),
    /// A store read live, and whether its chains are keyed.
    Shared(Arc<dyn Store>, bool),
}

impl Opened {
    fn trails(&self) -> &dyn Trails {
        match self {
            Opened::Embedded(trails) => trails.as_ref(),
            Opened::Shared(store, _) => store.trails(),
        }
    }

    fn keyed(&self) -> bool {
        match self {
            Opened::Embedded(trails) => trails.keyed,
            Opened::Shared(_, keyed) => *keyed,
        }
    }
}

async fn open(args: &AuditArgs, key: Option<&AuditKey>) -> anyhow::Result<Opened> {
    match &args.stored.store {
        StoreKind::Embedded => {
            let file = args.stored.data_dir.join(FILE_NAME);
            if !file.exists() {
                bail!(
                    "there is no store at {} (give the --data-dir serve was given)",
                    file.display()
                );
            }
            let key = key.cloned().map(Arc::new);
            let trails = ReadOnlyTrails::open(&args.stored.data_dir, key).with_context(|| {
                format!(
                    "opening {} read-only (a running gateway holds it: stop it, or read its trails with GET /v1/audit)",
                    file.display()
                )
            })?;
            Ok(Opened::Embedded(Box::new(trails)))
        }
        StoreKind::Memory => bail!("a memory store keeps nothing once its gateway stops"),
        StoreKind::Redis(url) => {
            check_redis_prefix(&args.stored.redis_prefix).map_err(anyhow::Error::msg)?;
            let options = RedisOptions {
                url: url.clone(),
                prefix: args.stored.redis_prefix.clone(),
                retention: Duration::from_secs(3600),
                audit_retention: Duration::from_secs(3600),
                presence_ttl: crate::store::shared::DEFAULT_PRESENCE_TTL,
                probe_silence: crate::store::redis::DEFAULT_PROBE_SILENCE,
            };
            let store = RedisStore::connect(&options, Arc::new(Metrics::default())).await?;
            if key.is_some() {
                store.refuse_unkeyed_trails().await?;
            }
            let keyed = store.chain_is_keyed().await?;
            Ok(Opened::Shared(store, keyed))
        }
    }
}

/// The sessions to read: every one with a trail, or `--session`'s (`known`: whether it must
/// have a trail in the store, else it is [`NotFound`]).
async fn sessions(
    trails: &dyn Trails,
    args: &AuditArgs,
    known: impl Fn(&SessionId) -> bool,
) -> anyhow::Result<Vec<SessionId>> {
    let stored = trails.audit_sessions().await?;
    match &args.session {
        Some(session) => {
            let id = SessionId::parse(session).map_err(|m| anyhow::anyhow!("--session: {m}"))?;
            if !stored.contains(&id) && !known(&id) {
                return Err(NotFound(format!(
                    "--session {session}: there is no such session: the store holds no audit \
                     trail for it ({} sessions have one)",
                    stored.len()
                ))
                .into());
            }
            Ok(vec![id])
        }
        None => Ok(stored),
    }
}

/// Calls `each` with every entry of `session`'s trail, oldest first.
async fn walk(
    trails: &dyn Trails,
    session: &SessionId,
    mut each: impl FnMut(&str) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let mut after = 0;
    loop {
        let lines = trails.audit(session, after, PAGE).await?;
        for line in &lines {
            if !each(line)? {
                return Ok(());
            }
        }
        if lines.len() < PAGE {
            return Ok(());
        }
        after += lines.len() as u64;
    }
}

/// Runs `askgate audit ...`.
///
/// # Errors
/// The store cannot be read, the output cannot be written, or (verify) a chain is broken.
pub async fn run(command: AuditCommand) -> anyhow::Result<()> {
    match command {
        AuditCommand::Export(args) => export(&args).await,
        AuditCommand::Verify(args) => verify(&args).await,
    }
}

fn key_of(args: &AuditArgs) -> anyhow::Result<Option<AuditKey>> {
    super::audit_key::for_audit(args.audit_key_file.as_deref(), &args.stored.data_dir)
}

async fn export(args: &AuditArgs) -> anyhow::Result<()> {
    let key = key_of(args)?;
    let opened = open(args, key.as_ref()).await?;
    let trails = opened.trails();
    let mut out = std::io::BufWriter::new(super::Stdout::new());
    let mut heads = Vec::new();
    for session in sessions(trails, args, |_| false).await? {
        let mut last = None;
        walk(trails, &session, |line| {
            writeln!(out, "{line}")?;
            last = Some(line.to_owned());
            Ok(true)
        })
        .await?;
        if let Some(line) = last {
            let read = crate::audit::read_line(&line).map_err(anyhow::Error::msg)?;
            heads.push((session, read.seq, read.hash.to_owned()));
        }
    }
    // The checkpoints close the export: whoever holds it can later show that the trails still
    // reach these heads, and with the public key alone that the checkpoints are genuine.
    match &key {
        Some(key) => {
            let now = crate::clock::now_ms();
            for (session, seq, hash) in heads {
                let signed = checkpoint::sign(key, session.as_str(), seq, &hash, now);
                writeln!(out, "{}", serde_json::to_string(&signed)?)?;
            }
        }
        None if !heads.is_empty() => eprintln!(
            "note: no audit key (--audit-key-file, or <data-dir>/audit-key): the export ends \
             without signed checkpoints"
        ),
        None => {}
    }
    out.flush()?;
    Ok(())
}

/// The checkpoints in `path`, by session (its other lines, entries of an export, skipped).
fn read_checkpoints(path: &std::path::Path) -> anyhow::Result<HashMap<String, Checkpoint>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the checkpoint file {}", path.display()))?;
    let mut found = HashMap::new();
    for (number, line) in (1..).zip(text.lines()) {
        if !line.starts_with(r#"{"checkpoint":"#) {
            continue;
        }
        let read: Checkpoint = serde_json::from_str(line)
            .with_context(|| format!("{} line {number}: not a checkpoint", path.display()))?;
        found.insert(read.session.clone(), read);
    }
    if found.is_empty() {
        bail!("{} holds no checkpoint line", path.display());
    }
    Ok(found)
}

async fn verify(args: &VerifyArgs) -> anyhow::Result<()> {
    let key = key_of(&args.audit)?;
    let opened = open(&args.audit, key.as_ref()).await?;
    let checkpoints = args
        .checkpoint
        .as_deref()
        .map(read_checkpoints)
        .transpose()?;
    let trails = opened.trails();
    let chain = match (opened.keyed(), &key) {
        (false, _) => Some(ChainKey::Unkeyed),
        (true, Some(key)) => Some(ChainKey::Keyed(Arc::new(key.clone()))),
        (true, None) => None,
    };
    // A session a checkpoint names is checked against it even with no trail left: that is a
    // trail cut short, not a typo.
    let in_checkpoints = |id: &SessionId| {
        checkpoints
            .as_ref()
            .is_some_and(|c| c.contains_key(id.as_str()))
    };
    let mut sessions = sessions(trails, &args.audit, in_checkpoints).await?;
    let mut broken = Vec::new();
    if let Some(checkpoints) = &checkpoints {
        let ours = key.as_ref().map(checkpoint::public_key_hex);
        for (session, signed) in checkpoints {
            let signer = match &ours {
                Some(ours) if *ours != signed.public_key => Err(format!(
                    "it is signed with public key {}, not this audit key's {ours}",
                    signed.public_key
                )),
                _ => signed.check_signature(),
            };
            if let Err(why) = signer {
                broken.push(format!("checkpoint of session {session}: {why}"));
            }
            let id = SessionId::parse(session)
                .map_err(|m| anyhow::anyhow!("a checkpoint's session: {m}"))?;
            if args.audit.session.is_none() && !sessions.contains(&id) {
                sessions.push(id);
            }
        }
    }
    let mut entries = 0;
    for session in &sessions {
        let mut check = ChainCheck::with_key(session.as_str(), chain.clone());
        let mut first_broken = None;
        let wanted = checkpoints.as_ref().and_then(|c| c.get(session.as_str()));
        let mut reached = None;
        walk(trails, session, |line| match check.next(line) {
            Ok(()) => {
                if wanted.is_some_and(|w| w.last_seq == check.checked()) {
                    reached = Some(check.last_hash().to_owned());
                }
                Ok(true)
            }
            Err(error) => {
                first_broken = Some(error);
                Ok(false)
            }
        })
        .await?;
        entries += check.checked();
        broken.extend(first_broken.map(|b| b.to_string()));
        if let Some(wanted) = wanted {
            match reached {
                Some(hash) if hash == wanted.last_hash => {}
                Some(hash) => broken.push(format!(
                    "session {session}: entry seq {} has hash {hash}, but the checkpoint signed \
                     {}: the trail was rewritten since",
                    wanted.last_seq, wanted.last_hash
                )),
                None => broken.push(format!(
                    "session {session}: the trail holds {} good entries, but the checkpoint \
                     signed seq {}: it was cut short (or broken before) since",
                    check.checked(),
                    wanted.last_seq
                )),
            }
        }
    }
    let mut damage = None;
    if let Opened::Embedded(read) = &opened {
        if let Some(why) = &read.copied_because {
            eprintln!("note: {why}");
        }
        damage.clone_from(&read.damage);
    }
    match (&chain, opened.keyed()) {
        (Some(_), true) => {}
        (None, _) => eprintln!(
            "note: the chains are keyed and no audit key was given (--audit-key-file): their \
             shape, numbering and links were checked, not their hashes"
        ),
        (Some(_), false) => eprintln!(
            "note: the chains are unkeyed SHA-256 (sealed before audit keys): they show \
             accidental damage only, not a rewrite by someone who can write the store"
        ),
    }
    if let Some(checkpoints) = &checkpoints {
        let keys: std::collections::BTreeSet<&str> = checkpoints
            .values()
            .map(|c| c.public_key.as_str())
            .collect();
        let keys: Vec<&str> = keys.into_iter().collect();
        println!("checkpoints signed by public key {}", keys.join(", "));
    }
    if broken.is_empty() && damage.is_none() {
        if chain.is_none() {
            println!(
                "{} sessions, {entries} entries: every chain's links hold (hashes not checked: \
                 no audit key)",
                sessions.len()
            );
        } else {
            println!(
                "{} sessions, {entries} entries: every chain holds",
                sessions.len()
            );
        }
        return Ok(());
    }
    if let Some(damage) = damage {
        println!("damaged: {damage}; see `askgate store check`");
        if broken.is_empty() {
            bail!(
                "every chain redb holds holds ({} sessions, {entries} entries), but the store's \
                 log is damaged: what it held past the damage is missing from the trails",
                sessions.len()
            );
        }
    }
    for error in &broken {
        println!("broken: {error}");
    }
    if checkpoints.is_some() {
        bail!(
            "{} of the checks above failed ({} sessions); for a chain, its first broken entry \
             is named",
            broken.len(),
            sessions.len()
        )
    }
    bail!(
        "{} of {} audit trails are broken; the first broken entry of each is named above",
        broken.len(),
        sessions.len()
    )
}
