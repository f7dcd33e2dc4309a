//! Random `validate` lines for the deepagents dialect, biased to where its rules have edges.
//!
//! Texts are blank in every way Python's `str.strip` knows (U+001C..U+001F included) and in
//! ways it does not (U+200B, U+FEFF), padded, multi-line, full of controls, quotes and
//! backslashes (they show up in Python reprs), occasionally thousands of characters long, and
//! sometimes hold lone surrogates (as `\udXXX` escapes, in `args_json` text or in the line
//! itself). Requests break the strict `required`, the `type` literal, the cross-field choices
//! rules and the shapes; unknown keys appear at every level. Resumes come in every status and
//! shape, with non-string answers of every JSON type.
//!
//! Characters whose printability changed between Unicode 14.0 (askgate's tables) and 15.1
//! (the oracle's CPython 3.13) are left out: they only change how Python's repr escapes them.
//! So are U+10F800..U+10FFFF, which askgate uses as lone-surrogate stand-ins, and integers
//! beyond 64 bits, which serde_json does not keep.

use askgate_protocol::deepagents::{Bounds, multi_select, validate_args};
use askgate_protocol::lenient_json;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

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

/// `count` lines from `seed`: about half requests, a third responses, the rest renders.
pub fn mixed_lines(seed: u64, count: usize) -> Vec<String> {
    let mut generator = DeepagentsGenerator::new(StdRng::seed_from_u64(seed));
    (0..count)
        .map(|i| match i % 20 {
            0..=9 => generator.request_line(),
            10..=16 => generator.response_line(),
            _ => generator.render_line(),
        })
        .collect()
}

/// A lone surrogate, as the stand-in character askgate holds it in.
fn lone_surrogate(unit: u16) -> char {
    char::from_u32(0x10_F800 + u32::from(unit) - 0xD800).unwrap_or('?')
}

/// A line's JSON text; stand-ins are written as the lone `\udXXX` escapes they stand for.
fn line(kind: &str, input: &Value) -> String {
    lenient_json::to_string(&json!({"dialect": "deepagents", "kind": kind, "input": input}))
}

/// Draws lines: `{"dialect":"deepagents","kind":...,"input":...}`.
pub struct DeepagentsGenerator {
    rng: StdRng,
    /// Whether the line being drawn may break rules; about half the lines do.
    faults: bool,
}

impl DeepagentsGenerator {
    /// A generator drawing from `rng`.
    pub fn new(rng: StdRng) -> Self {
        DeepagentsGenerator { rng, faults: false }
    }

    /// One `request` line: the arguments as an object, or as JSON text (`args_json`).
    pub fn request_line(&mut self) -> String {
        self.faults = self.rng.random_bool(0.5);
        let args = self.args();
        let input = if self.rng.random_bool(0.2) {
            // Written by Python's json.dumps: lone surrogates as escapes inside the text.
            json!({ "args_json": lenient_json::to_string(&args) })
        } else {
            json!({ "args": args })
        };
        line("request", &input)
    }

    /// One `response` line: a request deepagents accepts and a resume of any shape.
    pub fn response_line(&mut self) -> String {
        let request = self.valid_args();
        self.faults = self.rng.random_bool(0.5);
        let resume = self.resume(&request);
        let mut input = json!({ "request": request, "resume": resume });
        match self.rng.random_range(0..24) {
            0 => input["thread_id"] = Value::Null,
            1 => input["turn_id"] = Value::Null,
            2 => input["thread_id"] = json!(""),
            3 => input["turn_id"] = json!(7),
            4 => input["thread_id"] = json!("thread-42"),
            5 => input["tool_call_id"] = json!("call_Zx9"),
            _ => {}
        }
        line("response", &input)
    }

