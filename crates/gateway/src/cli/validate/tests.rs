//! The stream (blocks, runs, the pipeline) and the line readers, held to `answer_line` and
//! to serde_json.

use super::pipeline::{Judge, Source};
use super::stream::BlockReader;
use super::*;
use askgate_protocol::json::mutate;

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
    // Each size read as a file, as a stream that trickles in, and as one that pours in.
    let reads: [(bool, fn() -> bool); 3] = [(true, || false), (false, || false), (false, || true)];
    for (block_bytes, (whole_reads, more_waiting)) in [1, 2, 7, 64, 1000, 1 << 20]
        .into_iter()
        .flat_map(|bytes| reads.map(|read| (bytes, read)))
    {
        let mut reader = BlockReader::new(whole_reads, more_waiting, usize::MAX);
        let mut stream = input.as_slice();
        let mut joined = Vec::new();
        loop {
            let block = reader
                .next_block(&mut stream, Vec::new(), block_bytes)
                .unwrap();
            assert_eq!(block.too_long, None);
            let block = block.lines();
            if block.is_empty() {
                break;
            }
            joined.extend_from_slice(block);
            if joined.len() < input.len() {
                assert_eq!(block.last(), Some(&b'\n'), "block size {block_bytes}");
            }
        }
        assert_eq!(joined, input, "block size {block_bytes}");
    }
}

/// Hands out its bytes a few at a time, as a pipe fed by a slow writer does.
struct Trickle(Vec<u8>, usize);

impl Read for Trickle {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let n = buffer.len().min(3).min(self.0.len() - self.1);
        buffer[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
        self.1 += n;
        Ok(n)
    }
}

#[test]
fn small_reads_and_small_blocks_give_the_same_answers() {
    let input = sample();
    let whole = run(std::io::Cursor::new(input.clone()), Vec::new()).unwrap();
    // Block size, workers, and whether the stream pours in (more is always waiting).
    let cases = [(1, 1, false), (7, 2, false), (64, 3, false), (64, 2, true)];
    for (block_bytes, workers, pours) in cases {
        let input = Trickle(input.clone(), 0);
        let source = Source {
            block_bytes,
            whole_reads: false,
            more_waiting: if pours { || true } else { || false },
            max_line_bytes: usize::MAX,
        };
        let trickled = pipeline::run(input, Vec::new(), source, workers, JUDGE).unwrap();
        assert_eq!(
            trickled, whole,
            "block size {block_bytes}, {workers} workers"
        );
    }
}

/// Lines of 100 bytes (the limit in the test below), 101, far more, and short ones between,
/// ending with an unfinished line over the limit.
fn lines_around_a_limit() -> Vec<Vec<u8>> {
    let line = |bytes: usize| {
        let head = br#"{"dialect":"harness","kind":"render","input":{"timed_out":true},"note":""#;
        let mut line = head.to_vec();
        line.resize(bytes - 2, b'x');
        line.extend_from_slice(b"\"}");
        line
    };
    let mut lines = vec![line(100), line(101), line(90)];
    lines.extend([line(5000), line(99), line(100_000), line(100), line(150)]);
    lines
}

/// A line over `max_line_bytes` is answered with its length, the lines around it as usual,
/// however the input is read: as a file, trickling in, or pouring in, in any block size.
#[test]
fn a_line_over_the_limit_is_answered_without_being_kept() {
    let lines = lines_around_a_limit();
    let input = lines.join(&b'\n');
    let mut expected = Vec::new();
    for line in &lines {
        if line.len() > 100 {
            answer_too_long(line.len() as u64, 100, &mut expected);
        } else {
            answer_text(std::str::from_utf8(line).unwrap(), &mut expected);
        }
    }
    let expected_text = String::from_utf8_lossy(&expected).into_owned();
    let too_long = expected_text
        .lines()
        .filter(|l| l.contains("over the limit of 100"));
    assert_eq!(too_long.count(), 4);
    assert_eq!(expected_text.lines().count(), lines.len());
    let reads: [(bool, fn() -> bool); 3] = [(true, || false), (false, || false), (false, || true)];
    for (block_bytes, (whole_reads, more_waiting)) in [1, 7, 64, 150, 4096, 1 << 20]
        .into_iter()
        .flat_map(|bytes| reads.map(|read| (bytes, read)))
    {
        let source = Source {
            block_bytes,
            whole_reads,
            more_waiting,
            max_line_bytes: 100,
        };
        let input = Trickle(input.clone(), 0);
        let output = pipeline::run(input, Vec::new(), source, 2, JUDGE).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&output),
            expected_text,
            "block size {block_bytes}, whole reads {whole_reads}"
        );
    }
}

