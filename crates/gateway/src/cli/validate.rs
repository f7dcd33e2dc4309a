//! `askgate validate`: judge JSON lines as the real frameworks would.
//!
//! The line format is the conformance vectors' (`{"dialect","kind","input"}`, other keys
//! ignored), so the same lines can be fed to askgate and to the Python packages and the
//! answers compared. Lines are read in batches and judged on every core; answers come out in
//! input order, one line each.
//!
//! deepagents lines (`dialect: "deepagents"`) are judged by deepagents' own rules only
//! ([`Bounds::Framework`]: none of the gateway's bounds), so the verdict is the real package's:
//! - `request` `{"args": {...}}` or `{"args_json": "..."}` (decoded as Python's `json.loads`
//!   would, lone surrogates kept), optional `tool_call_id` (default `call_1`): the interrupt
//!   payload, or `ok: false` with `error` = the exact `ToolNode` message the model reads,
//!   `errors` = askgate's `{path, message, code}` list and `framework_errors` = pydantic's
//!   `{type, loc, msg}` list.
//! - `response` `{"request": {...}, "resume": <any JSON>, "thread_id"?, "turn_id"?,
//!   "tool_call_id"?}` (ids default to `thread-1`, `turn-1`, `call_1`; null or a non-string
//!   means untrusted): `{"content", "status", "receipt"}` of the tool's `ToolMessage`.
//! - `render` `{"op": "transcript" | "display" | "encode_multi_select" |
//!   "decode_multi_select" | "answer_is_empty", ...}`: what the deepagents helper returns.

use std::borrow::Cow;
use std::io::{BufRead, Write};

use anyhow::Context as _;
use askgate_protocol::deepagents::{self, Bounds, Identity, RenderOp};
use askgate_protocol::harness::{self, AskUserResponse, ResponseError, TopLevelExtras};
use askgate_protocol::{ErrorCode, FieldError, ValidationErrors, lenient_json};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// Lines judged per batch: enough to share among threads, few enough to bound memory.
const BATCH_LINES: usize = 4096;

/// Reads lines from `input` until it ends and writes one answer line per input line.
///
/// # Errors
/// Only I/O errors on the streams; bad lines get error lines.
pub fn run(mut input: impl BufRead, output: impl Write) -> anyhow::Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut output = std::io::BufWriter::with_capacity(256 * 1024, output);
    let mut batch: Vec<Vec<u8>> = Vec::with_capacity(BATCH_LINES);
    loop {
        batch.clear();
        while batch.len() < BATCH_LINES {
            let mut line = Vec::new();
            if input
                .read_until(b'\n', &mut line)
                .context("reading stdin")?
                == 0
            {
                break;
            }
            batch.push(line);
        }
        if batch.is_empty() {
            break;
        }
        let chunk = batch.len().div_ceil(threads);
        let answers: Vec<Vec<u8>> = std::thread::scope(|scope| {
            let workers: Vec<_> = batch
                .chunks(chunk)
                .map(|lines| scope.spawn(move || answer_lines(lines)))
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|_| b"".to_vec()))
                .collect()
        });
        for part in answers {
            output.write_all(&part).context("writing stdout")?;
        }
        if batch.len() < BATCH_LINES {
            break;
        }
    }
    output.flush().context("writing stdout")?;
    Ok(())
}

fn answer_lines(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.len() * 256);
    for line in lines {
        let answer = match std::str::from_utf8(line) {
            Ok(text) => answer_line(text.trim_end_matches(['\n', '\r'])),
            Err(e) => failure(&FieldError::new(
                "",
                ErrorCode::InvalidJson,
                format!("the line is not UTF-8: {e}"),
            )),
        };
        out.extend_from_slice(answer.as_bytes());
        out.push(b'\n');
    }
    out
}

/// Reads a field that is present, `null` included, as `Some(raw)`; absent fields default to
/// `None`. (serde maps `null` to `None` for a plain `Option`, but `"args": null` is an input
/// to judge, not a missing one.)
fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// One input line: what to judge. Other keys (a vector's `name`, `expect`) are skipped.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    dialect: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "present")]
    input: Option<&'a RawValue>,
}

/// The answer to one input line, as one line of JSON text (no newline).
pub fn answer_line(line: &str) -> String {
    if line.trim().is_empty() {
        return failure(&FieldError::new(
            "",
            ErrorCode::InvalidJson,
            "the line is empty; expected a JSON object with dialect, kind and input",
        ));
    }
    if let Ok(parsed) = serde_json::from_str::<Line<'_>>(line) {
        return judge(&parsed);
    }
    // Not strict JSON: perhaps lone surrogates, which Python hosts write. Map them to
    // stand-ins, judge the re-encoded line, and write them back as `\udXXX` escapes.
    match lenient_json::parse(line) {
        Ok((value, true)) => {
            let text = value.to_string();
            let answer = match serde_json::from_str::<Line<'_>>(&text) {
                Ok(parsed) => judge(&parsed),
                Err(e) => failure(&not_a_line(&e.to_string())),
            };
            match serde_json::from_str::<Value>(&answer) {
                Ok(answer) => lenient_json::to_string(&answer),
                Err(_) => answer,
            }
        }
        Ok((_, false)) => failure(&not_a_line(
            "expected an object with dialect, kind and input",
        )),
        Err(e) => failure(&FieldError::new(
            "",
            ErrorCode::InvalidJson,
            format!("the line is not valid JSON: {e}"),
        )),
    }
}

