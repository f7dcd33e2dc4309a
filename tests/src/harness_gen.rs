//! Random `validate` lines for the harness dialect, biased to where the rules have edges.
//!
//! Every string field is drawn near its length limits, padded with each kind of whitespace
//! (the Unicode White_Space set pydantic strips, and the look-alikes it does not), and seeded
//! with characters of every general-category class the printable rule distinguishes.
//! Headers and labels come in look-alike pairs so the uniqueness fold is exercised; answers
//! pick real, look-alike and unknown labels, custom texts, blanks and repeats.

use askgate_protocol::harness::{TopLevelExtras, validate_args};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

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

    /// `count` texts meant to be distinct, sometimes with a look-alike of an earlier one.
    fn distinct_texts(&mut self, count: usize, max: usize) -> Vec<Value> {
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
    fn text(&mut self, max: usize, multi_line: bool) -> Value {
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
    fn odd_char(&mut self, multi_line: bool, faulty: bool) -> char {
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

    fn pad(&mut self, text: &str) -> String {
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

    fn response(&mut self, request: &Value) -> Value {
        let questions: Vec<&Value> = request["questions"]
            .as_array()
            .map(|qs| qs.iter().collect())
            .unwrap_or_default();
        let cancelled = self.rng.random_range(0..8) == 0;
        let mut answers: Vec<Value> = Vec::new();
        if !cancelled || self.fault(0.3) {
            let mut order: Vec<&Value> = questions.clone();
            // Answers in a shuffled order, some dropped, some repeated.
            for i in (1..order.len()).rev() {
                let j = self.rng.random_range(0..=i);
                order.swap(i, j);
            }
            for q in order {
                if self.fault(0.04) {
                    continue;
                }
                answers.push(self.answer(q));
                if self.fault(0.03) {
                    answers.push(self.answer(q));
                }
            }
            if self.fault(0.03) {
                answers.push(json!({"header": "Nope", "selected": ["x"]}));
            }
        }
        let mut response = Map::new();
        if !answers.is_empty() || self.rng.random_bool(0.5) {
            response.insert("answers".into(), Value::Array(answers));
        }
        if cancelled || self.rng.random_bool(0.2) {
            response.insert("cancelled".into(), Value::Bool(cancelled));
        }
        Value::Object(response)
    }

    fn answer(&mut self, question: &Value) -> Value {
        let stored_header = stripped(&question["header"]);
        let header = match self.rng.random_range(0..30) {
            0 if self.faults => format!(" {stored_header}"),
            1 if self.faults => stored_header.to_uppercase(),
            _ => stored_header,
        };
        let multi_select = question["multi_select"].as_bool() == Some(true)
            || matches!(
                question["multi_select"]
                    .as_str()
                    .map(str::to_ascii_lowercase)
                    .as_deref(),
                Some("yes" | "on" | "t" | "1" | "y" | "true")
            )
            || question["multi_select"].as_f64() == Some(1.0);
        let labels: Vec<String> = question["options"]
            .as_array()
            .map(|os| os.iter().map(|o| stripped(&o["label"])).collect())
            .unwrap_or_default();
        let mut answer = Map::new();
        answer.insert("header".into(), Value::String(header));
        match self.rng.random_range(0..10) {
            0..=5 => {
                let n = match self.rng.random_range(0..8) {
                    0 if self.fault(0.3) => 0,
                    1 | 2 if multi_select || self.fault(0.3) => 2.min(labels.len()),
                    3 if multi_select => labels.len(),
                    _ => 1,
                };
                let mut picks: Vec<Value> = Vec::new();
                let mut order = labels.clone();
                for i in (1..order.len()).rev() {
                    let j = self.rng.random_range(0..=i);
                    order.swap(i, j);
                }
                for i in 0..n {
                    let label = if self.fault(0.1) {
                        labels.choose(&mut self.rng).cloned().unwrap_or_default()
                    } else {
                        order.get(i).cloned().unwrap_or_default()
                    };
                    let label = match self.rng.random_range(0..25) {
                        0 if self.faults => label.to_lowercase(),
                        1 if self.faults => format!("{label} "),
                        2 if self.faults => "it's \"odd\"\\".to_owned(),
                        _ => label,
                    };
                    picks.push(Value::String(label));
                }
                answer.insert("selected".into(), Value::Array(picks));
                if self.rng.random_range(0..20) == 0 {
                    answer.insert("custom_answer".into(), Value::Null);
                }
            }
            _ => {
                let custom = self.custom_text();
                answer.insert("custom_answer".into(), Value::String(custom));
                if self.fault(0.1) {
                    let label = labels.first().cloned().unwrap_or_default();
                    answer.insert("selected".into(), json!([label]));
                } else if self.rng.random_bool(0.3) {
                    answer.insert("selected".into(), json!([]));
                }
            }
        }
        Value::Object(answer)
    }

    fn custom_text(&mut self) -> String {
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

/// A field's stripped string value (what the harness stores), or `""`.
fn stripped(value: &Value) -> String {
    value
        .as_str()
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}
