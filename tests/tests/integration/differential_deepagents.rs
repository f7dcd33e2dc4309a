//! askgate against the real deepagents-code 0.2.2 `ask_user` on generated inputs.
//!
//! Two runs of `ASKGATE_DIFF_CASES` lines each (4,000 by default, 12,000 in the soak-length form,
//! `ASKGATE_SOAK=1`): one from a fixed seed, one from a fresh seed printed up front
//! (`ASKGATE_DIFF_SEED` replays it). Requests, responses and renders are judged by both askgate and
//! `tests/oracle/deepagents_oracle.py`, which runs the real package's ask_user modules in a real
//! LangGraph `ToolNode` under CPython 3.13 (`.venv/deepagents`, built by
//! `scripts/setup-test-env.sh`). Compared: the verdict; when accepted, the interrupt payload, the
//! resumed `ToolMessage` (content, status, receipt) or the render result; when refused, the exact
//! error message the model reads and pydantic's error list. Any disagreement fails the test and
//! prints the input.
//!
//! `ASKGATE_DIFF_DUMP=<dir>` also writes each run's lines to `<dir>/deepagents-<seed>.jsonl`,
//! to feed them to `askgate validate` or the oracle by hand.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use askgate::cli::answer_line;
use askgate_protocol::json::lenient;
use askgate_tests::deepagents_gen::mixed_lines;
use askgate_tests::oracle::{cases_per_seed, fresh_seed, repo_root, run_seeds, side_by_side};
use serde_json::Value;

const FIXED_SEED: u64 = 0x00DE_E9A6_E575_0002;

/// Most oracle processes run side by side, each judging a share of the lines (one per core,
/// at least two).
const MAX_ORACLE_PROCESSES: usize = 8;

/// The Python of `.venv/deepagents` (or `$ASKGATE_DEEPAGENTS_PYTHON`), with the unpacked
/// wheel beside it; a clear failure when either is missing.
fn deepagents_python() -> Result<PathBuf, String> {
    let venv = repo_root().join(".venv/deepagents");
    let python = std::env::var_os("ASKGATE_DEEPAGENTS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| venv.join("bin/python"));
    let source = std::env::var_os("ASKGATE_DEEPAGENTS_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| venv.join("src"))
        .join("deepagents_code/ask_user.py");
    for needed in [&python, &source] {
        if !needed.exists() {
            return Err(format!(
                "{} does not exist: run scripts/test (or scripts/setup-test-env.sh) to build the \
                 deepagents virtualenv with the deepagents-code 0.2.2 wheel",
                needed.display()
            ));
        }
    }
    Ok(python)
}

/// A JSON line that may carry lone surrogates, as askgate reads it.
fn parse(text: &str) -> Result<Value, String> {
    lenient::parse(text)
        .map(|(value, _)| value)
        .map_err(|e| format!("{e}: {text}"))
}

/// Runs the oracle over `lines` in several processes; one answer per line, in order.
fn ask_oracle(python: &Path, script: &Path, lines: &[String]) -> Result<Vec<Value>, String> {
    let processes = std::thread::available_parallelism()
        .map_or(2, usize::from)
        .clamp(2, MAX_ORACLE_PROCESSES);
    let share = lines.len().div_ceil(processes).max(1);
    let results: Vec<Result<Vec<Value>, String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = lines
            .chunks(share)
            .map(|chunk| scope.spawn(move || ask_one(python, script, chunk)))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err("an oracle thread panicked".into()))
            })
            .collect()
    });
    let mut answers = Vec::with_capacity(lines.len());
    for result in results {
        answers.extend(result?);
    }
    Ok(answers)
}

fn ask_one(python: &Path, script: &Path, lines: &[String]) -> Result<Vec<Value>, String> {
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting {} {}: {e}", python.display(), script.display()))?;
    let mut stdin = child.stdin.take().ok_or("oracle stdin")?;
    let stdout = child.stdout.take().ok_or("oracle stdout")?;
    let input: Vec<u8> = lines
        .iter()
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect();
    // Writing on its own thread: neither pipe can fill up and stall the other.
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    // Read every line before judging any, so the oracle is never cut off mid-stream.
    let texts: Result<Vec<String>, String> = BufReader::new(stdout)
        .lines()
        .map(|line| line.map_err(|e| e.to_string()))
        .collect();
    writer
        .join()
        .map_err(|_| "the oracle writer panicked".to_owned())?
        .map_err(|e| format!("feeding the oracle: {e}"))?;
    let status = child.wait().map_err(|e| e.to_string())?;
    let answers = texts?
        .iter()
        .map(|text| parse(text))
        .collect::<Result<Vec<Value>, String>>()?;
    if !status.success() || answers.len() != lines.len() {
        return Err(format!(
            "the oracle exited with {status} after {} answers for {} lines",
            answers.len(),
            lines.len()
        ));
    }
    Ok(answers)
}

