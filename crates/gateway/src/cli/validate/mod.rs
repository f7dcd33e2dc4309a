//! `askgate validate`: judge JSON lines as the real frameworks would.
//!
//! The line format is the conformance vectors' (`{"dialect","kind","input"}`, other keys
//! ignored), so the same lines can be fed to askgate and to the Python packages and the
//! answers compared. Input is read in blocks of whole lines; each block is split among the
//! cores while the next one is read, and answers come out in input order, one line each.
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
use std::io::{Read, Write};

use anyhow::Context as _;
use askgate_protocol::{ErrorCode, FieldError, ValidationErrors, lenient_json};
use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_json::value::RawValue;

mod deepagents_lines;
mod harness_lines;

use harness_lines::HarnessInput;

/// Bytes read per block: enough to share among threads, few enough to bound memory (a block
/// grows past this only to finish a longer line).
const BLOCK_BYTES: usize = 4 << 20;

/// Reads lines from `input` until it ends and writes one answer line per input line.
///
/// # Errors
/// Only I/O errors on the streams; bad lines get error lines.
pub fn run(mut input: impl Read, output: impl Write) -> anyhow::Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut output = std::io::BufWriter::with_capacity(1 << 20, output);
    let mut reader = BlockReader::new(BLOCK_BYTES);
    let mut block = reader.next_block(&mut input)?;
    while !block.is_empty() {
        // Judge this block on every core while this thread reads the next one.
        let (answers, next) = std::thread::scope(|scope| {
            let workers: Vec<_> = split_lines(&block, threads)
                .into_iter()
                .map(|part| scope.spawn(move || answer_block(part)))
                .collect();
            let next = reader.next_block(&mut input);
            let answers: Vec<Vec<u8>> = workers
                .into_iter()
                .map(|w| w.join().unwrap_or_default())
                .collect();
            (answers, next)
        });
        for part in answers {
            output.write_all(&part).context("writing stdout")?;
        }
        block = next?;
    }
    output.flush().context("writing stdout")?;
    Ok(())
}

/// Cuts a stream into blocks that end at a line's end (or the stream's).
struct BlockReader {
    /// Bytes wanted per block.
    block_bytes: usize,
    /// Bytes read past the last complete line, carried into the next block.
    carry: Vec<u8>,
    ended: bool,
}

impl BlockReader {
    fn new(block_bytes: usize) -> Self {
        BlockReader {
            block_bytes: block_bytes.max(1),
            carry: Vec::new(),
            ended: false,
        }
    }

    /// The next block of whole lines; empty once the stream has ended.
    fn next_block(&mut self, input: &mut impl Read) -> anyhow::Result<Vec<u8>> {
        let mut block = std::mem::take(&mut self.carry);
        let mut searched = 0;
        while !self.ended {
            let filled = block.len();
            let want = self.block_bytes.max(filled / 4);
            // `read_to_end` fills spare capacity without zeroing it first.
            let read = input
                .by_ref()
                .take(want as u64)
                .read_to_end(&mut block)
                .context("reading stdin")?;
            if read == 0 {
                self.ended = true;
            } else if block.len() >= self.block_bytes {
                if let Some(end) = memchr::memrchr(b'\n', &block[searched..]) {
                    self.carry = block.split_off(searched + end + 1);
                    return Ok(block);
                }
                searched = block.len();
            }
        }
        Ok(block)
    }
}

/// Splits a block of lines into at most `parts` runs of whole lines of about equal size.
fn split_lines(block: &[u8], parts: usize) -> Vec<&[u8]> {
    let mut runs = Vec::with_capacity(parts);
    let mut rest = block;
    for left in (1..=parts).rev() {
        if rest.is_empty() {
            break;
        }
        let cut = if left == 1 {
            rest.len()
        } else {
            let aim = rest.len() / left;
            memchr::memchr(b'\n', &rest[aim..]).map_or(rest.len(), |i| aim + i + 1)
        };
        let (run, after) = rest.split_at(cut);
        runs.push(run);
        rest = after;
    }
    runs
}

