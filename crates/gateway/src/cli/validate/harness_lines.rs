//! Harness lines (`dialect: "harness"`): `request`, `response` and `render`.

use std::borrow::Cow;

use askgate_protocol::harness::{self, AskUserResponse, ResponseError, TopLevelExtras};
use askgate_protocol::harness::{CheckedArgs, ResponseRef, ResultText};
use askgate_protocol::json::node::Node;
use askgate_protocol::json::scan::Scanner;
use askgate_protocol::json::write::push_str;
use askgate_protocol::{ErrorCode, FieldError, ValidationErrors};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Summary, invalid_request, line_error, present, push_refusal};

/// Every field a harness input may have, read in one pass; each kind takes its own.
pub(super) struct HarnessInput<'a> {
    args: Option<&'a str>,
    args_json: Option<Cow<'a, str>>,
    request: Option<&'a str>,
    response: Option<&'a str>,
    /// The response read on the way through the line, when the scanner could.
    response_read: Option<ResponseRef<'a>>,
    timed_out: Option<Value>,
    /// What the fast path made of `args` and `request` on the way through the line.
    checked_args: FastArgs<'a>,
    checked_request: FastArgs<'a>,
}

/// What the fast path made of tool arguments.
#[derive(Default)]
enum FastArgs<'a> {
    /// Not tried (the line was read by serde_json).
    #[default]
    NotTried,
    /// Valid, read where they stood.
    Valid(CheckedArgs<'a>),
    /// Invalid: every error, found where they stood.
    Refused(ValidationErrors),
    /// Given up on, but read as a tree for the full validator.
    Tree(Node<'a>),
    /// Given up on: only the full validator can judge them.
    GaveUp,
}

impl<'a> FastArgs<'a> {
    /// The verdict on `text`, these arguments' text, without reading it twice.
    fn judge(self, text: &'a str) -> Result<CheckedArgs<'a>, ValidationErrors> {
        match self {
            FastArgs::Valid(checked) => Ok(checked),
            FastArgs::Refused(errors) => Err(errors),
            FastArgs::NotTried => harness::check_args_json(text, TopLevelExtras::Forbid),
            FastArgs::Tree(args) => {
                harness::validate_node(&args, TopLevelExtras::Forbid).map(CheckedArgs::from)
            }
            FastArgs::GaveUp => harness::check_args_json_fully(text, TopLevelExtras::Forbid),
        }
    }
}

/// Reads a harness line with the strict [`Scanner`]: its kind and its input's fields, the
/// other keys checked and skipped. `None` when the line is not such a line or the scanner gives
/// up; the caller then reads it with serde_json, whose errors say what is wrong.
pub(super) fn read_line(line: &str) -> Option<(Cow<'_, str>, HarnessInput<'_>)> {
    let mut scanner = Scanner::new(line);
    let (mut dialect, mut kind, mut input) = (None, None, None);
    scanner.object(|scanner, key| {
        match key {
            "dialect" if dialect.is_none() => dialect = Some(scanner.string()?),
            "kind" if kind.is_none() => kind = Some(scanner.string()?),
            "input" if input.is_none() => input = Some(read_input(scanner)?),
            "dialect" | "kind" | "input" => return None,
            _ => drop(scanner.value_span()?),
        }
        Some(())
    })?;
    scanner.end()?;
    (dialect? == "harness").then_some(())?;
    Some((kind?, input?))
}

fn read_input<'a>(scanner: &mut Scanner<'a>) -> Option<HarnessInput<'a>> {
    let mut input = HarnessInput {
        args: None,
        args_json: None,
        request: None,
        response: None,
        response_read: None,
        timed_out: None,
        checked_args: FastArgs::NotTried,
        checked_request: FastArgs::NotTried,
    };
    let mut timed_out_seen = false;
    scanner.object(|scanner, key| {
        match key {
            "args" if input.args.is_none() => {
                let (text, checked) = read_args(scanner)?;
                (input.args, input.checked_args) = (Some(text), checked);
            }
            "args_json" if input.args_json.is_none() => input.args_json = Some(scanner.string()?),
            "request" if input.request.is_none() => {
                let (text, checked) = read_args(scanner)?;
                (input.request, input.checked_request) = (Some(text), checked);
            }
            "response" if input.response.is_none() => {
                let (text, read) = read_response(scanner)?;
                (input.response, input.response_read) = (Some(text), read);
            }
            "timed_out" if !timed_out_seen => {
                timed_out_seen = true;
                // As serde reads `Option<Value>`: `null` is absent; a number it cannot hold fails.
                input.timed_out = serde_json::from_str(scanner.value_span()?).ok()?;
            }
            "args" | "args_json" | "request" | "response" | "timed_out" => return None,
            _ => drop(scanner.value_span()?),
        }
        Some(())
    })?;
    Some(input)
}

/// Tool arguments inside the line: their text, and the fast path's verdict when it could read
/// them there and then (which spares reading them twice).
fn read_args<'a>(scanner: &mut Scanner<'a>) -> Option<(&'a str, FastArgs<'a>)> {
    match read_whole(scanner, harness::check_args_at) {
        Some((text, Ok(checked))) => return Some((text, FastArgs::Valid(checked))),
        Some((text, Err(errors))) => return Some((text, FastArgs::Refused(errors))),
        None => {}
    }
    // Arguments the fast path does not take: read them again, as a tree for the full validator.
    if let Some((text, tree)) = read_whole(scanner, Node::read_at) {
        return Some((text, FastArgs::Tree(tree)));
    }
    Some((scanner.value_span()?, FastArgs::GaveUp))
}

