//! The alphabets a line is drawn from, and the strings drawn from them: near the length limits,
//! padded, seeded with each class of character, in look-alike pairs.

use rand::Rng;
use rand::seq::IndexedRandom;
use serde_json::Value;

use super::HarnessGenerator;

/// Characters Unicode calls White_Space: pydantic strips these from both ends.
const STRIPPED: &[char] = &[
    '\t', '\n', '\u{b}', '\u{c}', '\r', ' ', '\u{85}', '\u{a0}', '\u{1680}', '\u{2000}',
    '\u{2005}', '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}',
];
/// Characters that look blank but pydantic does not strip (some Python strips, some no one).
const NOT_STRIPPED: &[char] = &[
    '\u{1c}', '\u{1d}', '\u{1e}', '\u{1f}', '\u{200b}', '\u{feff}', '\u{180e}', '\u{2060}',
];
/// Every Zs space but U+0020.
const SPACES: &[char] = &[
    '\u{a0}', '\u{1680}', '\u{2000}', '\u{2001}', '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}',
    '\u{2006}', '\u{2007}', '\u{2008}', '\u{2009}', '\u{200a}', '\u{202f}', '\u{205f}', '\u{3000}',
];
/// Controls (Cc), C0 and C1 and DEL.
const CONTROLS: &[char] = &[
    '\0', '\u{7}', '\u{8}', '\t', '\r', '\u{1b}', '\u{7f}', '\u{80}', '\u{85}', '\u{9b}', '\u{9f}',
];
/// Invisible formatting (Cf), including the bidi controls and a tag character.
const FORMATS: &[char] = &[
    '\u{ad}',
    '\u{600}',
    '\u{61c}',
    '\u{6dd}',
    '\u{890}',
    '\u{180e}',
    '\u{200b}',
    '\u{200d}',
    '\u{200e}',
    '\u{202e}',
    '\u{2066}',
    '\u{feff}',
    '\u{fff9}',
    '\u{110bd}',
    '\u{13430}',
    '\u{1d173}',
    '\u{e0001}',
    '\u{e007f}',
];
/// Private use (Co) and unassigned (Cn), including code points assigned only after 14.0.
const PRIVATE_OR_UNASSIGNED: &[char] = &[
    '\u{e000}',
    '\u{f8ff}',
    '\u{f0000}',
    '\u{10fffd}',
    '\u{378}',
    '\u{fdd0}',
    '\u{fffe}',
    '\u{ffff}',
    '\u{2fffe}',
    '\u{e0080}',
    '\u{10ffff}',
    '\u{1fae8}',
    '\u{31350}',
    '\u{2ffc}',
    '\u{13439}',
    '\u{1cc00}',
];
/// Printable text of many scripts, with combining marks and astral characters.
const PRINTABLE: &[&str] = &[
    "a",
    "Z",
    "7",
    "-",
    "'",
    "\"",
    "\\",
    "/",
    "<",
    "é",
    "e\u{301}",
    "ß",
    "Σ",
    "ς",
    "Ж",
    "ש",
    "ع",
    "中",
    "ｱ",
    "Ａ",
    "①",
    "²",
    "ﬁ",
    "K",
    "Å",
    "ǅ",
    "ı",
    "İ",
    "ΐ",
    "\u{13a0}",
    "\u{ab70}",
    "😀",
    "𝔘",
    "🇫🇷",
    "\u{1f600}",
    "\u{a9}",
    "\u{2603}",
];
/// Pairs that fold apart though they look alike: both may appear in one question set.
const DISTINCT_LOOK_ALIKES: &[(&str, &str)] = &[
    ("Color", "Colour"),
    ("a  b", "a b"),
    ("ı", "I"),
    ("ı", "i"),
    ("İ", "i"),
    ("ΐ", "\u{3aa}\u{301}"),
];
/// Pairs that fold together (or famously do not), for headers and labels.
const LOOK_ALIKES: &[(&str, &str)] = &[
    ("Color", "COLOR"),
    ("Color", "Colour"),
    ("Straße", "STRASSE"),
    ("\u{1e9e}", "ss"),
    ("ος", "ΟΣ"),
    ("ς", "σ"),
    ("\u{13a0}", "\u{ab70}"),
    ("\u{fb01}le", "file"),
    ("ＡＢ", "ab"),
    ("\u{212a}", "k"),
    ("\u{212b}", "å"),
    ("é", "e\u{301}"),
    ("ǅ", "dž"),
    ("①", "1"),
    ("x²", "x2"),
    ("a\u{a0}b", "a b"),
    ("a\u{1680}b", "a b"),
    ("a\u{3000}b", "a\u{202f}b"),
    ("a  b", "a b"),
    ("ı", "I"),
    ("İ", "i"),
    ("İ", "i\u{307}"),
    ("ΐ", "\u{3aa}\u{301}"),
    ("Yes", "yes"),
    ("Red", " Red "),
];

