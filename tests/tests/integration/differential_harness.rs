//! askgate against the real pydantic-ai-harness 0.62.0 on generated inputs.
//!
//! Two runs of `ASKGATE_DIFF_CASES` lines each (4,000 by default, 12,000 in the soak-length
//! form, `ASKGATE_SOAK=1`): one from a fixed seed, one from a fresh seed printed up front
//! (`ASKGATE_DIFF_SEED` replays it). Requests, responses and renders are judged by both; any
//! disagreement fails the test and prints the input.

use std::time::Duration;

use askgate::cli::answer_line;
use askgate_tests::harness_gen::mixed_lines;
use askgate_tests::oracle;
use serde_json::Value;

const FIXED_SEED: u64 = 0x00A5_C6A7_E5EE_D001;

/// The disagreement between askgate's answer and the real package's, if any.
fn disagreement(line: &str, ours: &Value, real: &Value) -> Option<String> {
    if real.get("oracle_failure").is_some() {
        return Some(format!("the oracle could not judge the line: {real}"));
    }
    let kind = serde_json::from_str::<Value>(line).ok()?["kind"].clone();
    if ours["ok"] != real["ok"] {
        return Some(format!(
            "verdict differs: askgate {} / harness {}",
            ours, real
        ));
    }
    if real["ok"] == true && ours["normalized"] != real["normalized"] {
        return Some(format!(
            "normalized differs:\n    askgate {}\n    harness {}",
            ours["normalized"], real["normalized"]
        ));
    }
    if real["ok"] == false && kind != "request" && ours["error"] != real["error"] {
        return Some(format!(
            "error text differs:\n    askgate {}\n    harness {}",
            ours["error"], real["error"]
        ));
    }
    None
}

fn run(seed: u64, count: usize) -> Result<(), String> {
    let python = oracle::harness_python().map_err(|e| e.to_string())?;
    let script = oracle::repo_root().join("tests/oracle/harness_oracle.py");
    let started = std::time::Instant::now();
    let lines = mixed_lines(seed, count);
    let generated = started.elapsed();
    // The oracle (another process) and askgate judge the lines side by side.
    let (real, ours) = oracle::side_by_side(
        || {
            oracle::ask(&python, &script, &lines, Duration::from_secs(600))
                .map_err(|e| format!("{e:#}"))
        },
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
    let mut rejected = 0;
    // (kind, accepted, rejected), to show both verdicts are exercised for every kind.
    let mut tally: Vec<(String, usize, usize)> = Vec::new();
    for ((line, real), ours) in lines.iter().zip(&real).zip(&ours) {
        let ours: Value = serde_json::from_str(ours).map_err(|e| e.to_string())?;
        let kind = serde_json::from_str::<Value>(line).map_err(|e| e.to_string())?["kind"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let slot = match tally.iter().position(|(k, ..)| *k == kind) {
            Some(slot) => slot,
            None => {
                tally.push((kind, 0, 0));
                tally.len() - 1
            }
        };
        if ours["ok"] == false {
            rejected += 1;
            tally[slot].2 += 1;
        } else {
            tally[slot].1 += 1;
        }
        if let Some(problem) = disagreement(line, &ours, real) {
            problems.push(format!("  input {line}\n  {problem}"));
        }
    }
    eprintln!(
        "seed {seed}: {count} lines, {rejected} rejected, {} disagreements \
         (generated in {generated:.1?}, judged by the oracle and askgate side by side in {:.1?}); \
         accepted/rejected by kind: {tally:?}",
        problems.len(),
        judged - generated,
    );
    // Both verdicts must be well represented, or the generator is not testing much.
    for (kind, accepted, rejected) in &tally {
        let least = if kind == "render" { 20 } else { count / 20 };
        assert!(
            *accepted >= least && *rejected >= least,
            "seed {seed}: the generator exercises too little: {kind} lines {accepted} accepted, {rejected} rejected"
        );
    }
    if problems.is_empty() {
        Ok(())
    } else {
        problems.truncate(20);
        Err(format!(
            "seed {seed} (replay with ASKGATE_DIFF_SEED={seed}):\n{}",
            problems.join("\n")
        ))
    }
}

#[test]
fn harness_verdicts_match_the_real_package() {
    let count = oracle::cases_per_seed();
    let fresh = oracle::fresh_seed();
    eprintln!("differential test: fixed seed {FIXED_SEED}, fresh seed {fresh}, {count} lines each");
    // The two seeds run side by side (each mostly one thread of ours and one oracle process).
    let failures = oracle::run_seeds(&[FIXED_SEED, fresh], |seed| run(seed, count));
    assert!(
        failures.is_empty(),
        "askgate and pydantic-ai-harness disagree:\n{}",
        failures.join("\n\n")
    );
}