/// Bytes without a line end, as many as asked for, in whole reads.
struct NoLineEnd(u64);

impl Read for NoLineEnd {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let n = buffer
            .len()
            .min(usize::try_from(self.0).unwrap_or(usize::MAX));
        buffer[..n].fill(b'x');
        self.0 -= n as u64;
        Ok(n)
    }
}

/// Input without line ends is read to its end in bounded memory, and counted.
#[test]
fn input_without_line_ends_takes_bounded_memory() {
    for whole_reads in [true, false] {
        let mut reader = BlockReader::new(whole_reads, || true, 10_000);
        let mut input = NoLineEnd(50_000_000);
        let block = reader.next_block(&mut input, Vec::new(), 4096).unwrap();
        assert_eq!(block.too_long, Some(50_000_000));
        assert!(block.lines().is_empty());
        let kept = block.into_buffer().capacity();
        assert!(kept < 64 << 10, "{kept}");
        let next = reader.next_block(&mut input, Vec::new(), 4096).unwrap();
        assert!(
            next.lines().is_empty() && next.too_long.is_none(),
            "the input ended"
        );
    }
}

/// Hands out what the test sends, as much as has arrived per read, and waits for more the way
/// a socket does; ends when the sender is dropped.
struct Feed(std::sync::mpsc::Receiver<Vec<u8>>, Vec<u8>);

impl Read for Feed {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if self.1.is_empty() {
            match self.0.recv() {
                Ok(chunk) => self.1 = chunk,
                Err(_) => return Ok(0),
            }
        }
        let n = buffer.len().min(self.1.len());
        buffer[..n].copy_from_slice(&self.1[..n]);
        self.1.drain(..n);
        Ok(n)
    }
}

/// Passes on each flush's bytes to the test.
struct Flushed(std::sync::mpsc::Sender<Vec<u8>>, Vec<u8>);

impl Write for Flushed {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.1.extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        if !self.1.is_empty() {
            self.0.send(std::mem::take(&mut self.1)).ok();
        }
        Ok(())
    }
}

/// A read that fills a whole block must not make the next read wait for another whole block:
/// lines that arrive through a socket with a large buffer are answered as they come.
#[test]
fn a_full_read_does_not_make_the_next_one_wait_for_more() {
    let line = br#"{"dialect":"harness","kind":"nope","input":{}}"#.to_vec();
    let block_bytes = 4 * (line.len() + 1);
    let (send, received) = std::sync::mpsc::channel();
    let (flushed, answers) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let output = Flushed(flushed, Vec::new());
        let source = Source {
            block_bytes,
            whole_reads: false,
            more_waiting: || false,
            max_line_bytes: usize::MAX,
        };
        let input = Feed(received, Vec::new());
        pipeline::run(input, output, source, 2, JUDGE).ok();
    });
    let lines = |count: usize| -> Vec<u8> {
        let mut chunk = Vec::new();
        for _ in 0..count {
            chunk.extend_from_slice(&line);
            chunk.push(b'\n');
        }
        chunk
    };
    // Exactly a block, then one line: each must be answered before anything more is sent.
    for count in [4, 1] {
        send.send(lines(count)).unwrap();
        let mut seen = 0;
        while seen < count {
            let out = answers
                .recv_timeout(std::time::Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("{count} lines sent, {seen} answered"));
            seen += out.iter().filter(|&&b| b == b'\n').count();
        }
    }
}

