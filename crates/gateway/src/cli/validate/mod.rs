//! `askgate validate`: judge JSON lines as the real frameworks would.
//!
//! The line format is the conformance vectors' (`{"dialect","kind","input"}`, other keys
//! ignored), so the same lines can be fed to askgate and to the Python packages and the
//! answers compared. Input is read in blocks of whole lines, judged on every core while more
//! is read, and answers come out in input order, one line each.
//!
//! - [`pipeline`]: one worker per core, each reading a block of whole lines in turn, judging
//!   it and writing out what is due; [`stream`] cuts input into blocks of whole lines.
//! - [`harness_lines`]: harness lines, read in one strict pass by the borrowed scanner
//!   (`askgate_protocol::json::scan`), valid answers written by hand; any line the scanner
//!   gives up on is read by serde_json instead, with the same answer (a test holds them to it
//!   on every vector and its mutations).
//! - [`deepagents_lines`]: deepagents lines, described below.
//! - [`face_lines`]: lines of every other dialect (approvals), judged through the dialects'
//!   common face with the gateway's rules.
//!
//! deepagents lines (`dialect: "deepagents"`) are judged by deepagents' own rules only
//! ([`Bounds::Framework`](askgate_protocol::deepagents::Bounds::Framework): none of the
//! gateway's bounds), so the verdict is the real package's:
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
use std::io::{Read, Write};

use askgate_protocol::json::write::{push_escaped, push_list, push_str};
use askgate_protocol::{Dialect, ErrorCode, FieldError, ValidationErrors, json::lenient};
use serde::Deserialize;
use serde_json::value::RawValue;

mod deepagents_lines;
mod face_lines;
mod harness_lines;
mod pipeline;
mod stream;

use pipeline::{BLOCK_BYTES, Judge, Source};

/// The longest line `validate` reads unless told otherwise: far beyond any tool call, and
/// small enough that a stream without line ends cannot take all the memory.
pub(super) const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// Reads lines from `input` until it ends and writes one answer line per input line.
///
/// Every core takes its turn to read a block of whole lines and judges it while the others
/// read theirs. Each read takes what has arrived, and answers are flushed whenever every line read
/// so far is answered, so a host that writes a line and waits for its answer (a co-process)
/// gets it at once.
///
/// # Errors
/// Only I/O errors on the streams; bad lines get error lines.
pub fn run<W: Write + Send + 'static>(
    input: impl Read + Send + 'static,
    output: W,
) -> anyhow::Result<W> {
    judge_stream(input, output, false, || false, DEFAULT_MAX_LINE_BYTES)
}

/// [`run`] on this process's stdin. When stdin is a regular file, which no read waits on, it
/// is read in whole blocks straight from the file. A line longer than `max_line_bytes` is
/// read past, not kept, and answered with an error.
///
/// # Errors
/// As [`run`].
pub fn run_stdin(output: impl Write + Send + 'static, max_line_bytes: usize) -> anyhow::Result<()> {
    match stdin_file() {
        Some(file) => judge_stream(file, output, true, || false, max_line_bytes).map(drop),
        None => {
            widen_stdin_pipe();
            judge_stream(
                std::io::stdin(),
                output,
                false,
                stdin_has_more,
                max_line_bytes,
            )
            .map(drop)
        }
    }
}

/// The most a pipe on stdin is widened to: Linux lets any process have pipes this large by
/// default (`/proc/sys/fs/pipe-max-size`), and a wider pipe lets a writer that is ahead hand
/// over more per read than the default 64 KiB.
#[cfg(target_os = "linux")]
const STDIN_PIPE_BYTES: usize = 1 << 20;

#[cfg(target_os = "linux")]
fn widen_stdin_pipe() {
    // Not a pipe, or a limit that forbids it: stdin is read as it is.
    let _ = rustix::pipe::fcntl_setpipe_size(std::io::stdin(), STDIN_PIPE_BYTES);
}

#[cfg(not(target_os = "linux"))]
fn widen_stdin_pipe() {}

