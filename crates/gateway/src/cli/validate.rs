//! `askgate validate`: judge JSON lines as the real frameworks would.
//!
//! The line format is the conformance vectors' (`{"dialect","kind","input"}`), so the same
//! lines can be fed to askgate and to the Python packages and the answers compared.

use std::io::{BufRead, Write};

use anyhow::Context as _;
use askgate_protocol::harness::{self, AskUserResponse, ResponseError, TopLevelExtras};
use askgate_protocol::{ErrorCode, FieldError, ValidationErrors, lenient_json};
use serde::Deserialize as _;
use serde_json::{Value, json};

/// Reads lines from `input` until it ends and writes one answer line per input line.
///
/// # Errors
/// Only I/O errors on the streams; bad lines get error lines.
pub fn run(mut input: impl BufRead, output: impl Write) -> anyhow::Result<()> {
    let mut output = std::io::BufWriter::with_capacity(64 * 1024, output);
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        let read = input
            .read_until(b'\n', &mut line)
            .context("reading stdin")?;
        if read == 0 {
            break;
        }
        let answer = match std::str::from_utf8(&line) {
            Ok(text) => answer_line(text.trim_end_matches(['\n', '\r'])),
            Err(e) => failure(FieldError::new(
                "",
                ErrorCode::InvalidJson,
                format!("the line is not UTF-8: {e}"),
            )),
        };
        output
            .write_all(answer.as_bytes())
            .context("writing stdout")?;
        output.write_all(b"\n").context("writing stdout")?;
    }
    output.flush().context("writing stdout")?;
    Ok(())
}

/// The answer to one input line, as one line of JSON text (no newline).
pub fn answer_line(line: &str) -> String {
    let (value, had_lone_surrogates) = match lenient_json::parse(line) {
        Ok(parsed) => parsed,
        Err(e) => {
            return failure(FieldError::new(
                "",
                ErrorCode::InvalidJson,
                format!("the line is not valid JSON: {e}"),
            ));
        }
    };
    let answer = judge(&value);
    if had_lone_surrogates {
        lenient_json::to_string(&answer)
    } else {
        answer.to_string()
    }
}

fn judge(line: &Value) -> Value {
    let Some(object) = line.as_object() else {
        return line_error(
            "",
            "the line must be an object with dialect, kind and input",
        );
    };
    let dialect = object.get("dialect").and_then(Value::as_str);
    let kind = object.get("kind").and_then(Value::as_str);
    let input = object.get("input");
    match (dialect, kind, input) {
        (Some("harness"), Some(kind), Some(input)) => harness_line(kind, input),
        (Some("deepagents"), ..) => {
            json!({"ok": false, "error": "dialect deepagents is not supported yet"})
        }
        (Some(other), ..) if dialect.is_some() && !matches!(other, "harness") => line_error(
            "dialect",
            &format!(
                "unknown dialect {}; expected harness or deepagents",
                json!(other)
            ),
        ),
        (None, ..) => line_error("dialect", "missing: expected \"harness\" or \"deepagents\""),
        (_, None, _) => line_error("kind", "missing: expected request, response or render"),
        (_, _, None) => line_error("input", "missing: the payload to judge"),
        _ => line_error(
            "",
            "the line must be an object with dialect, kind and input",
        ),
    }
}

fn harness_line(kind: &str, input: &Value) -> Value {
    match kind {
        "request" => harness_request(input),
        "response" => match harness_result(input) {
            Ok(result) => json!({
                "ok": true,
                "normalized": {"result": result.to_json(), "model_text": result.model_text()},
            }),
            Err(error) => result_error_answer(&error),
        },
        "render" => {
            if input.get("timed_out") == Some(&Value::Bool(true)) {
                return json!({"ok": true, "normalized": harness::TIMED_OUT});
            }
            match harness_result(input) {
                Ok(result) => json!({"ok": true, "normalized": result.model_text()}),
                Err(error) => result_error_answer(&error),
            }
        }
        other => line_error(
            "kind",
            &format!(
                "unknown kind {}; expected request, response or render",
                json!(other)
            ),
        ),
    }
}

fn harness_request(input: &Value) -> Value {
    let verdict = match (input.get("args"), input.get("args_json")) {
        (Some(args), None) => harness::validate_args(args, TopLevelExtras::Forbid),
        (None, Some(Value::String(text))) => {
            harness::validate_args_json(text, TopLevelExtras::Forbid)
        }
        _ => {
            return line_error(
                "input",
                "a request needs exactly one of `args` (an object) or `args_json` (a string)",
            );
        }
    };
    match verdict {
        Ok(questions) => json!({"ok": true, "normalized": questions.to_args()}),
        Err(errors) => errors_answer(&errors),
    }
}

/// Why a response line has no result: its input is unusable, or the answer does not fit.
enum ResultError {
    Input(ValidationErrors),
    Answer(ResponseError),
}

fn harness_result(input: &Value) -> Result<harness::ToolResult, ResultError> {
    let input_error = |path: &str, code, message: String| {
        ResultError::Input(ValidationErrors::single(FieldError::new(
            path, code, message,
        )))
    };
    let Some(request) = input.get("request") else {
        return Err(input_error(
            "request",
            ErrorCode::MissingField,
            "missing: the request answered".into(),
        ));
    };
    let questions = harness::validate_args(request, TopLevelExtras::Forbid).map_err(|errors| {
        let errors = errors
            .into_vec()
            .into_iter()
            .map(|e| {
                FieldError::new(
                    prefixed("request", &e.path),
                    e.code,
                    format!("invalid request: {}", e.message),
                )
            })
            .collect();
        // `from_vec` of a non-empty list is always Some.
        ResultError::Input(ValidationErrors::from_vec(errors).unwrap_or_else(|| {
            ValidationErrors::single(FieldError::new(
                "request",
                ErrorCode::InvalidValue,
                "invalid request",
            ))
        }))
    })?;
    let Some(response) = input.get("response") else {
        return Err(input_error(
            "response",
            ErrorCode::MissingField,
            "missing: the response to check".into(),
        ));
    };
    let response = AskUserResponse::deserialize(response).map_err(|e| {
        input_error(
            "response",
            ErrorCode::WrongType,
            format!("not a harness response: {e}"),
        )
    })?;
    harness::ask_user_result(&questions, &response).map_err(ResultError::Answer)
}

fn prefixed(prefix: &str, path: &str) -> String {
    if path.is_empty() {
        prefix.to_owned()
    } else if path.starts_with('[') {
        format!("{prefix}{path}")
    } else {
        format!("{prefix}.{path}")
    }
}

fn result_error_answer(error: &ResultError) -> Value {
    match error {
        ResultError::Input(errors) => errors_answer(errors),
        // The harness's own text, byte for byte: what a Python host would see raised.
        ResultError::Answer(error) => {
            json!({"ok": false, "error": error.message, "errors": [error.to_field_error()]})
        }
    }
}

fn errors_answer(errors: &ValidationErrors) -> Value {
    json!({"ok": false, "error": errors.to_string(), "errors": errors.errors()})
}

fn line_error(path: &str, message: &str) -> Value {
    let error = FieldError::new(path, ErrorCode::InvalidValue, message);
    json!({"ok": false, "error": error.to_string(), "errors": [error]})
}

fn failure(error: FieldError) -> String {
    json!({"ok": false, "error": error.to_string(), "errors": [error]}).to_string()
}
