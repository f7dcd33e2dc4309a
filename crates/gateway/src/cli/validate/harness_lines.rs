//! Harness lines (`dialect: "harness"`): `request`, `response` and `render`.

use std::borrow::Cow;

use askgate_protocol::harness::{
    self, AskUserResponse, HarnessQuestions, ResponseError, ToolResult, TopLevelExtras,
};
use askgate_protocol::{ErrorCode, FieldError, ValidationErrors};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Summary, invalid_request, line_error, present, push_refusal};

/// A `request` input: the tool call's arguments as an object or as JSON text.
#[derive(Deserialize)]
struct RequestInput<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    args: Option<&'a str>,
    #[serde(borrow, default)]
    args_json: Option<Cow<'a, str>>,
}

/// A `response` or `render` input.
#[derive(Deserialize)]
struct ResultInput<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    request: Option<&'a str>,
    #[serde(borrow, default, deserialize_with = "present")]
    response: Option<&'a str>,
    #[serde(default)]
    timed_out: Option<Value>,
}

/// A valid answer: `{"ok":true,"normalized":...}`.
#[derive(Serialize)]
struct Accepted<T> {
    ok: bool,
    normalized: T,
}

/// The answer to a harness line, its input read by what its kind needs (so an error names
/// what that kind could not read).
pub(super) fn judge_raw(kind: &str, input: &str) -> String {
    let mut out = Vec::new();
    match kind {
        "request" => match serde_json::from_str::<RequestInput<'_>>(input) {
            Ok(parsed) => request_into(parsed, &mut out),
            Err(e) => return line_error("input", &format!("not a request input: {e}")),
        },
        "response" | "render" => match serde_json::from_str::<ResultInput<'_>>(input) {
            Ok(parsed) => result_into(kind, parsed, &mut out),
            Err(e) => return line_error("input", &format!("not a {kind} input: {e}")),
        },
        other => return unknown_kind(other),
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn unknown_kind(kind: &str) -> String {
    line_error(
        "kind",
        &format!(
            "unknown kind {}; expected request, response or render",
            json!(kind)
        ),
    )
}

/// Appends `{"ok":true,"normalized":normalized}` to `out`.
fn push_accepted(out: &mut Vec<u8>, normalized: impl Serialize) {
    // Writing strings, lists and maps into a `Vec` cannot fail.
    let _ = serde_json::to_writer(
        out,
        &Accepted {
            ok: true,
            normalized,
        },
    );
}

/// Appends a response or render line's answer to `out`.
fn result_into(kind: &str, parsed: ResultInput<'_>, out: &mut Vec<u8>) {
    if kind == "render" && parsed.timed_out == Some(Value::Bool(true)) {
        return push_accepted(out, harness::TIMED_OUT);
    }
    match harness_result(parsed) {
        // What the model reads: a sentence as is, answers as their compact JSON.
        Ok(result) if kind == "render" => push_accepted(out, result.model_text()),
        Ok(result) => {
            let model_text = result.model_text();
            push_accepted(out, json!({"result": result, "model_text": model_text}));
        }
        Err(ResultError::Input(errors)) => push_refusal(out, &Summary::EachError, errors.errors()),
        // The harness's own text, byte for byte: what a Python host would see raised.
        Err(ResultError::Answer(error)) => {
            let field_error = error.into_field_error();
            push_refusal(
                out,
                &Summary::Message(&field_error.message),
                std::slice::from_ref(&field_error),
            );
        }
    }
}

/// Appends a request line's answer to `out`.
fn request_into(parsed: RequestInput<'_>, out: &mut Vec<u8>) {
    let text = match (parsed.args, &parsed.args_json) {
        (Some(args), None) => args,
        (None, Some(text)) => text,
        _ => {
            let answer = line_error(
                "input",
                "a request needs exactly one of `args` (an object) or `args_json` (a string)",
            );
            return out.extend_from_slice(answer.as_bytes());
        }
    };
    match harness::validate_args_json(text, TopLevelExtras::Forbid) {
        Ok(questions) => push_accepted(out, json!({ "questions": questions })),
        Err(errors) => push_refusal(out, &Summary::EachError, errors.errors()),
    }
}

/// Why a response line has no result: its input is unusable, or the answer does not fit.
enum ResultError {
    Input(ValidationErrors),
    Answer(ResponseError),
}

fn harness_result(input: ResultInput<'_>) -> Result<ToolResult, ResultError> {
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
    let questions: HarnessQuestions = harness::validate_args_json(request, TopLevelExtras::Forbid)
        .map_err(|errors| {
            let errors = invalid_request(errors);
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
    let response: AskUserResponse = serde_json::from_str(response).map_err(|e| {
        input_error(
            "response",
            ErrorCode::WrongType,
            format!("not a harness response: {e}"),
        )
    })?;
    harness::ask_user_result(&questions, &response).map_err(ResultError::Answer)
}
