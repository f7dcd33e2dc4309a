//! The scanner against serde_json: what it accepts, how it decodes, where it gives up.

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
        r#""\u00E9\u00e9\uD83D\uDE00""#,
        r#""\u0G00""#,
        r#""\u00 9""#,
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
        r#""\u00E9\u4E2D\uD83D\uDE00\uFFFF""#,
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

/// The vector, word and byte steps of `first_special` all find the first special byte, at
/// every position and after every length of plain text.
#[test]
fn first_special_finds_the_first_at_every_offset() {
    let plain = "abcdefghijklmnopqrstuvwxyz0123456789é中😀~ ".as_bytes();
    for len in 0..70 {
        let mut text: Vec<u8> = plain.iter().copied().cycle().take(len).collect();
        assert_eq!(first_special(&text), None, "{len} plain bytes");
        for special in [b'"', b'\\', 0x00, 0x1F, b'\n'] {
            for at in 0..len {
                let saved = text[at];
                text[at] = special;
                // A second special byte later must not win.
                let later = (at + 5).min(len - 1);
                let saved_later = text[later];
                text[later] = b'"';
                assert_eq!(
                    first_special(&text),
                    Some(at),
                    "{special:#x} at {at} of {len}"
                );
                text[later] = saved_later;
                text[at] = saved;
            }
        }
    }
}
