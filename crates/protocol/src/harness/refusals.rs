//! What is wrong with tool arguments, as the fast path comes upon it while it reads the text:
//! broken rules, missing and unknown fields, values of the wrong type. Each error is kept with
//! its place in the full validator's order of checks, so the list comes out exactly as the
//! full validator would give it, whatever order the keys were written in.

use super::field_errors::{
    duplicate_header, duplicate_label, missing, not_a_bool, options_count, text_error,
    too_few_questions, too_many_questions, unknown, wrong_type,
};
use super::rules::{TextProblem, TextRule, folded_duplicates};
use crate::error::{FieldError, Path, ValidationErrors};
use crate::json::node::Node;

/// A string field of the arguments, by the indexes of its question (and option).
#[derive(Clone, Copy)]
pub(super) enum TextField {
    Header(usize),
    Question(usize),
    Label(usize, usize),
    Description(usize, usize),
}

impl TextField {
    /// The rule its text must keep.
    pub(super) fn rule(self) -> TextRule {
        match self {
            TextField::Header(_) => TextRule::HEADER,
            TextField::Question(_) => TextRule::QUESTION,
            TextField::Label(..) => TextRule::LABEL,
            TextField::Description(..) => TextRule::DESCRIPTION,
        }
    }

    /// Where its checks stand in the full validator's order.
    fn place(self) -> Place {
        match self {
            TextField::Header(question) => (1, question, 0, 0, 0),
            TextField::Question(question) => (1, question, 1, 0, 0),
            TextField::Label(question, option) => (1, question, OPTION_ITEMS, option, 0),
            TextField::Description(question, option) => (1, question, OPTION_ITEMS, option, 1),
        }
    }

