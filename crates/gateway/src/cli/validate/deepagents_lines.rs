//! deepagents lines (`dialect: "deepagents"`): `request`, `response` and `render`, judged by
//! deepagents' own rules only ([`Bounds::Framework`]).

use askgate_protocol::deepagents::{self, Bounds, Identity, RenderOp};
use askgate_protocol::{ErrorCode, FieldError, json::lenient};
use serde_json::{Value, json};

use super::{invalid_request, line_error};

/// The tool call id of deepagents lines that do not name one (the vectors' id).
const DEFAULT_TOOL_CALL_ID: &str = "call_1";

/// The answer to a deepagents line.
pub(super) fn judge(kind: &str, input: &str) -> String {
    // The line was read as raw JSON: lone surrogate escapes in it are still undecoded, and
    // deepagents (Python) keeps them, so read them as stand-ins.
    let input = match lenient::parse(input) {
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
    lenient::to_string(&answer)
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
        (None, Some(Value::String(text))) => {
            lenient::parse(text).map(|(args, _)| args).map_err(|e| {
                let error = FieldError::new(
                    "args_json",
                    ErrorCode::InvalidJson,
                    format!("the arguments are not valid JSON: {e}"),
                );
                json!({"ok": false, "error": error.to_string(), "errors": [error]})
            })
        }
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
            let errors = invalid_request(rejection.field_errors());
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
