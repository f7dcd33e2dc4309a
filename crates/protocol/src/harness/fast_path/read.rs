//! The fast path's readers: tool arguments, each question and option read on the [`Scanner`],
//! every string checked against its rule as it is read, broken rules noted in [`Refusals`].

use std::borrow::Cow;

use super::{Judged, OptionRef, QuestionRef};
use crate::error::ValidationErrors;
use crate::harness::field_errors::arguments_not_an_object;
use crate::harness::limits::{MAX_OPTIONS, MAX_QUESTIONS, MIN_OPTIONS, MIN_QUESTIONS};
use crate::harness::refusals::{Refusals, TextField};
use crate::harness::rules::{TextProblem, TextRule, any_folded_duplicate, check_text};
use crate::harness::rules::{lax_bool_number, lax_bool_word};
use crate::harness::validate::TopLevelExtras;
use crate::json::node::Node;
use crate::json::scan::Scanner;

pub(super) fn read_args<'a>(
    scanner: &mut Scanner<'a>,
    extras: TopLevelExtras,
) -> Option<Judged<'a>> {
    if scanner.peek()? != b'{' {
        let args = Node::read_at(scanner)?;
        return Some(Err(ValidationErrors::single(arguments_not_an_object(
            &args,
        ))));
    }
    let mut refusals = Refusals::default();
    let mut questions = None;
    let mut unknown_keys = Vec::new();
    scanner.object(|scanner, key| match key {
        "questions" if questions.is_none() => {
            questions = Some(read_questions(scanner, &mut refusals)?);
            Some(())
        }
        "questions" => None,
        // Read, not skipped: the full path parses every value, and refuses a number it cannot
        // hold; the tree does too.
        _ => {
            Node::read_at(scanner)?;
            if extras == TopLevelExtras::Forbid {
                unknown_key(&mut unknown_keys, key)?;
                refusals.unknown_top_level(unknown_keys.len() - 1, key);
            }
            Some(())
        }
    })?;
    let questions = questions.unwrap_or_else(|| {
        refusals.no_questions_field();
        Vec::new()
    });
    let headers_unique =
        no_folded_duplicate(questions.iter().map(|question| question.header.as_ref()));
    if headers_unique && refusals.is_empty() {
        return Some(Ok(questions));
    }
    if !headers_unique {
        let headers: Vec<&str> = questions.iter().map(|q| q.header.as_ref()).collect();
        refusals.duplicate_headers(&kept_texts(&headers));
    }
    // Not empty here (a refusal, or a duplicate found); were it empty, the full validator would
    // decide.
    Some(Err(refusals.into_errors()?))
}

/// Notes `key`, an object's unknown key; `None` when the object repeats it (the full path's
/// tree keeps one entry for it: left to the full path).
fn unknown_key<'a>(seen: &mut Vec<&'a str>, key: &'a str) -> Option<()> {
    if seen.contains(&key) {
        return None;
    }
    seen.push(key);
    Some(())
}

/// Whether no two of `texts` that kept their rule (a broken or missing one was left empty)
/// fold to the same key, settled on the stack for as many texts as a valid call can have: most
/// refused calls have no duplicates, and need not list their texts to learn it. More texts than
/// that say `false` unchecked: the caller then lists them and looks for the duplicates itself.
fn no_folded_duplicate<'t>(texts: impl ExactSizeIterator<Item = &'t str>) -> bool {
    const MOST: usize = if MAX_QUESTIONS > MAX_OPTIONS {
        MAX_QUESTIONS
    } else {
        MAX_OPTIONS
    };
    if texts.len() > MOST {
        return false;
    }
    let mut kept = [""; MOST];
    let mut count = 0;
    for text in texts.filter(|text| !text.is_empty()) {
        kept[count] = text;
        count += 1;
    }
    !any_folded_duplicate(&kept[..count])
}

/// The texts that kept their rule, by index: a broken or missing one was left empty, which a
/// header or label that keeps its rule never is.
fn kept_texts<'t>(texts: &[&'t str]) -> Vec<(usize, &'t str)> {
    let kept = texts.iter().copied().enumerate();
    kept.filter(|(_, text)| !text.is_empty()).collect()
}

fn read_questions<'a>(
    scanner: &mut Scanner<'a>,
    refusals: &mut Refusals,
) -> Option<Vec<QuestionRef<'a>>> {
    if scanner.peek()? != b'[' {
        refusals.questions_not_a_list(&Node::read_at(scanner)?);
        return Some(Vec::new());
    }
    let mut questions = Vec::with_capacity(MAX_QUESTIONS);
    scanner.array(|scanner| {
        let index = questions.len();
        questions.push(read_question(scanner, index, refusals)?);
        Some(())
    })?;
    if !(MIN_QUESTIONS..=MAX_QUESTIONS).contains(&questions.len()) {
        refusals.questions_count(questions.len());
    }
    Some(questions)
}

/// A question with nothing in it: stands for one that is not an object.
fn no_question<'a>() -> QuestionRef<'a> {
    QuestionRef {
        header: Cow::Borrowed(""),
        question: Cow::Borrowed(""),
        options: Vec::new(),
        multi_select: false,
    }
}

