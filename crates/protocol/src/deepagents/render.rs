//! deepagents' rendering helpers applied to raw JSON, as a Python caller would call them:
//! the `render` operations of `askgate validate` (`transcript`, `display`,
//! `encode_multi_select`, `decode_multi_select`, `answer_is_empty`).
//!
//! The functions take what Python would take: questions as plain dicts (`question.get(...)`,
//! so a missing text is `''` and a non-string one is `str()`-ed by the f-string), answers as
//! a list whose items are `str()`-ed.

use serde_json::{Value, json};

use super::multi_select::{answer_is_empty, decode, encode, py_json_dumps};
use super::pyrepr::py_str;
use super::transcript::{TranscriptQuestion, format_transcript, render_for_display};

/// A render request, read from `{"op": ..., ...}`.
#[derive(Clone, Debug, PartialEq)]
pub enum RenderOp {
    /// `format_ask_user_transcript` then `render_ask_user_transcript_for_display`.
    Transcript {
        /// Question dicts.
        questions: Vec<Value>,
        /// Answers, one per question.
        answers: Vec<Value>,
    },
    /// `render_ask_user_transcript_for_display`.
    Display {
        /// Question dicts.
        questions: Vec<Value>,
        /// The transcript to re-render.
        transcript: String,
    },
    /// `encode_multi_select_answer`.
    Encode(Vec<Value>),
    /// `decode_multi_select_answer`.
    Decode(String),
    /// `ask_user_answer_is_empty`.
    IsEmpty {
        /// The answer.
        answer: String,
        /// The question's `type`, whatever it is.
        question_type: Value,
    },
}

impl RenderOp {
    /// Reads a render input; `op` defaults to `transcript`.
    ///
    /// # Errors
    /// An unknown op or a field of the wrong shape, in words.
    pub fn parse(input: &Value) -> Result<Self, String> {
        let field = |key: &str| input.get(key).unwrap_or(&Value::Null);
        let list = |key: &str| match field(key) {
            Value::Array(items) => Ok(items.clone()),
            other => Err(format!("`{key}` must be a list, got {other}")),
        };
        let text = |key: &str| match field(key) {
            Value::String(s) => Ok(s.clone()),
            other => Err(format!("`{key}` must be a string, got {other}")),
        };
        match input
            .get("op")
            .and_then(Value::as_str)
            .unwrap_or("transcript")
        {
            "transcript" => Ok(RenderOp::Transcript {
                questions: list("questions")?,
                answers: list("answers")?,
            }),
            "display" => Ok(RenderOp::Display {
                questions: list("questions")?,
                transcript: text("transcript")?,
            }),
            "encode_multi_select" => Ok(RenderOp::Encode(list("values")?)),
            "decode_multi_select" => Ok(RenderOp::Decode(text("raw")?)),
            "answer_is_empty" => Ok(RenderOp::IsEmpty {
                answer: text("answer")?,
                question_type: field("type").clone(),
            }),
            other => Err(format!(
                "unknown render op {}; expected transcript, display, encode_multi_select, decode_multi_select or answer_is_empty",
                json!(other)
            )),
        }
    }

    /// What deepagents returns.
    pub fn run(&self) -> Value {
        match self {
            RenderOp::Transcript { questions, answers } => {
                let (texts, multi) = question_parts(questions);
                let questions = borrowed(&texts, &multi);
                let answers: Vec<String> = answers.iter().map(py_str).collect();
                let transcript = format_transcript(&questions, &answers);
                let display = render_for_display(&questions, &transcript);
                json!({ "transcript": transcript, "display": display })
            }
            RenderOp::Display {
                questions,
                transcript,
            } => {
                let (texts, multi) = question_parts(questions);
                json!(render_for_display(&borrowed(&texts, &multi), transcript))
            }
            RenderOp::Encode(values) => match strings(values) {
                Some(values) => json!(encode(&values)),
                None => json!(py_json_dumps(&Value::Array(values.clone()))),
            },
            RenderOp::Decode(raw) => json!(decode(raw)),
            RenderOp::IsEmpty {
                answer,
                question_type,
            } => json!(answer_is_empty(answer, question_type.as_str())),
        }
    }
}

fn strings(values: &[Value]) -> Option<Vec<&str>> {
    values.iter().map(Value::as_str).collect()
}

/// Each question's text (`str()` of `question.get('question', '')`) and whether it is a
/// `multi_select`.
fn question_parts(questions: &[Value]) -> (Vec<String>, Vec<bool>) {
    questions
        .iter()
        .map(|q| {
            let text = q.get("question").map_or_else(String::new, py_str);
            (
                text,
                q.get("type").and_then(Value::as_str) == Some("multi_select"),
            )
        })
        .unzip()
}

fn borrowed<'a>(texts: &'a [String], multi: &[bool]) -> Vec<TranscriptQuestion<'a>> {
    texts
        .iter()
        .zip(multi)
        .map(|(text, &multi_select)| TranscriptQuestion { text, multi_select })
        .collect()
}