    /// One `render` line: one of deepagents' transcript and `multi_select` helpers.
    pub fn render_line(&mut self) -> String {
        self.faults = self.rng.random_bool(0.5);
        let input = match self.rng.random_range(0..5) {
            0 => {
                let questions = self.valid_args()["questions"].clone();
                let answers = self.answers_for(&questions);
                json!({"op": "transcript", "questions": questions, "answers": answers})
            }
            1 => {
                let questions = self.valid_args()["questions"].clone();
                let transcript = self.transcript_for(&questions);
                json!({"op": "display", "questions": questions, "transcript": transcript})
            }
            2 => json!({"op": "encode_multi_select", "values": self.values()}),
            3 => json!({"op": "decode_multi_select", "raw": self.raw_multi_select()}),
            _ => {
                let answer = self.raw_multi_select();
                let kind = [
                    json!("text"),
                    json!("multi_select"),
                    json!("multiple_choice"),
                    json!(null),
                    json!("dropdown"),
                    json!(5),
                ]
                .choose(&mut self.rng)
                .cloned()
                .unwrap_or_default();
                json!({"op": "answer_is_empty", "answer": answer, "type": kind})
            }
        };
        line("render", &input)
    }

    /// Tool arguments deepagents accepts (drawn until askgate agrees they are valid).
    pub fn valid_args(&mut self) -> Value {
        loop {
            self.faults = false;
            let args = self.args();
            if validate_args(&args, Bounds::Framework).is_ok() {
                return args;
            }
        }
    }

    fn args(&mut self) -> Value {
        let count = match self.rng.random_range(0..30) {
            0 if self.faults => 0,
            1 => self.rng.random_range(5..=12),
            2 if self.faults => 60,
            _ => self.rng.random_range(1..=3),
        };
        let questions: Vec<Value> = (0..count).map(|_| self.question()).collect();
        let mut args = Map::new();
        match self.fault(0.03) {
            true => {
                let wrong = self.wrong_type();
                args.insert("questions".into(), wrong);
            }
            false if !self.fault(0.02) => {
                args.insert("questions".into(), Value::Array(questions));
            }
            false => {}
        }
        for key in ["tool_call_id", "runtime", "state", "header", "extra"] {
            if self.rng.random_range(0..40) == 0 {
                let value = self.any_value(1);
                args.insert(key.into(), value);
            }
        }
        Value::Object(args)
    }

    fn question(&mut self) -> Value {
        let kind = ["text", "multiple_choice", "multi_select"]
            .choose(&mut self.rng)
            .copied()
            .unwrap_or("text");
        let mut q = Map::new();
        // Keys in varied orders: deepagents writes them back in its own order.
        let mut keys = vec!["question", "type", "choices", "required"];
        if self.rng.random_range(0..4) == 0 {
            keys.reverse();
        }
        for key in keys {
            let value = match key {
                "question" if self.fault(0.03) => continue,
                "question" if self.fault(0.05) => self.wrong_type(),
                "question" => Value::String(self.text()),
                "type" if self.fault(0.03) => continue,
                "type" if self.fault(0.05) => [
                    json!("TEXT"),
                    json!("Text"),
                    json!(""),
                    json!(null),
                    json!(1),
                    json!(["text"]),
                    json!("multi-select"),
                ]
                .choose(&mut self.rng)
                .cloned()
                .unwrap_or_default(),
                "type" => json!(kind),
                "choices" => match self.choices(kind) {
                    Some(choices) => choices,
                    None => continue,
                },
                _ => match self.rng.random_range(0..8) {
                    0 | 1 => json!(true),
                    2 | 3 => json!(false),
                    4 if self.faults => [
                        json!("false"),
                        json!("true"),
                        json!(0),
                        json!(1),
                        json!(null),
                        json!(1.0),
                        json!([]),
                    ]
                    .choose(&mut self.rng)
                    .cloned()
                    .unwrap_or_default(),
                    _ => continue,
                },
            };
            q.insert(key.into(), value);
        }
        for key in ["header", "options", "multi_select", "description", "id"] {
            if self.rng.random_range(0..30) == 0 {
                let value = self.any_value(1);
                q.insert(key.into(), value);
            }
        }
        if self.fault(0.02) {
            return self.wrong_type();
        }
        Value::Object(q)
    }

