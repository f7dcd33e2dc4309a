//! JSON that carries lone surrogates, as Python hosts write it.
//!
//! Python's `json.dumps` writes a `str` holding a lone surrogate as `"\ud800"`, and Python's
//! `json.loads` reads it back. Strict parsers (serde_json among them) refuse such text, and a
//! Rust `String` cannot hold a surrogate. To judge these inputs as the Python packages do,
//! [`parse`] maps each lone surrogate U+D800..U+DFFF onto a stand-in code point
//! U+10F800..U+10FFFF (the tail of plane 16, private use and noncharacters: rejected by the
//! harness's printable rule exactly like a surrogate), and [`to_string`] maps them back to
//! `\udXXX` escapes on the way out.
//!
//! The stand-ins are ambiguous only if the input also holds real U+10F800..U+10FFFF
//! characters; [`parse`] refuses that combination rather than guess.

use serde_json::Value;

/// First stand-in code point; U+D800 maps here, U+DFFF to U+10FFFF.
const STAND_IN_BASE: u32 = 0x10_F800;

/// Whether `c` stands in for a lone surrogate; returns the surrogate's value.
pub fn stand_in_surrogate(c: char) -> Option<u16> {
    let cp = c as u32;
    (cp >= STAND_IN_BASE).then(|| (cp - STAND_IN_BASE + 0xD800) as u16)
}

/// Parses JSON text. Returns the value and whether lone surrogates were mapped to stand-ins.
///
/// # Errors
/// The text is not JSON even with lone surrogates allowed, or it holds both lone surrogates
/// and real U+10F800..U+10FFFF characters.
pub fn parse(text: &str) -> Result<(Value, bool), String> {
    match serde_json::from_str(text) {
        Ok(value) => Ok((value, false)),
        Err(strict) => {
            let Some(rewritten) = replace_lone_surrogates(text) else {
                return Err(strict.to_string());
            };
            if text.chars().any(|c| stand_in_surrogate(c).is_some())
                || text.contains("\\udbfe")
                || text.contains("\\udbff")
                || text.contains("\\uDBFE")
                || text.contains("\\uDBFF")
            {
                return Err(
                    "the text holds lone surrogates and also characters U+10F800..U+10FFFF, \
                     which askgate cannot tell apart"
                        .to_owned(),
                );
            }
            serde_json::from_str(&rewritten)
                .map(|value| (value, true))
                .map_err(|e| e.to_string())
        }
    }
}

/// Compact JSON text of `value`, with stand-ins written back as lone `\udXXX` escapes.
pub fn to_string(value: &Value) -> String {
    let text = value.to_string();
    if !text.chars().any(|c| stand_in_surrogate(c).is_some()) {
        return text;
    }
    // A stand-in can only sit inside a JSON string, where an escape means the same.
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match stand_in_surrogate(c) {
            Some(unit) => out.push_str(&format!("\\u{unit:04x}")),
            None => out.push(c),
        }
    }
    out
}

/// Rewrites every lone surrogate escape inside string literals as the escape of its stand-in.
/// `None` when there is none (the strict error stands).
fn replace_lone_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut changed = false;
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                let unit = hex4(bytes, i + 2).filter(|_| bytes.get(i + 1) == Some(&b'u'));
                match unit {
                    Some(high @ 0xD800..=0xDBFF)
                        if bytes.get(i + 6) == Some(&b'\\')
                            && bytes.get(i + 7) == Some(&b'u')
                            && matches!(hex4(bytes, i + 8), Some(0xDC00..=0xDFFF)) =>
                    {
                        let _ = high;
                        i += 12;
                        continue;
                    }
                    Some(unit @ 0xD800..=0xDFFF) => {
                        out.push_str(&text[copied..i]);
                        let stand_in = STAND_IN_BASE + u32::from(unit - 0xD800) - 0x1_0000;
                        out.push_str(&format!(
                            "\\u{:04x}\\u{:04x}",
                            0xD800 + (stand_in >> 10),
                            0xDC00 + (stand_in & 0x3FF)
                        ));
                        changed = true;
                        i += 6;
                        copied = i;
                        continue;
                    }
                    _ => {
                        i += 2;
                        continue;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    changed.then_some(out)
}

fn hex4(bytes: &[u8], at: usize) -> Option<u16> {
    let digits = bytes.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u16::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_json_passes_through() {
        let (value, mapped) = parse(r#"{"a":"\ud83d\ude00"}"#).unwrap();
        assert_eq!(value["a"], "😀");
        assert!(!mapped);
    }

    #[test]
    fn lone_surrogates_map_to_stand_ins_and_back() {
        let text = r#"{"a":"x\ud800y","b":["\udfff"],"c":"\\ud800"}"#;
        let (value, mapped) = parse(text).unwrap();
        assert!(mapped);
        let a: Vec<char> = value["a"].as_str().unwrap().chars().collect();
        assert_eq!(stand_in_surrogate(a[1]), Some(0xD800));
        assert_eq!(
            stand_in_surrogate(value["b"][0].as_str().unwrap().chars().next().unwrap()),
            Some(0xDFFF)
        );
        assert_eq!(
            value["c"], "\\ud800",
            "an escaped backslash is not an escape"
        );
        assert_eq!(
            to_string(&value),
            r#"{"a":"x\ud800y","b":["\udfff"],"c":"\\ud800"}"#
        );
    }

    #[test]
    fn broken_json_stays_an_error() {
        assert!(parse(r#"{"a":"#).is_err());
        assert!(parse(r#"{"a":"\ud800"#).is_err());
    }

    #[test]
    fn ambiguous_input_is_refused() {
        assert!(parse("{\"a\":\"\\ud800\",\"b\":\"\u{10f800}\"}").is_err());
    }
}
