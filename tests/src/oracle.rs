//! The real Python packages as a subprocess: feed `validate` lines, read their verdicts; and
//! what the differential tests share (their seeds, and running seeds and oracles side by side).
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

/// Lines per seed in the differential tests: `$ASKGATE_DIFF_CASES`, else 4,000, or 12,000
/// in the soak-length form (`ASKGATE_SOAK=1`, what `bench/soak.sh` sets).
///
/// The oracles run the real packages line by line (deepagents' takes about 5 ms of CPU a
/// line, in a LangGraph `ToolNode`): at 12,000 lines a seed the two line-based tests took 200
/// core-seconds, an eighth of a whole CI run on two cores, for lines drawn afresh each run
/// anyway.
pub fn cases_per_seed() -> usize {
    std::env::var("ASKGATE_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(askgate_testkit::soak_or(4_000, 12_000))
}

/// The differential tests' fresh seed: `$ASKGATE_DIFF_SEED` (to replay a failure), else a
/// random one, which the tests print before they start.
pub fn fresh_seed() -> u64 {
    std::env::var("ASKGATE_DIFF_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(rand::random)
}

/// Runs `run` for every seed, each on a thread of its own; the failures, in the seeds' order.
/// A panic in a run (a generator that exercises too little) is raised again here.
pub fn run_seeds<F>(seeds: &[u64], run: F) -> Vec<String>
where
    F: Fn(u64) -> Result<(), String> + Sync,
{
    let run = &run;
    std::thread::scope(|scope| {
        let runs: Vec<_> = seeds
            .iter()
            .map(|&seed| scope.spawn(move || run(seed)))
            .collect();
        runs.into_iter()
            .filter_map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e))
                    .err()
            })
            .collect()
    })
}

/// Runs `oracle` (which waits on other processes) on a thread of its own while `ours` runs
/// on this one; both results.
pub fn side_by_side<A: Send, B>(
    oracle: impl FnOnce() -> A + Send,
    ours: impl FnOnce() -> B,
) -> (A, B) {
    std::thread::scope(|scope| {
        let oracle = scope.spawn(oracle);
        let ours = ours();
        let real = oracle
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        (real, ours)
    })
}
