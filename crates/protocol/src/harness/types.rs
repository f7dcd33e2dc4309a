//! The harness's question and answer types, with serde in and out.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize};

use crate::json::scan::Scanner;

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

    /// The question with this exact header.
    pub fn by_header(&self, header: &str) -> Option<&Question> {
        self.0.iter().find(|q| q.header == header)
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

/// A response read from JSON text with its strings borrowed where they were written without
/// escapes: it accepts exactly what [`AskUserResponse`] accepts, for checking an answer
/// without copying it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseRef<'a> {
    #[serde(borrow, default)]
    pub(crate) answers: Vec<AnswerRef<'a>>,
    #[serde(default)]
    pub(crate) cancelled: bool,
}

impl<'a> ResponseRef<'a> {
    /// Reads a response where `scanner` stands, as serde reads it into this type, with its
    /// strings borrowed. `None` wherever serde could see it otherwise (a list for the object, a
    /// repeated or unknown key, a value of another type), the scanner then left anywhere: the
    /// caller then asks serde, which also words the error.
    pub fn read_at(scanner: &mut Scanner<'a>) -> Option<Self> {
        let (mut answers, mut cancelled) = (None, None);
        scanner.object(|scanner, key| {
            match key {
                "answers" if answers.is_none() => answers = Some(list_of(scanner, read_answer)?),
                "cancelled" if cancelled.is_none() => cancelled = Some(scanner.boolean()?),
                _ => return None,
            }
            Some(())
        })?;
        Some(ResponseRef {
            answers: answers.unwrap_or_default(),
            cancelled: cancelled.unwrap_or(false),
        })
    }
}

fn read_answer<'a>(scanner: &mut Scanner<'a>) -> Option<AnswerRef<'a>> {
    let (mut header, mut selected, mut custom_answer) = (None, None, None);
    let text = |scanner: &mut Scanner<'a>| scanner.string().map(Text);
    scanner.object(|scanner, key| {
        match key {
            "header" if header.is_none() => header = Some(text(scanner)?),
            "selected" if selected.is_none() => selected = Some(list_of(scanner, text)?),
            "custom_answer" if custom_answer.is_none() => {
                custom_answer = Some(if scanner.null() {
                    None
                } else {
                    Some(text(scanner)?)
                });
            }
            _ => return None,
        }
        Some(())
    })?;
    Some(AnswerRef {
        header: header?,
        selected: selected.unwrap_or_default(),
        custom_answer: custom_answer.flatten(),
    })
}

fn list_of<'a, T>(
    scanner: &mut Scanner<'a>,
    mut read: impl FnMut(&mut Scanner<'a>) -> Option<T>,
) -> Option<Vec<T>> {
    let mut items = Vec::new();
    scanner.array(|scanner| {
        items.push(read(scanner)?);
        Some(())
    })?;
    Some(items)
}

/// One answer of a [`ResponseRef`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnswerRef<'a> {
    #[serde(borrow)]
    pub(crate) header: Text<'a>,
    #[serde(borrow, default)]
    pub(crate) selected: Vec<Text<'a>>,
    #[serde(borrow, default)]
    pub(crate) custom_answer: Option<Text<'a>>,
}

/// A JSON string, borrowed unless it had escapes (serde borrows a bare `Cow` field, not one
/// inside a list).
#[derive(Debug)]
pub(crate) struct Text<'a>(pub(crate) Cow<'a, str>);

impl AsRef<str> for Text<'_> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                text: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(text)))
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(TextVisitor(std::marker::PhantomData))
    }
}