/// A co-process that sends a line over the limit, then the end of it and a short line, then
/// waits: both are answered without anything more arriving (the short line was read while the
/// long one was being dropped).
#[test]
fn lines_read_past_a_dropped_line_are_answered_without_waiting() {
    let (send, received) = std::sync::mpsc::channel();
    let (flushed, answers) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let source = Source {
            block_bytes: 4096,
            whole_reads: false,
            more_waiting: || false,
            max_line_bytes: 100,
        };
        let input = Feed(received, Vec::new());
        pipeline::run(input, Flushed(flushed, Vec::new()), source, 2, JUDGE).ok();
    });
    send.send(vec![b'x'; 200]).unwrap();
    send.send(b"xx\n{\"dialect\":\"harness\",\"kind\":\"nope\",\"input\":{}}\n".to_vec())
        .unwrap();
    let mut got = String::new();
    while got.lines().count() < 2 {
        let out = answers
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("2 lines sent, answered: {got:?}"));
        got.push_str(&String::from_utf8_lossy(&out));
    }
    let lines: Vec<&str> = got.lines().collect();
    assert!(lines[0].contains("over the limit of 100"), "{}", lines[0]);
    assert!(lines[1].contains("nope"), "{}", lines[1]);
    drop(send);
}

/// Hands out its lines one read each, then fails.
struct FailsAfter(Vec<&'static [u8]>);

impl Read for FailsAfter {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if self.0.is_empty() {
            return Err(std::io::Error::other("the disk went away"));
        }
        let next = self.0.remove(0);
        buffer[..next.len()].copy_from_slice(next);
        Ok(next.len())
    }
}

/// A read that fails is reported, after the whole lines read before it are answered (not
/// the unfinished one), whether the reads were for one block or several.
#[test]
fn a_failed_read_is_reported_after_the_lines_before_it() {
    let reads: Vec<&'static [u8]> = vec![
        br#"{"dialect":"harness","kind":"nope1","input":{}}"#,
        b"\n{\"dialect\":\"harness\",\"kind\":\"nope2\",\"input\":{}}\n{\"unfin",
    ];
    for pours in [false, true] {
        let (flushed, answers) = std::sync::mpsc::channel();
        let source = Source {
            block_bytes: 4096,
            whole_reads: false,
            more_waiting: if pours { || true } else { || false },
            max_line_bytes: usize::MAX,
        };
        let output = Flushed(flushed, Vec::new());
        let ended = pipeline::run(FailsAfter(reads.clone()), output, source, 2, JUDGE);
        let error = ended.err().map(|e| format!("{e:#}")).unwrap_or_default();
        assert!(
            error.contains("the disk went away"),
            "pours {pours}: {error:?}"
        );
        let written: Vec<u8> = answers.try_iter().flatten().collect();
        let written = String::from_utf8_lossy(&written);
        let lines: Vec<&str> = written.lines().collect();
        assert_eq!(lines.len(), 2, "pours {pours}: {written}");
        assert!(
            lines[0].contains("nope1") && lines[1].contains("nope2"),
            "{written}"
        );
    }
}

/// Takes this many more bytes, then fails as a closed pipe does.
struct ClosesAfter(usize);

impl Write for ClosesAfter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if bytes.len() > self.0 {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        self.0 -= bytes.len();
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_closed_output_stops_every_thread_with_an_error() {
    let input = sample().repeat(2000);
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let output = ClosesAfter(10_000);
        let source = Source {
            block_bytes: 4096,
            whole_reads: true,
            more_waiting: || false,
            max_line_bytes: usize::MAX,
        };
        let input = std::io::Cursor::new(input);
        let ended = pipeline::run(input, output, source, 2, JUDGE);
        done.send(ended.is_err()).ok();
    });
    let failed = finished
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the pipeline did not stop");
    assert!(failed, "a write error must be reported");
}

