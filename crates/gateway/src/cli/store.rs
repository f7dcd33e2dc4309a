//! `askgate store check`: what a store's log holds and whether it is damaged, read without
//! changing anything (the gateway refuses to start on a damaged log; this says why and what
//! `serve --recover-damaged-log` would keep and lose).

use std::path::PathBuf;

use anyhow::bail;
use clap::{Args, Subcommand};

use super::store_flags::StoreFlags;
use crate::config::StoreKind;

/// What to do with the store.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Read the embedded store read-only and report its damage: exit 0 when the gateway
    /// starts on it as it is, 1 when its log is damaged (naming file, byte and record).
    Check(StoreArgs),
}

/// Which store, as `serve` was given it.
// The doc comments here are `--help` text, where `<data-dir>` means a placeholder.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Where the store is, as given to `serve`.
    #[command(flatten)]
    pub stored: StoreFlags,

    /// The file holding the audit key, as given to `serve`: on a store whose audit chains are
    /// keyed, each log record carries a MAC under it, checked here. Default:
    /// <data-dir>/audit-key, if there is one.
    #[arg(long, hide_env_values = true, env = "ASKGATE_AUDIT_KEY_FILE")]
    pub audit_key_file: Option<PathBuf>,
}

/// Runs `askgate store ...`.
///
/// # Errors
/// The store cannot be read, or it is damaged.
pub fn run(command: StoreCommand) -> anyhow::Result<()> {
    let StoreCommand::Check(args) = command;
    match &args.stored.store {
        StoreKind::Embedded => {}
        StoreKind::Memory => bail!("a memory store keeps nothing to check"),
        StoreKind::Redis(_) => bail!(
            "`store check` reads the embedded store's log; Redis keeps its own files (check \
             them with redis-check-aof and redis-check-rdb)"
        ),
    }
    if !args.stored.data_dir.is_dir() {
        bail!(
            "there is no data directory {} (give the --data-dir serve was given)",
            args.stored.data_dir.display()
        );
    }
    let key = super::audit_key::for_audit(args.audit_key_file.as_deref(), &args.stored.data_dir)?;
    let checked = crate::store::check_durable(&args.stored.data_dir, key.as_ref())?;
    print!("{}", checked.report);
    if checked.damaged {
        bail!("the store's log is damaged (above)");
    }
    Ok(())
}
