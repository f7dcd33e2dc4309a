//! `askgate config check FILE` and `askgate config example`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;

use super::{example, merge};

/// `askgate config`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Check a config file as `serve --config FILE` would, without starting: every key known,
    /// every value of its type and range, the settings consistent (files they name are read;
    /// nothing is bound, opened or created). Prints `FILE: ok`, or each fault with its line;
    /// the exit code is 2 on a fault. The environment is left out: the file is checked.
    Check {
        /// The config file (TOML).
        file: PathBuf,
    },
    /// Print a config file with every `serve` setting, its help as comments and its default
    /// (settings without one commented out), made from the flags themselves.
    Example,
}

/// Runs `askgate config ...`: the exit code.
pub(in crate::cli) fn run(command: ConfigCommand) -> ExitCode {
    match command {
        ConfigCommand::Check { file } => match check(&file) {
            Ok(()) => {
                println!("{}: ok", file.display());
                ExitCode::SUCCESS
            }
            Err(faults) => {
                for fault in faults {
                    eprintln!("{fault}");
                }
                ExitCode::from(merge::Invalid::EXIT_CODE)
            }
        },
        ConfigCommand::Example => {
            let text = example::render(&super::keys::serve_command());
            match super::super::Stdout::new().write_all(text.as_bytes()) {
                Ok(()) => ExitCode::SUCCESS,
                // A reader that stopped (`| head`) had what it wanted.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("askgate: writing the example: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// The faults of the config file at `path`, as `serve --config` would find them before it
/// binds or opens anything.
///
/// # Errors
/// Each fault, one a line, with the file and (where it has one) the line.
pub(super) fn check(path: &Path) -> Result<(), Vec<String>> {
    let args = merge::file_alone(path)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| vec![format!("starting the async runtime: {e}")])?;
    runtime
        .block_on(args.check())
        .map_err(|error| match args.from_file.locate(error) {
            located if located.is::<merge::Invalid>() => vec![format!("{located:#}")],
            other => vec![format!("{}: {other:#}", path.display())],
        })
}