fn not_a_line(detail: &str) -> FieldError {
    FieldError::new(
        "",
        ErrorCode::InvalidValue,
        format!("the line must be an object with dialect, kind and input: {detail}"),
    )
}

fn judge(line: &Line<'_>) -> String {
    let (Some(dialect), Some(kind), Some(input)) =
        (line.dialect.as_deref(), line.kind.as_deref(), line.input)
    else {
        let missing = [
            ("dialect", line.dialect.is_none()),
            ("kind", line.kind.is_none()),
            ("input", line.input.is_none()),
        ];
        let (field, _) = missing
            .into_iter()
            .find(|(_, absent)| *absent)
            .unwrap_or_default();
        return line_error(field, "missing: each line needs dialect, kind and input");
    };
    match dialect {
        "harness" => harness_line(kind, input),
        "deepagents" => deepagents_line(kind, input),
        other => line_error(
            "dialect",
            &format!(
                "unknown dialect {}; expected harness or deepagents",
                json!(other)
            ),
        ),
    }
}

/// A `request` input: the tool call's arguments as an object or as JSON text.
#[derive(Deserialize)]
struct RequestInput<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    args: Option<&'a RawValue>,
    #[serde(borrow, default)]
    args_json: Option<Cow<'a, str>>,
}

/// A `response` or `render` input.
#[derive(Deserialize)]
struct ResultInput<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    request: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    response: Option<&'a RawValue>,
    #[serde(default)]
    timed_out: Option<Value>,
}

fn harness_line(kind: &str, input: &RawValue) -> String {
    match kind {
        "request" => harness_request(input),
        "response" | "render" => {
            let parsed = match serde_json::from_str::<ResultInput<'_>>(input.get()) {
                Ok(parsed) => parsed,
                Err(e) => return line_error("input", &format!("not a {kind} input: {e}")),
            };
            if kind == "render" && parsed.timed_out == Some(Value::Bool(true)) {
                return json!({"ok": true, "normalized": harness::TIMED_OUT}).to_string();
            }
            match harness_result(&parsed) {
                Ok(result) if kind == "render" => {
                    json!({"ok": true, "normalized": result.model_text()}).to_string()
                }
                Ok(result) => json!({
                    "ok": true,
                    "normalized": {"result": result, "model_text": result.model_text()},
                })
                .to_string(),
                Err(ResultError::Input(errors)) => errors_answer(&errors),
                // The harness's own text, byte for byte: what a Python host would see raised.
                Err(ResultError::Answer(error)) => {
                    json!({"ok": false, "error": error.message, "errors": [error.to_field_error()]})
                        .to_string()
                }
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

fn harness_request(input: &RawValue) -> String {
    let parsed = match serde_json::from_str::<RequestInput<'_>>(input.get()) {
        Ok(parsed) => parsed,
        Err(e) => return line_error("input", &format!("not a request input: {e}")),
    };
    let verdict = match (parsed.args, parsed.args_json) {
        (Some(args), None) => harness::validate_args_json(args.get(), TopLevelExtras::Forbid),
        (None, Some(text)) => harness::validate_args_json(&text, TopLevelExtras::Forbid),
        _ => {
            return line_error(
                "input",
                "a request needs exactly one of `args` (an object) or `args_json` (a string)",
            );
        }
    };
    match verdict {
        Ok(questions) => {
            #[derive(serde::Serialize)]
            struct Normalized<'a> {
                questions: &'a harness::HarnessQuestions,
            }
            #[derive(serde::Serialize)]
            struct Accepted<'a> {
                ok: bool,
                normalized: Normalized<'a>,
            }
            let accepted = Accepted {
                ok: true,
                normalized: Normalized {
                    questions: &questions,
                },
            };
            serde_json::to_string(&accepted).unwrap_or_else(|e| {
                line_error("", &format!("the answer could not be written: {e}"))
            })
        }
        Err(errors) => errors_answer(&errors),
    }
}

/// Why a response line has no result: its input is unusable, or the answer does not fit.
enum ResultError {
    Input(ValidationErrors),
    Answer(ResponseError),
}

