//! The `askgate` binary: parses the command line and hands over to [`askgate::cli`].

use std::process::ExitCode;

fn main() -> ExitCode {
    askgate::cli::main()
}
