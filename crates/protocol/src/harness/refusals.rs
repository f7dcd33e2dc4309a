//! Rules broken in tool arguments whose shape is right, as the fast path comes upon them while
//! it reads the text. Each error is kept with its place in the full validator's order of
//! checks, so the list comes out exactly as the full validator would give it, whatever order
//! the keys were written in.

use super::field_errors::{
    duplicate_header, duplicate_label, options_count, text_error, too_few_questions,
};
use super::rules::{TextProblem, TextRule, folded_duplicates};
use crate::error::{FieldError, Path, ValidationErrors};

/// A question's string field.
#[derive(Clone, Copy)]
pub(super) enum QuestionText {
    Header,
    Question,
}

/// An option's string field.
#[derive(Clone, Copy)]
pub(super) enum OptionText {
    Label,
    Description,
}

/// Where an error stands in the full validator's order: the count of questions first; then
/// each question in turn (its header, its question, the count of its options, each option's
/// label and description, the duplicates among its labels); then the duplicate headers.
/// `(stage, question, check, option, field)`.
type Place = (u8, usize, u8, usize, u8);

/// The errors found so far, each with its place.
#[derive(Default)]
pub(super) struct Refusals(Vec<(Place, FieldError)>);

impl Refusals {
    /// Whether no rule has been found broken.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The list of questions is empty.
    pub(super) fn no_questions(&mut self) {
        let root = Path::Root;
        let questions = root.key("questions");
        self.0
            .push(((0, 0, 0, 0, 0), too_few_questions(&questions)));
    }

    /// A question's header or question text breaks its rule.
    pub(super) fn question_text(
        &mut self,
        question: usize,
        field: QuestionText,
        problem: TextProblem,
    ) {
        let (key, check, rule) = match field {
            QuestionText::Header => ("header", 0, TextRule::HEADER),
            QuestionText::Question => ("question", 1, TextRule::QUESTION),
        };
        let root = Path::Root;
        let questions = root.key("questions");
        let at = questions.index(question);
        let path = at.key(key);
        let place = (1, question, check, 0, 0);
        self.0.push((place, text_error(&path, rule, problem)));
    }

    /// An option's label or description breaks its rule.
    pub(super) fn option_text(
        &mut self,
        question: usize,
        option: usize,
        field: OptionText,
        problem: TextProblem,
    ) {
        let (key, order, rule) = match field {
            OptionText::Label => ("label", 0, TextRule::LABEL),
            OptionText::Description => ("description", 1, TextRule::DESCRIPTION),
        };
        let root = Path::Root;
        let questions = root.key("questions");
        let at = questions.index(question);
        let options = at.key("options");
        let item = options.index(option);
        let path = item.key(key);
        let place = (1, question, 3, option, order);
        self.0.push((place, text_error(&path, rule, problem)));
    }

    /// A question offers too few options.
    pub(super) fn options_count(&mut self, question: usize, count: usize) {
        let root = Path::Root;
        let questions = root.key("questions");
        let at = questions.index(question);
        let options = at.key("options");
        self.0
            .push(((1, question, 2, 0, 0), options_count(&options, count)));
    }

    /// The labels of a question (option index, stripped label) that fold to an earlier one;
    /// only labels that kept their rule are given.
    pub(super) fn duplicate_labels(&mut self, question: usize, labels: &[(usize, &str)]) {
        let root = Path::Root;
        let questions = root.key("questions");
        let at = questions.index(question);
        let options = at.key("options");
        for (later, earlier) in folded_duplicates(labels) {
            let error = duplicate_label(&options, later, earlier, labels);
            self.0.push(((1, question, 4, later, 0), error));
        }
    }

    /// The headers (question index, stripped header) that fold to an earlier one; only headers
    /// that kept their rule are given.
    pub(super) fn duplicate_headers(&mut self, headers: &[(usize, &str)]) {
        let root = Path::Root;
        let questions = root.key("questions");
        for (later, earlier) in folded_duplicates(headers) {
            let error = duplicate_header(&questions, later, earlier, headers);
            self.0.push(((2, later, 0, 0, 0), error));
        }
    }

    /// The errors in the full validator's order; `None` when there are none.
    pub(super) fn into_errors(mut self) -> Option<ValidationErrors> {
        // Stable: errors at one place (duplicates of one item) keep the order they came in.
        self.0.sort_by_key(|&(place, _)| place);
        ValidationErrors::from_vec(self.0.into_iter().map(|(_, error)| error).collect())
    }
}
