//! `serve --config FILE`: the file's settings merged under the command line. A flag given on
//! the command line, or its environment variable, wins; the file's value comes next; the
//! flag's built-in default last.
//!
//! How: the command line is parsed once as it is; clap's `value_source` then tells which flags
//! the command line or the environment gave. The file's settings for every other flag are put
//! after the real arguments as `--flag=value` words, and the whole is parsed again, so every
//! value goes through the same definitions whichever way it came.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{ArgMatches, Command, FromArgMatches as _};

use super::file::{self, clap_reason};
use super::keys::{self, CONFIG_ARG, GROUPS_KEY};
use crate::cli::Cli;

/// A config file's fault, located in it: the exit code is 2, as for any other misuse, apart
/// from 1 (the command ran and failed).
#[derive(Debug)]
pub struct Invalid(pub String);

impl Invalid {
    /// The exit code.
    pub const EXIT_CODE: u8 = 2;
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

/// What `serve` took from its config file beyond flag values: the groups of its `[groups]`
/// table, and where each setting it used is in the file, so that a fault found later (a limit
/// `to_config` refuses) is named at its line. Empty without a file.
#[derive(Clone, Debug, Default)]
pub struct FromFile {
    /// The file, as it was named.
    path: PathBuf,
    /// The groups of its `[groups]` table.
    pub groups: Vec<(String, Vec<String>)>,
    /// Each setting the file gave and the command line did not: (long name, line, key path).
    origins: Vec<(String, usize, String)>,
}

impl FromFile {
    /// `error`, located in the file when the flag it names first (`--max-frame-bytes must
    /// be...`) took its value from there; as it was otherwise.
    pub fn locate(&self, error: anyhow::Error) -> anyhow::Error {
        let message = format!("{error:#}");
        let Some(flag) = first_flag(&message) else {
            return error;
        };
        match self.origins.iter().find(|(long, _, _)| long == flag) {
            Some((_, line, path)) => anyhow::Error::new(Invalid(format!(
                "{}:{line}: {path}: {message}",
                self.path.display()
            ))),
            None => error,
        }
    }
}

/// The long name of the first `--flag` in `message`.
fn first_flag(message: &str) -> Option<&str> {
    let at = message.find("--")?;
    let rest = &message[at + 2..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(rest.len());
    Some(&rest[..end]).filter(|flag| !flag.is_empty())
}

/// Why a command line could not be taken.
#[derive(Debug)]
pub(in crate::cli) enum Refused {
    /// Clap's own refusal (or `--help`), to be shown and exited on as clap does.
    Clap(clap::Error),
    /// The config file's faults, one a line.
    File(Vec<String>),
}

/// The command line `argv`, with the settings of a `--config` file (or `ASKGATE_CONFIG`)
/// where the command line and the environment gave none.
///
/// # Errors
/// Clap refuses the command line, or the config file cannot be read or has faults.
pub(in crate::cli) fn parse(argv: Vec<OsString>) -> Result<Cli, Refused> {
    let command = <Cli as clap::CommandFactory>::command();
    let matches = command
        .clone()
        .try_get_matches_from(&argv)
        .map_err(Refused::Clap)?;
    let Some((name, given)) = matches.subcommand() else {
        return Cli::from_arg_matches(&matches).map_err(Refused::Clap);
    };
    let Some(path) = given
        .try_get_one::<PathBuf>(CONFIG_ARG)
        .ok()
        .flatten()
        .cloned()
    else {
        return Cli::from_arg_matches(&matches).map_err(Refused::Clap);
    };
    let Some(subcommand) = command.find_subcommand(name) else {
        return Cli::from_arg_matches(&matches).map_err(Refused::Clap);
    };
    let (words, from_file) = file_words(&path, subcommand, given).map_err(Refused::File)?;
    // Before a `--`, if the command line has one: after it the file's flags would be taken
    // for positional arguments.
    let mut merged = argv;
    let end_of_flags = merged
        .iter()
        .position(|word| word == "--")
        .unwrap_or(merged.len());
    merged.splice(
        end_of_flags..end_of_flags,
        words.into_iter().map(OsString::from),
    );
    let matches = command
        .try_get_matches_from(merged)
        .map_err(Refused::Clap)?;
    let mut cli = Cli::from_arg_matches(&matches).map_err(Refused::Clap)?;
    match &mut cli.command {
        super::super::Command::Serve(args) => args.from_file = from_file,
        super::super::Command::Demo(args) => args.serve.from_file = from_file,
        _ => {}
    }
    Ok(cli)
}

/// The words that give the file's settings for the flags `given` (the command line as
/// parsed) did not take from the command line or the environment, and what else `serve`
/// keeps of the file.
///
/// # Errors
/// Every fault, one a line.
pub(super) fn file_words(
    path: &Path,
    subcommand: &Command,
    given: &ArgMatches,
) -> Result<(Vec<String>, FromFile), Vec<String>> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| vec![format!("{source}: cannot be read: {e}")])?;
    let settings = keys::settings(subcommand);
    let read = file::read(&text, &source, subcommand, &settings)?;
    let overridden = |id: &str| {
        matches!(
            given.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    };
    let mut from_file = FromFile {
        path: path.to_owned(),
        ..FromFile::default()
    };
    if let Some(inline) = read.groups {
        if overridden(GROUPS_KEY) {
            return Err(vec![format!(
                "{source}:{}: {GROUPS_KEY}: the file's [groups] and --groups FILE (or \
                 ASKGATE_GROUPS) both give groups; give them in one place",
                inline.line
            )]);
        }
        from_file.groups = inline.groups;
    }
    let mut words = Vec::new();
    for value in read.values {
        if overridden(&value.setting.id) {
            continue;
        }
        words.extend(value.words());
        from_file
            .origins
            .push((value.setting.long.clone(), value.line, value.setting.path()));
    }
    Ok((words, from_file))
}

/// `serve`'s arguments from the file alone, as `config check` judges them: the file's
/// settings over the built-in defaults, the environment left out (it is the file that is
/// checked, wherever it will run).
///
/// # Errors
/// Every fault, one a line.
pub(super) fn file_alone(path: &Path) -> Result<crate::cli::ServeArgs, Vec<String>> {
    let serve = keys::serve_command().mut_args(|arg| arg.env(None::<&'static str>));
    let nothing_given = serve
        .clone()
        .try_get_matches_from(["serve"])
        .map_err(|e| vec![clap_reason(&e)])?;
    let (words, from_file) = file_words(path, &serve, &nothing_given)?;
    let matches = serve
        .try_get_matches_from(std::iter::once("serve".to_owned()).chain(words))
        .map_err(|e| vec![format!("{}: {}", path.display(), clap_reason(&e))])?;
    let mut args = crate::cli::ServeArgs::from_arg_matches(&matches)
        .map_err(|e| vec![format!("{}: {}", path.display(), clap_reason(&e))])?;
    args.from_file = from_file;
    Ok(args)
}
