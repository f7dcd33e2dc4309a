//! deepagents' question types, as stored after validation: unknown keys dropped, text
//! verbatim (never stripped), `choices` and `required` present only when the model sent them.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The tool's name, and the `type` of its interrupt payload.
pub const TOOL_NAME: &str = "ask_user";

/// What kind of answer a question takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionType {
    /// Free text.
    Text,
    /// Exactly one choice, or an "Other" text.
    MultipleChoice,
    /// Any number of choices and "Other" texts, answered as a JSON array string.
    MultiSelect,
}

impl QuestionType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionType::Text => "text",
            QuestionType::MultipleChoice => "multiple_choice",
            QuestionType::MultiSelect => "multi_select",
        }
    }

    /// Reads the wire name: exact and case-sensitive, like deepagents' `Literal`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "text" => Some(QuestionType::Text),
            "multiple_choice" => Some(QuestionType::MultipleChoice),
            "multi_select" => Some(QuestionType::MultiSelect),
            _ => None,
        }
    }

    /// Whether the type needs a non-empty `choices` list.
    pub fn has_choices(self) -> bool {
        self != QuestionType::Text
    }
}

/// One choice (`Choice`): its value is both the label shown and the answer returned.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Choice {
    /// The label and the answer; never blank, kept verbatim.
    pub value: String,
}

/// One question (`Question`), fields in deepagents' order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Question {
    /// The question text; never blank, kept verbatim.
    pub question: String,
    /// The kind of answer.
    #[serde(rename = "type")]
    pub kind: QuestionType,
    /// The choices, when sent (a `text` question may carry `[]`, which is kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<Choice>>,
    /// Whether an answer is required, when sent; absent means required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

impl Question {
    /// Whether the user must answer (the TUI's rule: only an explicit `false` makes it
    /// optional).
    pub fn is_required(&self) -> bool {
        self.required != Some(false)
    }

    /// The choice values, in order (empty for a text question).
    pub fn choice_values(&self) -> impl Iterator<Item = &str> {
        self.choices.iter().flatten().map(|c| c.value.as_str())
    }
}

/// A question set that passed deepagents' validation: the normalised `questions` list.
///
/// Only [`validate_questions`](super::validate_questions) and
/// [`validate_args`](super::validate_args) make one (deserialising validates too, by
/// deepagents' own rules, [`Bounds::Framework`](super::limits::Bounds::Framework)), so
/// holding one proves deepagents would accept it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct DeepagentsQuestions(Vec<Question>);

impl DeepagentsQuestions {
    pub(super) fn new_unchecked(questions: Vec<Question>) -> Self {
        DeepagentsQuestions(questions)
    }

    /// The questions, in the order asked.
    pub fn questions(&self) -> &[Question] {
        &self.0
    }

    /// How many questions.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false: a validated set holds at least one question.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The normalised tool arguments `{"questions": [...]}`.
    pub fn to_args(&self) -> Value {
        json!({ "questions": self.0 })
    }

    /// The interrupt payload the tool raises and a client receives:
    /// `{"type": "ask_user", "questions": [...], "tool_call_id": ...}`.
    pub fn interrupt_payload(&self, tool_call_id: &str) -> Value {
        json!({ "type": TOOL_NAME, "questions": self.0, "tool_call_id": tool_call_id })
    }
}
