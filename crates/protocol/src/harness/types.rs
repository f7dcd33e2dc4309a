//! The harness's question and answer types, with serde in and out.

use serde::{Deserialize, Serialize};

/// One choice the user can pick (`QuestionOption`), as stored after validation: stripped,
/// with `description: null` when it was omitted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionOption {
    /// Short option name; answers pick options by this exact text.
    pub label: String,
    /// What choosing the option means; may span lines.
    #[serde(default)]
    pub description: Option<String>,
}

/// One multiple-choice question (`Question`), as stored after validation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// Short label naming the question; the answer is keyed by this exact text.
    pub header: String,
    /// The full question; may span lines.
    pub question: String,
    /// The choices offered.
    pub options: Vec<QuestionOption>,
    /// Whether several options may be picked.
    #[serde(default)]
    pub multi_select: bool,
}

/// A question set that passed the harness's validation: the normalised `questions` list.
///
/// It can only be made by [`validate_questions`](super::validate_questions) (or by
/// deserialising, which validates), so holding one proves the framework would accept it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct HarnessQuestions(Vec<Question>);

impl HarnessQuestions {
    pub(super) fn new_unchecked(questions: Vec<Question>) -> Self {
        HarnessQuestions(questions)
    }

    /// The questions, in the order asked.
    pub fn questions(&self) -> &[Question] {
        &self.0
    }

    /// The normalised tool arguments: `{"questions": [...]}` with every field present.
    pub fn to_args(&self) -> serde_json::Value {
        serde_json::json!({ "questions": self.0 })
    }
}

/// The answer to one question (`AskUserAnswer`): picked labels or a custom text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskUserAnswer {
    /// The header of the question answered, exactly as stored.
    pub header: String,
    /// The labels picked, exactly as stored, in the answerer's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selected: Vec<String>,
    /// A free-text answer instead of picks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_answer: Option<String>,
}

impl AskUserAnswer {
    /// An answer picking `labels`.
    pub fn picked<I, S>(header: impl Into<String>, labels: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        AskUserAnswer {
            header: header.into(),
            selected: labels.into_iter().map(Into::into).collect(),
            custom_answer: None,
        }
    }

    /// An answer with a custom text.
    pub fn custom(header: impl Into<String>, text: impl Into<String>) -> Self {
        AskUserAnswer {
            header: header.into(),
            selected: Vec::new(),
            custom_answer: Some(text.into()),
        }
    }
}

/// The answerer's reply (`AskUserResponse`): answers, or `cancelled` for a decline.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskUserResponse {
    /// One answer per question, in any order.
    #[serde(default)]
    pub answers: Vec<AskUserAnswer>,
    /// The user declined to answer.
    #[serde(default)]
    pub cancelled: bool,
}

impl AskUserResponse {
    /// A decline.
    pub fn declined() -> Self {
        AskUserResponse {
            answers: Vec::new(),
            cancelled: true,
        }
    }

    /// Answers.
    pub fn answered(answers: Vec<AskUserAnswer>) -> Self {
        AskUserResponse {
            answers,
            cancelled: false,
        }
    }
}