/// Whether more of stdin has arrived (or it has ended), so reading it now would not wait.
#[cfg(unix)]
fn stdin_has_more() -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdin = std::io::stdin();
    let mut waiting = [PollFd::new(&stdin, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    poll(&mut waiting, Some(&now)).is_ok_and(|ready| ready > 0)
}

#[cfg(not(unix))]
fn stdin_has_more() -> bool {
    false
}

#[cfg(unix)]
fn stdin_file() -> Option<std::fs::File> {
    use std::os::fd::AsFd as _;
    let stdin = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let file = std::fs::File::from(stdin);
    file.metadata().ok()?.is_file().then_some(file)
}

#[cfg(not(unix))]
fn stdin_file() -> Option<std::fs::File> {
    None
}

fn judge_stream<W: Write + Send + 'static>(
    input: impl Read + Send + 'static,
    output: W,
    whole_reads: bool,
    more_waiting: fn() -> bool,
    max_line_bytes: usize,
) -> anyhow::Result<W> {
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let output = std::io::BufWriter::with_capacity(16 << 10, output);
    let source = Source {
        block_bytes: BLOCK_BYTES,
        whole_reads,
        more_waiting,
        max_line_bytes,
    };
    let output = pipeline::run(input, output, source, workers, JUDGE)?;
    output
        .into_inner()
        .map_err(|e| anyhow::Error::new(e.into_error()).context("writing stdout"))
}

/// How `validate` answers lines.
const JUDGE: Judge = Judge {
    lines: answer_block,
    too_long: answer_too_long,
};

/// Appends the answer to a line too long to read, and its newline, to `out`.
fn answer_too_long(length: u64, max_line_bytes: usize, out: &mut Vec<u8>) {
    let error = FieldError::new(
        "",
        ErrorCode::TooLong,
        format!(
            "the line is {length} bytes long, over the limit of {max_line_bytes} \
             (--max-line-bytes): not read"
        ),
    );
    out.extend_from_slice(failure(&error).as_bytes());
    out.push(b'\n');
}

/// Appends the answers to a run of lines, one line each, to `out`; a line longer than
/// `max_line_bytes` is answered as too long (the reader drops longer ones before their end,
/// and whichever way a line was read, its answer must be the same).
fn answer_block(lines: &[u8], max_line_bytes: usize, out: &mut Vec<u8>) {
    // Input is nearly always UTF-8 throughout: check the run at once, line by line only if not.
    if let Ok(text) = simdutf8::basic::from_utf8(lines) {
        let mut start = 0;
        let unterminated = !matches!(lines.last(), None | Some(b'\n'));
        let ends = memchr::memchr_iter(b'\n', lines).chain(unterminated.then_some(lines.len()));
        for end in ends {
            // A newline is ASCII: the cut is on a character boundary.
            let line = text.get(start..end).unwrap_or_default();
            if line.len() > max_line_bytes {
                answer_too_long(line.len() as u64, max_line_bytes, out);
            } else {
                answer_text(line.strip_suffix('\r').unwrap_or(line), out);
            }
            start = end + 1;
        }
        return;
    }
    for line in lines.split_inclusive(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        if line.len() > max_line_bytes {
            answer_too_long(line.len() as u64, max_line_bytes, out);
            continue;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match std::str::from_utf8(line) {
            Ok(text) => answer_text(text, out),
            Err(_) => {
                out.extend_from_slice(not_utf8(line).as_bytes());
                out.push(b'\n');
            }
        }
    }
}

/// Appends the answer to one line and its newline to `out`.
fn answer_text(line: &str, out: &mut Vec<u8>) {
    let start = out.len();
    // A bug that panics on one line must not take the other lines' answers with it.
    let answered =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| answer_line_into(line, out)));
    if answered.is_err() {
        out.truncate(start);
        let answer = line_error("", "askgate failed on this line (a bug: please report it)");
        out.extend_from_slice(answer.as_bytes());
    }
    out.push(b'\n');
}

fn not_utf8(line: &[u8]) -> String {
    let detail = std::str::from_utf8(line)
        .err()
        .map_or_else(String::new, |e| e.to_string());
    failure(&FieldError::new(
        "",
        ErrorCode::InvalidJson,
        format!("the line is not UTF-8: {detail}"),
    ))
}

/// Reads a field that is present, `null` included, as `Some(raw)`; absent fields default to
/// `None`. (serde maps `null` to `None` for a plain `Option`, but `"args": null` is an input
/// to judge, not a missing one.)
fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de str>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(|raw| Some(raw.get()))
}

/// One input line: what to judge. Other keys (a vector's `name`, `expect`) are skipped.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    dialect: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "present")]
    input: Option<&'a str>,
}

