//! `askgate validate`: judge JSON lines as the real frameworks would.
//!
//! The line format is the conformance vectors' (`{"dialect","kind","input"}`, other keys
//! ignored), so the same lines can be fed to askgate and to the Python packages and the
//! answers compared. Every line gets one answer line, in input order.
//!
//! The lines that arrive together (what one read brings) are judged as a batch, a big batch
//! on two threads: one thread with serde_json as the one reader stays short of the goal of
//! 10× pydantic-ai-harness on bench/validate.sh's mix, and the second core closes the gap
//! (see [`Batch`]). Whenever no more input is buffered, the batch is answered and the answers
//! flushed before the next read, so a co-process still gets each answer at once.
//!
//! - [`harness_lines`]: harness lines, read with serde_json.
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
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::thread::ScopedJoinHandle;

use anyhow::Context as _;
use askgate_protocol::{Dialect, ErrorCode, FieldError, ValidationErrors, json::lenient};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

mod deepagents_lines;
mod face_lines;
mod harness_lines;

/// The longest line `validate` reads unless told otherwise: far beyond any tool call, and
/// small enough that a stream without line ends cannot take all the memory.
pub(super) const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// How much output is gathered per system call.
const BUFFER_BYTES: usize = 64 << 10;

/// How much input is read per system call: a batch is at most what one read brought (see
/// [`Batch`]), so reads from a file take this much at once.
const INPUT_BUFFER_BYTES: usize = 1 << 20;

/// A batch this big or bigger is judged on two threads; a smaller one (a co-process's line or
/// few) is not worth starting a thread for. Well under a pipe's 64 KiB, which is all one read
/// from a pipe brings.
const SPLIT_BATCH_BYTES: usize = 16 << 10;

/// A batch is judged once it holds this many lines, whatever more is buffered, so the lines
/// kept waiting (and their memory) stay bounded.
const MAX_BATCH_LINES: usize = 4096;

/// Reads lines from `input` until it ends and writes one answer line per input line. A line
/// longer than `max_line_bytes` is read past, not kept, and answered with an error.
///
/// Answers are flushed whenever no more input has been read ahead, so a host that writes a
/// line and waits for its answer (a co-process) gets it at once.
///
/// # Errors
/// Only I/O errors on the streams; bad lines get error lines.
fn run(input: impl Read, output: impl Write, max_line_bytes: usize) -> anyhow::Result<()> {
    let mut input = BufReader::with_capacity(INPUT_BUFFER_BYTES, input);
    let mut output = BufWriter::with_capacity(BUFFER_BYTES, output);
    let mut line = Vec::new();
    let mut batch = Batch::new(max_line_bytes);
    loop {
        let before_waiting = || {
            batch.answer(&mut output)?;
            output.flush()
        };
        let length = read_line(&mut input, &mut line, max_line_bytes, before_waiting)?;
        let Some(length) = length else { break };
        batch.push(&line, length);
        if batch.lines.len() >= MAX_BATCH_LINES {
            batch.answer(&mut output).context("writing stdout")?;
        }
    }
    batch.answer(&mut output).context("writing stdout")?;
    output.flush().context("writing stdout")
}

/// The lines read while more input was already buffered, judged together when the input runs
/// dry (or the batch is full): a big batch is cut in two at a line end and the halves judged
/// side by side, the second on a scoped thread, and the answers written in input order.
///
/// Why two threads: the goal is `askgate validate` at least 10× faster than
/// pydantic-ai-harness on bench/validate.sh's mix, and one thread, with serde_json as the one
/// reader and no speed-only machinery, stays short of it; the machine's second core closes
/// the gap. A co-process's lone line is judged at once on this thread, as before, and answers
/// are still flushed before every read that may wait.
struct Batch {
    max_line_bytes: usize,
    /// The lines' bytes, one after another.
    text: Vec<u8>,
    lines: Vec<Gathered>,
    /// The answers of each half, reused from batch to batch.
    answers: [Vec<u8>; 2],
}

