//! askgate's `form` dialect against the MCP Python SDK's server side (mcp 2.3.0), on
//! generated pydantic models and contents.
//!
//! `tests/oracle/mcp_oracle.py` builds each model (`tests/src/form_gen`) with
//! `pydantic.create_model` and runs the SDK's own `elicit_with_validation` (what
//! `Context.elicit` calls) with a stand-in session: the SDK renders and gates the schema, and
//! each content goes back through its version gate, `ElicitResult` and the model's
//! `model_validate`. The oracle runs under `.venv/mcp` (built by `scripts/setup-test-env.sh`).
//! askgate judges the same schema and contents as `askgate validate` does. Checked:
//!
//! - every schema the SDK sends for these models is a form askgate accepts, with the model's
//!   fields in order and the same ones required;
//! - askgate never accepts a content the SDK refuses;
//! - askgate refuses a content the SDK accepts only in the departures [`Departure`] names,
//!   each recognised by what was done to the content and by askgate's one error. The one the
//!   contract documents is [`Departure::Coerced`]: content is held to JSON's types where
//!   pydantic's lax mode converts.
//!
//! `ASKGATE_FORM_CASES` (default 300) models per seed, about ten contents each; one fixed
//! seed and one fresh seed, printed (`ASKGATE_FORM_SEED` replays it). Each run prints its
//! tally and two examples of each departure; `ASKGATE_FORM_VERBOSE=1` prints every departure,
//! every problem and the count of each kind of content.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use askgate::cli::answer_line;
use askgate_tests::form_gen::{Broken, Case, Content, cases};
use askgate_tests::oracle::{ask, repo_root};
use serde_json::{Value, json};

const FIXED_SEED: u64 = 0x00F0_4A11_0E1C_0001;
const ORACLE_TIMEOUT: Duration = Duration::from_secs(120);
const MESSAGE: &str = "Fill in the form";

/// Where askgate refuses what the SDK accepts, by design.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Departure {
    /// A value of another JSON type that pydantic's lax mode converts: a string of digits
    /// for a number, 1 / 0 / "yes" for a boolean, true for an integer, a Unix time for a date.
    /// Documented: askgate holds content to JSON's types.
    Coerced,
    /// A key that is no field: the SDK's models ignore it (pydantic's `extra="ignore"`),
    /// askgate refuses it ("not a field of this form", per the contract).
    UnknownKey,
    /// null for a `T | None = None` field: the SDK renders it as plain `T` (no null in the
    /// schema) and its model takes None; askgate holds the value to the schema's type.
    NullForOptional,
    /// A string the format's parser in the SDK reads more leniently than askgate's check
    /// (an e-mail with a display name or surrounding spaces, a date-time without a time).
    Format,
}

/// The Python of `.venv/mcp` (or `$ASKGATE_MCP_PYTHON`); a clear failure when missing.
fn mcp_python() -> PathBuf {
    let python = std::env::var_os("ASKGATE_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/mcp/bin/python"));
    assert!(
        python.exists(),
        "{} does not exist: run scripts/test (or scripts/setup-test-env.sh) to build the mcp \
         2.3.0 virtualenv",
        python.display()
    );
    python
}

fn askgate(kind: &str, input: &Value) -> Value {
    let line = json!({"dialect": "form", "kind": kind, "input": input}).to_string();
    serde_json::from_str(&answer_line(&line)).expect("askgate answers JSON")
}

