//! Python's `repr()` and `str()` of what `json.loads` returns, as deepagents shows it.
//!
//! deepagents puts Python renderings in front of the model in three places: the ToolNode
//! error quotes the raw arguments as a dict repr, the cross-field errors quote the question
//! with `{question!r}`, and `_parse_answers` turns a non-string answer into `str(answer)`
//! (`None`, `True`, `1.5`, `{'a': 1}`). This module writes those renderings byte for byte.
//!
//! Limits, each where the inputs come from:
//! - printability follows the crate's frozen Unicode 14.0 tables, while deepagents runs on
//!   CPython 3.14 (16.0) and the oracle on 3.13 (15.1): a code point assigned after 14.0 is
//!   escaped here and written raw by Python. Only message text differs, never a verdict.
//! - `serde_json` keeps integers only up to 64 bits and reads `-0` as `-0.0`; Python keeps
//!   every integer. Such numbers render as floats here. (Floats are read exactly, with
//!   serde_json's `float_roundtrip`, so they print with Python's digits.)
//! - Characters U+10F800..U+10FFFF stand for lone surrogates
//!   ([`json::lenient`](crate::json::lenient)), so a real one is rendered as the surrogate it
//!   stands for. They are private-use and noncharacters, not text people type.
//! - `NaN`, `Infinity` and numbers too large for a float, which Python's `json.loads` reads,
//!   are not JSON to serde_json: `askgate validate` refuses such a line. So is one nested
//!   deeper than serde_json's 128 levels (Python's limit is about 1,000).

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// `repr(text)`: single quotes unless the text has `'` and no `"`; `\\`, the quote, `\t`,
/// `\n`, `\r` escaped; other controls and non-printable characters as `\xhh`, `\uhhhh` or
/// `\Uhhhhhhhh`. A lone-surrogate stand-in (see [`json::lenient`](crate::json::lenient))
/// is written as the `\udxxx` escape Python writes for the surrogate itself.
pub fn py_str_repr(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    push_str_repr(text, &mut out);
    out
}

/// `repr(value)` of a value `json.loads` could return: `None`, `True`, ints, floats, strs,
/// lists and dicts (keys in order).
pub fn py_repr(value: &Value) -> String {
    let mut out = String::new();
    push_repr(value, &mut out);
    out
}

/// `str(value)`: a string as it is, anything else as its repr.
pub fn py_str(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => py_repr(other),
    }
}

/// `repr(x)` of a Python float: the shortest digits that read back to `x`, in fixed notation
/// when the decimal exponent is in `-4..16`, else as `1.5e+16` / `1e-05`.
pub fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    // Rust's `{:e}` writes the shortest round-trip digits, as Python's repr does.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if x < 0.0 {
        out.push('-');
    }
    let point = exponent + 1; // digits before the decimal point
    if -4 < point && point <= 16 {
        if point <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', point.unsigned_abs() as usize));
            out.push_str(&digits);
        } else {
            let point = point as usize;
            if digits.len() <= point {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', point - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exponent.unsigned_abs());
    }
    out
}

/// A JSON number as Python's `json.loads` reads it and `repr` writes it: integers as
/// integers, anything with a fraction or exponent as a float.
pub(crate) fn py_number_repr(number: &Number) -> String {
    if let Some(n) = number.as_u64() {
        n.to_string()
    } else if let Some(n) = number.as_i64() {
        n.to_string()
    } else {
        py_float_repr(number.as_f64().unwrap_or(f64::NAN))
    }
}

/// How one of Python's writers spells the JSON scalars; lists and dicts it writes alike, with
/// `", "` and `": "` between items, which is what [`push_python`] does.
pub(crate) struct Spelling {
    /// `null`.
    pub(crate) none: &'static str,
    /// `true` and `false`.
    pub(crate) booleans: [&'static str; 2],
    /// A string (also a dict's key).
    pub(crate) string: fn(&str, &mut String),
}

/// `repr` of the decoded value.
const REPR: Spelling = Spelling {
    none: "None",
    booleans: ["True", "False"],
    string: push_str_repr,
};

fn push_repr(value: &Value, out: &mut String) {
    push_python(value, &REPR, out);
}

/// Writes `value` as Python writes the value `json.loads` gives for it, in `spelling`.
pub(crate) fn push_python(value: &Value, spelling: &Spelling, out: &mut String) {
    match value {
        Value::Null => out.push_str(spelling.none),
        Value::Bool(b) => out.push_str(spelling.booleans[usize::from(!*b)]),
        Value::Number(n) => out.push_str(&py_number_repr(n)),
        Value::String(s) => (spelling.string)(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                push_python(item, spelling, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                (spelling.string)(key, out);
                out.push_str(": ");
                push_python(item, spelling, out);
            }
            out.push('}');
        }
    }
}

fn push_str_repr(text: &str, out: &mut String) {
    crate::unicode::push_repr(text, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_read_as_python_writes_them() {
        let cases = [
            (1.5, "1.5"),
            (1.0, "1.0"),
            (100.0, "100.0"),
            (1e16, "1e+16"),
            (9_999_999_999_999_998.0, "9999999999999998.0"),
            (1.5e20, "1.5e+20"),
            (1e-5, "1e-05"),
            (1e-7, "1e-07"),
            (0.0001, "0.0001"),
            (0.1, "0.1"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (-0.0, "-0.0"),
            (-2.5, "-2.5"),
            (123.456, "123.456"),
            (1e22, "1e+22"),
        ];
        for (x, repr) in cases {
            assert_eq!(py_float_repr(x), repr, "{x}");
        }
    }

    #[test]
    fn values_read_as_python_writes_them() {
        let value = json!({"questions": [{"question": "it's", "type": null, "x": [true, 1, 1.5, -3]}], "b": "a\"b'"});
        assert_eq!(
            py_repr(&value),
            r#"{'questions': [{'question': "it's", 'type': None, 'x': [True, 1, 1.5, -3]}], 'b': 'a"b\''}"#
        );
        assert_eq!(py_str(&json!("x")), "x");
        assert_eq!(py_str(&json!({"a": 1})), "{'a': 1}");
        assert_eq!(py_str(&json!(["S"])), "['S']");
        assert_eq!(
            py_str_repr("\u{85}\u{a0}\u{ad}\u{2028}"),
            r"'\x85\xa0\xad\u2028'"
        );
        assert_eq!(py_str_repr("\u{1c}"), r"'\x1c'");
    }

    #[test]
    fn stand_ins_read_as_lone_surrogates() {
        let (value, _) = crate::json::lenient::parse(r#"["\ud800?"]"#).unwrap();
        assert_eq!(py_repr(&value), r"['\ud800?']");
    }
}
