//! One text per JSON value as JSON Schema compares values, so that `enum` and `const` are a
//! hash lookup: `1`, `1.0` and `-0` against `0` are the same number, and an object's key order
//! does not matter.

use std::fmt::Write;

use serde_json::{Number, Value};

/// The key of `value`, or `None` when writing it would take more than `steps` values; `steps`
/// is lowered by the number of values written (every value counts one, nested ones too).
pub(super) fn key(value: &Value, steps: &mut u32) -> Option<String> {
    let mut out = String::new();
    write_value(value, steps, &mut out).then_some(out)
}

fn write_value(value: &Value, steps: &mut u32, out: &mut String) -> bool {
    if *steps == 0 {
        return false;
    }
    *steps -= 1;
    match value {
        Value::Null => out.push('n'),
        Value::Bool(true) => out.push('t'),
        Value::Bool(false) => out.push('f'),
        Value::Number(number) => write_number(number, out),
        Value::String(text) => write_text(text, out),
        Value::Array(items) => {
            out.push('[');
            for item in items {
                if !write_value(item, steps, out) {
                    return false;
                }
                out.push(',');
            }
            out.push(']');
        }
        Value::Object(object) => {
            let mut entries: Vec<_> = object.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (name, item) in entries {
                write_text(name, out);
                if !write_value(item, steps, out) {
                    return false;
                }
                out.push(',');
            }
            out.push('}');
        }
    }
    true
}

/// Length-prefixed, so that no text inside a string can pass for the structure around it.
fn write_text(text: &str, out: &mut String) {
    let _ = write!(out, "\"{}:", text.len());
    out.push_str(text);
}

/// Whole numbers as integers whatever their JSON spelling (`1.0`, `1e0`); others as the
/// shortest text that reads back as the same `f64`.
fn write_number(number: &Number, out: &mut String) {
    let _ = if let Some(n) = number.as_i64() {
        write!(out, "{n}")
    } else if let Some(n) = number.as_u64() {
        write!(out, "{n}")
    } else {
        let n = number.as_f64().unwrap_or(f64::NAN);
        // Below 2^64 a whole f64 converts to i128 exactly; above, every f64 is whole, and no
        // JSON integer that large reads as anything but an f64, so both sides write it alike.
        if n.fract() == 0.0 && n.abs() < 18_446_744_073_709_551_616.0 {
            write!(out, "{}", n as i128)
        } else {
            write!(out, "{n:?}")
        }
    };
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn of(value: &Value) -> String {
        let mut unbounded = u32::MAX;
        key(value, &mut unbounded).expect("within budget")
    }

    #[test]
    fn equal_as_json_schema_has_it() {
        let same = [
            (json!(1), json!(1.0)),
            (json!(0), json!(-0.0)),
            (json!(-3), json!(-3.0)),
            (json!(1e3), json!(1000)),
            (json!(u64::MAX), json!(u64::MAX)),
            (json!({"a": 1, "b": [2.0]}), json!({"b": [2], "a": 1.0})),
        ];
        for (a, b) in same {
            assert_eq!(of(&a), of(&b), "{a} and {b}");
        }
        let different = [
            (json!(1), json!("1")),
            (json!(1), json!(1.5)),
            (
                json!(9_007_199_254_740_993_i64),
                json!(9_007_199_254_740_992.0),
            ),
            (json!(["a,b"]), json!(["a", "b"])),
            (json!({"a": "b"}), json!({"a\"": "b"})),
            (json!([]), json!({})),
            (json!(null), json!(false)),
            (json!([[1], 2]), json!([1, [2]])),
        ];
        for (a, b) in different {
            assert_ne!(of(&a), of(&b), "{a} and {b}");
        }
    }

    #[test]
    fn every_value_written_is_a_step() {
        let mut steps = 4;
        assert!(key(&json!({"a": [1, 2]}), &mut steps).is_some());
        assert_eq!(steps, 0);
        let mut steps = 3;
        assert_eq!(key(&json!({"a": [1, 2]}), &mut steps), None);
    }
}