/// A response inside the line: its text, and what it reads as when the scanner can read it
/// (which spares serde reading it again).
fn read_response<'a>(scanner: &mut Scanner<'a>) -> Option<(&'a str, Option<ResponseRef<'a>>)> {
    if let Some((text, response)) = read_whole(scanner, ResponseRef::read_at) {
        return Some((text, Some(response)));
    }
    Some((scanner.value_span()?, None))
}

/// The value where `scanner` stands as `read` reads it, and its text; when `read` gives up,
/// `None` with the scanner put back where it stood, for another reader to try.
fn read_whole<'a, T>(
    scanner: &mut Scanner<'a>,
    read: impl FnOnce(&mut Scanner<'a>) -> Option<T>,
) -> Option<(&'a str, T)> {
    let start = scanner.mark();
    let before = scanner.clone();
    match read(scanner) {
        Some(value) => Some((scanner.text_from(start), value)),
        None => {
            *scanner = before;
            None
        }
    }
}

/// A `request` input: the tool call's arguments as an object or as JSON text.
#[derive(Deserialize)]
struct RequestInput<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    args: Option<&'a str>,
    #[serde(borrow, default)]
    args_json: Option<Cow<'a, str>>,
    #[serde(skip)]
    checked: FastArgs<'a>,
}

/// A `response` or `render` input.
#[derive(Deserialize)]
struct ResultInput<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    request: Option<&'a str>,
    #[serde(borrow, default, deserialize_with = "present")]
    response: Option<&'a str>,
    #[serde(skip)]
    response_read: Option<ResponseRef<'a>>,
    #[serde(default)]
    timed_out: Option<Value>,
    #[serde(skip)]
    checked: FastArgs<'a>,
}

/// Appends the answer to a harness line whose input was read in one pass to `out`.
pub(super) fn judge_into(kind: &str, input: HarnessInput<'_>, out: &mut Vec<u8>) {
    match kind {
        "request" => {
            let parsed = RequestInput {
                args: input.args,
                args_json: input.args_json,
                checked: input.checked_args,
            };
            request_into(parsed, out);
        }
        "response" | "render" => {
            let parsed = ResultInput {
                request: input.request,
                response: input.response,
                response_read: input.response_read,
                timed_out: input.timed_out,
                checked: input.checked_request,
            };
            result_into(kind, parsed, out);
        }
        other => out.extend_from_slice(unknown_kind(other).as_bytes()),
    }
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

/// Appends a response or render line's answer to `out`; a result is written by hand, the
/// bytes `serde_json` would write.
fn result_into(kind: &str, mut parsed: ResultInput<'_>, out: &mut Vec<u8>) {
    if kind == "render" && parsed.timed_out == Some(Value::Bool(true)) {
        out.extend_from_slice(br#"{"ok":true,"normalized":"#);
        push_str(out, harness::TIMED_OUT);
        out.push(b'}');
        return;
    }
    let verdict = match borrowed_result(&mut parsed) {
        Some(verdict) => verdict.map_err(ResultError::Answer),
        None => harness_result(parsed).map(|result| match result {
            harness::ToolResult::Text(sentence) => ResultText::Sentence(sentence),
            answers @ harness::ToolResult::Answers(_) => ResultText::Json(answers.model_text()),
        }),
    };
    match verdict {
        Ok(text) => {
            // What the model reads: a sentence as is, answers as their compact JSON.
            let model_text = match &text {
                ResultText::Sentence(sentence) => sentence,
                ResultText::Json(json) => json.as_str(),
            };
            out.extend_from_slice(br#"{"ok":true,"normalized":"#);
            if kind == "render" {
                push_str(out, model_text);
            } else {
                out.extend_from_slice(br#"{"result":"#);
                match &text {
                    ResultText::Sentence(sentence) => push_str(out, sentence),
                    ResultText::Json(json) => out.extend_from_slice(json.as_bytes()),
                }
                out.extend_from_slice(br#","model_text":"#);
                push_str(out, model_text);
                out.push(b'}');
            }
            out.push(b'}');
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

/// The verdict on a response to questions the fast path read, the response read with its
/// strings borrowed; `None` when [`harness_result`] must decide (and word any error).
fn borrowed_result(parsed: &mut ResultInput<'_>) -> Option<Result<ResultText, ResponseError>> {
    let FastArgs::Valid(questions) = &parsed.checked else {
        return None;
    };
    let response = match parsed.response_read.take() {
        Some(response) => response,
        None => serde_json::from_str::<ResponseRef<'_>>(parsed.response?).ok()?,
    };
    Some(questions.result_text(&response))
}

/// Appends a request line's answer to `out`: a valid call's questions are written straight
/// from the borrowed text, as `serde_json` would write them.
fn request_into(parsed: RequestInput<'_>, out: &mut Vec<u8>) {
    let RequestInput {
        args,
        args_json,
        checked,
    } = parsed;
    let verdict = match (args, &args_json) {
        (Some(args), None) => checked.judge(args),
        (None, Some(text)) => harness::check_args_json(text, TopLevelExtras::Forbid),
        _ => {
            let answer = line_error(
                "input",
                "a request needs exactly one of `args` (an object) or `args_json` (a string)",
            );
            return out.extend_from_slice(answer.as_bytes());
        }
    };
    match verdict {
        Ok(questions) => {
            out.extend_from_slice(br#"{"ok":true,"normalized":{"questions":"#);
            questions.write_json(out);
            out.extend_from_slice(b"}}");
        }
        Err(errors) => push_refusal(out, &Summary::EachError, errors.errors()),
    }
}

/// Why a response line has no result: its input is unusable, or the answer does not fit.
enum ResultError {
    Input(ValidationErrors),
    Answer(ResponseError),
}

fn harness_result(input: ResultInput<'_>) -> Result<harness::ToolResult, ResultError> {
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
    let questions = input
        .checked
        .judge(request)
        .map(CheckedArgs::into_owned)
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
