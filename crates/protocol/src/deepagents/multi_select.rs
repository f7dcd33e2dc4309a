//! The `multi_select` answer: a JSON array of strings inside one string, written and read
//! exactly as deepagents does (`json.dumps(values, ensure_ascii=False)` and `json.loads`),
//! and deepagents' single definition of an empty answer.
//!
//! `json.dumps` is not `serde_json::to_string`: it separates items with `", "`, and escapes
//! only `"`, `\`, `\n`, `\r`, `\t`, `\b`, `\f` and other C0 controls (as lowercase `\u00xx`).
//! DEL, C1 controls (U+0085 included), U+2028/2029 and everything non-ASCII go through raw.
//! `json.loads` is lenient where serde_json is strict: lone surrogate escapes are kept (here
//! as the [`json::lenient`](crate::json::lenient) stand-ins), and `NaN`/`Infinity` parse (but
//! are not strings, so such an answer decodes to `None` anyway).

use std::fmt::Write as _;

use serde_json::Value;

use super::pyrepr::{Spelling, push_python};
use crate::json::lenient::stand_in_surrogate;
use crate::unicode::py_is_blank;

/// `encode_multi_select_answer(values)`: the values as Python's `json.dumps` writes them.
pub fn encode<S: AsRef<str>>(values: &[S]) -> String {
    let mut out =
        String::with_capacity(2 + values.iter().map(|v| v.as_ref().len() + 4).sum::<usize>());
    out.push('[');
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        push_json_str(value.as_ref(), &mut out);
    }
    out.push(']');
    out
}

/// `json.dumps(value, ensure_ascii=False)` of any JSON value: `", "` and `": "` separators,
/// Python's number formatting.
pub fn py_json_dumps(value: &Value) -> String {
    let mut out = String::new();
    push_python(value, &JSON_DUMPS, &mut out);
    out
}

/// `json.dumps(..., ensure_ascii=False)`.
const JSON_DUMPS: Spelling = Spelling {
    none: "null",
    booleans: ["true", "false"],
    string: push_json_str,
};

fn push_json_str(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\0'..='\u{1f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            _ => out.push(c),
        }
    }
    out.push('"');
}

/// `decode_multi_select_answer(raw)`: the values if `raw` is, to Python's `json.loads`, a
/// JSON array of strings; `None` otherwise (not JSON, another type, a non-string item).
pub fn decode(raw: &str) -> Option<Vec<String>> {
    let mut reader = Reader {
        chars: raw.chars().collect(),
        at: 0,
    };
    reader.skip_ws();
    reader.expect('[')?;
    reader.skip_ws();
    let mut values = Vec::new();
    if reader.peek() == Some(']') {
        reader.at += 1;
    } else {
        loop {
            reader.skip_ws();
            values.push(reader.string()?);
            reader.skip_ws();
            match reader.next()? {
                ',' => {}
                ']' => break,
                _ => return None,
            }
        }
    }
    reader.skip_ws();
    (reader.at == reader.chars.len()).then_some(values)
}

/// `ask_user_answer_is_empty(answer, type)`: a `multi_select` answer is empty when it does
/// not decode or decodes to `[]` (so `[""]` is an answer); any other type, known or not, is
/// empty when blank by Python's `str.strip`.
pub fn answer_is_empty(answer: &str, question_type: Option<&str>) -> bool {
    if question_type == Some("multi_select") {
        decode(answer).is_none_or(|values| values.is_empty())
    } else {
        py_is_blank(answer)
    }
}

