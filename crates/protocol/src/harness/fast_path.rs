//! Well-formed tool arguments, read straight from JSON text into borrowed fields.
//!
//! Most calls a model makes are valid. Reading them into `serde_json::Value` costs a map per
//! object and a string per field; reading into these borrowed structs costs almost nothing.
//! Anything this path does not take as is (a lax boolean such as `"yes"`, a duplicate key, an
//! unknown field, a rule broken) returns `None`, and the caller judges the input with the full
//! validator, which also finds every error. Both apply the same [`rules`](super::rules).

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::limits::{MAX_OPTIONS, MAX_QUESTIONS, MIN_OPTIONS, MIN_QUESTIONS};
use super::rules::{TextRule, check_text, folded_duplicates};
use super::types::{HarnessQuestions, Question, QuestionOption};
use super::validate::TopLevelExtras;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StrictArgs<'a> {
    #[serde(borrow)]
    questions: Vec<RawQuestion<'a>>,
}

#[derive(Deserialize)]
struct LooseArgs<'a> {
    #[serde(borrow)]
    questions: Vec<RawQuestion<'a>>,
    #[serde(flatten)]
    _others: std::collections::BTreeMap<Cow<'a, str>, IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuestion<'a> {
    #[serde(borrow)]
    header: Cow<'a, str>,
    #[serde(borrow)]
    question: Cow<'a, str>,
    #[serde(borrow)]
    options: Vec<RawOption<'a>>,
    #[serde(default)]
    multi_select: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOption<'a> {
    #[serde(borrow)]
    label: Cow<'a, str>,
    #[serde(borrow, default)]
    description: Option<Cow<'a, str>>,
}

/// The validated questions, or `None` when the full validator must decide.
pub(super) fn validate(text: &str, extras: TopLevelExtras) -> Option<HarnessQuestions> {
    let raw = match extras {
        TopLevelExtras::Forbid => serde_json::from_str::<StrictArgs<'_>>(text).ok()?.questions,
        TopLevelExtras::Ignore => serde_json::from_str::<LooseArgs<'_>>(text).ok()?.questions,
    };
    if !(MIN_QUESTIONS..=MAX_QUESTIONS).contains(&raw.len()) {
        return None;
    }
    let mut questions = Vec::with_capacity(raw.len());
    let mut headers = Vec::with_capacity(raw.len());
    for (i, q) in raw.iter().enumerate() {
        let header = check_text(&q.header, TextRule::HEADER).ok()?;
        let question = check_text(&q.question, TextRule::QUESTION).ok()?;
        if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&q.options.len()) {
            return None;
        }
        let mut options = Vec::with_capacity(q.options.len());
        let mut labels = Vec::with_capacity(q.options.len());
        for (j, o) in q.options.iter().enumerate() {
            let label = check_text(&o.label, TextRule::LABEL).ok()?;
            let description = match &o.description {
                Some(d) => Some(check_text(d, TextRule::DESCRIPTION).ok()?.to_owned()),
                None => None,
            };
            labels.push((j, label));
            options.push(QuestionOption {
                label: label.to_owned(),
                description,
            });
        }
        if !folded_duplicates(&labels).is_empty() {
            return None;
        }
        headers.push((i, header));
        questions.push(Question {
            header: header.to_owned(),
            question: question.to_owned(),
            options,
            multi_select: q.multi_select,
        });
    }
    if !folded_duplicates(&headers).is_empty() {
        return None;
    }
    Some(HarnessQuestions::new_unchecked(questions))
}