/// The disagreement between askgate's answer and the real package's, if any.
fn disagreement(kind: &str, ours: &Value, real: &Value) -> Option<String> {
    if let Some(failure) = real.get("oracle_failure") {
        return Some(format!("the oracle could not judge the line: {failure}"));
    }
    if ours["ok"] != real["ok"] {
        return Some(format!(
            "verdict differs:\n    askgate    {ours}\n    deepagents {real}"
        ));
    }
    let differs = |what: &str, a: &Value, b: &Value| {
        (a != b).then(|| format!("{what} differs:\n    askgate    {a}\n    deepagents {b}"))
    };
    if real["ok"] == false {
        return differs("the error message", &ours["error"], &real["error"]).or_else(|| {
            if kind == "request" {
                differs(
                    "pydantic's error list",
                    &ours["framework_errors"],
                    &real["errors"],
                )
            } else {
                None
            }
        });
    }
    if kind == "response" {
        return ["content", "status", "receipt"].iter().find_map(|field| {
            differs(
                field,
                &ours["normalized"][field],
                &real["normalized"][field],
            )
        });
    }
    differs("normalized", &ours["normalized"], &real["normalized"])
}

fn run(python: &Path, seed: u64, count: usize) -> Result<(), String> {
    let script = repo_root().join("tests/oracle/deepagents_oracle.py");
    let started = Instant::now();
    let lines = mixed_lines(seed, count);
    if let Some(dir) = std::env::var_os("ASKGATE_DIFF_DUMP") {
        let path = Path::new(&dir).join(format!("deepagents-{seed}.jsonl"));
        std::fs::write(&path, lines.join("\n") + "\n")
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    let generated = started.elapsed();
    // The oracle (other processes) and askgate judge the lines side by side.
    let (real, ours) = side_by_side(
        || ask_oracle(python, &script, &lines),
        || {
            lines
                .iter()
                .map(|line| answer_line(line))
                .collect::<Vec<_>>()
        },
    );
    let real = real?;
    let judged = started.elapsed();
    let mut problems = Vec::new();
    // (kind or outcome, count): both verdicts and every resume outcome must be exercised.
    let mut tally: Vec<(String, usize)> = Vec::new();
    for ((line, real), ours) in lines.iter().zip(&real).zip(&ours) {
        let ours = parse(ours)?;
        let kind = parse(line)?["kind"].as_str().unwrap_or_default().to_owned();
        let label = match kind.as_str() {
            "request" if ours["ok"] == true => "request accepted".to_owned(),
            "request" => "request refused".to_owned(),
            "response" => format!(
                "response {}",
                ours["normalized"]["status"].as_str().unwrap_or("?")
            ),
            other => other.to_owned(),
        };
        match tally.iter_mut().find(|(l, _)| *l == label) {
            Some((_, n)) => *n += 1,
            None => tally.push((label, 1)),
        }
        if let Some(problem) = disagreement(&kind, &ours, real) {
            problems.push(format!("  input {line}\n  {problem}"));
        }
    }
    tally.sort();
    eprintln!(
        "seed {seed}: {count} lines, {} disagreements (generated in {generated:.1?}, judged by \
         the oracle and askgate side by side in {:.1?}); by kind: {tally:?}",
        problems.len(),
        judged - generated,
    );
    for label in [
        "request accepted",
        "request refused",
        "response success",
        "response error",
    ] {
        let seen = tally
            .iter()
            .find(|(l, _)| l == label)
            .map_or(0, |(_, n)| *n);
        assert!(
            seen >= count / 20,
            "seed {seed}: the generator exercises too little: {seen} lines of {label}"
        );
    }
    if problems.is_empty() {
        Ok(())
    } else {
        let total = problems.len();
        problems.truncate(20);
        Err(format!(
            "seed {seed} (replay with ASKGATE_DIFF_SEED={seed}), {total} disagreements:\n{}",
            problems.join("\n")
        ))
    }
}

#[test]
fn deepagents_verdicts_match_the_real_package() {
    let python = deepagents_python().unwrap_or_else(|e| panic!("{e}"));
    let count = cases_per_seed();
    let fresh = fresh_seed();
    eprintln!("differential test: fixed seed {FIXED_SEED}, fresh seed {fresh}, {count} lines each");
    // The two seeds run side by side (the oracle's processes are what takes the time).
    let failures = run_seeds(&[FIXED_SEED, fresh], |seed| run(&python, seed, count));
    assert!(
        failures.is_empty(),
        "askgate and deepagents-code disagree:\n{}",
        failures.join("\n\n")
    );
}
