//! What deepagents lines are written with: blank texts of every kind, odd characters, words,
//! lone surrogates, and values of any JSON type.

use rand::Rng;
use rand::seq::IndexedRandom;
use serde_json::{Map, Value, json};

use super::{DeepagentsGenerator, lone_surrogate};

/// Blank to Python's `str.strip` (and so to deepagents).
const BLANKS: &[&str] = &[
    "",
    " ",
    "   ",
    "\t",
    "\n",
    "\r\n",
    "\u{b}\u{c}",
    "\u{a0}",
    "\u{3000}",
    "\u{1680}",
    "\u{2028}",
    "\u{2029}",
    "\u{85}",
    "\u{1c}",
    "\u{1d}",
    "\u{1e}",
    "\u{1f}",
    " \u{1f}\u{a0}\t",
];
/// Look blank, are not: deepagents accepts them.
const NOT_BLANK: &[&str] = &[
    "\u{200b}", "\u{feff}", "\u{180e}", "\u{2060}", "\u{0}", "\u{7f}",
];
/// Odd characters: controls, bidi and zero-width formatting, private use, noncharacters,
/// quotes and backslashes, astral and combining characters.
const ODD: &[&str] = &[
    "\u{1b}[31m",
    "\u{0}",
    "\u{7}",
    "\u{8}",
    "\u{c}",
    "\r",
    "\t",
    "\u{7f}",
    "\u{85}",
    "\u{9b}",
    "\u{ad}",
    "\u{202e}",
    "\u{2066}",
    "\u{200d}",
    "\u{e000}",
    "\u{f0000}",
    "\u{fdd0}",
    "\u{fffe}",
    "\u{378}",
    "\u{e0001}",
    "'",
    "\"",
    "\\",
    "\\n",
    "it's",
    "a\"b'c",
    "\u{2028}",
    "\u{a0}",
    "\u{3000}",
    "😀",
    "e\u{301}",
    "𝔘",
    "中",
    "ß",
    "\u{1cc00}",
];
/// Plain words.
const WORDS: &[&str] = &[
    "Which",
    "color",
    "size?",
    "Red",
    "Blue",
    "ship it",
    "café",
    "東京",
    "Größe",
    "ok",
    "[\"S\"]",
    "a, b",
    "(cancelled)",
    "Q: x",
    "A: y",
    "None",
    "True",
    "-",
    "x",
];
/// Lone surrogates: high, low, and the ends of both ranges.
const SURROGATES: &[u16] = &[0xD800, 0xDB7F, 0xDC00, 0xDFFF, 0xD83D];

impl DeepagentsGenerator {
    /// Text for a question or a choice: usually plain, often odd, sometimes blank or huge.
    pub(super) fn text(&mut self) -> String {
        match self.rng.random_range(0..40) {
            0 if self.faults => self.blank(),
            1 => NOT_BLANK
                .choose(&mut self.rng)
                .copied()
                .unwrap_or("x")
                .to_owned(),
            2 => "x".repeat(
                [4000, 4001, 10_000]
                    .choose(&mut self.rng)
                    .copied()
                    .unwrap_or(1),
            ),
            3 => format!(
                "{}?",
                lone_surrogate(*SURROGATES.choose(&mut self.rng).unwrap_or(&0xD800))
            ),
            _ => self.words(),
        }
    }

    pub(super) fn blank(&mut self) -> String {
        BLANKS
            .choose(&mut self.rng)
            .copied()
            .unwrap_or("")
            .to_owned()
    }

    pub(super) fn words(&mut self) -> String {
        let mut out = String::new();
        for i in 0..self.rng.random_range(1..6) {
            if i > 0 {
                out.push(' ');
            }
            let pool = if self.rng.random_range(0..5) == 0 {
                ODD
            } else {
                WORDS
            };
            out.push_str(pool.choose(&mut self.rng).copied().unwrap_or("x"));
        }
        if self.rng.random_range(0..6) == 0 {
            let pad = self.blank();
            out = format!("{pad}{out}{pad}");
        }
        out
    }

    /// A JSON value of any type, nested up to `depth` levels (numbers Python and serde_json
    /// read alike).
    pub(super) fn any_value(&mut self, depth: u32) -> Value {
        match self.rng.random_range(0..10) {
            0 => Value::Null,
            1 => json!(self.rng.random_bool(0.5)),
            2 => [
                json!(0),
                json!(1),
                json!(-7),
                json!(9_007_199_254_740_993_i64),
                json!(i64::MIN),
                json!(u64::MAX),
            ]
            .choose(&mut self.rng)
            .cloned()
            .unwrap_or_default(),
            3 => json!(
                [
                    0.0, 1.5, -0.0, 1e16, 1e-7, 0.1, 123.456, 1e22, 5e-324, 0.0001, -2.5e-5
                ]
                .choose(&mut self.rng)
                .copied()
                .unwrap_or(0.5)
            ),
            4 if depth > 0 => Value::Array(
                (0..self.rng.random_range(0..3))
                    .map(|_| self.any_value(depth - 1))
                    .collect(),
            ),
            5 if depth > 0 => {
                let mut map = Map::new();
                for _ in 0..self.rng.random_range(0..3) {
                    let key = self.words();
                    let value = self.any_value(depth - 1);
                    map.insert(key, value);
                }
                Value::Object(map)
            }
            _ => Value::String(self.words()),
        }
    }
}