impl HarnessGenerator {
    /// `count` texts meant to be distinct, sometimes with a look-alike of an earlier one.
    pub(super) fn distinct_texts(&mut self, count: usize, max: usize) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::with_capacity(count);
        for i in 0..count {
            let text = if i > 0 && self.rng.random_range(0..12) == 0 {
                let pairs = if self.faults {
                    LOOK_ALIKES
                } else {
                    DISTINCT_LOOK_ALIKES
                };
                let (a, b) = *pairs.choose(&mut self.rng).unwrap_or(&("a", "A"));
                if let Some(Value::String(last)) = out.last_mut() {
                    *last = a.to_owned();
                }
                Value::String(b.to_owned())
            } else if self.rng.random_range(0..10) < 7 {
                // Plain, distinct, well inside the limits: the common case.
                Value::String(format!(
                    "{}{i}",
                    ["Color", "Size", "Plan", "Région", "東京", "Go"][i % 6]
                ))
            } else {
                self.text(max, false)
            };
            out.push(text);
        }
        out
    }

    /// A string for a field whose limit is `max` characters, or now and then not a string.
    pub(super) fn text(&mut self, max: usize, multi_line: bool) -> Value {
        if self.fault(0.01) {
            return self.wrong_type();
        }
        let length = match self.rng.random_range(0..10) {
            0 if self.fault(0.3) => 0,
            1 => 1,
            2 => max,
            3 if self.fault(0.3) => max + 1,
            4 => max.saturating_sub(1),
            _ => self.rng.random_range(1..=max.min(40)),
        };
        let mut text = String::new();
        let mut chars = 0;
        let spice = self.rng.random_range(0..4) == 0;
        let fault_chars = self.fault(0.15);
        while chars < length {
            let piece = if spice && self.rng.random_range(0..8) == 0 {
                self.odd_char(multi_line, fault_chars).to_string()
            } else {
                (*PRINTABLE.choose(&mut self.rng).unwrap_or(&"a")).to_owned()
            };
            chars += piece.chars().count();
            text.push_str(&piece);
        }
        if self.rng.random_range(0..4) == 0 {
            text = self.pad(&text);
        }
        if (multi_line || self.fault(0.05)) && self.rng.random_range(0..8) == 0 {
            let at = text
                .char_indices()
                .map(|(i, _)| i)
                .nth(chars / 2)
                .unwrap_or(0);
            text.insert(at, '\n');
        }
        Value::String(text)
    }

    /// A character from one of the classes the printable rule treats specially; only spaces
    /// (and newlines where allowed) unless `faulty`.
    pub(super) fn odd_char(&mut self, multi_line: bool, faulty: bool) -> char {
        if !faulty {
            return match self.rng.random_range(0..4) {
                0 if multi_line => '\n',
                _ => *SPACES.choose(&mut self.rng).unwrap_or(&' '),
            };
        }
        let class: &[char] = match self.rng.random_range(0..6) {
            0 => SPACES,
            1 => CONTROLS,
            2 => FORMATS,
            3 => PRIVATE_OR_UNASSIGNED,
            4 => NOT_STRIPPED,
            _ if multi_line => &['\n', '\u{2028}', '\u{2029}'],
            _ => &['\n', ' '],
        };
        *class.choose(&mut self.rng).unwrap_or(&' ')
    }

    pub(super) fn pad(&mut self, text: &str) -> String {
        let mut out = String::new();
        for _ in 0..self.rng.random_range(0..3) {
            out.push(self.pad_char());
        }
        out.push_str(text);
        for _ in 0..self.rng.random_range(0..3) {
            out.push(self.pad_char());
        }
        out
    }

    fn pad_char(&mut self) -> char {
        if self.fault(0.1) {
            *NOT_STRIPPED.choose(&mut self.rng).unwrap_or(&' ')
        } else {
            *STRIPPED.choose(&mut self.rng).unwrap_or(&' ')
        }
    }

    pub(super) fn custom_text(&mut self) -> String {
        let faulty = self.fault(0.4);
        match self.rng.random_range(0..12) {
            0 if faulty => String::new(),
            1 if faulty => " \u{a0}\u{3000}".to_owned(),
            2 if faulty => "\u{1c}\u{1f} ".to_owned(),
            3 if faulty => "\n\n".to_owned(),
            _ => {
                let mut text = String::from("x");
                for _ in 0..self.rng.random_range(1..60) {
                    if self.rng.random_range(0..15) == 0 {
                        text.push(self.odd_char(true, faulty));
                    } else {
                        text.push_str(PRINTABLE.choose(&mut self.rng).unwrap_or(&"a"));
                    }
                }
                if self.rng.random_range(0..5) == 0 {
                    text = self.pad(&text);
                }
                text
            }
        }
    }
}
