//! Responses to requests the harness accepts: answers in any order, some dropped or repeated,
//! labels real, look-alike or unknown, custom texts, blanks.

use rand::Rng;
use rand::seq::IndexedRandom;
use serde_json::{Map, Value, json};

use super::HarnessGenerator;

impl HarnessGenerator {
    pub(super) fn response(&mut self, request: &Value) -> Value {
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
}

/// A field's stripped string value (what the harness stores), or `""`.
fn stripped(value: &Value) -> String {
    value
        .as_str()
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}