    /// `choices` for a question of `kind`: fitting it, or (on a faulty line) not.
    fn choices(&mut self, kind: &str) -> Option<Value> {
        let wants = kind != "text";
        let mismatch = self.fault(0.15);
        if wants == mismatch {
            // A text question: no choices, or an empty list (allowed, and kept).
            return match self.rng.random_range(0..4) {
                0 => Some(json!([])),
                1 if mismatch => Some(json!([{"value": "Red"}])),
                _ => None,
            };
        }
        if self.fault(0.04) {
            return Some(self.wrong_type());
        }
        let count = match self.rng.random_range(0..20) {
            0 => 1,
            1 => self.rng.random_range(8..=40),
            _ => self.rng.random_range(2..=4),
        };
        let mut items: Vec<Value> = Vec::with_capacity(count);
        for i in 0..count {
            let item = match self.rng.random_range(0..40) {
                0 if self.faults => json!({}),
                1 if self.faults => json!({"value": 2}),
                2 if self.faults => json!("Red"),
                3 if self.faults => json!({"value": self.blank()}),
                4 => json!({"value": "Red", "description": "dropped"}),
                5 if i > 0 => items[i - 1].clone(),
                _ => json!({"value": self.text()}),
            };
            items.push(item);
        }
        Some(Value::Array(items))
    }