/// One line of a batch.
enum Gathered {
    /// Its place in [`Batch::text`].
    Line(std::ops::Range<usize>),
    /// A line over the limit: its length, its bytes not kept.
    TooLong(u64),
}

impl Batch {
    fn new(max_line_bytes: usize) -> Self {
        Batch {
            max_line_bytes,
            text: Vec::new(),
            lines: Vec::new(),
            answers: [Vec::new(), Vec::new()],
        }
    }

    /// Adds a line [`read_line`] read, `length` bytes long.
    fn push(&mut self, line: &[u8], length: u64) {
        if length > self.max_line_bytes as u64 {
            self.lines.push(Gathered::TooLong(length));
        } else {
            let start = self.text.len();
            self.text.extend_from_slice(line);
            self.lines.push(Gathered::Line(start..self.text.len()));
        }
    }

    /// Judges every line, writes the answers in order and empties the batch.
    fn answer(&mut self, output: &mut impl Write) -> std::io::Result<()> {
        let [first_answers, second_answers] = &mut self.answers;
        let (text, max_line_bytes) = (&self.text, self.max_line_bytes);
        let split = if text.len() >= SPLIT_BATCH_BYTES {
            // The first line that starts in the text's second half.
            self.lines
                .iter()
                .position(
                    |line| matches!(line, Gathered::Line(range) if range.start >= text.len() / 2),
                )
                .unwrap_or(self.lines.len())
        } else {
            self.lines.len()
        };
        let (first, second) = self.lines.split_at(split);
        std::thread::scope(|scope| {
            let helper = (!second.is_empty()).then(|| {
                let mut answers = std::mem::take(second_answers);
                let judge_second = move || {
                    answer_each(second, text, max_line_bytes, &mut answers);
                    answers
                };
                std::thread::Builder::new().spawn_scoped(scope, judge_second)
            });
            answer_each(first, text, max_line_bytes, first_answers);
            // Each line's bug is caught and answered (`answer_text`); should the thread still
            // fail, or not start, its half is judged here.
            match helper.map(|helper| helper.map(ScopedJoinHandle::join)) {
                Some(Ok(Ok(answers))) => *second_answers = answers,
                _ => answer_each(second, text, max_line_bytes, second_answers),
            }
        });
        output.write_all(first_answers)?;
        output.write_all(second_answers)?;
        first_answers.clear();
        second_answers.clear();
        self.text.clear();
        self.lines.clear();
        Ok(())
    }
}

/// Appends the answer to each of `lines` (from a batch's `text`) to `out`.
fn answer_each(lines: &[Gathered], text: &[u8], max_line_bytes: usize, out: &mut Vec<u8>) {
    for line in lines {
        match line {
            Gathered::Line(range) => answer_bytes(&text[range.clone()], out),
            Gathered::TooLong(length) => answer_too_long(*length, max_line_bytes, out),
        }
    }
}

/// Reads the next line into `line` (its `\n` dropped) and gives its length in bytes, or `None`
/// at the end of the input. A line longer than `max_line_bytes` is counted, not kept: `line`
/// is then empty. `before_waiting` runs before every read the input may make wait.
fn read_line(
    input: &mut BufReader<impl Read>,
    line: &mut Vec<u8>,
    max_line_bytes: usize,
    mut before_waiting: impl FnMut() -> std::io::Result<()>,
) -> anyhow::Result<Option<u64>> {
    line.clear();
    let mut length: u64 = 0;
    let mut started = false;
    loop {
        if input.buffer().is_empty() {
            before_waiting().context("writing stdout")?;
        }
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(anyhow::Error::new(e).context("reading stdin")),
        };
        if available.is_empty() {
            return Ok(started.then_some(length));
        }
        started = true;
        // memchr looks for the line end in vector-wide steps: a byte-at-a-time search over
        // lines of kilobytes was a few percent of the run on bench/validate.sh's mix.
        let end = memchr::memchr(b'\n', available);
        let piece = &available[..end.unwrap_or(available.len())];
        length += piece.len() as u64;
        if length <= max_line_bytes as u64 {
            line.extend_from_slice(piece);
        } else {
            line.clear();
        }
        let used = end.map_or(available.len(), |end| end + 1);
        input.consume(used);
        if end.is_some() {
            return Ok(Some(length));
        }
    }
}

