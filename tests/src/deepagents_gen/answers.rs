//! Resumes of every status and shape, with non-string answers of every JSON type, the Q:/A:
//! transcripts they render to, and multi-select values in and out of their encoding.

use askgate_protocol::deepagents::multi_select;
use rand::Rng;
use rand::seq::IndexedRandom;
use serde_json::{Map, Value, json};

use super::{DeepagentsGenerator, lone_surrogate};

impl DeepagentsGenerator {
    /// The resume value a client might send: the TUI's payloads and everything else.
    pub(super) fn resume(&mut self, request: &Value) -> Value {
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
    pub(super) fn answers_for(&mut self, questions: &Value) -> Vec<Value> {
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
    pub(super) fn transcript_for(&mut self, questions: &Value) -> String {
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

    pub(super) fn values(&mut self) -> Vec<String> {
        (0..self.rng.random_range(0..4))
            .map(|_| self.text())
            .collect()
    }

    /// A raw `multi_select` answer: a real encoding, or text Python's `json.loads` reads
    /// differently from a strict parser, or not at all.
    pub(super) fn raw_multi_select(&mut self) -> String {
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
}
