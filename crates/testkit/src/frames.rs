//! The `ask` and `answer` frames most tests send (questions in the harness dialect whose
//! options are Red, Blue and Green), and the error paths of what comes back.

use serde_json::{Value, json};

/// A question set in the harness dialect: one question per header, options Red/Blue/Green.
pub fn questions(headers: &[&str]) -> Value {
    let questions: Vec<Value> = headers
        .iter()
        .map(|h| json!({"header": h, "question": format!("Which {h}?"), "options": [{"label": "Red"}, {"label": "Blue"}, {"label": "Green", "description": "A calm colour"}]}))
        .collect();
    Value::Array(questions)
}

/// An agent's `ask` frame: [`questions`] for `headers`, as request `id` in `session`.
pub fn ask(session: &str, id: &str, headers: &[&str], timeout_s: Option<f64>) -> Value {
    let mut frame =
        json!({"type": "ask", "session": session, "id": id, "questions": questions(headers)});
    if let Some(t) = timeout_s {
        frame["timeout_s"] = json!(t);
    }
    frame
}

/// A tab's `answer` frame picking `label` for every header.
pub fn answer(id: &str, headers: &[&str], label: &str) -> Value {
    let answers: Vec<Value> = headers
        .iter()
        .map(|h| json!({"header": h, "selected": [label]}))
        .collect();
    json!({"type": "answer", "id": id, "response": {"answers": answers}})
}

/// The `path` of each error a reply lists (`rejected`, `answer_rejected`, a `validate` line),
/// in order.
pub fn error_paths(reply: &Value) -> Vec<&str> {
    reply["errors"]
        .as_array()
        .expect("a list of errors")
        .iter()
        .map(|e| e["path"].as_str().expect("a path"))
        .collect()
}