/// A cursor over the characters of a candidate answer.
struct Reader {
    chars: Vec<char>,
    at: usize,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn expect(&mut self, want: char) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// Python's JSON whitespace: space, tab, line feed, carriage return only.
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.at += 1;
        }
    }

    fn hex4(&mut self) -> Option<u16> {
        let digits = self.chars.get(self.at..self.at + 4)?;
        let mut unit = 0u16;
        for d in digits {
            unit = unit * 16 + d.to_digit(16)? as u16;
        }
        self.at += 4;
        Some(unit)
    }

    /// A string literal as Python's scanner reads it (strict: no raw C0 controls).
    fn string(&mut self) -> Option<String> {
        self.expect('"')?;
        let mut out = String::new();
        loop {
            match self.next()? {
                '"' => return Some(out),
                '\\' => match self.next()? {
                    '"' => out.push('"'),
                    '\\' => out.push('\\'),
                    '/' => out.push('/'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    'u' => out.push(self.escaped_unit()?),
                    _ => return None,
                },
                '\0'..='\u{1f}' => return None,
                c => out.push(c),
            }
        }
    }

    /// The character of a `\uXXXX` escape (the `\u` already read), joining a surrogate pair
    /// and keeping a lone surrogate as its stand-in.
    fn escaped_unit(&mut self) -> Option<char> {
        let unit = self.hex4()?;
        if (0xD800..=0xDBFF).contains(&unit)
            && self.chars.get(self.at) == Some(&'\\')
            && self.chars.get(self.at + 1) == Some(&'u')
        {
            let save = self.at;
            self.at += 2;
            match self.hex4() {
                Some(low @ 0xDC00..=0xDFFF) => {
                    let cp =
                        0x1_0000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                    return char::from_u32(cp);
                }
                _ => self.at = save,
            }
        }
        match char::from_u32(u32::from(unit)) {
            Some(c) => Some(c),
            None => surrogate_stand_in(unit),
        }
    }
}

/// The stand-in character for a lone surrogate (see [`json::lenient`](crate::json::lenient)).
fn surrogate_stand_in(unit: u16) -> Option<char> {
    let c = char::from_u32(0x10_F800 + u32::from(unit) - 0xD800)?;
    debug_assert_eq!(stand_in_surrogate(c), Some(unit));
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_as_python_json_dumps() {
        assert_eq!(encode(&["a", "b"]), r#"["a", "b"]"#);
        assert_eq!(encode::<&str>(&[]), "[]");
        assert_eq!(
            encode(&["\0\u{1f}\u{7f}\u{85}\"\\/\u{8}\u{c}\n\r\t", "\u{2028}é😀"]),
            "[\"\\u0000\\u001f\u{7f}\u{85}\\\"\\\\/\\b\\f\\n\\r\\t\", \"\u{2028}é😀\"]"
        );
        assert_eq!(
            py_json_dumps(&json!([1, 1.5, null, true, {"a": [1, 2]}])),
            r#"[1, 1.5, null, true, {"a": [1, 2]}]"#
        );
    }

    #[test]
    fn decodes_as_python_json_loads() {
        assert_eq!(decode(r#"["a", "b"]"#), Some(vec!["a".into(), "b".into()]));
        assert_eq!(decode("  [\"a\"]\n"), Some(vec!["a".into()]));
        assert_eq!(decode("[]"), Some(vec![]));
        assert_eq!(decode(r#"["\u0041\n"]"#), Some(vec!["A\n".into()]));
        assert_eq!(decode(r#"["\u00e9\/"]"#), Some(vec!["é/".into()]));
        assert_eq!(decode(r#"["\ud83d\ude00"]"#), Some(vec!["😀".into()]));
        for bad in [
            r#"["a", 1]"#,
            "[null]",
            r#""a""#,
            "S, M",
            r#"["a""#,
            "[NaN]",
            r#"[["a"]]"#,
            "(cancelled)",
            "\u{feff}[\"a\"]",
            "[\"a\u{1}\"]",
            "\u{a0}[\"a\"]",
            r#"["a",]"#,
            r#"["\x41"]"#,
            "",
            "[",
            r#"["a"] x"#,
        ] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
        let lone = decode(r#"["\ud800"]"#).unwrap();
        assert_eq!(
            stand_in_surrogate(lone[0].chars().next().unwrap()),
            Some(0xD800)
        );
    }

    #[test]
    fn emptiness_follows_the_type() {
        assert!(answer_is_empty("", Some("text")));
        assert!(answer_is_empty(" \u{1f}\u{a0}", Some("text")));
        assert!(!answer_is_empty("\u{200b}", Some("text")));
        assert!(!answer_is_empty("[]", Some("text")));
        assert!(answer_is_empty("[]", Some("multi_select")));
        assert!(answer_is_empty("a", Some("multi_select")));
        assert!(!answer_is_empty("[\"\"]", Some("multi_select")));
        assert!(answer_is_empty("  ", Some("dropdown")));
        assert!(!answer_is_empty("x", None));
    }
}