/// The answers to a run of lines, one line each.
fn answer_block(lines: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.len() / 2);
    let mut rest = lines;
    while !rest.is_empty() {
        let (line, after) = match memchr::memchr(b'\n', rest) {
            Some(end) => (&rest[..end], &rest[end + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = after;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let answer = match simdutf8::basic::from_utf8(line) {
            Ok(text) => answer_line(text),
            Err(_) => not_utf8(line),
        };
        out.extend_from_slice(answer.as_bytes());
        out.push(b'\n');
    }
    out
}

fn not_utf8(line: &[u8]) -> String {
    // The fast check says only yes or no; the standard one says where.
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

/// A harness line read in one pass, its input's fields taken at once. When this reading fails
/// (the input is not such an object, a field has another type, a key repeats) the line is
/// read again as a [`Line`], whose answers say what is wrong: the verdict is the same either
/// way, this way only skips scanning the input twice.
#[derive(Deserialize)]
struct HarnessLine<'a> {
    #[serde(borrow, default)]
    dialect: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<HarnessInput<'a>>,
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
    if let Ok(HarnessLine {
        dialect: Some(dialect),
        kind: Some(kind),
        input: Some(input),
    }) = serde_json::from_str::<HarnessLine<'_>>(line)
        && dialect == "harness"
    {
        return harness_lines::judge(&kind, input);
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
            match serde_json::from_str::<serde_json::Value>(&answer) {
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
        "harness" => harness_lines::judge_raw(kind, input),
        "deepagents" => deepagents_lines::judge(kind, input),
        other => line_error(
            "dialect",
            &format!(
                "unknown dialect {}; expected harness or deepagents",
                json!(other)
            ),
        ),
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

/// A refusal: the summary and every error.
#[derive(Serialize)]
struct Refusal<'a> {
    ok: bool,
    error: String,
    errors: &'a [FieldError],
}

fn errors_answer(errors: &ValidationErrors) -> String {
    to_line(&Refusal {
        ok: false,
        error: errors.to_string(),
        errors: errors.errors(),
    })
}

fn line_error(path: &str, message: &str) -> String {
    failure(&FieldError::new(path, ErrorCode::InvalidValue, message))
}

fn failure(error: &FieldError) -> String {
    to_line(&Refusal {
        ok: false,
        error: error.to_string(),
        errors: std::slice::from_ref(error),
    })
}

/// One answer as JSON text.
fn to_line(answer: &impl Serialize) -> String {
    // Strings, numbers and lists cannot fail to serialise; the fallback is never reached.
    serde_json::to_string(answer).unwrap_or_else(|_| {
        r#"{"ok":false,"error":"the answer could not be written","errors":[]}"#.to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of assorted lengths, a CRLF, a blank line, bytes that are not UTF-8, and no
    /// newline at the end.
    fn sample() -> Vec<u8> {
        let mut input = Vec::new();
        for i in 0..40 {
            let filler = "x".repeat(i * 7 % 23);
            input.extend_from_slice(
                format!(r#"{{"dialect":"harness","kind":"nope{filler}","input":{{}}}}"#).as_bytes(),
            );
            input.extend_from_slice(if i % 5 == 0 { b"\r\n" } else { b"\n" });
        }
        input.extend_from_slice(b"\n\xff\xfe not text\n{\"unfinished\"");
        input
    }

    #[test]
    fn blocks_end_at_line_ends_and_lose_nothing() {
        let input = sample();
        for block_bytes in [1, 2, 7, 64, 1000, 1 << 20] {
            let mut reader = BlockReader::new(block_bytes);
            let mut stream = input.as_slice();
            let mut joined = Vec::new();
            loop {
                let block = reader.next_block(&mut stream).unwrap();
                if block.is_empty() {
                    break;
                }
                joined.extend_from_slice(&block);
                if joined.len() < input.len() {
                    assert_eq!(block.last(), Some(&b'\n'), "block size {block_bytes}");
                }
            }
            assert_eq!(joined, input, "block size {block_bytes}");
        }
    }

    #[test]
    fn runs_split_at_line_ends_and_cover_the_block() {
        let input = sample();
        for parts in 1..6 {
            let runs = split_lines(&input, parts);
            assert!(runs.len() <= parts);
            assert_eq!(runs.concat(), input);
            for run in &runs[..runs.len() - 1] {
                assert_eq!(run.last(), Some(&b'\n'));
            }
        }
    }

    #[test]
    fn the_stream_answers_each_line_as_answer_line_does() {
        let input = sample();
        let mut output = Vec::new();
        run(input.as_slice(), &mut output).unwrap();
        let expected: String = input
            .split(|&b| b == b'\n')
            .map(|line| {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                let answer = match std::str::from_utf8(line) {
                    Ok(text) => answer_line(text),
                    Err(_) => not_utf8(line),
                };
                answer + "\n"
            })
            .collect();
        assert_eq!(String::from_utf8(output).unwrap(), expected);
        assert_eq!(expected.lines().count(), 43);
        assert!(expected.contains("the line is not UTF-8: invalid utf-8 sequence"));
    }
}