fn read_question<'a>(
    scanner: &mut Scanner<'a>,
    index: usize,
    refusals: &mut Refusals,
) -> Option<QuestionRef<'a>> {
    if scanner.peek()? != b'{' {
        refusals.question_not_an_object(index, &Node::read_at(scanner)?);
        return Some(no_question());
    }
    let (mut header, mut question, mut options, mut multi_select) = (None, None, None, None);
    let mut unknown_keys = Vec::new();
    scanner.object(|scanner, key| {
        match key {
            "header" if header.is_none() => {
                header = Some(text_field(scanner, TextField::Header(index), refusals)?);
            }
            "question" if question.is_none() => {
                question = Some(text_field(scanner, TextField::Question(index), refusals)?);
            }
            "options" if options.is_none() => {
                options = Some(read_options(scanner, index, refusals)?);
            }
            "multi_select" if multi_select.is_none() => {
                multi_select = Some(read_multi_select(scanner, index, refusals)?);
            }
            "header" | "question" | "options" | "multi_select" => return None,
            _ => {
                Node::read_at(scanner)?;
                unknown_key(&mut unknown_keys, key)?;
                refusals.unknown_question_key(index, unknown_keys.len() - 1, key);
            }
        }
        Some(())
    })?;
    let mut missing_text = |field| {
        refusals.text_missing(field);
        Cow::Borrowed("")
    };
    let header = header.unwrap_or_else(|| missing_text(TextField::Header(index)));
    let question = question.unwrap_or_else(|| missing_text(TextField::Question(index)));
    let options = options.unwrap_or_else(|| {
        refusals.options_missing(index);
        Vec::new()
    });
    Some(QuestionRef {
        header,
        question,
        options,
        multi_select: multi_select.unwrap_or(false),
    })
}

/// A string field: stripped if it keeps its rule, else left empty and the reason noted.
fn text_field<'a>(
    scanner: &mut Scanner<'a>,
    field: TextField,
    refusals: &mut Refusals,
) -> Option<Cow<'a, str>> {
    if scanner.peek()? != b'"' {
        refusals.text_type(field, &Node::read_at(scanner)?);
        return Some(Cow::Borrowed(""));
    }
    Some(kept(scanner.string()?, field.rule(), |problem| {
        refusals.text_problem(field, problem);
    }))
}

/// `multi_select` as pydantic's lax boolean takes it; anything else noted (and read as
/// `false`).
fn read_multi_select(
    scanner: &mut Scanner<'_>,
    index: usize,
    refusals: &mut Refusals,
) -> Option<bool> {
    let before = scanner.clone();
    if let Some(value) = lax_bool(scanner) {
        return Some(value);
    }
    *scanner = before;
    refusals.multi_select(index, &Node::read_at(scanner)?);
    Some(false)
}

fn read_options<'a>(
    scanner: &mut Scanner<'a>,
    question: usize,
    refusals: &mut Refusals,
) -> Option<Vec<OptionRef<'a>>> {
    if scanner.peek()? != b'[' {
        refusals.options_not_a_list(question, &Node::read_at(scanner)?);
        return Some(Vec::new());
    }
    let mut options = Vec::with_capacity(MAX_OPTIONS);
    scanner.array(|scanner| {
        let index = options.len();
        options.push(read_option(scanner, (question, index), refusals)?);
        Some(())
    })?;
    let count = options.len();
    if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&count) {
        refusals.options_count(question, count);
    }
    if !no_folded_duplicate(options.iter().map(|option| option.label.as_ref())) {
        let labels: Vec<&str> = options.iter().map(|o| o.label.as_ref()).collect();
        refusals.duplicate_labels(question, &kept_texts(&labels));
    }
    Some(options)
}

/// An option of question `at.0`, its index `at.1`.
fn read_option<'a>(
    scanner: &mut Scanner<'a>,
    at: (usize, usize),
    refusals: &mut Refusals,
) -> Option<OptionRef<'a>> {
    let no_option = || OptionRef {
        label: Cow::Borrowed(""),
        description: None,
    };
    if scanner.peek()? != b'{' {
        refusals.option_not_an_object(at.0, at.1, &Node::read_at(scanner)?);
        return Some(no_option());
    }
    let (mut label, mut description) = (None, None);
    let mut unknown_keys = Vec::new();
    scanner.object(|scanner, key| {
        match key {
            "label" if label.is_none() => {
                label = Some(text_field(scanner, TextField::Label(at.0, at.1), refusals)?);
            }
            "description" if description.is_none() => {
                description = Some(if scanner.null() {
                    None
                } else {
                    let field = TextField::Description(at.0, at.1);
                    Some(text_field(scanner, field, refusals)?)
                });
            }
            "label" | "description" => return None,
            _ => {
                Node::read_at(scanner)?;
                unknown_key(&mut unknown_keys, key)?;
                refusals.unknown_option_key(at, unknown_keys.len() - 1, key);
            }
        }
        Some(())
    })?;
    let label = label.unwrap_or_else(|| {
        refusals.text_missing(TextField::Label(at.0, at.1));
        Cow::Borrowed("")
    });
    Some(OptionRef {
        label,
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
        // Text that had escapes is already a string of its own: cut down in place, not copied.
        Cow::Owned(mut text) => {
            // The kept text lies within `text`: where it starts is how far apart the two are.
            let kept = check_text(&text, rule)
                .map(|kept| (kept.as_ptr() as usize - text.as_ptr() as usize, kept.len()));
            kept.map(|(start, len)| {
                text.truncate(start + len);
                text.drain(..start);
                Cow::Owned(text)
            })
        }
    };
    stripped.unwrap_or_else(|problem| {
        refuse(problem);
        Cow::Borrowed("")
    })
}
