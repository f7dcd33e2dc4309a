//! The fast path's readers: tool arguments, each question and option read on the [`Scanner`],
//! every string checked against its rule as it is read, broken rules noted in [`Refusals`].

use std::borrow::Cow;

use super::{Judged, OptionRef, QuestionRef};
use crate::harness::limits::{MAX_OPTIONS, MAX_QUESTIONS, MIN_OPTIONS, MIN_QUESTIONS};
use crate::harness::refusals::{OptionText, QuestionText, Refusals};
use crate::harness::rules::{TextProblem, TextRule, any_folded_duplicate, check_text};
use crate::harness::rules::{lax_bool_number, lax_bool_word};
use crate::harness::validate::TopLevelExtras;
use crate::json_node::Node;
use crate::json_scan::Scanner;

pub(super) fn read_args<'a>(
    scanner: &mut Scanner<'a>,
    extras: TopLevelExtras,
) -> Option<Judged<'a>> {
    let mut refusals = Refusals::default();
    let mut questions = None;
    scanner.object(|scanner, key| match key {
        "questions" if questions.is_none() => {
            questions = Some(read_questions(scanner, &mut refusals)?);
            Some(())
        }
        // Read, not skipped: a deferred call's extra keys are parsed into a `Value` by the
        // full path, which refuses a number it cannot hold; the tree does too.
        _ if extras == TopLevelExtras::Ignore && key != "questions" => {
            Node::read_at(scanner).map(drop)
        }
        _ => None,
    })?;
    let questions = questions?;
    let mut headers = [""; MAX_QUESTIONS];
    for (slot, question) in headers.iter_mut().zip(&questions) {
        *slot = &question.header;
    }
    let headers = &headers[..questions.len()];
    if refusals.is_empty() && !any_folded_duplicate(headers) {
        return Some(Ok(questions));
    }
    refusals.duplicate_headers(&kept_texts(headers));
    // No error after all (the two duplicate checks disagreeing): the full validator decides.
    Some(Err(refusals.into_errors()?))
}

/// The texts that kept their rule, by index: a broken one was left empty, which a header or
/// label that keeps its rule never is.
fn kept_texts<'t>(texts: &[&'t str]) -> Vec<(usize, &'t str)> {
    let kept = texts.iter().copied().enumerate();
    kept.filter(|(_, text)| !text.is_empty()).collect()
}

fn read_questions<'a>(
    scanner: &mut Scanner<'a>,
    refusals: &mut Refusals,
) -> Option<Vec<QuestionRef<'a>>> {
    let mut questions = Vec::with_capacity(MAX_QUESTIONS);
    scanner.array(|scanner| {
        if questions.len() == MAX_QUESTIONS {
            return None;
        }
        let index = questions.len();
        questions.push(read_question(scanner, index, refusals)?);
        Some(())
    })?;
    if questions.len() < MIN_QUESTIONS {
        refusals.no_questions();
    }
    Some(questions)
}

fn read_question<'a>(
    scanner: &mut Scanner<'a>,
    index: usize,
    refusals: &mut Refusals,
) -> Option<QuestionRef<'a>> {
    let (mut header, mut question, mut options, mut multi_select) = (None, None, None, None);
    scanner.object(|scanner, key| {
        match key {
            "header" if header.is_none() => {
                header = Some(kept(scanner.string()?, TextRule::HEADER, |problem| {
                    refusals.question_text(index, QuestionText::Header, problem);
                }));
            }
            "question" if question.is_none() => {
                question = Some(kept(scanner.string()?, TextRule::QUESTION, |problem| {
                    refusals.question_text(index, QuestionText::Question, problem);
                }));
            }
            "options" if options.is_none() => {
                options = Some(read_options(scanner, index, refusals)?);
            }
            "multi_select" if multi_select.is_none() => multi_select = Some(lax_bool(scanner)?),
            _ => return None,
        }
        Some(())
    })?;
    Some(QuestionRef {
        header: header?,
        question: question?,
        options: options?,
        multi_select: multi_select.unwrap_or(false),
    })
}

fn read_options<'a>(
    scanner: &mut Scanner<'a>,
    question: usize,
    refusals: &mut Refusals,
) -> Option<Vec<OptionRef<'a>>> {
    let mut options = Vec::with_capacity(MAX_OPTIONS);
    scanner.array(|scanner| {
        if options.len() == MAX_OPTIONS {
            return None;
        }
        let index = options.len();
        options.push(read_option(scanner, question, index, refusals)?);
        Some(())
    })?;
    if options.len() < MIN_OPTIONS {
        refusals.options_count(question, options.len());
    }
    let mut labels = [""; MAX_OPTIONS];
    for (slot, option) in labels.iter_mut().zip(&options) {
        *slot = &option.label;
    }
    let labels = &labels[..options.len()];
    if labels.contains(&"") || any_folded_duplicate(labels) {
        refusals.duplicate_labels(question, &kept_texts(labels));
    }
    Some(options)
}

fn read_option<'a>(
    scanner: &mut Scanner<'a>,
    question: usize,
    index: usize,
    refusals: &mut Refusals,
) -> Option<OptionRef<'a>> {
    let (mut label, mut description) = (None, None);
    scanner.object(|scanner, key| {
        match key {
            "label" if label.is_none() => {
                label = Some(kept(scanner.string()?, TextRule::LABEL, |problem| {
                    refusals.option_text(question, index, OptionText::Label, problem);
                }));
            }
            "description" if description.is_none() => {
                description = Some(if scanner.null() {
                    None
                } else {
                    Some(kept(scanner.string()?, TextRule::DESCRIPTION, |problem| {
                        refusals.option_text(question, index, OptionText::Description, problem);
                    }))
                });
            }
            _ => return None,
        }
        Some(())
    })?;
    Some(OptionRef {
        label: label?,
        description: description.flatten(),
    })
}

/// pydantic's lax boolean (`true`, `"yes"`, `1.0`...), read from the text.
fn lax_bool(scanner: &mut Scanner<'_>) -> Option<bool> {
    match scanner.peek()? {
        b'"' => lax_bool_word(&scanner.string()?),
        b'-' | b'0'..=b'9' => {
            // Read as serde_json reads a number, so one it cannot hold gives up here too.
            let number: serde_json::Number = serde_json::from_str(scanner.value_span()?).ok()?;
            lax_bool_number(number.as_f64()?)
        }
        _ => scanner.boolean(),
    }
}

/// The stripped text if it passes `rule`, still borrowed when it was; else `refuse` hears why
/// and the text is left empty.
fn kept<'a>(raw: Cow<'a, str>, rule: TextRule, refuse: impl FnOnce(TextProblem)) -> Cow<'a, str> {
    let stripped = match raw {
        Cow::Borrowed(text) => check_text(text, rule).map(Cow::Borrowed),
        Cow::Owned(text) => check_text(&text, rule).map(|text| Cow::Owned(text.to_owned())),
    };
    stripped.unwrap_or_else(|problem| {
        refuse(problem);
        Cow::Borrowed("")
    })
}
