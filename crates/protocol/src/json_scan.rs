//! A small, strict JSON reader over borrowed text, for hot paths that must not build a
//! `serde_json::Value`.
//!
//! Its one promise: whatever it reads, serde_json reads the same way. Where serde_json would
//! refuse the text, or where this reader would need to know more than it does (a key written
//! with escapes, nesting deeper than [`MAX_DEPTH`]), it gives up with `None` and the caller
//! takes its general path. So a `None` says nothing about the input; a `Some` can be trusted.

use std::borrow::Cow;

/// Deepest nesting read; serde_json refuses text nested 128 deep, this stops well before.
pub const MAX_DEPTH: usize = 100;

/// A position in JSON text.
#[derive(Clone)]
pub struct Scanner<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        Scanner { text, at: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte after whitespace, not consumed.
    pub fn peek(&mut self) -> Option<u8> {
        let bytes = self.bytes();
        while let Some(&b) = bytes.get(self.at) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.at += 1;
        }
        None
    }

    /// Consumes `byte` (after whitespace) if it is next.
    pub fn eat_if(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        if next {
            self.at += 1;
        }
        next
    }

    /// Consumes `byte` (after whitespace), or gives up.
    pub fn eat(&mut self, byte: u8) -> Option<()> {
        self.eat_if(byte).then_some(())
    }

    /// Where the next value starts (after whitespace), to take its text later with
    /// [`Scanner::text_from`].
    pub fn mark(&mut self) -> usize {
        self.peek();
        self.at
    }

    /// The text from `mark` to where the scanner stands.
    pub fn text_from(&self, mark: usize) -> &'a str {
        self.text.get(mark..self.at).unwrap_or_default()
    }

    /// Succeeds when only whitespace is left.
    pub fn end(&mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }

    /// Reads an object, calling `each` with every key (after its `:`); `each` reads the value.
    /// Keys written with escapes are not compared, so they give up.
    pub fn object(&mut self, mut each: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.eat_if(b'}') {
            return Some(());
        }
        loop {
            let key = self.plain_key()?;
            self.eat(b':')?;
            each(self, key)?;
            if !self.eat_if(b',') {
                return self.eat(b'}');
            }
        }
    }

    /// Reads a key written without escapes.
    fn plain_key(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let stop = special_byte(self.bytes(), start)?;
        (self.bytes()[stop] == b'"').then_some(())?;
        self.at = stop + 1;
        Some(&self.text[start..stop])
    }

    /// Reads an array, calling `each` to read every item.
    pub fn array(&mut self, mut each: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.eat_if(b']') {
            return Some(());
        }
        loop {
            each(self)?;
            if !self.eat_if(b',') {
                return self.eat(b']');
            }
        }
    }

    /// Reads `true` or `false`.
    pub fn boolean(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.literal("true").map(|()| true),
            b'f' => self.literal("false").map(|()| false),
            _ => None,
        }
    }

    /// Reads `null` if it is next.
    pub fn null(&mut self) -> bool {
        self.peek() == Some(b'n') && self.literal("null").is_some()
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        let rest = self.bytes().get(self.at..)?;
        rest.starts_with(word.as_bytes())
            .then(|| self.at += word.len())
    }

    /// Reads a string: borrowed when written without escapes.
    pub fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let bytes = self.bytes();
        let start = self.at;
        let stop = special_byte(bytes, start)?;
        self.at = stop + 1;
        if bytes[stop] == b'"' {
            return Some(Cow::Borrowed(&self.text[start..stop]));
        }
        let mut decoded = String::with_capacity(stop - start + 16);
        decoded.push_str(&self.text[start..stop]);
        self.at = stop;
        loop {
            // At a backslash: decode one escape, then copy up to the next quote or backslash.
            self.at += 1;
            let escape = *bytes.get(self.at)?;
            self.at += 1;
            match escape {
                b'"' => decoded.push('"'),
                b'\\' => decoded.push('\\'),
                b'/' => decoded.push('/'),
                b'b' => decoded.push('\u{8}'),
                b'f' => decoded.push('\u{c}'),
                b'n' => decoded.push('\n'),
                b'r' => decoded.push('\r'),
                b't' => decoded.push('\t'),
                b'u' => decoded.push(self.unicode_escape()?),
                _ => return None,
            }
            let from = self.at;
            let stop = special_byte(bytes, from)?;
            decoded.push_str(&self.text[from..stop]);
            self.at = stop;
            if bytes[stop] == b'"' {
                self.at += 1;
                return Some(Cow::Owned(decoded));
            }
        }
    }

    /// The character of a `\uXXXX` escape (the `\u` read), joining a surrogate pair.
    fn unicode_escape(&mut self) -> Option<char> {
        let (c, after) = unicode_escape_at(self.bytes(), self.at)?;
        self.at = after;
        Some(c)
    }

    /// Reads any value, checking it is JSON serde_json reads, and returns its text.
    pub fn value_span(&mut self) -> Option<&'a str> {
        self.peek()?;
        let start = self.at;
        self.skip_value()?;
        Some(&self.text[start..self.at])
    }

    /// Skips one value, checking its grammar.
    fn skip_value(&mut self) -> Option<()> {
        self.at = skip_value_at(self.bytes(), self.at)?;
        Some(())
    }
}

