//! `askgate audit export` and `askgate audit verify`: a store's audit trails, read the way
//! `serve` opens the store (the same `--data-dir` / `--store` / `--redis-prefix`).
//!
//! The embedded store is one file a running gateway holds locked: stop it first, or read a
//! running gateway's trails over HTTP (`GET /v1/audit`). It is read read-only: never repaired,
//! its log never replayed or deleted, so checking a store does not change it. A Redis store is
//! read live.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};

use askgate_protocol::SessionId;

use super::store_flags::StoreFlags;
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
    /// oldest first.
    Export(AuditArgs),
    /// Check every chain; exit 1 naming, for each broken one, its first broken entry.
    Verify(AuditArgs),
}

/// Which store, as `serve` was given it.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Where the store is, as given to `serve`.
    #[command(flatten)]
    pub stored: StoreFlags,

    /// Only this session's trail.
    #[arg(long)]
    pub session: Option<String>,
}

/// A store opened for its trails.
enum Opened {
    /// The embedded store, read-only.
    Embedded(Box<ReadOnlyTrails>),
    /// A store read live.
    Shared(Arc<dyn Store>),
}

impl Opened {
    fn trails(&self) -> &dyn Trails {
        match self {
            Opened::Embedded(trails) => trails.as_ref(),
            Opened::Shared(store) => store.trails(),
        }
    }
}

async fn open(args: &AuditArgs) -> anyhow::Result<Opened> {
    match &args.stored.store {
        StoreKind::Embedded => {
            let file = args.stored.data_dir.join(FILE_NAME);
            if !file.exists() {
                bail!(
                    "there is no store at {} (give the --data-dir serve was given)",
                    file.display()
                );
            }
            let trails = ReadOnlyTrails::open(&args.stored.data_dir).with_context(|| {
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
            };
            let store = RedisStore::connect(&options, Arc::new(Metrics::default())).await?;
            Ok(Opened::Shared(store))
        }
    }
}

async fn sessions(trails: &dyn Trails, args: &AuditArgs) -> anyhow::Result<Vec<SessionId>> {
    match &args.session {
        Some(session) => Ok(vec![
            SessionId::parse(session).map_err(|m| anyhow::anyhow!("--session: {m}"))?,
        ]),
        None => Ok(trails.audit_sessions().await?),
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

async fn export(args: &AuditArgs) -> anyhow::Result<()> {
    let opened = open(args).await?;
    let trails = opened.trails();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for session in sessions(trails, args).await? {
        walk(trails, &session, |line| {
            writeln!(out, "{line}")?;
            Ok(true)
        })
        .await?;
    }
    out.flush()?;
    Ok(())
}

async fn verify(args: &AuditArgs) -> anyhow::Result<()> {
    let opened = open(args).await?;
    let trails = opened.trails();
    let sessions = sessions(trails, args).await?;
    let (mut entries, mut broken) = (0, Vec::new());
    for session in &sessions {
        let mut check = ChainCheck::new(session.as_str());
        let mut first_broken = None;
        walk(trails, session, |line| match check.next(line) {
            Ok(()) => Ok(true),
            Err(error) => {
                first_broken = Some(error);
                Ok(false)
            }
        })
        .await?;
        entries += check.checked();
        broken.extend(first_broken);
    }
    let mut damage = None;
    if let Opened::Embedded(read) = &opened {
        if let Some(why) = &read.copied_because {
            eprintln!("note: {why}");
        }
        damage.clone_from(&read.damage);
    }
    if broken.is_empty() && damage.is_none() {
        println!(
            "{} sessions, {entries} entries: every chain holds",
            sessions.len()
        );
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
    bail!(
        "{} of {} audit trails are broken; the first broken entry of each is named above",
        broken.len(),
        sessions.len()
    )
}
