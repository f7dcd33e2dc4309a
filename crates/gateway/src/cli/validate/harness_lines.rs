//! Harness lines (`dialect: "harness"`): `request`, `response` and `render`.

use std::borrow::Cow;

use askgate_protocol::harness::{self, AskUserResponse, ResponseError, TopLevelExtras};
use askgate_protocol::{ErrorCode, FieldError, ValidationErrors};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::{errors_answer, invalid_request, line_error, present, to_line};

/// Every field a harness input may have, read in one pass; each kind takes its own.
#[derive(Deserialize)]
pub(super) struct HarnessInput<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    args: Option<&'a RawValue>,
    #[serde(borrow, default)]
    args_json: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "present")]
    request: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    response: Option<&'a RawValue>,
    #[serde(default)]
    timed_out: Option<Value>,
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

/// The answer to a harness line whose input was read in one pass.
pub(super) fn judge(kind: &str, input: HarnessInput<'_>) -> String {
    match kind {
        "request" => request(RequestInput {
            args: input.args,
            args_json: input.args_json,
        }),
        "response" | "render" => result(
            kind,
            &ResultInput {
                request: input.request,
                response: input.response,
                timed_out: input.timed_out,
            },
        ),
        other => unknown_kind(other),
    }
}

/// The answer to a harness line, its input read by what its kind needs (so an error names
/// what that kind could not read).
pub(super) fn judge_raw(kind: &str, input: &RawValue) -> String {
    match kind {
        "request" => match serde_json::from_str::<RequestInput<'_>>(input.get()) {
            Ok(parsed) => request(parsed),
            Err(e) => line_error("input", &format!("not a request input: {e}")),
        },
        "response" | "render" => match serde_json::from_str::<ResultInput<'_>>(input.get()) {
            Ok(parsed) => result(kind, &parsed),
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

/// What the model reads, or a response line's result and text.
#[derive(Serialize)]
#[serde(untagged)]
enum Rendered<'a> {
    Text(&'a str),
    Result {
        result: &'a harness::ToolResult,
        model_text: &'a str,
    },
}

/// A success: the normalised value.
#[derive(Serialize)]
struct Accepted<T> {
    ok: bool,
    normalized: T,
}

fn result(kind: &str, parsed: &ResultInput<'_>) -> String {
    if kind == "render" && parsed.timed_out == Some(Value::Bool(true)) {
        return to_line(&Accepted {
            ok: true,
            normalized: Rendered::Text(harness::TIMED_OUT),
        });
    }
    match harness_result(parsed) {
        Ok(result) => {
            let model_text = result.model_text();
            let normalized = if kind == "render" {
                Rendered::Text(&model_text)
            } else {
                Rendered::Result {
                    result: &result,
                    model_text: &model_text,
                }
            };
            to_line(&Accepted {
                ok: true,
                normalized,
            })
        }
        Err(ResultError::Input(errors)) => errors_answer(&errors),
        // The harness's own text, byte for byte: what a Python host would see raised.
        Err(ResultError::Answer(error)) => to_line(&super::Refusal {
            ok: false,
            error: error.message.clone(),
            errors: &[error.to_field_error()],
        }),
    }
}

fn request(parsed: RequestInput<'_>) -> String {
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
            let accepted = Accepted {
                ok: true,
                normalized: Normalized {
                    questions: &questions,
                },
            };
            to_line(&accepted)
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
    let response: AskUserResponse = serde_json::from_str(response.get()).map_err(|e| {
        input_error(
            "response",
            ErrorCode::WrongType,
            format!("not a harness response: {e}"),
        )
    })?;
    harness::ask_user_result(&questions, &response).map_err(ResultError::Answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reading an input in one pass must not change a verdict: wherever the one-pass reading
    /// succeeds, its answer equals the kind-by-kind reading's, on every harness vector.
    #[test]
    fn one_pass_and_kind_by_kind_readings_agree() {
        #[derive(Deserialize)]
        struct Vector<'a> {
            dialect: &'a str,
            #[serde(borrow)]
            input: &'a RawValue,
        }
        let vectors = include_str!("../../../../../tests/data/conformance/vectors.jsonl");
        let mut compared = 0;
        for line in vectors.lines() {
            let Ok(vector) = serde_json::from_str::<Vector<'_>>(line) else {
                continue;
            };
            if vector.dialect != "harness" {
                continue;
            }
            for kind in ["request", "response", "render", "other"] {
                if let Ok(fields) = serde_json::from_str::<HarnessInput<'_>>(vector.input.get()) {
                    assert_eq!(
                        judge(kind, fields),
                        judge_raw(kind, vector.input),
                        "{kind}: {line}"
                    );
                    compared += 1;
                }
            }
        }
        assert!(compared > 600, "only {compared} comparisons");
    }
}
