//! The harness's per-value rules, shared by the full validator and the fast path so the two
//! can never disagree.

use serde_json::Value;

use super::limits::{MAX_DESCRIPTION_CHARS, MAX_HEADER_CHARS, MAX_LABEL_CHARS, MAX_QUESTION_CHARS};
use crate::unicode::{TextMeasure, measure_text, push_uniqueness_key};

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
    let stripped = strip_white_space(raw);
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

/// `raw` without leading and trailing White_Space (`str::trim`'s rule), settled at once for the
/// usual text that starts and ends with a visible ASCII character, which nothing strips.
fn strip_white_space(raw: &str) -> &str {
    match (raw.as_bytes().first(), raw.as_bytes().last()) {
        (Some(first), Some(last)) if first.is_ascii_graphic() && last.is_ascii_graphic() => raw,
        _ => raw.trim(),
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

/// Whether two of `texts` fold to the same key (what [`folded_duplicates`] finds, without
/// saying where, and without allocating for ASCII text).
pub(crate) fn any_folded_duplicate(texts: &[&str]) -> bool {
    if texts.iter().all(|t| t.is_ascii()) {
        return texts
            .iter()
            .enumerate()
            .any(|(j, b)| texts[..j].iter().any(|a| a.eq_ignore_ascii_case(b)));
    }
    let keys = FoldedKeys::of(texts.iter().copied());
    (1..texts.len()).any(|j| keys.earlier_same_as(j).is_some())
}

/// `(later index, earlier index)` for every item whose fold equals an earlier item's.
pub(crate) fn folded_duplicates(items: &[(usize, &str)]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    if items.len() < 2 {
        return found;
    }
    if items.iter().all(|(_, s)| s.is_ascii()) {
        // The fold of ASCII text is its ASCII lowercase: compare without allocating.
        for (j, &(later, b)) in items.iter().enumerate() {
            if let Some(&(earlier, _)) = items[..j].iter().find(|(_, a)| a.eq_ignore_ascii_case(b))
            {
                found.push((later, earlier));
            }
        }
        return found;
    }
    let keys = FoldedKeys::of(items.iter().map(|&(_, s)| s));
    for j in 1..items.len() {
        if let Some(i) = keys.earlier_same_as(j) {
            found.push((items[j].0, items[i].0));
        }
    }
    found
}

/// The uniqueness keys of a few texts, one after another in one string: two allocations for
/// the lot instead of one per key.
struct FoldedKeys {
    keys: String,
    /// Where each key ends in `keys`.
    ends: Vec<usize>,
}

impl FoldedKeys {
    fn of<'t>(texts: impl ExactSizeIterator<Item = &'t str>) -> Self {
        let mut folded = FoldedKeys {
            keys: String::new(),
            ends: Vec::with_capacity(texts.len()),
        };
        for text in texts {
            push_uniqueness_key(text, &mut folded.keys);
            folded.ends.push(folded.keys.len());
        }
        folded
    }

    fn get(&self, index: usize) -> &str {
        let start = index.checked_sub(1).map_or(0, |before| self.ends[before]);
        &self.keys[start..self.ends[index]]
    }

    /// The first key before key `index` that equals it.
    fn earlier_same_as(&self, index: usize) -> Option<usize> {
        (0..index).find(|&i| self.get(i) == self.get(index))
    }
}

#[cfg(test)]
mod tests {
    use super::strip_white_space;

    /// The quick case agrees with `str::trim` on every edge, ASCII or not.
    #[test]
    fn stripping_agrees_with_trim() {
        let samples = [
            "",
            " ",
            "a",
            "ab",
            " a",
            "a ",
            "\ta\n",
            "\u{a0}a",
            "a\u{3000}",
            "\u{85}x\u{2028}",
            "~",
            "!x!",
            "é",
            "xé",
            "éx",
            "x\u{200b}",
            "\u{1680}x\u{1680}",
        ];
        for sample in samples {
            assert_eq!(strip_white_space(sample), sample.trim(), "{sample:?}");
        }
    }
}
