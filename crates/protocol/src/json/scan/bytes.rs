//! The scanner's inner loops, as free functions over the bytes with positions in locals:
//! finding a string's end, checking escapes, numbers and literals, and skipping a whole value.

use wide::u8x16;

use super::MAX_DEPTH;

/// Each byte's value as a hex digit, or 0xFF.
static HEX_VALUE: [u8; 256] = {
    let mut table = [0xFF; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// The character of a `\uXXXX` escape whose hex digits start at `at`, joining a surrogate
/// pair, and where it ends; a lone surrogate gives up, as serde_json refuses it.
pub(super) fn unicode_escape_at(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    let hex4 = |at: usize| {
        let digits = bytes.get(at..at + 4)?;
        // A byte that is not a hex digit has the value 0xFF, which no digit reaches.
        let values = digits.iter().map(|&d| HEX_VALUE[usize::from(d)]);
        let value = values.fold(0u32, |value, digit| value << 8 | u32::from(digit));
        let invalid = value & 0xF0F0_F0F0 != 0;
        let packed = (value & 0x0F00_0000) >> 12
            | (value & 0x000F_0000) >> 8
            | (value & 0x0000_0F00) >> 4
            | (value & 0x0000_000F);
        (!invalid).then_some(packed)
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
pub(super) fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// Where the value starting at `at` ends, its grammar checked in one loop: `objects` has bit
/// `depth` set when the container at that depth is an object (so `depth` stays within 127).
pub(super) fn skip_value_at(bytes: &[u8], mut at: usize) -> Option<usize> {
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

pub(super) fn skip_literal_at(bytes: &[u8], at: usize, word: &[u8]) -> Option<usize> {
    bytes
        .get(at..)?
        .starts_with(word)
        .then_some(at + word.len())
}

/// Where the string whose text starts at `at` (after its opening quote) ends, checked but not
/// decoded.
fn skip_string_at(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let stop = special_byte(bytes, at)?;
        if bytes[stop] == b'"' {
            return Some(stop + 1);
        }
        // Escapes often come in runs (`\ud83d\ude00`, text written ASCII-only): read them
        // one after another before searching again.
        at = stop;
        while bytes.get(at) == Some(&b'\\') {
            match *bytes.get(at + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => at += 2,
                b'u' => at = unicode_escape_at(bytes, at + 2)?.1,
                _ => return None,
            }
        }
    }
}

/// Where the number starting at `start` ends, its grammar checked:
/// `` -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? ``
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
pub(super) fn special_byte(bytes: &[u8], from: usize) -> Option<usize> {
    let at = from + first_special(bytes.get(from..)?)?;
    (bytes[at] >= 0x20).then_some(at)
}

/// The index of the first byte JSON strings cannot hold as is: `"`, `\\` or a control
/// character. Sixteen bytes at a time in a vector register, then byte by byte.
pub(crate) fn first_special(bytes: &[u8]) -> Option<usize> {
    let mut blocks = bytes.chunks_exact(16);
    let mut offset = 0;
    for block in &mut blocks {
        let mut lanes = [0; 16];
        lanes.copy_from_slice(block);
        if let Some(at) = first_special_in(lanes) {
            return Some(offset + at);
        }
        offset += 16;
    }
    // Fewer than sixteen left: the strings written whole are mostly this short.
    let rest = blocks.remainder();
    let special = |&b: &u8| b == b'"' || b == b'\\' || b < 0x20;
    rest.iter().position(special).map(|at| offset + at)
}

/// The first special byte of one block of sixteen.
fn first_special_in(lanes: [u8; 16]) -> Option<usize> {
    let lanes = u8x16::from(lanes);
    let control_max = u8x16::splat(0x1F);
    let found = lanes.cmp_eq(u8x16::splat(b'"'))
        | lanes.cmp_eq(u8x16::splat(b'\\'))
        | lanes.max(control_max).cmp_eq(control_max);
    let mask = found.move_mask();
    (mask != 0).then(|| mask.trailing_zeros() as usize)
}
