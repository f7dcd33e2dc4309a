//! The `askgate` command line.

mod schema;
mod validate;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

pub use validate::{answer_line, run as run_validate};

/// askgate: let AI agents ask people structured questions mid-run and get the answers back.
#[derive(Debug, Parser)]
#[command(name = "askgate", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Judge tool calls, responses and renders read as JSON lines on stdin.
    ///
    /// Each input line is `{"dialect":"harness","kind":"request"|"response"|"render","input":{...}}`
    /// (other keys are ignored). Each output line is `{"ok":true,"normalized":...}` or
    /// `{"ok":false,"error":"...","errors":[{"path","message","code"}]}`, one per input line,
    /// in order. A malformed line gets an error line and the stream goes on.
    Validate,
    /// Print the tool definition a framework sends the model, as JSON.
    Schema {
        /// Which framework's tool.
        #[arg(long, value_enum, default_value_t = Dialect::Harness)]
        dialect: Dialect,
    },
}

/// The "ask the user" tools askgate serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Dialect {
    /// pydantic-ai-harness `ask_user_question`.
    Harness,
    /// deepagents `ask_user`.
    Deepagents,
}

/// Runs the command line; the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Validate => {
            let stdin = std::io::stdin().lock();
            let stdout = std::io::stdout().lock();
            run_validate(stdin, stdout)
        }
        Command::Schema { dialect } => schema::run(dialect),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("askgate: {error:#}");
            ExitCode::FAILURE
        }
    }
}
