//! Harness lines (`dialect: "harness"`): `request`, `response` and `render`.

use std::borrow::Cow;

use askgate_protocol::harness::{
    self, AskUserResponse, HarnessQuestions, ResponseError, ToolResult, TopLevelExtras,
};
use askgate_protocol::{ErrorCode, FieldError, ValidationErrors};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Summary, invalid_request, line_error, present, refusal};

/// A `request` input: the tool call's arguments as an object or as JSON text.
#[derive(Deserialize)]
struct RequestInput<'a> {
    #[serde(default, deserialize_with = "present_value")]
    args: Option<Value>,
    #[serde(borrow, default)]
    args_json: Option<Cow<'a, str>>,
}

/// A `response` or `render` input.
#[derive(Deserialize)]
struct ResultInput<'a> {
    #[serde(default, deserialize_with = "present_value")]
    request: Option<Value>,
    #[serde(borrow, default, deserialize_with = "present")]
    response: Option<&'a str>,
    #[serde(default)]
    timed_out: Option<Value>,
}

/// A harness line read in one pass, its `input` straight into what its kind reads, instead of
/// kept as text and read again (a tenth of the run on bench/validate.sh's mix). Its fields are
/// [`super::Line`]'s, in the same order and each read no more leniently, so a line this reads
/// is one `Line` and the kind's own input read with the same values; any other line (another
/// dialect or kind, a string with escapes where `harness` or a kind is expected, a mistake)
/// fails here and is read as before, whose errors are the ones the answer gives.
#[derive(Deserialize)]
pub(super) struct OnePass<'a> {
    #[serde(rename = "dialect", deserialize_with = "harness_dialect")]
    _dialect: (),
    #[serde(deserialize_with = "harness_kind")]
    kind: Kind,
    #[serde(borrow)]
    input: EitherInput<'a>,
}

/// The kinds a harness line can have.
#[derive(Clone, Copy)]
enum Kind {
    Request,
    Response,
    Render,
}

/// `"harness"`, nothing else (not even an object naming it, which an enum would take).
fn harness_dialect<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<(), D::Error> {
    match <&str>::deserialize(deserializer)? {
        "harness" => Ok(()),
        _ => Err(serde::de::Error::custom("not a harness line")),
    }
}

fn harness_kind<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Kind, D::Error> {
    match <&str>::deserialize(deserializer)? {
        "request" => Ok(Kind::Request),
        "response" => Ok(Kind::Response),
        "render" => Ok(Kind::Render),
        _ => Err(serde::de::Error::custom("not a harness kind")),
    }
}

/// The fields of [`RequestInput`] and [`ResultInput`], read alike: whichever the kind needs is
/// taken, the other ignored. Written out rather than the two flattened in: `flatten` buffers
/// the input, which the one pass is there to avoid; and the two stay apart for the ordinary
/// read, where a request line's stray `response` is ignored, not judged.
#[derive(Deserialize)]
struct EitherInput<'a> {
    #[serde(default, deserialize_with = "present_value")]
    args: Option<Value>,
    #[serde(borrow, default)]
    args_json: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "present_value")]
    request: Option<Value>,
    #[serde(borrow, default, deserialize_with = "present")]
    response: Option<&'a str>,
    #[serde(default)]
    timed_out: Option<Value>,
}

/// The answer to a line [`OnePass`] read.
pub(super) fn judge_one_pass(line: OnePass<'_>) -> String {
    let EitherInput {
        args,
        args_json,
        request,
        response,
        timed_out,
    } = line.input;
    let result = ResultInput {
        request,
        response,
        timed_out,
    };
    match line.kind {
        Kind::Request => request_answer(&RequestInput { args, args_json }),
        Kind::Response => result_answer("response", &result),
        Kind::Render => result_answer("render", &result),
    }
}

/// Reads a field that is present, `null` included, as `Some`; absent fields default to
/// `None` (serde maps `null` to `None` for a plain `Option`).
fn present_value<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// A valid answer: `{"ok":true,"normalized":...}`.
#[derive(Serialize)]
struct Accepted<T> {
    ok: bool,
    normalized: T,
}

/// A valid request's normalised arguments.
#[derive(Serialize)]
struct Normalized {
    questions: HarnessQuestions,
}

/// A valid response: the tool's result and the text the model reads.
#[derive(Serialize)]
struct Rendered {
    result: ToolResult,
    model_text: String,
}

/// The answer to a harness line, its input read by what its kind needs (so an error names
/// what that kind could not read).
pub(super) fn judge_raw(kind: &str, input: &str) -> String {
    match kind {
        "request" => match serde_json::from_str::<RequestInput<'_>>(input) {
            Ok(parsed) => request_answer(&parsed),
            Err(e) => line_error("input", &format!("not a request input: {e}")),
        },
        "response" | "render" => match serde_json::from_str::<ResultInput<'_>>(input) {
            Ok(parsed) => result_answer(kind, &parsed),
            Err(e) => line_error("input", &format!("not a {kind} input: {e}")),
        },
        other => unknown_kind(other),
    }
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

/// `{"ok":true,"normalized":normalized}`.
fn accepted(normalized: impl Serialize) -> String {
    // Writing strings, lists and maps cannot fail.
    serde_json::to_string(&Accepted {
        ok: true,
        normalized,
    })
    .unwrap_or_default()
}

/// A response or render line's answer.
fn result_answer(kind: &str, parsed: &ResultInput<'_>) -> String {
    if kind == "render" && parsed.timed_out == Some(Value::Bool(true)) {
        return accepted(harness::TIMED_OUT);
    }
    match harness_result(parsed) {
        // What the model reads: a sentence as is, answers as their compact JSON.
        Ok(result) if kind == "render" => accepted(result.model_text()),
        Ok(result) => {
            let model_text = result.model_text();
            accepted(Rendered { result, model_text })
        }
        Err(ResultError::Input(errors)) => refusal(&Summary::EachError, errors.errors()),
        // The harness's own text, byte for byte: what a Python host would see raised.
        Err(ResultError::Answer(error)) => {
            let field_error = error.into_field_error();
            refusal(
                &Summary::Message(&field_error.message),
                std::slice::from_ref(&field_error),
            )
        }
    }
}

/// A request line's answer.
fn request_answer(parsed: &RequestInput<'_>) -> String {
    let verdict = match (&parsed.args, &parsed.args_json) {
        (Some(args), None) => harness::validate_args(args, TopLevelExtras::Forbid),
        (None, Some(text)) => harness::validate_args_json(text, TopLevelExtras::Forbid),
        _ => {
            return line_error(
                "input",
                "a request needs exactly one of `args` (an object) or `args_json` (a string)",
            );
        }
    };
    match verdict {
        Ok(questions) => accepted(Normalized { questions }),
        Err(errors) => refusal(&Summary::EachError, errors.errors()),
    }
}

/// Why a response line has no result: its input is unusable, or the answer does not fit.
enum ResultError {
    Input(ValidationErrors),
    Answer(ResponseError),
}

fn harness_result(input: &ResultInput<'_>) -> Result<ToolResult, ResultError> {
    let input_error = |path: &str, code, message: String| {
        ResultError::Input(ValidationErrors::single(FieldError::new(
            path, code, message,
        )))
    };
    let Some(request) = &input.request else {
        return Err(input_error(
            "request",
            ErrorCode::MissingField,
            "missing: the request answered".into(),
        ));
    };
    let questions = harness::validate_args(request, TopLevelExtras::Forbid).map_err(|errors| {
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
