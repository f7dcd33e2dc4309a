//! The `askgate` command line.
//!
//! - [`audit`]: `audit export` and `audit verify`, reading a store without changing it.
//! - [`audit_key`]: the key audit chains are sealed with, read or made at start.
//! - [`config`]: `serve --config FILE`, and `config check` and `config example`.
//! - `demo`: `serve` with a demo agent asking in session `demo`.
//! - `interrupted`: `audit` and `store` stopped by a signal remove their scratch directories.
//! - [`requests`]: `requests list` and `requests withdraw`, against a running gateway with an
//!   operator key.
//! - `schema`: the tool definition a framework sends the model.
//! - `serve`: the gateway's flags and its run.
//! - [`store`]: `store check`, a store's damage reported read-only.
//! - `store_flags`: `--data-dir`, `--store`, `--redis-prefix`, shared by the commands.
//! - `validate`: judging tool calls read as JSON lines.

pub mod audit;
pub mod audit_key;
pub mod config;
mod demo;
mod interrupted;
pub mod requests;
mod schema;
mod serve;
pub mod store;
mod store_flags;
mod validate;

use std::process::ExitCode;

use askgate_protocol::Dialect;
use clap::{Parser, Subcommand};

pub use serve::{LogFormat, ServeArgs, load_or_create_secret, shutdown_signal};
pub use validate::{answer_line, run_stdin as run_validate_stdin};

/// askgate: let AI agents ask people structured questions mid-run and get the answers back.
#[derive(Debug, Parser)]
#[command(name = "askgate", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// The doc comments here are `--help` text, where `<session>` means a placeholder.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the gateway: agents connect to /v1/agent, people open /s/<session>.
    Serve(Box<ServeArgs>),
    /// Run the gateway with a demo agent asking live questions in session `demo`.
    Demo(Box<demo::DemoArgs>),
    /// Judge tool calls, responses and renders read as JSON lines on stdin.
    ///
    /// Each input line is `{"dialect":"harness","kind":"request"|"response"|"render","input":{...}}`
    /// (other keys are ignored). Each output line is `{"ok":true,"normalized":...}` or
    /// `{"ok":false,"error":"...","errors":[{"path","message","code"}]}`, one per input line,
    /// in order. A malformed line gets an error line and the stream goes on.
    Validate(ValidateArgs),
    /// Export or verify a store's audit trails.
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// Check the embedded store for damage, changing nothing.
    #[command(subcommand)]
    Store(store::StoreCommand),
    /// List or withdraw requests across every session of a running gateway (operator key).
    #[command(subcommand)]
    Requests(requests::RequestsCommand),
    /// Check a config file for `serve --config`, or print an example with every setting.
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Print the tool definition a framework sends the model, as JSON.
    Schema {
        /// Which framework's tool.
        #[arg(long, default_value = "harness", value_parser = Dialect::parse)]
        dialect: Dialect,
    },
}

/// `askgate validate`'s options.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// The longest input line read, in bytes. A longer line is read past without being kept
    /// and answered with an error, so input without line ends cannot exhaust memory.
    #[arg(long, default_value_t = validate::DEFAULT_MAX_LINE_BYTES, value_parser = at_least_one_byte)]
    pub max_line_bytes: usize,
}

fn at_least_one_byte(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(bytes) => Ok(bytes),
        Err(e) => Err(format!("{e} (expected a number of bytes)")),
    }
}

/// The async runtime, with `worker_threads` threads for tasks.
fn runtime(worker_threads: u16) -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::from(worker_threads.max(1)))
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("starting the async runtime: {e}"))
}

/// Logs to stderr; `RUST_LOG` (else `default`) picks what, `format` how (`None`: text on a
/// terminal, JSON lines otherwise).
fn init_tracing(default: &str, format: Option<LogFormat>) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let format = format.unwrap_or(if terminal {
        LogFormat::Text
    } else {
        LogFormat::Json
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        // Colour only for a person at a terminal: in a file or a log collector the escape
        // codes are noise.
        LogFormat::Text => builder.with_ansi(terminal).try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    };
}

