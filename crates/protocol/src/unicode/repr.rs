//! Python's `repr(str)`, so error texts read exactly as the harness's `ValueError`s.

use std::fmt::Write as _;

use super::classes::is_py_printable;
use crate::json::lenient::stand_in_surrogate;

/// `repr(text)` as CPython 3.11 writes it: single quotes unless the text has `'` and no `"`;
/// `\\`, the quote, `\t`, `\n`, `\r` escaped; other ASCII controls as `\xhh`; non-printable
/// non-ASCII as `\xhh`, `\uhhhh` or `\Uhhhhhhhh`.
pub fn py_repr(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    push_repr(text, &mut out);
    out
}

/// `repr(list_of_str)`: `['a', "it's"]`.
pub fn py_list_repr<S: AsRef<str>>(items: &[S]) -> String {
    let mut out = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        push_repr(item.as_ref(), &mut out);
    }
    out.push(']');
    out
}

/// Appends `repr(text)` to `out`. A lone-surrogate stand-in (see
/// [`json::lenient`](crate::json::lenient)) is written as Python writes the surrogate, `\udXXX`.
pub(crate) fn push_repr(text: &str, out: &mut String) {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            _ if c == quote => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ if c.is_ascii() => push_hex(out, c),
            _ => match stand_in_surrogate(c) {
                Some(unit) => {
                    let _ = write!(out, "\\u{unit:04x}");
                }
                None if is_py_printable(c) => out.push(c),
                None => push_hex(out, c),
            },
        }
    }
    out.push(quote);
}

fn push_hex(out: &mut String, c: char) {
    let cp = c as u32;
    // Writing to a String cannot fail.
    let _ = match cp {
        0..=0xFF => write!(out, "\\x{cp:02x}"),
        0x100..=0xFFFF => write!(out, "\\u{cp:04x}"),
        _ => write!(out, "\\U{cp:08x}"),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python() {
        let cases = [
            ("Color", "'Color'"),
            ("it's", "\"it's\""),
            ("a'b\"c", "'a\\'b\"c'"),
            ("say \"hi\"", "'say \"hi\"'"),
            ("a\\b", "'a\\\\b'"),
            ("x\u{1b}", "'x\\x1b'"),
            ("x\ny", "'x\\ny'"),
            ("x\ty", "'x\\ty'"),
            ("x\u{a0}y", "'x\\xa0y'"),
            ("x\u{200b}y", "'x\\u200by'"),
            ("été", "'été'"),
            ("😀", "'😀'"),
            ("x\u{e0001}", "'x\\U000e0001'"),
            ("x\u{7f}", "'x\\x7f'"),
            ("x\u{9b}", "'x\\x9b'"),
            ("x\u{378}", "'x\\u0378'"),
            ("x\u{3000}", "'x\\u3000'"),
        ];
        for (text, repr) in cases {
            assert_eq!(py_repr(text), repr, "{text:?}");
        }
    }

    #[test]
    fn lists() {
        assert_eq!(
            py_list_repr(&["it's", "a\"b", "x\ny", "é"]),
            "[\"it's\", 'a\"b', 'x\\ny', 'é']"
        );
        assert_eq!(py_list_repr::<&str>(&[]), "[]");
    }
}