/// A worker that dies (a bug in the pipeline itself, outside the per-line guard) fails the
/// run instead of leaving the caller waiting for answers that never come.
#[test]
fn a_worker_that_dies_fails_the_run() {
    let input = sample().repeat(50);
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let dies_on_the_third_block = Judge {
            lines: |lines, max_line_bytes, out| {
                static BLOCKS: std::sync::atomic::AtomicUsize =
                    std::sync::atomic::AtomicUsize::new(0);
                assert!(
                    BLOCKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) != 2,
                    "the third block"
                );
                answer_block(lines, max_line_bytes, out);
            },
            too_long: answer_too_long,
        };
        let source = Source {
            block_bytes: 256,
            whole_reads: true,
            more_waiting: || false,
            max_line_bytes: usize::MAX,
        };
        let input = std::io::Cursor::new(input);
        let ended = pipeline::run(input, Vec::new(), source, 2, dies_on_the_third_block);
        done.send(ended.map_err(|e| e.to_string())).ok();
    });
    let ended = finished
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the pipeline did not stop");
    let error = ended.expect_err("a dead worker must fail the run");
    assert!(error.contains("worker failed"), "{error}");
}

#[test]
fn the_stream_answers_each_line_as_answer_line_does() {
    let input = sample();
    let output = run(std::io::Cursor::new(input.clone()), Vec::new()).unwrap();
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

/// Every conformance vector, and mutations of each.
fn vectors_and_mutations() -> Vec<String> {
    let vectors = include_str!("../../../../../tests/data/conformance/vectors.jsonl");
    let keys = ["\"args\":{},", "\"expect\":1,"];
    let mut lines = Vec::new();
    for (i, line) in vectors.lines().enumerate() {
        lines.push(line.to_owned());
        lines.extend(mutate::mutations(line, 24, i as u64 + 1, &keys));
    }
    lines
}

/// The one-pass scanner is only a faster reading: wherever it reads a line, the answer
/// must be the one serde_json's reading gives, byte for byte.
#[test]
fn the_scanner_and_serde_json_give_the_same_answers() {
    let mut scanned = 0;
    let lines = vectors_and_mutations();
    for line in &lines {
        if harness_lines::read_line(line).is_some() {
            scanned += 1;
        }
        assert_eq!(answer_line(line), answer_read_by_serde(line), "{line}");
    }
    // The check means something only if the scanner read most lines and refused some.
    assert!(
        scanned > lines.len() / 4,
        "{scanned} of {} scanned",
        lines.len()
    );
    assert!(scanned < lines.len(), "the scanner refused no line");
}

/// A line that is JSON but not a line says what serde_json found wrong, and where; a line of
/// a space JSON does not count as whitespace is not called empty.
#[test]
fn a_line_that_is_not_a_line_says_why() {
    let answer = |line: &str| -> String {
        let answer: serde_json::Value = serde_json::from_str(&answer_line(line)).unwrap();
        answer["error"].as_str().unwrap().to_owned()
    };
    let wrong_type = answer(r#"{"dialect":5,"kind":"request","input":{}}"#);
    assert!(
        wrong_type.contains("invalid type: integer `5`"),
        "{wrong_type}"
    );
    let repeated = answer(r#"{"dialect":"harness","kind":"request","kind":"render","input":{}}"#);
    assert!(repeated.contains("duplicate field `kind`"), "{repeated}");
    let list = answer("[1, 2]");
    assert!(
        list.ends_with("expected an object with dialect, kind and input"),
        "{list}"
    );
    let form_feed = answer("\u{c}");
    assert!(form_feed.contains("not valid JSON"), "{form_feed}");
    assert!(answer(" \t\r").contains("the line is empty"));
}

/// Numbers are read exactly, so they come out with the digits Python writes (the expected
/// answers are deepagents-code 0.2.2's, through `tests/oracle/deepagents_oracle.py`): a float
/// parsed a little off printed as `-3.7599014659885906e+50`.
#[test]
fn floats_keep_the_digits_python_writes() {
    let line = r#"{"dialect":"deepagents","kind":"response","input":{"request":{"questions":[{"question":"q","type":"text"}]},"resume":{"answers":[-3.759901465988591e+50]}}}"#;
    assert_eq!(
        answer_line(line),
        r#"{"ok":true,"normalized":{"content":"Q: q\nA: -3.759901465988591e+50","status":"success","receipt":null}}"#
    );
    let line = r#"{"dialect":"deepagents","kind":"render","input":{"op":"encode_multi_select","values":[0.483960306202786838]}}"#;
    assert_eq!(
        answer_line(line),
        r#"{"ok":true,"normalized":"[0.48396030620278685]"}"#
    );
}