/// The answer to one input line, as one line of JSON text (no newline).
pub fn answer_line(line: &str) -> String {
    let mut out = Vec::new();
    answer_line_into(line, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Appends the answer to one input line (no newline) to `out`: [`answer_line`] without a
/// string of its own.
pub fn answer_line_into(line: &str, out: &mut Vec<u8>) {
    // Most lines are well-formed harness lines: read them in one strict pass. Any other line
    // is read with serde_json, whose errors say what is wrong; the verdict is the same.
    if let Some((kind, input)) = harness_lines::read_line(line) {
        return harness_lines::judge_into(&kind, input, out);
    }
    out.extend_from_slice(answer_read_by_serde(line).as_bytes());
}

/// The answer to a line read with serde_json (and, failing that, as Python's JSON).
fn answer_read_by_serde(line: &str) -> String {
    // JSON's own whitespace: a line of some other space is not empty, but not JSON either.
    if line.trim_matches([' ', '\t', '\r', '\n']).is_empty() {
        return failure(&FieldError::new(
            "",
            ErrorCode::InvalidJson,
            "the line is empty; expected a JSON object with dialect, kind and input",
        ));
    }
    let line_error = match serde_json::from_str::<Line<'_>>(line) {
        Ok(parsed) => return judge(&parsed),
        Err(e) => e,
    };
    // Not strict JSON: perhaps lone surrogates, which Python hosts write. Map them to
    // stand-ins, judge the re-encoded line, and write them back as `\udXXX` escapes.
    match lenient::parse(line) {
        Ok((value, true)) => {
            let text = value.to_string();
            let answer = match serde_json::from_str::<Line<'_>>(&text) {
                Ok(parsed) => judge(&parsed),
                Err(e) => failure(&not_a_line(&e.to_string())),
            };
            match serde_json::from_str::<serde_json::Value>(&answer) {
                Ok(answer) => lenient::to_string(&answer),
                Err(_) => answer,
            }
        }
        Ok((value, false)) if !value.is_object() => failure(&not_a_line(
            "expected an object with dialect, kind and input",
        )),
        // An object, but not a line: serde_json's own words say what is wrong and where.
        Ok((_, false)) => failure(&not_a_line(&line_error.to_string())),
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
    // The seed dialects judge lines as their frameworks do, byte for byte (the conformance
    // vectors'); every other dialect is judged through the common face.
    match dialect {
        "harness" => harness_lines::judge_raw(kind, input),
        "deepagents" => deepagents_lines::judge(kind, input),
        other => match Dialect::parse(other) {
            Ok(dialect) => face_lines::judge(dialect, kind, input),
            Err(message) => line_error("dialect", &message),
        },
    }
}

/// The errors of the request a response answers, each under `request` and marked as such.
fn invalid_request(errors: ValidationErrors) -> Vec<FieldError> {
    errors
        .into_vec()
        .into_iter()
        .map(|e| {
            FieldError::new(
                prefixed("request", &e.path),
                e.code,
                format!("invalid request: {}", e.message),
            )
        })
        .collect()
}

/// `request.questions[0]` from `request` and `questions[0]`.
fn prefixed(prefix: &str, path: &str) -> String {
    if path.is_empty() {
        prefix.to_owned()
    } else if path.starts_with('[') {
        format!("{prefix}{path}")
    } else {
        format!("{prefix}.{path}")
    }
}

/// What a refusal's `error` says.
enum Summary<'a> {
    /// Every error, `path: message`, joined by `; ` (as `ValidationErrors` displays them).
    EachError,
    /// This text.
    Message(&'a str),
}

/// Appends a refusal, `{"ok":false,"error":...,"errors":[{"path","message","code"}...]}`, to
/// `out`, byte for byte as serde_json would write it.
fn push_refusal(out: &mut Vec<u8>, summary: &Summary<'_>, errors: &[FieldError]) {
    out.extend_from_slice(br#"{"ok":false,"error":""#);
    match summary {
        Summary::Message(message) => push_escaped(out, message),
        Summary::EachError => {
            for (i, error) in errors.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b"; ");
                }
                if !error.path.is_empty() {
                    push_escaped(out, &error.path);
                    out.extend_from_slice(b": ");
                }
                push_escaped(out, &error.message);
            }
        }
    }
    out.extend_from_slice(br#"","errors":"#);
    push_list(out, errors, |out, error| {
        out.extend_from_slice(br#"{"path":"#);
        push_str(out, &error.path);
        out.extend_from_slice(br#","message":"#);
        push_str(out, &error.message);
        out.extend_from_slice(br#","code":""#);
        out.extend_from_slice(error.code.as_str().as_bytes());
        out.extend_from_slice(br#""}"#);
    });
    out.push(b'}');
}

fn refusal(summary: &Summary<'_>, errors: &[FieldError]) -> String {
    let mut out = Vec::new();
    push_refusal(&mut out, summary, errors);
    String::from_utf8_lossy(&out).into_owned()
}

fn line_error(path: &str, message: &str) -> String {
    failure(&FieldError::new(path, ErrorCode::InvalidValue, message))
}

fn failure(error: &FieldError) -> String {
    refusal(&Summary::EachError, std::slice::from_ref(error))
}

#[cfg(test)]
mod tests;