/// The character of a `\uXXXX` escape whose hex digits start at `at`, joining a surrogate
/// pair, and where it ends; a lone surrogate gives up, as serde_json refuses it.
fn unicode_escape_at(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    let hex4 = |at: usize| {
        let digits = bytes.get(at..at + 4)?;
        digits.iter().try_fold(0, |value, &d| {
            Some(value * 16 + char::from(d).to_digit(16)?)
        })
    };
    let first = hex4(at)?;
    if (0xDC00..0xE000).contains(&first) {
        return None;
    }
    if !(0xD800..0xDC00).contains(&first) {
        return Some((char::from_u32(first)?, at + 4));
    }
    if bytes.get(at + 4..at + 6)? != b"\\u" {
        return None;
    }
    let second = hex4(at + 6)?;
    if !(0xDC00..0xE000).contains(&second) {
        return None;
    }
    let joined = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
    Some((char::from_u32(joined)?, at + 10))
}

/// Where the JSON whitespace starting at `at` ends.
fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// Where the value starting at `at` ends, its grammar checked in one loop: `objects` has bit
/// `depth` set when the container at that depth is an object (so `depth` stays within 127).
fn skip_value_at(bytes: &[u8], mut at: usize) -> Option<usize> {
    let mut objects: u128 = 0;
    let mut depth = 0;
    loop {
        // A value is expected.
        at = skip_whitespace(bytes, at);
        match *bytes.get(at)? {
            b'"' => at = skip_string_at(bytes, at + 1)?,
            open @ (b'{' | b'[') => {
                if depth == MAX_DEPTH {
                    return None;
                }
                let close = if open == b'{' { b'}' } else { b']' };
                at = skip_whitespace(bytes, at + 1);
                if bytes.get(at) == Some(&close) {
                    at += 1;
                } else {
                    depth += 1;
                    if open == b'{' {
                        objects |= 1 << depth;
                        at = skip_key_at(bytes, at)?;
                    } else {
                        objects &= !(1 << depth);
                    }
                    continue;
                }
            }
            b't' => at = skip_literal_at(bytes, at, b"true")?,
            b'f' => at = skip_literal_at(bytes, at, b"false")?,
            b'n' => at = skip_literal_at(bytes, at, b"null")?,
            b'-' | b'0'..=b'9' => at = skip_number_at(bytes, at)?,
            _ => return None,
        }
        // A value ended: close containers until one goes on with a comma.
        loop {
            if depth == 0 {
                return Some(at);
            }
            let in_object = objects >> depth & 1 == 1;
            at = skip_whitespace(bytes, at);
            match *bytes.get(at)? {
                b',' => {
                    at += 1;
                    if in_object {
                        at = skip_key_at(bytes, at)?;
                    }
                    break;
                }
                b'}' if in_object => at += 1,
                b']' if !in_object => at += 1,
                _ => return None,
            }
            depth -= 1;
        }
    }
}

/// Where an object's key and its colon, starting at `at` (whitespace first), end.
fn skip_key_at(bytes: &[u8], at: usize) -> Option<usize> {
    let at = skip_whitespace(bytes, at);
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let at = skip_whitespace(bytes, skip_string_at(bytes, at + 1)?);
    (bytes.get(at) == Some(&b':')).then_some(at + 1)
}

fn skip_literal_at(bytes: &[u8], at: usize, word: &[u8]) -> Option<usize> {
    bytes[at..].starts_with(word).then_some(at + word.len())
}

/// Where the string whose text starts at `at` (after its opening quote) ends, checked but not
/// decoded.
fn skip_string_at(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let stop = special_byte(bytes, at)?;
        at = stop + 1;
        if bytes[stop] == b'"' {
            return Some(at);
        }
        match *bytes.get(at)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => at += 1,
            b'u' => at = unicode_escape_at(bytes, at + 1)?.1,
            _ => return None,
        }
    }
}

