//! Character classes: Python's `isprintable`/`isspace`, and the harness's printable rule.

use super::bitmap::{self, PlaneBits};
use super::tables;

/// The Unicode version of the frozen tables (CPython 3.11's `unicodedata.unidata_version`).
pub const UNICODE_VERSION: &str = tables::UNICODE_VERSION;

/// Why a character is not printable, in the terms of Unicode general categories.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CharClass {
    /// Printable: letters, marks, numbers, punctuation, symbols and U+0020.
    Printable,
    /// Zs other than U+0020: printable for the harness rule, escaped by Python's `repr`.
    SpaceSeparator,
    /// Cc: C0 and C1 controls and DEL.
    Control,
    /// Cf: invisible formatting such as U+200B or the bidi overrides.
    Format,
    /// Co: private use.
    PrivateUse,
    /// Cn: unassigned in the reference Unicode version (noncharacters included).
    Unassigned,
    /// Zl: U+2028 LINE SEPARATOR.
    LineSeparator,
    /// Zp: U+2029 PARAGRAPH SEPARATOR.
    ParagraphSeparator,
}

impl CharClass {
    /// A short description for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            CharClass::Printable => "a printable character",
            CharClass::SpaceSeparator => "a space",
            CharClass::Control => "a control character",
            CharClass::Format => "an invisible formatting character",
            CharClass::PrivateUse => "a private-use character",
            CharClass::Unassigned => "a code point unassigned in Unicode 14.0",
            CharClass::LineSeparator => "a line separator",
            CharClass::ParagraphSeparator => "a paragraph separator",
        }
    }
}

fn in_ranges(ranges: &[(u32, u32)], cp: u32) -> bool {
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Bit `cp` set when `cp` is not printable.
static NOT_PRINTABLE_BITS: PlaneBits = bitmap::from_ranges(tables::NOT_PRINTABLE);

/// Bit `cp` set when the harness's printable rule rejects `cp` wherever it stands (not
/// printable and not a Zs space).
static NOT_ALLOWED_BITS: PlaneBits = {
    let mut bits = bitmap::from_ranges(tables::NOT_PRINTABLE);
    let mut i = 0;
    while i < tables::SPACE_SEPARATORS.len() {
        let cp = tables::SPACE_SEPARATORS[i] as usize;
        bits[cp / 64] &= !(1 << (cp % 64));
        i += 1;
    }
    bits
};

/// [`NOT_ALLOWED_BITS`] with `\n` let through, for the fields that may span lines: text is
/// measured against one bitmap or the other, so no character needs a test of its own for `\n`.
static NOT_ALLOWED_IN_LINES_BITS: PlaneBits = {
    let mut bits = NOT_ALLOWED_BITS;
    bits[0] &= !(1 << b'\n');
    bits
};

/// A string's length in characters and the first character the printable rule rejects in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextMeasure {
    /// Code points.
    pub chars: usize,
    /// The first rejected character: its index in characters, and the character.
    pub forbidden: Option<(usize, char)>,
}

/// [`first_forbidden`] and the length in characters, in one pass: printable ASCII text in
/// one bulk check, other text decoded in place.
pub fn measure_text(text: &str, newlines: bool) -> TextMeasure {
    let bytes = text.as_bytes();
    let mut measure = TextMeasure {
        chars: 0,
        forbidden: None,
    };
    // Most text is short and printable ASCII: settle it in one bulk check.
    if is_plain_ascii_bytes(bytes, newlines) {
        measure.chars = bytes.len();
        return measure;
    }
    // One character at a time, without branching on its width (in text that mixes scripts
    // a branch, or a loop over ASCII runs, would mispredict at nearly every character) or on
    // the rule: a rejected character is rare, so it is only noted, and found again after.
    // Each character's position waits on the width of the one before, so one such chain leaves
    // most of the core idle: the two halves of the text are decoded side by side.
    let rejected_bits = rule_bits(newlines);
    // Short text is not worth splitting.
    let half = if bytes.len() < 64 {
        bytes.len()
    } else {
        half_way(bytes)
    };
    let (mut first, mut second) = (0, half);
    let mut any_rejected = false;
    while first < half && second < bytes.len() {
        let (cp, width) = code_point_at(bytes, first);
        let (other_cp, other_width) = code_point_at(bytes, second);
        any_rejected |= rejected(rejected_bits, cp) | rejected(rejected_bits, other_cp);
        measure.chars += 2;
        first += width;
        second += other_width;
    }
    for (mut at, end) in [(first, half), (second, bytes.len())] {
        while at < end {
            let (cp, width) = code_point_at(bytes, at);
            any_rejected |= rejected(rejected_bits, cp);
            measure.chars += 1;
            at += width;
        }
    }
    if any_rejected {
        measure.forbidden = text
            .chars()
            .enumerate()
            .find(|&(_, c)| !harness_allows(c, newlines));
    }
    measure
}

