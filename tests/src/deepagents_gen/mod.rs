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
//!
//! - [`text`]: the texts, blanks and odd characters lines are drawn from, and values of any
//!   JSON type.
//! - [`answers`]: resumes of every status and shape, transcripts and multi-select values.

mod answers;
mod text;

use askgate_protocol::deepagents::{Bounds, validate_args};
use askgate_protocol::json::lenient;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

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
    lenient::to_string(&json!({"dialect": "deepagents", "kind": kind, "input": input}))
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
            json!({ "args_json": lenient::to_string(&args) })
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

    /// True with probability `p` on a line that may break rules; never on a clean line.
    fn fault(&mut self, p: f64) -> bool {
        self.faults && self.rng.random_bool(p)
    }
}