/// Where the number starting at `start` ends, its grammar checked:
/// `-`? (`0` | [1-9][0-9]*) (`.` [0-9]+)? ([eE] [+-]? [0-9]+)?
fn skip_number_at(bytes: &[u8], start: usize) -> Option<usize> {
    let digits = |at: usize| {
        bytes[at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut at = start;
    if bytes[at] == b'-' {
        at += 1;
    }
    match bytes.get(at)? {
        b'0' => at += 1,
        b'1'..=b'9' => at += digits(at),
        _ => return None,
    }
    if bytes.get(at) == Some(&b'.') {
        let n = digits(at + 1);
        if n == 0 {
            return None;
        }
        at += 1 + n;
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(bytes.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let n = digits(at);
        if n == 0 {
            return None;
        }
        at += n;
    }
    // `01` or `1x` is not a number serde_json reads; the next byte must end the value.
    if matches!(bytes.get(at), Some(b) if b.is_ascii_alphanumeric() || *b == b'.') {
        return None;
    }
    Some(at)
}

/// The index of the first `"` or `\\` at or after `from`; `None` at a control character,
/// which JSON strings may not hold raw, or at the end of the text.
fn special_byte(bytes: &[u8], from: usize) -> Option<usize> {
    let at = from + first_special(bytes.get(from..)?)?;
    (bytes[at] >= 0x20).then_some(at)
}

/// The index of the first byte JSON strings cannot hold as is: `"`, `\\` or a control
/// character.
pub(crate) fn first_special(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // Eight bytes at a time: a byte's high bit is set in `found` when it is a quote, a
    // backslash or below 0x20 (the lowest flagged byte is exact; later ones may be spurious).
    let zero_in = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        let found = zero_in(word ^ (ONES * u64::from(b'"')))
            | zero_in(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS);
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    let rest = chunks.remainder();
    rest.iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|i| offset + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// What the scanner reads of `text` as one value, or `None`.
    fn scanned(text: &str) -> Option<&str> {
        let mut scanner = Scanner::new(text);
        let span = scanner.value_span()?;
        scanner.end()?;
        Some(span)
    }

    #[test]
    fn accepts_only_what_serde_json_accepts() {
        let cases = [
            r#"{"a": [1, -0, 0.5, 1e5, -2.5E-3, true, false, null, "x\n\u00e9\ud83d\ude00"]}"#,
            "  [ ]  ",
            "{}",
            r#""\/\b\f\r\t\"\\""#,
            "01",
            "1.",
            "1e",
            "-",
            "[1,]",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#""\ud800""#,
            r#""\udc00""#,
            r#""\ud800\u0041""#,
            r#""\x""#,
            "\"tab\there\"",
            "tru",
            "nul",
            "[1 2]",
            "{} {}",
            "1x",
            r#""\u12""#,
            r#""\uZZZZ""#,
        ];
        for text in cases {
            let ours = scanned(text).is_some();
            let theirs = serde_json::from_str::<Value>(text).is_ok();
            // Giving up is always allowed; accepting what serde_json refuses never is.
            assert!(!ours || theirs, "scanner accepted {text:?}");
            if theirs && !text.contains("\"\\u") {
                assert!(ours, "scanner refused {text:?}");
            }
        }
    }

    #[test]
    fn decodes_strings_as_serde_json_does() {
        for text in [
            r#""plain""#,
            r#""a\"b\\c\/d\be\ff\ng\rh\ti""#,
            r#""\u00e9\u4e2d\ud83d\ude00\u0000""#,
            r#""ünïcödé and 😀""#,
        ] {
            let expected: String = serde_json::from_str(text).unwrap();
            let got = Scanner::new(text).string().unwrap();
            assert_eq!(got, expected, "{text}");
        }
    }

    #[test]
    fn deep_nesting_gives_up() {
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(scanned(&deep).is_none());
        let shallow = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(scanned(&shallow).is_some());
    }

    #[test]
    fn spans_are_the_value_text_without_whitespace() {
        let mut scanner = Scanner::new(r#"{"a" :  [1, {"b": "c"}] , "d": 2}"#);
        let mut spans = Vec::new();
        scanner
            .object(|inner, key| {
                spans.push((key, inner.value_span()?));
                Some(())
            })
            .unwrap();
        assert_eq!(spans, [("a", r#"[1, {"b": "c"}]"#), ("d", "2")]);
    }
}