/// Runs the command line; the process exit code.
pub fn main() -> ExitCode {
    let cli = match config::parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(config::Refused::Clap(error)) => error.exit(),
        Err(config::Refused::File(faults)) => {
            for fault in faults {
                eprintln!("askgate: {fault}");
            }
            return ExitCode::from(config::Invalid::EXIT_CODE);
        }
    };
    let outcome = match cli.command {
        Command::Serve(args) => {
            init_tracing("info", args.log_format);
            runtime(args.worker_threads).and_then(|rt| rt.block_on(serve::run(*args)))
        }
        Command::Demo(args) => {
            init_tracing("warn", args.serve.log_format);
            runtime(args.serve.worker_threads).and_then(|rt| rt.block_on(demo::run(*args)))
        }
        Command::Audit(command) => {
            init_tracing("warn", Some(LogFormat::Text));
            interrupted::remove_scratch_when_interrupted();
            let threads = crate::config::DEFAULT_WORKER_THREADS;
            runtime(threads)
                .and_then(|rt| rt.block_on(audit::run(command)))
                .or_else(quiet_when_stdout_closed)
        }
        Command::Requests(command) => {
            init_tracing("warn", Some(LogFormat::Text));
            runtime(1)
                .and_then(|rt| rt.block_on(requests::run(command)))
                .or_else(quiet_when_stdout_closed)
        }
        Command::Store(command) => {
            init_tracing("warn", Some(LogFormat::Text));
            interrupted::remove_scratch_when_interrupted();
            store::run(command)
        }
        Command::Validate(args) => {
            run_validate_stdin(Stdout::new(), args.max_line_bytes).or_else(quiet_when_stdout_closed)
        }
        Command::Schema { dialect } => schema::run(dialect).or_else(quiet_when_stdout_closed),
        Command::Config(command) => return config::run(command),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            interrupted::let_an_interruption_finish();
            eprintln!("askgate: {error:#}");
            if error.downcast_ref::<NotFound>().is_some() {
                ExitCode::from(NotFound::EXIT_CODE)
            } else if error.downcast_ref::<config::Invalid>().is_some() {
                ExitCode::from(config::Invalid::EXIT_CODE)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// What a command was pointed at (a session, a request) does not exist: said on stderr,
/// and the exit code is 2, apart from 1 (the command ran and failed), so a script can tell a
/// typo from a failure.
#[derive(Debug)]
pub struct NotFound(pub String);

impl NotFound {
    /// The exit code.
    pub const EXIT_CODE: u8 = 2;
}

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotFound {}

/// A command's standard output. A reader that stops reading (`askgate audit export | head`)
/// comes back as a broken pipe carrying [`ReaderGone`], which [`quiet_when_stdout_closed`]
/// tells apart from a broken pipe anywhere else (the socket to a gateway, say): that one is a
/// real failure.
pub(crate) struct Stdout(std::io::Stdout);

impl Stdout {
    pub(crate) fn new() -> Self {
        Stdout(std::io::stdout())
    }
}

fn reader_gone(error: std::io::Error) -> std::io::Error {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        std::io::Error::new(std::io::ErrorKind::BrokenPipe, ReaderGone)
    } else {
        error
    }
}

impl std::io::Write for Stdout {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.write(bytes).map_err(reader_gone)
    }
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.0.write_all(bytes).map_err(reader_gone)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().map_err(reader_gone)
    }
}

/// Whoever read this command's standard output has stopped reading.
#[derive(Debug)]
pub(crate) struct ReaderGone;

impl std::fmt::Display for ReaderGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the reader of standard output stopped reading")
    }
}

impl std::error::Error for ReaderGone {}

/// A command whose reader has stopped reading (`askgate validate < lines | head`) has done
/// what was asked of it: it ends quietly, as the shell's own tools do, rather than report the
/// broken pipe.
fn quiet_when_stdout_closed(error: anyhow::Error) -> anyhow::Result<()> {
    let reader_gone = error.chain().any(|cause| {
        cause.is::<ReaderGone>()
            || cause
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
                .is_some_and(<dyn std::error::Error + Send + Sync>::is::<ReaderGone>)
    });
    if reader_gone { Ok(()) } else { Err(error) }
}
