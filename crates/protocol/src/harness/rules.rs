//! The harness's per-value rules: a string field's bounds, pydantic's lax boolean, and the
//! uniqueness of headers and labels.

use serde_json::Value;

use super::limits::{MAX_DESCRIPTION_CHARS, MAX_HEADER_CHARS, MAX_LABEL_CHARS, MAX_QUESTION_CHARS};
use crate::unicode::{TextMeasure, measure_text, uniqueness_key};

/// The bounds of one string field.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TextRule {
    /// Fewest code points after stripping (1, or 0 for `description`).
    pub(crate) min_chars: usize,
    /// Most code points after stripping.
    pub(crate) max_chars: usize,
    /// Whether `\n` may appear inside.
    pub(crate) newlines: bool,
}

impl TextRule {
    pub(crate) const HEADER: TextRule = TextRule {
        min_chars: 1,
        max_chars: MAX_HEADER_CHARS,
        newlines: false,
    };
    pub(crate) const QUESTION: TextRule = TextRule {
        min_chars: 1,
        max_chars: MAX_QUESTION_CHARS,
        newlines: true,
    };
    pub(crate) const LABEL: TextRule = TextRule {
        min_chars: 1,
        max_chars: MAX_LABEL_CHARS,
        newlines: false,
    };
    pub(crate) const DESCRIPTION: TextRule = TextRule {
        min_chars: 0,
        max_chars: MAX_DESCRIPTION_CHARS,
        newlines: true,
    };
}

/// Why a string field failed, in the harness's order of checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TextProblem {
    /// Shorter than the minimum once stripped.
    Blank,
    /// Longer than the maximum once stripped; the length.
    TooLong(usize),
    /// The printable rule failed: the first offending character and its index.
    Forbidden { at: usize, found: char },
}

/// Strips by White_Space, measures in code points, applies the printable rule.
pub(crate) fn check_text(raw: &str, rule: TextRule) -> Result<&str, TextProblem> {
    // pydantic-core strips by the White_Space property, which is `str::trim`'s rule.
    let stripped = raw.trim();
    let TextMeasure { chars, forbidden } = measure_text(stripped, rule.newlines);
    if chars < rule.min_chars {
        return Err(TextProblem::Blank);
    }
    if chars > rule.max_chars {
        return Err(TextProblem::TooLong(chars));
    }
    match forbidden {
        Some((at, found)) => Err(TextProblem::Forbidden { at, found }),
        None => Ok(stripped),
    }
}

/// pydantic's lax boolean: `true/false`, `0/1`, `0.0/1.0`, and a few words in any ASCII case.
pub(crate) fn lax_bool(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_f64().and_then(lax_bool_number),
        Value::String(s) => lax_bool_word(s),
        _ => None,
    }
}

/// A number as pydantic's lax boolean: compared as a float, so `-0.0` is false like `0.0`.
pub(crate) fn lax_bool_number(number: f64) -> Option<bool> {
    if number == 0.0 {
        Some(false)
    } else if number == 1.0 {
        Some(true)
    } else {
        None
    }
}

/// A string as pydantic's lax boolean.
pub(crate) fn lax_bool_word(word: &str) -> Option<bool> {
    const FALSE: [&str; 6] = ["0", "off", "f", "false", "n", "no"];
    const TRUE: [&str; 6] = ["1", "on", "t", "true", "y", "yes"];
    if FALSE.iter().any(|w| word.eq_ignore_ascii_case(w)) {
        Some(false)
    } else if TRUE.iter().any(|w| word.eq_ignore_ascii_case(w)) {
        Some(true)
    } else {
        None
    }
}

/// `(later index, earlier index)` for every item whose fold equals an earlier item's.
pub(crate) fn folded_duplicates(items: &[(usize, &str)]) -> Vec<(usize, usize)> {
    let keys: Vec<_> = items
        .iter()
        .map(|&(_, text)| uniqueness_key(text))
        .collect();
    (1..items.len())
        .filter_map(|j| {
            let earlier = (0..j).find(|&i| keys[i] == keys[j])?;
            Some((items[j].0, items[earlier].0))
        })
        .collect()
}
