//! Random `validate` lines for the harness dialect, biased to where the rules have edges.
//!
//! Every string field is drawn near its length limits, padded with each kind of whitespace
//! (the Unicode White_Space set pydantic strips, and the look-alikes it does not), and seeded
//! with characters of every general-category class the printable rule distinguishes.
//! Headers and labels come in look-alike pairs so the uniqueness fold is exercised; answers
//! pick real, look-alike and unknown labels, custom texts, blanks and repeats.
//!
//! - [`text`]: the alphabets and the strings drawn from them.
//! - [`answers`]: responses to requests, right and wrong.

mod answers;
mod text;

use askgate_protocol::harness::{TopLevelExtras, validate_args};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

/// `count` lines from `seed`: 55% requests, 30% responses, 15% renders. Responses answer
/// requests askgate accepts (the harness would refuse to build the others).
pub fn mixed_lines(seed: u64, count: usize) -> Vec<String> {
    let mut generator = HarnessGenerator::new(StdRng::seed_from_u64(seed));
    let mut lines = Vec::with_capacity(count);
    while lines.len() < count {
        let line = match lines.len() % 20 {
            0..=10 => generator.request_line(),
            n => {
                let request = loop {
                    let args = generator.valid_args();
                    if validate_args(&args, TopLevelExtras::Forbid).is_ok() {
                        break args;
                    }
                };
                generator.response_line(&request, if n < 17 { "response" } else { "render" })
            }
        };
        lines.push(line.to_string());
    }
    lines
}

/// Draws lines: `{"dialect":"harness","kind":...,"input":...}`.
pub struct HarnessGenerator {
    rng: StdRng,
    /// Whether the line being drawn may break rules; about half the lines do.
    faults: bool,
}

impl HarnessGenerator {
    /// A generator drawing from `rng`.
    pub fn new(rng: StdRng) -> Self {
        HarnessGenerator { rng, faults: false }
    }

    /// One `request` line.
    pub fn request_line(&mut self) -> Value {
        self.faults = self.rng.random_bool(0.5);
        let args = self.args();
        let input = if self.rng.random_bool(0.15) {
            json!({ "args_json": args.to_string() })
        } else {
            json!({ "args": args })
        };
        json!({ "dialect": "harness", "kind": "request", "input": input })
    }

    /// One `response` (or `render`) line for `request`, tool arguments the harness accepts.
    pub fn response_line(&mut self, request: &Value, kind: &str) -> Value {
        if kind == "render" && self.rng.random_bool(0.05) {
            return json!({ "dialect": "harness", "kind": "render", "input": {"timed_out": true} });
        }
        self.faults = self.rng.random_bool(0.5);
        let response = self.response(request);
        json!({
            "dialect": "harness",
            "kind": kind,
            "input": { "request": request, "response": response },
        })
    }

    /// Tool arguments meant to be valid, at the edges of every rule.
    pub fn valid_args(&mut self) -> Value {
        self.faults = false;
        self.args()
    }

    /// Tool arguments: valid at the edges, or (when `faults`) with rules broken here and there.
    fn args(&mut self) -> Value {
        let count = self.pick_count(1, 10, 12);
        let mut headers = self.distinct_texts(count, 25);
        let questions: Vec<Value> = headers
            .drain(..)
            .map(|header| self.question(header))
            .collect();
        let mut args = Map::new();
        if !self.fault(0.02) {
            let questions = if self.fault(0.02) {
                self.wrong_type()
            } else {
                Value::Array(questions)
            };
            args.insert("questions".into(), questions);
        }
        if self.fault(0.03) {
            args.insert("extra".into(), json!(1));
        }
        if self.fault(0.02) {
            return self.wrong_type();
        }
        Value::Object(args)
    }

    fn question(&mut self, header: Value) -> Value {
        let mut q = Map::new();
        if !self.rare() {
            q.insert("header".into(), header);
        }
        if !self.rare() {
            let question = self.text(500, true);
            q.insert("question".into(), question);
        }
        if !self.rare() {
            let count = self.pick_count(2, 6, 8);
            let labels = self.distinct_texts(count, 50);
            let options: Vec<Value> = labels.into_iter().map(|l| self.option(l)).collect();
            let options = if self.rare() {
                self.wrong_type()
            } else {
                Value::Array(options)
            };
            q.insert("options".into(), options);
        }
        match self.rng.random_range(0..10) {
            0..=4 => {}
            5 | 6 => {
                q.insert("multi_select".into(), Value::Bool(true));
            }
            7 => {
                q.insert("multi_select".into(), Value::Bool(false));
            }
            _ => {
                let value = self.lax_bool();
                q.insert("multi_select".into(), value);
            }
        }
        if self.fault(0.02) {
            q.insert("required".into(), json!(true));
        }
        if self.fault(0.01) {
            return self.wrong_type();
        }
        Value::Object(q)
    }

    /// A value for `multi_select` other than a JSON boolean: what pydantic's lax mode takes,
    /// and on a faulty line also what it refuses.
    fn lax_bool(&mut self) -> Value {
        const ACCEPTED: &[&str] = &[
            "\"yes\"", "\"NO\"", "\"On\"", "\"off\"", "\"t\"", "\"F\"", "\"1\"", "\"0\"", "1", "0",
            "1.0", "0.0", "\"Y\"", "-0",
        ];
        const REFUSED: &[&str] = &[
            "2",
            "-1",
            "0.5",
            "\"maybe\"",
            "\" true\"",
            "\"\"",
            "null",
            "[true]",
            "\"ｙｅｓ\"",
        ];
        let pool = if self.fault(0.5) { REFUSED } else { ACCEPTED };
        let text = pool.choose(&mut self.rng).copied().unwrap_or("true");
        serde_json::from_str(text).unwrap_or(Value::Bool(true))
    }

    fn option(&mut self, label: Value) -> Value {
        let mut o = Map::new();
        if !self.rare() {
            o.insert("label".into(), label);
        }
        match self.rng.random_range(0..6) {
            0 | 1 => {}
            2 => {
                o.insert("description".into(), Value::Null);
            }
            _ => {
                let description = self.text(200, true);
                o.insert("description".into(), description);
            }
        }
        if self.fault(0.01) {
            o.insert("value".into(), json!("x"));
        }
        if self.fault(0.01) {
            return json!("just a label");
        }
        Value::Object(o)
    }

    fn wrong_type(&mut self) -> Value {
        [
            json!(null),
            json!(7),
            json!(true),
            json!("text"),
            json!([]),
            json!({}),
        ]
        .choose(&mut self.rng)
        .cloned()
        .unwrap_or_default()
    }

    fn rare(&mut self) -> bool {
        self.fault(0.02)
    }

    /// True with probability `p` on a line that may break rules; never on a clean line.
    fn fault(&mut self, p: f64) -> bool {
        self.faults && self.rng.random_bool(p)
    }

    /// A count from `min..=max`, often at the edges, sometimes just beyond them.
    fn pick_count(&mut self, min: usize, max: usize, beyond: usize) -> usize {
        match self.rng.random_range(0..12) {
            0 if self.fault(0.5) => min.saturating_sub(1),
            1 => max,
            2 if self.fault(0.5) => self.rng.random_range(max + 1..=beyond),
            3 => min,
            _ => self.rng.random_range(min..=max.min(min + 3)),
        }
    }
}