/// [`run`] on this process's stdin.
///
/// # Errors
/// As [`run`].
pub fn run_stdin(output: impl Write, max_line_bytes: usize) -> anyhow::Result<()> {
    run(std::io::stdin(), output, max_line_bytes)
}

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

/// Appends the answer to a line (without its `\n`) and its newline to `out`.
fn answer_bytes(line: &[u8], out: &mut Vec<u8>) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // Lines of text in many scripts are mostly multi-byte characters, which std's check
    // walks a byte at a time (a sixth of the run on bench/validate.sh's mix); simdutf8 checks
    // them in vector-wide steps. On failure std's check finds where, for the message.
    match simdutf8::basic::from_utf8(line) {
        Ok(text) => answer_text(text, out),
        Err(_) => {
            out.extend_from_slice(not_utf8(line).as_bytes());
            out.push(b'\n');
        }
    }
}

/// Appends the answer to one line and its newline to `out`.
fn answer_text(line: &str, out: &mut Vec<u8>) {
    // A bug that panics on one line must not take the other lines' answers with it.
    let answer = std::panic::catch_unwind(|| answer_line(line)).unwrap_or_else(|_| {
        line_error("", "askgate failed on this line (a bug: please report it)")
    });
    out.extend_from_slice(answer.as_bytes());
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

/// The answer to one input line, as one line of JSON text (no newline): read with
/// serde_json, and failing that, as Python's JSON.
pub fn answer_line(line: &str) -> String {
    // JSON's own whitespace: a line of some other space is not empty, but not JSON either.
    if line
        .bytes()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    {
        return failure(&FieldError::new(
            "",
            ErrorCode::InvalidJson,
            "the line is empty; expected a JSON object with dialect, kind and input",
        ));
    }
    // A harness line is read in one pass when it can be; any line that pass cannot read
    // (another dialect, or anything wrong) is read as below, whose errors are the ones given.
    if let Ok(harness_line) = serde_json::from_str::<harness_lines::OnePass<'_>>(line) {
        return harness_lines::judge_one_pass(harness_line);
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

/// A refusal as it is written: `{"ok":false,"error":...,"errors":[{"path","message","code"}...]}`.
#[derive(Serialize)]
struct Refusal<'a> {
    ok: bool,
    error: &'a str,
    errors: &'a [FieldError],
}

/// A refusal, as one line of JSON text.
fn refusal(summary: &Summary<'_>, errors: &[FieldError]) -> String {
    let error = match summary {
        Summary::Message(message) => Cow::Borrowed(*message),
        Summary::EachError => Cow::Owned(
            errors
                .iter()
                .map(|error| {
                    if error.path.is_empty() {
                        error.message.clone()
                    } else {
                        format!("{}: {}", error.path, error.message)
                    }
                })
                .collect::<Vec<_>>()
                .join("; "),
        ),
    };
    let refusal = Refusal {
        ok: false,
        error: &error,
        errors,
    };
    // Writing strings and lists cannot fail.
    serde_json::to_string(&refusal).unwrap_or_default()
}

fn line_error(path: &str, message: &str) -> String {
    failure(&FieldError::new(path, ErrorCode::InvalidValue, message))
}

fn failure(error: &FieldError) -> String {
    refusal(&Summary::EachError, std::slice::from_ref(error))
}

#[cfg(test)]
mod tests;
