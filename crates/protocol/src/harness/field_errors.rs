//! The errors the harness validator reports, each worded once.

use serde_json::Value;

use super::limits::{MAX_OPTIONS, MAX_QUESTIONS, MIN_OPTIONS, MIN_QUESTIONS};
use super::rules::{TextProblem, TextRule};
use crate::error::{ErrorCode, FieldError, Path, json_kind, json_quote, push_decimal};

/// Tool arguments that are not a JSON object.
pub(super) fn arguments_not_an_object(args: &Value) -> FieldError {
    FieldError::new(
        "",
        ErrorCode::WrongType,
        format!(
            "the arguments must be an object with `questions`, got {}",
            json_kind(args)
        ),
    )
}

/// More questions than the harness takes.
pub(super) fn too_many_questions(path: &Path<'_>, count: usize) -> FieldError {
    FieldError::new(
        path.render(),
        ErrorCode::TooManyItems,
        format!("must hold at most {MAX_QUESTIONS} questions, got {count}"),
    )
}

/// An empty list of questions.
pub(super) fn too_few_questions(path: &Path<'_>) -> FieldError {
    FieldError::new(
        path.render(),
        ErrorCode::TooFewItems,
        format!("must hold at least {MIN_QUESTIONS} question, got none"),
    )
}

/// Question `later`'s header folds to question `earlier`'s; `headers` holds every header that
/// validated, by question index.
pub(super) fn duplicate_header(
    questions: &Path<'_>,
    later: usize,
    earlier: usize,
    headers: &[(usize, &str)],
) -> FieldError {
    FieldError::new(
        questions.index(later).key("header").render(),
        ErrorCode::DuplicateHeader,
        format!(
            "question headers must be unique: this header is the same as questions[{earlier}].header ({}) once case, width and spacing are folded",
            json_quote(text_at(headers, earlier)),
        ),
    )
}

/// Option `later`'s label folds to option `earlier`'s; `labels` holds every label of the
/// question that validated, by option index.
pub(super) fn duplicate_label(
    options: &Path<'_>,
    later: usize,
    earlier: usize,
    labels: &[(usize, &str)],
) -> FieldError {
    FieldError::new(
        options.index(later).key("label").render(),
        ErrorCode::DuplicateLabel,
        format!(
            "option labels must be unique within a question: this label is the same as options[{earlier}].label ({}) once case, width and spacing are folded",
            json_quote(text_at(labels, earlier)),
        ),
    )
}

/// A list of options shorter or longer than the harness allows.
pub(super) fn options_count(path: &Path<'_>, count: usize) -> FieldError {
    let code = if count < MIN_OPTIONS {
        ErrorCode::TooFewItems
    } else {
        ErrorCode::TooManyItems
    };
    FieldError::new(
        path.render(),
        code,
        format!("must offer {MIN_OPTIONS} to {MAX_OPTIONS} options, got {count}"),
    )
}

pub(super) fn text_at<'a>(items: &[(usize, &'a str)], index: usize) -> &'a str {
    items
        .iter()
        .find(|&&(i, _)| i == index)
        .map_or("", |&(_, text)| text)
}

/// A string field that breaks its rule once stripped. The messages are written by hand, not
/// with `format!`: one is built for most refused inputs, and the formatting machinery cost more
/// than the rest of the error.
pub(super) fn text_error(path: &Path<'_>, rule: TextRule, problem: TextProblem) -> FieldError {
    match problem {
        TextProblem::Blank => FieldError::new(
            path.render(),
            ErrorCode::Blank,
            "must not be empty or only whitespace",
        ),
        TextProblem::TooLong(length) => {
            let mut message = String::with_capacity(80);
            message.push_str("at most ");
            push_decimal(&mut message, rule.max_chars);
            message.push_str(" characters (after trimming surrounding whitespace), got ");
            push_decimal(&mut message, length);
            FieldError::new(path.render(), ErrorCode::TooLong, message)
        }
        TextProblem::Forbidden { at, found } => {
            let what = if found == '\n' {
                "a line break (only `question` and `description` may span lines)"
            } else {
                crate::unicode::classify(found).describe()
            };
            let mut message = String::with_capacity(160);
            message.push_str("must not contain control characters or invisible formatting: U+");
            push_code_point(&mut message, found);
            message.push_str(", ");
            message.push_str(what);
            message.push_str(", at character ");
            push_decimal(&mut message, at + 1);
            FieldError::new(path.render(), ErrorCode::ForbiddenCharacter, message)
        }
    }
}

/// Appends `c`'s code point as `{:04X}` writes it: upper-case hex, at least four digits.
fn push_code_point(out: &mut String, c: char) {
    let cp = c as u32;
    let digits = (32 - cp.leading_zeros()).div_ceil(4).max(4);
    for shift in (0..digits).rev() {
        let digit = (cp >> (4 * shift)) & 0xF;
        out.push(char::from_digit(digit, 16).map_or('0', |d| d.to_ascii_uppercase()));
    }
}

pub(super) fn not_a_bool(path: &Path<'_>, value: &Value) -> FieldError {
    let got = match value {
        Value::String(s) => format!("the string {}", json_quote(s)),
        Value::Number(n) => format!("the number {n}"),
        _ => json_kind(value).to_owned(),
    };
    FieldError::new(
        path.render(),
        ErrorCode::InvalidValue,
        format!("must be a boolean (true or false), got {got}"),
    )
}

pub(super) fn missing(path: &Path<'_>) -> FieldError {
    FieldError::new(
        path.render(),
        ErrorCode::MissingField,
        "required field is missing",
    )
}

pub(super) fn unknown(path: &Path<'_>, hint: &str) -> FieldError {
    FieldError::new(
        path.render(),
        ErrorCode::UnknownField,
        format!("unknown field; {hint}"),
    )
}

pub(super) fn wrong_type(path: &Path<'_>, expected: &str, value: &Value) -> FieldError {
    FieldError::new(
        path.render(),
        ErrorCode::WrongType,
        format!("must be {expected}, got {}", json_kind(value)),
    )
}

#[cfg(test)]
mod tests {
    use super::push_code_point;

    #[test]
    fn code_points_read_as_format_writes_them() {
        for c in [
            '\0',
            '\u{7}',
            '\u{85}',
            '\u{ad}',
            '\u{200b}',
            '\u{fffe}',
            '\u{e0001}',
            '\u{10ffff}',
        ] {
            let mut out = String::new();
            push_code_point(&mut out, c);
            assert_eq!(out, format!("{:04X}", c as u32));
        }
    }
}