/// The first character boundary at or after the middle of UTF-8 `bytes`.
fn half_way(bytes: &[u8]) -> usize {
    let mut at = bytes.len() / 2;
    // At most three continuation bytes follow a character's first byte.
    while bytes.get(at).is_some_and(|&b| b & 0xC0 == 0x80) {
        at += 1;
    }
    at
}

/// The code point starting at byte `at` of UTF-8 `bytes` (a character boundary) and its width.
fn code_point_at(bytes: &[u8], at: usize) -> (u32, usize) {
    // `LEAD_BITS` keeps the lead's payload. The width is computed, not looked up: the next
    // character's position waits on it, and a table load would lengthen that wait.
    const LEAD_BITS: [u32; 5] = [0, 0x7F, 0x1F, 0x0F, 0x07];
    // The four bytes from `at` in one load (zeros past the end), first byte lowest.
    let window = match bytes.get(at..at + 4) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => {
            let mut four = [0; 4];
            for (slot, &byte) in four.iter_mut().zip(bytes.get(at..).unwrap_or_default()) {
                *slot = byte;
            }
            u32::from_le_bytes(four)
        }
    };
    let lead = window & 0xFF;
    let width =
        1 + usize::from(lead >= 0xC0) + usize::from(lead >= 0xE0) + usize::from(lead >= 0xF0);
    // All four payloads in place as if the character were four bytes long, then shifted down
    // by the bytes it does not have (their bits fall off the end).
    let full = (lead & LEAD_BITS[width]) << 18
        | (window >> 8 & 0x3F) << 12
        | (window >> 16 & 0x3F) << 6
        | (window >> 24 & 0x3F);
    (full >> (6 * (4 - width)), width)
}

/// The bitmap of what the printable rule rejects, with `\n` let through or not.
fn rule_bits(newlines: bool) -> &'static PlaneBits {
    if newlines {
        &NOT_ALLOWED_IN_LINES_BITS
    } else {
        &NOT_ALLOWED_BITS
    }
}

/// Whether the printable rule `bits` stands for (from [`rule_bits`]) rejects `cp`, a code point
/// of a `str`: one load for planes 0-2, without a branch on ASCII (mixed text would mispredict
/// it), a search beyond.
fn rejected(bits: &PlaneBits, cp: u32) -> bool {
    match bitmap::get(bits, cp as usize) {
        Some(rejected) => rejected,
        None => !char::from_u32(cp).is_some_and(|c| is_py_printable(c) || is_space_separator(c)),
    }
}

/// Whether `text` is printable ASCII only (with `\n` where allowed), which the harness always
/// allows: checked byte by byte in bulk, the common case.
pub fn is_plain_ascii(text: &str, newlines: bool) -> bool {
    is_plain_ascii_bytes(text.as_bytes(), newlines)
}

fn is_plain_ascii_bytes(bytes: &[u8], newlines: bool) -> bool {
    bytes.iter().fold(true, |plain, &b| {
        plain & ((b' '..=b'~').contains(&b) | (newlines & (b == b'\n')))
    })
}

/// Python 3.11's `str.isprintable()` for one character.
pub fn is_py_printable(c: char) -> bool {
    let cp = c as usize;
    match bitmap::get(&NOT_PRINTABLE_BITS, cp) {
        Some(not_printable) => !not_printable,
        None => !in_ranges(tables::NOT_PRINTABLE, c as u32),
    }
}

/// Whether `c` has general category Zs (the 17 space separators, U+0020 among them).
///
/// Written out rather than searched in `tables::SPACE_SEPARATORS`: the uniqueness fold asks
/// this of every character of every non-ASCII header and label, and Zs has not changed since
/// Unicode 4.1 (a test checks the two agree on every code point).
pub fn is_space_separator(c: char) -> bool {
    matches!(
        c,
        ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
    )
}

/// Python's `str.isspace()` for one character: Unicode White_Space plus U+001C..U+001F.
pub fn is_py_whitespace(c: char) -> bool {
    tables::PY_WHITESPACE.binary_search(&(c as u32)).is_ok()
}