    /// An error at this field's path, as `make` words it.
    fn error(self, make: impl FnOnce(&Path<'_>) -> FieldError) -> FieldError {
        match self {
            TextField::Header(question) => at_question(question, |at| make(&at.key("header"))),
            TextField::Question(question) => at_question(question, |at| make(&at.key("question"))),
            TextField::Label(question, option) => {
                at_option(question, option, |at| make(&at.key("label")))
            }
            TextField::Description(question, option) => {
                at_option(question, option, |at| make(&at.key("description")))
            }
        }
    }
}

/// Where an error stands in the full validator's order, `(stage, question, check, option,
/// field)`: the list of questions itself first (missing, not a list, its count); then each
/// question in turn (header, question, the options' presence, type and count, each option's
/// label, description and unknown keys, the duplicate labels, `multi_select`, the question's
/// unknown keys); then the duplicate headers; then the unknown top-level keys.
type Place = (u8, usize, u8, usize, usize);

/// Checks of a question, in the full validator's order.
const OPTIONS: u8 = 2;
const OPTION_ITEMS: u8 = 3;
const LABEL_DUPLICATES: u8 = 4;
const MULTI_SELECT: u8 = 5;
const QUESTION_KEYS: u8 = 6;

/// The errors found so far, each with its place.
#[derive(Default)]
pub(super) struct Refusals(Vec<(Place, FieldError)>);

/// Builds the path of question `question` and hands it to `make`.
fn at_question<T>(question: usize, make: impl FnOnce(&Path<'_>) -> T) -> T {
    let root = Path::Root;
    let questions = root.key("questions");
    make(&questions.index(question))
}

/// Builds the path of option `option` of question `question` and hands it to `make`.
fn at_option<T>(question: usize, option: usize, make: impl FnOnce(&Path<'_>) -> T) -> T {
    at_question(question, |at| make(&at.key("options").index(option)))
}

impl Refusals {
    /// Whether nothing has been found wrong.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn push(&mut self, place: Place, error: FieldError) {
        self.0.push((place, error));
    }

    /// The arguments have no `questions`.
    pub(super) fn no_questions_field(&mut self) {
        let root = Path::Root;
        self.push((0, 0, 0, 0, 0), missing(&root.key("questions")));
    }

    /// `questions` is not a list.
    pub(super) fn questions_not_a_list(&mut self, value: &Node<'_>) {
        let root = Path::Root;
        let path = root.key("questions");
        let error = wrong_type(&path, "a list of questions", value);
        self.push((0, 0, 0, 0, 0), error);
    }

    /// The list of questions is empty, or longer than the harness takes.
    pub(super) fn questions_count(&mut self, count: usize) {
        let root = Path::Root;
        let path = root.key("questions");
        let error = if count == 0 {
            too_few_questions(&path)
        } else {
            too_many_questions(&path, count)
        };
        self.push((0, 0, 0, 0, 0), error);
    }

    /// A top-level key other than `questions` (the `seq`th such key).
    pub(super) fn unknown_top_level(&mut self, seq: usize, key: &str) {
        let root = Path::Root;
        let error = unknown(&root.key(key), "the arguments take only `questions`");
        self.push((3, seq, 0, 0, 0), error);
    }

    /// An item of the list of questions is not an object.
    pub(super) fn question_not_an_object(&mut self, question: usize, value: &Node<'_>) {
        let expected = "an object with header, question and options";
        let error = at_question(question, |at| wrong_type(at, expected, value));
        self.push((1, question, 0, 0, 0), error);
    }

    /// A required string field is missing.
    pub(super) fn text_missing(&mut self, field: TextField) {
        self.push(field.place(), field.error(missing));
    }

    /// A string field holds another kind of value (a description may also be null).
    pub(super) fn text_type(&mut self, field: TextField, value: &Node<'_>) {
        let error = field.error(|path| wrong_type(path, "a string", value));
        self.push(field.place(), error);
    }

    /// A string field breaks its rule.
    pub(super) fn text_problem(&mut self, field: TextField, problem: TextProblem) {
        let error = field.error(|path| text_error(path, field.rule(), problem));
        self.push(field.place(), error);
    }

    /// A question has no options.
    pub(super) fn options_missing(&mut self, question: usize) {
        let error = at_question(question, |at| missing(&at.key("options")));
        self.push((1, question, OPTIONS, 0, 0), error);
    }

    /// A question's options are not a list.
    pub(super) fn options_not_a_list(&mut self, question: usize, value: &Node<'_>) {
        let error = at_question(question, |at| {
            wrong_type(&at.key("options"), "a list of options", value)
        });
        self.push((1, question, OPTIONS, 0, 0), error);
    }

    /// A question offers too few or too many options.
    pub(super) fn options_count(&mut self, question: usize, count: usize) {
        let error = at_question(question, |at| options_count(&at.key("options"), count));
        self.push((1, question, OPTIONS, 0, 0), error);
    }

    /// An item of a question's options is not an object.
    pub(super) fn option_not_an_object(
        &mut self,
        question: usize,
        option: usize,
        value: &Node<'_>,
    ) {
        let expected = "an object with a label and an optional description";
        let error = at_option(question, option, |at| wrong_type(at, expected, value));
        self.push((1, question, OPTION_ITEMS, option, 0), error);
    }

    /// An option's key other than label and description (the `seq`th such key).
    pub(super) fn unknown_option_key(
        &mut self,
        (question, option): (usize, usize),
        seq: usize,
        key: &str,
    ) {
        let hint = "an option has only label and description";
        let error = at_option(question, option, |at| unknown(&at.key(key), hint));
        self.push((1, question, OPTION_ITEMS, option, 2 + seq), error);
    }

    /// The labels of a question (option index, stripped label) that fold to an earlier one;
    /// only labels that kept their rule are given.
    pub(super) fn duplicate_labels(&mut self, question: usize, labels: &[(usize, &str)]) {
        for (later, earlier) in folded_duplicates(labels) {
            let error = at_question(question, |at| {
                duplicate_label(&at.key("options"), later, earlier, labels)
            });
            self.push((1, question, LABEL_DUPLICATES, later, 0), error);
        }
    }

    /// A question's `multi_select` is not a boolean pydantic takes.
    pub(super) fn multi_select(&mut self, question: usize, value: &Node<'_>) {
        let error = at_question(question, |at| not_a_bool(&at.key("multi_select"), value));
        self.push((1, question, MULTI_SELECT, 0, 0), error);
    }

    /// A question's key other than its four fields (the `seq`th such key).
    pub(super) fn unknown_question_key(&mut self, question: usize, seq: usize, key: &str) {
        let hint = "a question has only header, question, options and multi_select";
        let error = at_question(question, |at| unknown(&at.key(key), hint));
        self.push((1, question, QUESTION_KEYS, seq, 0), error);
    }

    /// The headers (question index, stripped header) that fold to an earlier one; only headers
    /// that kept their rule are given.
    pub(super) fn duplicate_headers(&mut self, headers: &[(usize, &str)]) {
        let root = Path::Root;
        let questions = root.key("questions");
        for (later, earlier) in folded_duplicates(headers) {
            let error = duplicate_header(&questions, later, earlier, headers);
            self.push((2, later, 0, 0, 0), error);
        }
    }

    /// The errors in the full validator's order; `None` when there are none.
    pub(super) fn into_errors(mut self) -> Option<ValidationErrors> {
        // Stable: errors at one place (duplicates of one item) keep the order they came in.
        self.0.sort_by_key(|&(place, _)| place);
        ValidationErrors::from_vec(self.0.into_iter().map(|(_, error)| error).collect())
    }
}