/// The one error askgate gave, as (path, code), if it gave exactly one.
fn only_error(ours: &Value) -> Option<(String, String)> {
    match ours["errors"].as_array().map(Vec::as_slice) {
        Some([e]) => Some((
            e["path"].as_str()?.to_owned(),
            e["code"].as_str()?.to_owned(),
        )),
        _ => None,
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Which departure this is, if it is one.
fn departure(case: &Case, schema: &Value, content: &Content, ours: &Value) -> Option<Departure> {
    let name = content.field.as_deref()?;
    let optional = case
        .fields
        .iter()
        .any(|f| f["name"] == name && f["optional"] == true);
    let (path, code) = only_error(ours)?;
    if path != format!("response.content.{name}")
        && path != format!("response.content[{}]", json!(name))
    {
        return None;
    }
    let property = &schema["properties"][name];
    let value = &content.value[name];
    match (content.broken, code.as_str()) {
        (Broken::WrongType | Broken::NullForOptional, "wrong_type") if value.is_null() => {
            optional.then_some(Departure::NullForOptional)
        }
        (Broken::WrongType, "wrong_type") => {
            let expected = property["type"].as_str()?;
            let fits = match (expected, json_type(value)) {
                ("string", t) => t == "string",
                ("integer", t) => t == "integer",
                ("number", t) => t == "integer" || t == "float",
                ("boolean", t) => t == "boolean",
                ("array", t) => t == "array",
                _ => true,
            };
            (!fits).then_some(Departure::Coerced)
        }
        (Broken::UnknownKey, "unknown_field") => Some(Departure::UnknownKey),
        (Broken::Format, "invalid_value") if property.get("format").is_some() => {
            Some(Departure::Format)
        }
        _ => None,
    }
}

#[derive(Default)]
struct Tally {
    models: usize,
    contents: usize,
    agree_accepted: usize,
    agree_refused: usize,
    departures: BTreeMap<Departure, Vec<String>>,
    by_broken: BTreeMap<(Broken, bool), usize>,
    problems: Vec<String>,
}

fn check_case(case: &Case, real: &Value, tally: &mut Tally) {
    if let Some(failure) = real.get("oracle_failure") {
        tally.problems.push(format!(
            "the oracle failed on {}: {failure}",
            case.oracle_line()
        ));
        return;
    }
    if real["ok"] != true {
        tally.problems.push(format!(
            "the SDK refused to send the model {}: {}",
            json!(case.fields),
            real["error"]
        ));
        return;
    }
    tally.models += 1;
    let schema = &real["schema"];
    let request = askgate("request", &json!({"message": MESSAGE, "schema": schema}));
    if request["ok"] != true {
        tally.problems.push(format!(
            "askgate refuses the schema the SDK sends:\n    schema  {schema}\n    askgate {}",
            request["error"]
        ));
        return;
    }
    let fields: Vec<(String, bool)> = request["normalized"]["fields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            (
                f["name"].as_str().unwrap_or("?").to_owned(),
                f["required"] == true,
            )
        })
        .collect();
    let expected: Vec<(String, bool)> = case
        .fields
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap_or("?").to_owned(),
                f["required"] == true,
            )
        })
        .collect();
    if fields != expected {
        tally.problems.push(format!(
            "askgate reads other fields from {schema}: {fields:?}, the model has {expected:?}"
        ));
    }
    let verdicts = real["verdicts"].as_array().cloned().unwrap_or_default();
    if verdicts.len() != case.contents.len() {
        tally.problems.push(format!(
            "the oracle judged {} of {} contents",
            verdicts.len(),
            case.contents.len()
        ));
        return;
    }
    for (content, verdict) in case.contents.iter().zip(&verdicts) {
        tally.contents += 1;
        let ours = askgate(
            "response",
            &json!({"request": {"message": MESSAGE, "schema": schema},
                    "response": {"content": content.value}}),
        );
        let sdk_ok = verdict["ok"] == true;
        *tally.by_broken.entry((content.broken, sdk_ok)).or_default() += 1;
        let example = || {
            format!(
                "{:?} {}: content {} schema {} askgate: {} SDK: {verdict}",
                content.broken,
                content.field.as_deref().unwrap_or("-"),
                content.value,
                schema["properties"],
                ours["error"]
            )
        };
        match (ours["ok"] == true, sdk_ok) {
            (true, true) => tally.agree_accepted += 1,
            (false, false) => tally.agree_refused += 1,
            (true, false) => tally.problems.push(format!(
                "askgate accepts what the SDK refuses:\n    {}",
                example()
            )),
            (false, true) => match departure(case, schema, content, &ours) {
                Some(d) => tally.departures.entry(d).or_default().push(example()),
                None => tally.problems.push(format!(
                    "askgate refuses what the SDK accepts, and not as a known departure:\n    {}",
                    example()
                )),
            },
        }
    }
}