fn harness_result(input: &ResultInput<'_>) -> Result<harness::ToolResult, ResultError> {
    let input_error = |path: &str, code, message: String| {
        ResultError::Input(ValidationErrors::single(FieldError::new(
            path, code, message,
        )))
    };
    let Some(request) = input.request else {
        return Err(input_error(
            "request",
            ErrorCode::MissingField,
            "missing: the request answered".into(),
        ));
    };
    let questions =
        harness::validate_args_json(request.get(), TopLevelExtras::Forbid).map_err(|errors| {
            let errors: Vec<FieldError> = errors
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
            ResultError::Input(ValidationErrors::from_vec(errors).unwrap_or_else(|| {
                ValidationErrors::single(FieldError::new(
                    "request",
                    ErrorCode::InvalidValue,
                    "invalid request",
                ))
            }))
        })?;
    let Some(response) = input.response else {
        return Err(input_error(
            "response",
            ErrorCode::MissingField,
            "missing: the response to check".into(),
        ));
    };
    let response: AskUserResponse = serde_json::from_str(response.get()).map_err(|e| {
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

fn errors_answer(errors: &ValidationErrors) -> String {
    json!({"ok": false, "error": errors.to_string(), "errors": errors.errors()}).to_string()
}

fn line_error(path: &str, message: &str) -> String {
    failure(&FieldError::new(path, ErrorCode::InvalidValue, message))
}

fn failure(error: &FieldError) -> String {
    json!({"ok": false, "error": error.to_string(), "errors": [error]}).to_string()
}

/// The tool call id of deepagents lines that do not name one (the vectors' id).
const DEFAULT_TOOL_CALL_ID: &str = "call_1";

fn deepagents_line(kind: &str, input: &RawValue) -> String {
    // The line was read as raw JSON: lone surrogate escapes in it are still undecoded, and
    // deepagents (Python) keeps them, so read them as stand-ins.
    let input = match lenient_json::parse(input.get()) {
        Ok((input, _)) => input,
        Err(e) => return line_error("input", &format!("not a {kind} input: {e}")),
    };
    let answer = match kind {
        "request" => deepagents_request(&input),
        "response" => deepagents_response(&input),
        "render" => match RenderOp::parse(&input) {
            Ok(op) => json!({"ok": true, "normalized": op.run()}),
            Err(message) => return line_error("input", &message),
        },
        other => {
            return line_error(
                "kind",
                &format!(
                    "unknown kind {}; expected request, response or render",
                    json!(other)
                ),
            );
        }
    };
    // Lone surrogates (held as stand-ins) go back out as the `\udXXX` escapes they came in as.
    lenient_json::to_string(&answer)
}

fn tool_call_id(input: &Value) -> &str {
    input
        .get("tool_call_id")
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_TOOL_CALL_ID)
}

/// The tool arguments of a request input, decoded as Python's `json.loads` would.
fn deepagents_args(input: &Value) -> Result<Value, Value> {
    match (input.get("args"), input.get("args_json")) {
        (Some(args), None) => Ok(args.clone()),
        (None, Some(Value::String(text))) => lenient_json::parse(text)
            .map(|(args, _)| args)
            .map_err(|e| {
                let error = FieldError::new(
                    "args_json",
                    ErrorCode::InvalidJson,
                    format!("the arguments are not valid JSON: {e}"),
                );
                json!({"ok": false, "error": error.to_string(), "errors": [error]})
            }),
        _ => Err(serde_json::from_str(&line_error(
            "input",
            "a request needs exactly one of `args` (an object) or `args_json` (a string)",
        ))
        .unwrap_or(Value::Null)),
    }
}

fn deepagents_request(input: &Value) -> Value {
    let args = match deepagents_args(input) {
        Ok(args) => args,
        Err(answer) => return answer,
    };
    match deepagents::validate_args(&args, Bounds::Framework) {
        Ok(questions) => json!({
            "ok": true,
            "normalized": questions.interrupt_payload(tool_call_id(input)),
        }),
        Err(errors) => json!({
            "ok": false,
            "error": errors.tool_message(&args),
            "errors": errors.field_errors(),
            "framework_errors": errors.framework_errors(),
        }),
    }
}

/// A trusted id: the input's string (or `default` when absent); null, empty or not a
/// string is untrusted, as deepagents' runtime checks treat it.
fn trusted<'a>(input: &'a Value, key: &str, default: &'a str) -> Option<&'a str> {
    match input.get(key) {
        None => Some(default),
        Some(Value::String(id)) if !id.is_empty() => Some(id),
        Some(_) => None,
    }
}

fn deepagents_response(input: &Value) -> Value {
    let Some(request) = input.get("request") else {
        return error_value(
            "request",
            ErrorCode::MissingField,
            "missing: the request answered",
        );
    };
    let questions = match deepagents::validate_args(request, Bounds::Framework) {
        Ok(questions) => questions,
        Err(rejection) => {
            let errors: Vec<FieldError> = rejection
                .field_errors()
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
            return json!({
                "ok": false,
                "error": format!("invalid request: {}", rejection.tool_message(request)),
                "errors": errors,
            });
        }
    };
    let Some(resume) = input.get("resume") else {
        return error_value(
            "resume",
            ErrorCode::MissingField,
            "missing: the value the tool is resumed with",
        );
    };
    let identity = Identity {
        tool_call_id: tool_call_id(input),
        thread_id: trusted(input, "thread_id", "thread-1"),
        turn_id: trusted(input, "turn_id", "turn-1"),
    };
    let message = deepagents::parse_resume(resume, &questions, identity);
    json!({"ok": true, "normalized": message})
}

fn error_value(path: &str, code: ErrorCode, message: &str) -> Value {
    let error = FieldError::new(path, code, message);
    json!({"ok": false, "error": error.to_string(), "errors": [error]})
}
