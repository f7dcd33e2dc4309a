//! The real Python packages as a subprocess: feed `validate` lines, read their verdicts.
//!
//! The test script (`scripts/test`) builds the virtualenvs; a test that needs one and cannot
//! find it fails with a message saying how to make it, never skips.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use serde_json::Value;

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// The Python of the virtualenv holding pydantic-ai-harness 0.62.0:
/// `$ASKGATE_HARNESS_PYTHON`, else `.venv/harness/bin/python` in the repository.
///
/// # Errors
/// When it does not exist, with the command that creates it.
pub fn harness_python() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("ASKGATE_HARNESS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/harness/bin/python"));
    if !path.exists() {
        bail!(
            "{} does not exist: run scripts/test (or scripts/setup-test-env.sh) to create the \
             pydantic-ai-harness virtualenv",
            path.display()
        );
    }
    Ok(path)
}

/// Runs `script` under `python`, feeding `lines` and returning one parsed answer per line.
///
/// # Errors
/// The process fails, answers too few lines, or takes longer than `timeout`.
pub fn ask(
    python: &PathBuf,
    script: &PathBuf,
    lines: &[String],
    timeout: Duration,
) -> anyhow::Result<Vec<Value>> {
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {} {}", python.display(), script.display()))?;
    let mut stdin = child.stdin.take().context("oracle stdin")?;
    let stdout = child.stdout.take().context("oracle stdout")?;
    let input: Vec<u8> = lines
        .iter()
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect();
    // Writing and reading on separate threads: neither pipe can fill up and stall the other.
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let (done, answers) = mpsc::channel();
    std::thread::spawn(move || {
        let parsed: anyhow::Result<Vec<Value>> = BufReader::new(stdout)
            .lines()
            .map(|line| {
                let line = line.context("reading the oracle")?;
                serde_json::from_str(&line).with_context(|| format!("oracle answered: {line}"))
            })
            .collect();
        let _ = done.send(parsed);
    });
    let Ok(answers) = answers.recv_timeout(timeout) else {
        let _ = child.kill();
        return Err(anyhow!("the oracle did not finish within {timeout:?}"));
    };
    writer
        .join()
        .map_err(|_| anyhow!("oracle writer panicked"))?
        .context("feeding the oracle")?;
    let status = child.wait().context("waiting for the oracle")?;
    let answers = answers?;
    if !status.success() || answers.len() != lines.len() {
        bail!(
            "the oracle exited with {status} after {} answers for {} lines",
            answers.len(),
            lines.len()
        );
    }
    Ok(answers)
}