fn run(python: &PathBuf, seed: u64, count: usize) -> Result<(), String> {
    let started = Instant::now();
    let cases = cases(seed, count);
    let lines: Vec<String> = cases.iter().map(Case::oracle_line).collect();
    let script = repo_root().join("tests/oracle/mcp_oracle.py");
    let real = ask(python, &script, &lines, ORACLE_TIMEOUT).map_err(|e| format!("{e:#}"))?;
    let judged = started.elapsed();
    let mut tally = Tally::default();
    for (case, real) in cases.iter().zip(&real) {
        check_case(case, real, &mut tally);
    }
    let departures: Vec<String> = tally
        .departures
        .iter()
        .map(|(d, examples)| format!("{d:?} {}", examples.len()))
        .collect();
    eprintln!(
        "seed {seed}: {} models, {} contents: {} accepted by both, {} refused by both, \
         departures [{}], {} problems (oracle {judged:.1?}, all {:.1?})",
        tally.models,
        tally.contents,
        tally.agree_accepted,
        tally.agree_refused,
        departures.join(", "),
        tally.problems.len(),
        started.elapsed()
    );
    for (d, examples) in &tally.departures {
        let shown = if std::env::var_os("ASKGATE_FORM_VERBOSE").is_some() {
            examples.len()
        } else {
            2
        };
        for example in examples.iter().take(shown) {
            eprintln!("  departure {d:?}: {example}");
        }
    }
    if std::env::var_os("ASKGATE_FORM_VERBOSE").is_some() {
        for ((broken, ok), n) in &tally.by_broken {
            eprintln!(
                "  {broken:?} SDK {}: {n}",
                if *ok { "accepts" } else { "refuses" }
            );
        }
    }
    // The generator must reach both verdicts and the departure the contract documents.
    for (broken, sdk_ok) in [
        (Broken::Not, true),
        (Broken::Minimal, true),
        (Broken::WrongType, true),
        (Broken::WrongType, false),
        (Broken::OutOfBounds, false),
        (Broken::TooShort, false),
        (Broken::TooLong, false),
        (Broken::NotAnOption, false),
        (Broken::TooManyItems, false),
        (Broken::TooFewItems, false),
        (Broken::MissingRequired, false),
        (Broken::UnknownKey, true),
        (Broken::NullForOptional, true),
        (Broken::Format, true),
        (Broken::Format, false),
    ] {
        let seen = tally.by_broken.get(&(broken, sdk_ok)).copied().unwrap_or(0);
        if seen < count / 30 {
            tally.problems.push(format!(
                "the generator exercises too little: {seen} contents {broken:?} that the SDK {}",
                if sdk_ok { "accepts" } else { "refuses" }
            ));
        }
    }
    if !tally.departures.contains_key(&Departure::Coerced) {
        tally.problems.push("no coerced type was tried".into());
    }
    if tally.problems.is_empty() {
        Ok(())
    } else {
        let total = tally.problems.len();
        if std::env::var_os("ASKGATE_FORM_VERBOSE").is_none() {
            tally.problems.truncate(25);
        }
        Err(format!(
            "seed {seed} (replay with ASKGATE_FORM_SEED={seed}), {total} problems:\n{}",
            tally.problems.join("\n")
        ))
    }
}

#[test]
fn form_content_verdicts_match_the_mcp_sdk() {
    let python = mcp_python();
    let count = std::env::var("ASKGATE_FORM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let fresh = std::env::var("ASKGATE_FORM_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!(
        "differential form test: fixed seed {FIXED_SEED}, fresh seed {fresh}, {count} models each"
    );
    let failures: Vec<String> = [FIXED_SEED, fresh]
        .into_iter()
        .filter_map(|seed| run(&python, seed, count).err())
        .collect();
    assert!(
        failures.is_empty(),
        "askgate and the MCP SDK disagree:\n{}",
        failures.join("\n\n")
    );
}
