//! The uniqueness fold: when two headers (or two labels) count as the same.
//!
//! pydantic-ai-harness compares `casefold(NFKC(s with every Zs → U+0020))`. The Zs step exists
//! because NFKC leaves U+1680 OGHAM SPACE MARK alone. Python's `casefold` is full case folding
//! without Turkic mappings, which `char::to_lowercase` is not (`ß` folds to `ss`), so the
//! folding comes from a table read off CPython 3.11. The result is not renormalised after
//! folding, exactly like the harness (this is not NFKC_Casefold).
//!
//! NFKC comes from `unicode-normalization`, a newer Unicode than 14.0; the normalisation
//! stability policy makes it agree on every string of assigned 14.0 characters, which is all
//! this fold ever sees (the printable rule rejects the rest first), and a test checks it
//! against CPython 3.11 for every single character.

use std::borrow::Cow;

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

use super::bitmap::{self, PlaneBits};
use super::classes::is_space_separator;
use super::tables::CASEFOLD;

/// The key under which two stripped headers or labels are the same for the harness:
/// `casefold(NFKC(text with every Zs made U+0020))`; the text itself when that leaves it alone.
pub fn uniqueness_key(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        // ASCII is NFKC already, and its only case folding is to lower case.
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            return Cow::Owned(text.to_ascii_lowercase());
        }
        return Cow::Borrowed(text);
    }
    let spaced = text
        .chars()
        .map(|c| if is_space_separator(c) { ' ' } else { c });
    let mut key = String::with_capacity(text.len());
    if is_nfkc_quick(spaced.clone()) == IsNormalized::Yes {
        spaced.for_each(|c| push_casefolded(c, &mut key));
    } else {
        spaced.nfkc().for_each(|c| push_casefolded(c, &mut key));
    }
    if key == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(key)
    }
}

/// Bit `cp` set when `cp` has a case folding: most characters have none, and this spares them
/// the table search.
static FOLDS: PlaneBits = bitmap::from_points(CASEFOLD);

fn push_casefolded(c: char, out: &mut String) {
    if bitmap::get(&FOLDS, c as usize) == Some(false) {
        out.push(c);
        return;
    }
    match CASEFOLD.binary_search_by_key(&(c as u32), |&(cp, _)| cp) {
        Ok(i) => out.push_str(CASEFOLD[i].1),
        Err(_) => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::uniqueness_key as key;

    #[test]
    fn equivalences_the_harness_sees() {
        let same = [
            ("Color", "COLOR"),
            ("Straße", "STRASSE"),
            ("\u{1e9e}", "ss"),
            ("ς", "σ"),
            ("σ", "Σ"),
            ("\u{13a0}", "\u{ab70}"),
            ("\u{fb01}le", "file"),
            ("ＡＢ", "ab"),
            ("\u{212a}", "k"),
            ("\u{212b}", "å"),
            ("é", "e\u{301}"),
            ("ǅ", "dž"),
            ("①", "1"),
            ("x²", "x2"),
            ("a\u{a0}b", "a b"),
            ("a\u{1680}b", "a b"),
            ("a\u{3000}b", "a b"),
            ("\u{130}", "i\u{307}"),
        ];
        for (a, b) in same {
            assert_eq!(key(a), key(b), "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn distinctions_the_harness_keeps() {
        let different = [
            ("\u{131}", "I"),
            ("\u{131}", "i"),
            ("\u{130}", "i"),
            ("a  b", "a b"),
            ("\u{390}", "\u{3aa}\u{301}"),
            ("Color", "Colour"),
        ];
        for (a, b) in different {
            assert_ne!(key(a), key(b), "{a:?} vs {b:?}");
        }
    }
}
