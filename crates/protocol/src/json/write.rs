//! Writing JSON text byte for byte as `serde_json::to_string` does, for hot paths that build
//! their output by hand instead of through `Serialize`.

use crate::json::scan::first_special;

/// Appends a JSON list: `[`, each item as `write` writes it, commas between, `]`.
pub fn push_list<T>(out: &mut Vec<u8>, items: &[T], mut write: impl FnMut(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(out, item);
    }
    out.push(b']');
}

/// Appends `text` as a JSON string: quoted, with `"`, `\` and control characters escaped the
/// way serde_json escapes them (short forms where JSON has them, else `\u00xx`), every other
/// character as it is.
pub fn push_str(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    push_escaped(out, text);
    out.push(b'"');
}

/// Appends `text` escaped as inside a JSON string, without the quotes (so a string can be
/// written in pieces).
pub fn push_escaped(out: &mut Vec<u8>, text: &str) {
    let mut rest = text.as_bytes();
    while let Some(at) = first_special(rest) {
        out.extend_from_slice(&rest[..at]);
        let byte = rest[at];
        rest = &rest[at + 1..];
        let short = match byte {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x08 => b'b',
            0x0C => b'f',
            _ => b'u',
        };
        out.extend_from_slice(&[b'\\', short]);
        if short == b'u' {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(&[
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xF)],
            ]);
        }
    }
    out.extend_from_slice(rest);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_serde_json_does() {
        let mut every_control: String = (0u8..0x20).map(char::from).collect();
        every_control.push_str("\"\\/\u{7f}é😀 plain");
        for text in ["", "plain", "a\"b", "tab\there\n", &every_control] {
            let mut ours = Vec::new();
            push_str(&mut ours, text);
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string(text).unwrap()
            );
        }
    }
}
