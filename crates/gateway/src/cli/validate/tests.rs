//! The line loop (line ends, the length limit, flushing, I/O errors) and the answers to
//! lines that are not lines.

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

/// Answers to input read as a whole and to input trickling in a few bytes at a time.
#[test]
fn small_reads_give_the_same_answers() {
    let input = sample();
    let mut whole = Vec::new();
    run(std::io::Cursor::new(input.clone()), &mut whole, usize::MAX).unwrap();
    let mut trickled = Vec::new();
    run(Trickle(input, 0), &mut trickled, usize::MAX).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&trickled),
        String::from_utf8_lossy(&whole)
    );
    assert_eq!(whole.iter().filter(|&&b| b == b'\n').count(), 43);
}

/// Input read in big pieces is judged in batches cut in two and judged side by side; its
/// answers, in order, are those of the same input read a few bytes at a time (one line a batch).
#[test]
fn batches_judged_on_two_threads_answer_in_input_order() {
    let input = sample().repeat(200);
    assert!(input.len() > 4 * SPLIT_BATCH_BYTES);
    for limit in [usize::MAX, 60] {
        let mut whole = Vec::new();
        run(std::io::Cursor::new(input.clone()), &mut whole, limit).unwrap();
        let mut trickled = Vec::new();
        run(Trickle(input.clone(), 0), &mut trickled, limit).unwrap();
        assert_eq!(
            whole.iter().filter(|&&b| b == b'\n').count(),
            200 * 43 - 199
        );
        assert!(whole == trickled, "the answers differ (limit {limit})");
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
    for chunk in [1, 3, 7, 64, 150, 4096] {
        let mut output = Vec::new();
        run(Chunks(input.clone(), chunk), &mut output, 100).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&output),
            expected_text,
            "reads of {chunk} bytes"
        );
    }
}

/// Hands out its bytes this many at a time.
struct Chunks(Vec<u8>, usize);

impl Read for Chunks {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let n = buffer.len().min(self.1).min(self.0.len());
        buffer[..n].copy_from_slice(&self.0[..n]);
        self.0.drain(..n);
        Ok(n)
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
    let mut input = BufReader::with_capacity(BUFFER_BYTES, NoLineEnd(50_000_000));
    let mut line = Vec::new();
    let length = read_line(&mut input, &mut line, 10_000, || Ok(())).unwrap();
    assert_eq!(length, Some(50_000_000));
    assert!(line.is_empty());
    assert!(line.capacity() < 64 << 10, "{}", line.capacity());
    let next = read_line(&mut input, &mut line, 10_000, || Ok(())).unwrap();
    assert_eq!(next, None, "the input ended");
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

/// Lines that arrive as a co-process writes them are answered as they come, however many
/// arrive in one read.
#[test]
fn lines_are_answered_before_more_arrive() {
    let line = br#"{"dialect":"harness","kind":"nope","input":{}}"#.to_vec();
    let (send, received) = std::sync::mpsc::channel();
    let (flushed, answers) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let output = Flushed(flushed, Vec::new());
        run(Feed(received, Vec::new()), output, usize::MAX).ok();
    });
    let lines = |count: usize| -> Vec<u8> {
        let mut chunk = Vec::new();
        for _ in 0..count {
            chunk.extend_from_slice(&line);
            chunk.push(b'\n');
        }
        chunk
    };
    // Several lines in one read, then one: each must be answered before anything more is sent.
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
        let input = Feed(received, Vec::new());
        run(input, Flushed(flushed, Vec::new()), 100).ok();
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
/// the unfinished one).
#[test]
fn a_failed_read_is_reported_after_the_lines_before_it() {
    let reads: Vec<&'static [u8]> = vec![
        br#"{"dialect":"harness","kind":"nope1","input":{}}"#,
        b"\n{\"dialect\":\"harness\",\"kind\":\"nope2\",\"input\":{}}\n{\"unfin",
    ];
    let (flushed, answers) = std::sync::mpsc::channel();
    let output = Flushed(flushed, Vec::new());
    let ended = run(FailsAfter(reads), output, usize::MAX);
    let error = ended.err().map(|e| format!("{e:#}")).unwrap_or_default();
    assert!(error.contains("the disk went away"), "{error:?}");
    let written: Vec<u8> = answers.try_iter().flatten().collect();
    let written = String::from_utf8_lossy(&written);
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(lines.len(), 2, "{written}");
    assert!(
        lines[0].contains("nope1") && lines[1].contains("nope2"),
        "{written}"
    );
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
fn a_closed_output_ends_the_run_with_an_error() {
    let input = std::io::Cursor::new(sample().repeat(2000));
    let ended = run(input, ClosesAfter(10_000), usize::MAX);
    let error = ended.err().map(|e| format!("{e:#}")).unwrap_or_default();
    assert!(error.contains("writing stdout"), "{error:?}");
}

#[test]
fn the_stream_answers_each_line_as_answer_line_does() {
    let input = sample();
    let mut output = Vec::new();
    run(std::io::Cursor::new(input.clone()), &mut output, usize::MAX).unwrap();
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

/// Harness lines are read in one pass only where that reads what the plain reading would:
/// whatever it refuses is read as before and judged, or refused, the same way.
#[test]
fn a_harness_line_the_one_pass_read_refuses_is_read_as_before() {
    let args =
        r#"{"questions":[{"header":"A","question":"q","options":[{"label":"x"},{"label":"y"}]}]}"#;
    let accepted = [
        // Input first, and `harness` and `request` written with escapes.
        format!(r#"{{"input":{{"args":{args}}},"kind":"request","dialect":"harness"}}"#),
        format!(r#"{{"dialect":"h\u0061rness","kind":"req\u0075est","input":{{"args":{args}}}}}"#),
        // Fields the kind does not read, which the other kind would refuse.
        format!(
            r#"{{"dialect":"harness","kind":"request","input":{{"args":{args},"request":1,"request":2}}}}"#
        ),
        format!(
            r#"{{"dialect":"harness","kind":"response","input":{{"args_json":5,"request":{args},"response":{{"answers":[{{"header":"A","selected":["x"]}}]}}}}}}"#
        ),
    ];
    for line in &accepted {
        let answer = answer_line(line);
        assert!(answer.starts_with(r#"{"ok":true"#), "{line}\n{answer}");
    }
    // An object naming the dialect is not a dialect.
    let answer =
        answer_line(r#"{"dialect":{"harness":null},"kind":"request","input":{"args":{}}}"#);
    assert!(
        answer.contains("invalid type: map, expected a string at line 1 column 11"),
        "{answer}"
    );
}