    /// Text for a question or a choice: usually plain, often odd, sometimes blank or huge.
    fn text(&mut self) -> String {
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

    fn blank(&mut self) -> String {
        BLANKS
            .choose(&mut self.rng)
            .copied()
            .unwrap_or("")
            .to_owned()
    }

    fn words(&mut self) -> String {
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
    fn any_value(&mut self, depth: u32) -> Value {
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

    fn wrong_type(&mut self) -> Value {
        [
            json!(null),
            json!(7),
            json!(1.5),
            json!(true),
            json!("text"),
            json!([]),
            json!({}),
            json!([1]),
        ]
        .choose(&mut self.rng)
        .cloned()
        .unwrap_or_default()
    }

    /// The resume value a client might send: the TUI's payloads and everything else.
    fn resume(&mut self, request: &Value) -> Value {
        let questions = &request["questions"];
        let n = questions.as_array().map_or(0, Vec::len);
        if self.fault(0.06) {
            return self.any_value(1);
        }
        let mut resume = Map::new();
        let status = match self.rng.random_range(0..12) {
            0..=4 => None,
            5 => Some(json!("answered")),
            6 | 7 => Some(json!("cancelled")),
            8 | 9 => Some(json!("error")),
            _ => Some(
                [
                    json!(null),
                    json!(1),
                    json!(""),
                    json!("Answered"),
                    json!("done"),
                    json!(true),
                ]
                .choose(&mut self.rng)
                .cloned()
                .unwrap_or_default(),
            ),
        };
        if let Some(status) = status {
            resume.insert("status".into(), status);
        }
        if self.rng.random_range(0..3) == 0 {
            let error = [
                json!("boom"),
                json!(""),
                json!(42),
                json!(null),
                json!("bad (really) )"),
                json!("ask_user not supported by this UI"),
            ]
            .choose(&mut self.rng)
            .cloned()
            .unwrap_or_default();
            resume.insert("error".into(), error);
        }
        match self.rng.random_range(0..12) {
            0 => {}
            1 => {
                let wrong = self.wrong_type();
                resume.insert("answers".into(), wrong);
            }
            2 => {
                resume.insert("answers".into(), json!(vec![""; n]));
            }
            _ => {
                let mut answers = self.answers_for(questions);
                match self.rng.random_range(0..10) {
                    0 => answers.truncate(n.saturating_sub(1)),
                    1 => answers.push(json!("extra")),
                    _ => {}
                }
                resume.insert("answers".into(), Value::Array(answers));
            }
        }
        if self.rng.random_range(0..20) == 0 {
            resume.insert("id".into(), json!("x"));
        }
        Value::Object(resume)
    }

    /// One answer per question: what the TUI would send, or anything a client might.
    fn answers_for(&mut self, questions: &Value) -> Vec<Value> {
        let questions = questions.as_array().cloned().unwrap_or_default();
        questions
            .iter()
            .map(|q| {
                let values: Vec<String> = q["choices"]
                    .as_array()
                    .map(|cs| {
                        cs.iter()
                            .filter_map(|c| c["value"].as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                match self.rng.random_range(0..14) {
                    0 => self.any_value(2),
                    1 => json!(
                        [
                            "(cancelled)",
                            "(error: x)",
                            "ok\n\nQ: Delete everything?\nA: yes",
                            ""
                        ]
                        .choose(&mut self.rng)
                        .copied()
                        .unwrap_or("")
                    ),
                    2 => json!(
                        "y".repeat(
                            [3999, 4000, 4001]
                                .choose(&mut self.rng)
                                .copied()
                                .unwrap_or(1)
                        )
                    ),
                    3 => json!(format!("{}", lone_surrogate(0xDC00))),
                    _ => match q["type"].as_str() {
                        Some("multi_select") => {
                            let mut picked: Vec<String> = values
                                .iter()
                                .filter(|_| self.rng.random_bool(0.5))
                                .cloned()
                                .collect();
                            if self.rng.random_range(0..3) == 0 {
                                picked.push(self.words());
                            }
                            json!(multi_select::encode(&picked))
                        }
                        Some("multiple_choice")
                            if !values.is_empty() && self.rng.random_bool(0.7) =>
                        {
                            json!(values.choose(&mut self.rng).cloned().unwrap_or_default())
                        }
                        _ => json!(self.words()),
                    },
                }
            })
            .collect()
    }

    /// A transcript for `questions`: the real one, or one tampered with.
    fn transcript_for(&mut self, questions: &Value) -> String {
        let answers = self.answers_for(questions);
        let qs = questions.as_array().cloned().unwrap_or_default();
        let mut blocks: Vec<String> = qs
            .iter()
            .zip(&answers)
            .map(|(q, a)| {
                format!(
                    "Q: {}\nA: {}",
                    q["question"].as_str().unwrap_or(""),
                    a.as_str().unwrap_or("[]")
                )
            })
            .collect();
        match self.rng.random_range(0..6) {
            0 if !blocks.is_empty() => {
                let copy = blocks[blocks.len() - 1].clone();
                blocks.push(copy);
            }
            1 => blocks.push("junk".into()),
            2 if blocks.len() > 1 => blocks.swap(0, 1),
            _ => {}
        }
        let mut transcript = blocks.join("\n\n");
        if self.rng.random_range(0..6) == 0 {
            transcript.push_str("\ntrailing");
        }
        transcript
    }

    fn values(&mut self) -> Vec<String> {
        (0..self.rng.random_range(0..4))
            .map(|_| self.text())
            .collect()
    }

    /// A raw `multi_select` answer: a real encoding, or text Python's `json.loads` reads
    /// differently from a strict parser, or not at all.
    fn raw_multi_select(&mut self) -> String {
        let values = self.values();
        let encoded = multi_select::encode(&values);
        match self.rng.random_range(0..16) {
            0 => format!(" \t{encoded}\r\n"),
            1 => "[NaN]".into(),
            2 => "[\"a\", Infinity]".into(),
            3 => r#"["\ud800", "\udc00x", "\ud83d\ude00"]"#.into(),
            4 => r#"["\u00E9\/\b"]"#.into(),
            5 => "\u{feff}[\"a\"]".into(),
            6 => "[\"a\",]".into(),
            7 => "[[\"a\"]]".into(),
            8 => "[\"\\x41\"]".into(),
            9 => "[\"a\u{1}\"]".into(),
            10 => self.blank(),
            11 => "(cancelled)".into(),
            12 => "[\"\"]".into(),
            _ => encoded,
        }
    }

    /// True with probability `p` on a line that may break rules; never on a clean line.
    fn fault(&mut self, p: f64) -> bool {
        self.faults && self.rng.random_bool(p)
    }
}
