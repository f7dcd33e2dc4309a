//! Every conformance vector: askgate's `validate` answers as the real packages did.
//!
//! The vectors (`tests/data/conformance/*.jsonl`) record what pydantic-ai-harness 0.62 and
//! deepagents-code 0.2 answered. `ok` must match; when ok, `normalized` must match exactly; for
//! harness `response` and `render` errors the error text must match byte for byte (request
//! error lists come from pydantic, and askgate words its own).
//!
//! deepagents is matched more closely still: a `response` must give the `ToolMessage`'s
//! `content`, `status` and receipt, and a refused `request` must give the very `ToolNode`
//! message the model reads and pydantic's own error list (`framework_errors`).

use askgate::cli::answer_line;
use askgate_protocol::json::lenient;
use askgate_testkit::frames::error_paths;
use serde_json::Value;

struct Vector {
    name: String,
    line: String,
    value: Value,
}

fn vectors() -> Vec<Vector> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/conformance");
    let mut out = Vec::new();
    for file in ["vectors.jsonl", "vectors_lone_surrogates.jsonl"] {
        let text = std::fs::read_to_string(format!("{dir}/{file}")).expect("vectors readable");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let (value, _) = lenient::parse(line).expect("vector line parses");
            out.push(Vector {
                name: value["name"]
                    .as_str()
                    .expect("vector has a name")
                    .to_owned(),
                line: line.to_owned(),
                value,
            });
        }
    }
    out
}

fn answer(vector: &Vector) -> Value {
    let text = answer_line(&vector.line);
    lenient::parse(&text)
        .unwrap_or_else(|e| panic!("{}: answer is not JSON ({e}): {text}", vector.name))
        .0
}

#[test]
fn every_harness_vector_matches_the_real_package() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for vector in vectors().iter().filter(|v| v.value["dialect"] == "harness") {
        checked += 1;
        let expect = &vector.value["expect"];
        let got = answer(vector);
        if got["ok"] != expect["ok"] {
            failures.push(format!(
                "{}: ok {} but expected {}\n  got {got}",
                vector.name, got["ok"], expect["ok"]
            ));
            continue;
        }
        if expect["ok"] == true && got["normalized"] != expect["normalized"] {
            failures.push(format!(
                "{}: normalized differs\n  got      {}\n  expected {}",
                vector.name, got["normalized"], expect["normalized"]
            ));
        }
        let kind = vector.value["kind"].as_str().unwrap_or_default();
        if expect["ok"] == false && kind != "request" && got["error"] != expect["error"] {
            failures.push(format!(
                "{}: error text differs\n  got      {}\n  expected {}",
                vector.name, got["error"], expect["error"]
            ));
        }
        if expect["ok"] == false && got["errors"].as_array().is_none_or(Vec::is_empty) {
            failures.push(format!(
                "{}: a rejection must list its errors: {got}",
                vector.name
            ));
        }
    }
    assert!(checked >= 150, "only {checked} harness vectors found");
    assert!(
        failures.is_empty(),
        "{} of {checked} vectors failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn request_errors_carry_readable_paths() {
    let line = r#"{"dialect":"harness","kind":"request","input":{"args":{"questions":[{"header":"H","question":"Q","options":[{"label":"a"},{"label":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}]}]}}}"#;
    let got: Value = serde_json::from_str(&answer_line(line)).unwrap();
    assert_eq!(got["ok"], false);
    assert_eq!(got["errors"][0]["path"], "questions[0].options[1].label");
    assert_eq!(got["errors"][0]["code"], "too_long");
    let message = got["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("at most 50 characters"), "{message}");
}

#[test]
fn every_deepagents_vector_matches_the_real_package() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for vector in vectors()
        .iter()
        .filter(|v| v.value["dialect"] == "deepagents")
    {
        checked += 1;
        let expect = &vector.value["expect"];
        let got = answer(vector);
        let kind = vector.value["kind"].as_str().unwrap_or_default();
        if got["ok"] != expect["ok"] {
            failures.push(format!(
                "{}: ok {} but expected {}\n  got {got}",
                vector.name, got["ok"], expect["ok"]
            ));
            continue;
        }
        if expect["ok"] == true {
            let fields: &[&str] = if kind == "response" {
                &["content", "status", "receipt"]
            } else {
                &[""]
            };
            for field in fields {
                let (got, expected) = if field.is_empty() {
                    (&got["normalized"], &expect["normalized"])
                } else {
                    (&got["normalized"][field], &expect["normalized"][field])
                };
                if got != expected {
                    failures.push(format!(
                        "{}: normalized{} differs\n  got      {got}\n  expected {expected}",
                        vector.name,
                        if field.is_empty() {
                            String::new()
                        } else {
                            format!(".{field}")
                        },
                    ));
                }
            }
            continue;
        }
        if got["error"] != expect["error"] {
            failures.push(format!(
                "{}: error text differs\n  got      {}\n  expected {}",
                vector.name, got["error"], expect["error"]
            ));
        }
        if expect.get("errors").is_some() && got["framework_errors"] != expect["errors"] {
            failures.push(format!(
                "{}: pydantic's error list differs\n  got      {}\n  expected {}",
                vector.name, got["framework_errors"], expect["errors"]
            ));
        }
        if got["errors"].as_array().is_none_or(Vec::is_empty) {
            failures.push(format!(
                "{}: a rejection must list its errors: {got}",
                vector.name
            ));
        }
    }
    assert!(checked >= 125, "only {checked} deepagents vectors found");
    assert!(
        failures.is_empty(),
        "{} of {checked} vectors failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn deepagents_request_errors_carry_readable_paths() {
    let line = r#"{"dialect":"deepagents","kind":"request","input":{"args":{"questions":[{"question":"Q","type":"multi_select","choices":[{"value":"a"},{"value":2}],"required":"no"}]}}}"#;
    let got: Value = serde_json::from_str(&answer_line(line)).unwrap();
    assert_eq!(got["ok"], false);
    let paths = error_paths(&got);
    assert_eq!(
        paths,
        ["questions[0].choices[1].value", "questions[0].required"]
    );
    assert_eq!(got["errors"][1]["code"], "wrong_type");
}