/// Python's `not text.strip()`: the text is empty or only Python whitespace.
pub fn py_is_blank(text: &str) -> bool {
    text.chars().all(is_py_whitespace)
}

/// The general-category class of `c` as CPython 3.11 sees it.
pub fn classify(c: char) -> CharClass {
    if is_py_printable(c) {
        return CharClass::Printable;
    }
    let cp = c as u32;
    match cp {
        0x00..=0x1F | 0x7F..=0x9F => CharClass::Control,
        0x2028 => CharClass::LineSeparator,
        0x2029 => CharClass::ParagraphSeparator,
        0xE000..=0xF8FF | 0xF_0000..=0xF_FFFD | 0x10_0000..=0x10_FFFD => CharClass::PrivateUse,
        _ if is_space_separator(c) => CharClass::SpaceSeparator,
        _ if in_ranges(tables::FORMAT, cp) => CharClass::Format,
        _ => {
            debug_assert!(in_ranges(tables::UNASSIGNED, cp));
            CharClass::Unassigned
        }
    }
}

/// The harness's printable rule for one character: printable, any Zs space, or `\n` where
/// `newlines` allows it.
pub fn harness_allows(c: char, newlines: bool) -> bool {
    !rejected(rule_bits(newlines), c as u32)
}

/// The first character the harness's printable rule rejects: its index in characters and
/// the character itself.
pub fn first_forbidden(text: &str, newlines: bool) -> Option<(usize, char)> {
    if is_plain_ascii(text, newlines) {
        return None;
    }
    text.chars()
        .enumerate()
        .find(|&(_, c)| !harness_allows(c, newlines))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator: each call gives a number below its bound, the same
    /// sequence for the same seed.
    fn xorshift(seed: u64) -> impl FnMut(usize) -> usize {
        let mut state = seed | 1;
        move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % bound.max(1) as u64).unwrap_or(0)
        }
    }

    #[test]
    fn bitmap_agrees_with_the_range_table() {
        for cp in 0..=0x10_FFFF_u32 {
            if let Some(c) = char::from_u32(cp) {
                assert_eq!(
                    is_py_printable(c),
                    !in_ranges(tables::NOT_PRINTABLE, cp),
                    "U+{cp:04X}"
                );
            }
        }
    }

    #[test]
    fn one_pass_measure_agrees_with_the_character_rule() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            for newlines in [false, true] {
                // The rule as its definition states it, by general category.
                let allowed = matches!(
                    classify(c),
                    CharClass::Printable | CharClass::SpaceSeparator
                ) || (newlines && c == '\n');
                assert_eq!(harness_allows(c, newlines), allowed, "{c:?}");
                let expected = (!allowed).then_some((0, c));
                let one = c.to_string();
                assert_eq!(measure_text(&one, newlines).forbidden, expected, "{c:?}");
                // Between runs of ASCII, which take the bulk check when alone.
                let framed = format!("{}{c}{}", "a".repeat(17), "b".repeat(20));
                let measure = measure_text(&framed, newlines);
                assert_eq!(measure.chars, 38);
                assert_eq!(measure.forbidden, expected.map(|(_, c)| (17, c)));
            }
        }
    }

    #[test]
    fn one_pass_measure_counts_and_finds_the_first() {
        let texts = [
            "",
            "plain ASCII text that runs well past a few words",
            "é中😀ꭰ\u{3000}x",
            "a\u{200b}b\u{7}c",
            "中中中中中中中中中中中中\u{85}中",
            "line\nbreak and then some more text before a separator\u{2028}",
        ];
        for text in texts {
            for newlines in [false, true] {
                let measure = measure_text(text, newlines);
                assert_eq!(measure.chars, text.chars().count(), "{text:?}");
                assert_eq!(
                    measure.forbidden,
                    first_forbidden(text, newlines),
                    "{text:?}"
                );
            }
        }
    }

    /// Random texts over every width of UTF-8 and every class of character, rejected ones
    /// included, short and long enough to be measured in two halves: the one-pass measure equals
    /// counting and searching separately.
    #[test]
    fn one_pass_measure_agrees_on_random_texts() {
        let palette: Vec<char> = (0..=0x10_FFFF)
            .step_by(7)
            .filter_map(char::from_u32)
            .chain([
                '\n',
                '\u{85}',
                '\u{200b}',
                '\u{3000}',
                '\u{e000}',
                '\u{10ffff}',
            ])
            .collect();
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        for _ in 0..20_000 {
            let text: String = (0..next(120))
                .map(|_| match next(3) {
                    0 => palette[next(palette.len())],
                    _ => char::from(b' ' + next(95) as u8),
                })
                .collect();
            for newlines in [false, true] {
                let measure = measure_text(&text, newlines);
                assert_eq!(measure.chars, text.chars().count(), "{text:?}");
                assert_eq!(
                    measure.forbidden,
                    first_forbidden(&text, newlines),
                    "{text:?}"
                );
            }
        }
    }

    #[test]
    fn table_is_unicode_14() {
        assert_eq!(UNICODE_VERSION, "14.0.0");
    }

    #[test]
    fn code_points_assigned_after_14_are_unassigned() {
        // SHAKING FACE (15.0), CJK Ext H (15.0), IDEOGRAPHIC DESCRIPTION CHARACTER (15.1).
        for cp in [0x1FAE8, 0x31350, 0x2FFC] {
            let c = char::from_u32(cp).unwrap();
            assert_eq!(classify(c), CharClass::Unassigned, "U+{cp:04X}");
            assert!(!harness_allows(c, true));
        }
        assert!(harness_allows('\u{1F600}', false));
    }

    #[test]
    fn categories_of_known_points() {
        assert_eq!(classify('\u{7}'), CharClass::Control);
        assert_eq!(classify('\u{85}'), CharClass::Control);
        assert_eq!(classify('\u{ad}'), CharClass::Format);
        assert_eq!(classify('\u{200b}'), CharClass::Format);
        assert_eq!(classify('\u{e0001}'), CharClass::Format);
        assert_eq!(
            classify('\u{13439}'),
            CharClass::Unassigned,
            "Cf only from 15.0"
        );
        assert_eq!(classify('\u{e000}'), CharClass::PrivateUse);
        assert_eq!(classify('\u{10fffd}'), CharClass::PrivateUse);
        assert_eq!(classify('\u{fdd0}'), CharClass::Unassigned);
        assert_eq!(classify('\u{10ffff}'), CharClass::Unassigned);
        assert_eq!(classify('\u{378}'), CharClass::Unassigned);
        assert_eq!(classify('\u{2028}'), CharClass::LineSeparator);
        assert_eq!(classify('\u{2029}'), CharClass::ParagraphSeparator);
        assert_eq!(classify('\u{3000}'), CharClass::SpaceSeparator);
        assert_eq!(classify('é'), CharClass::Printable);
    }

    #[test]
    fn space_separators_are_the_tables() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            assert_eq!(
                is_space_separator(c),
                tables::SPACE_SEPARATORS.binary_search(&(c as u32)).is_ok(),
                "U+{:04X}",
                c as u32
            );
        }
    }

    #[test]
    fn every_space_separator_is_allowed_and_counted() {
        let zs: Vec<char> = (0..=0x10FFFF)
            .filter_map(char::from_u32)
            .filter(|&c| is_space_separator(c))
            .collect();
        assert_eq!(zs.len(), 17);
        assert!(zs.iter().all(|&c| harness_allows(c, false)));
    }

    #[test]
    fn newline_only_where_allowed() {
        assert!(harness_allows('\n', true));
        assert!(!harness_allows('\n', false));
        assert!(!harness_allows('\r', true));
        assert!(!harness_allows('\t', true));
    }

    #[test]
    fn python_whitespace_adds_information_separators() {
        for c in ['\u{1c}', '\u{1d}', '\u{1e}', '\u{1f}'] {
            assert!(is_py_whitespace(c));
            assert!(!c.is_whitespace(), "not Unicode White_Space");
        }
        // Every White_Space character is Python whitespace too.
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            if c.is_whitespace() {
                assert!(is_py_whitespace(c), "U+{:04X}", c as u32);
            }
        }
        assert!(py_is_blank(" \u{1c}\u{3000}"));
        assert!(!py_is_blank(" x "));
    }

    #[test]
    fn frozen_table_only_lags_newer_unicode() {
        // Rust's `char::is_control` follows a newer Unicode than 14.0, but Cc never changes:
        // it must agree exactly with the frozen table's control class.
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            assert_eq!(
                c.is_control(),
                classify(c) == CharClass::Control,
                "U+{:04X}",
                c as u32
            );
        }
    }
}
