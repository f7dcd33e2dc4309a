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

use super::bitmap::{self, PLANES_0_TO_2, PlaneBits};
use super::classes::is_space_separator;
use super::tables::{CASEFOLD, FOLD_BOUND, FOLD_MAPPED};

/// The key under which two stripped headers or labels are the same for the harness: the text
/// itself when folding leaves it alone.
///
/// Text is folded a segment at a time. A segment starts at each character that folds alone
/// (see `FOLD_BOUND`): such a character's decomposition starts with a starter that nothing
/// before it can reach past, so NFKC of the text is NFKC of each segment, joined. A segment of
/// one such character takes its fold from the table; a longer one (`e` and a combining accent)
/// is normalised on its own.
pub fn uniqueness_key(text: &str) -> Cow<'_, str> {
    let mut key = String::new();
    if push_changed_key(text, &mut key) {
        Cow::Owned(key)
    } else {
        Cow::Borrowed(text)
    }
}

/// Appends [`uniqueness_key`] of `text` to `out`: many keys can share one string.
pub fn push_uniqueness_key(text: &str, out: &mut String) {
    if !push_changed_key(text, out) {
        out.push_str(text);
    }
}

/// Appends the key of `text` to `out` and says `true` when it differs from `text`; appends
/// nothing and says `false` when the key is the text itself.
fn push_changed_key(text: &str, out: &mut String) -> bool {
    if text.is_ascii() {
        if !text.bytes().any(|b| b.is_ascii_uppercase()) {
            return false;
        }
        out.extend(text.chars().map(|c| c.to_ascii_lowercase()));
        return true;
    }
    let mut key = Key {
        text,
        out,
        changed: false,
        copied_to: 0,
    };
    let mut segment = 0;
    // The segment's character while it is a lone character that folds alone.
    let mut lone = None;
    for (at, c) in text.char_indices() {
        if folds_alone(c) {
            if at > 0 {
                key.segment(segment, at, lone);
            }
            (segment, lone) = (at, Some(c));
        } else {
            lone = None;
        }
    }
    key.segment(segment, text.len(), lone);
    key.finish()
}

/// A key being built: written to `out` only once it differs from the text, and then the text
/// that folds to itself is copied a run at a time, not a character at a time.
struct Key<'a, 'o> {
    text: &'a str,
    out: &'o mut String,
    /// The key differs from the text: `out` holds it up to `copied_to`.
    changed: bool,
    /// Where the text not yet copied to `out` starts.
    copied_to: usize,
}

impl Key<'_, '_> {
    /// Adds the fold of `text[start..end]`; `lone` is its only character when that character
    /// folds alone.
    fn segment(&mut self, start: usize, end: usize, lone: Option<char>) {
        match lone.map(mapped_fold) {
            // The segment is its own key: it joins the run still to be copied.
            Some(None) => {}
            Some(Some(folded)) => {
                self.copy_up_to(start).push_str(folded);
                self.copied_to = end;
            }
            None => {
                let segment = &self.text[start..end];
                if !folds_to_itself(segment) {
                    fold_whole_into(segment, self.copy_up_to(start));
                    self.copied_to = end;
                }
            }
        }
    }

    /// The key so far, the text from `copied_to` up to `start` copied in.
    fn copy_up_to(&mut self, start: usize) -> &mut String {
        if !self.changed {
            self.changed = true;
            self.out.reserve(self.text.len() + 8);
        }
        self.out.push_str(&self.text[self.copied_to..start]);
        self.out
    }

    /// Copies the rest of the text if the key differs from it; says whether it does.
    fn finish(mut self) -> bool {
        if self.changed {
            self.copy_up_to(self.text.len());
        }
        self.changed
    }
}

/// Whether `c` folds alone, whatever stands around it (only answered for planes 0–2).
fn folds_alone(c: char) -> bool {
    bitmap::get(&FOLDS_ALONE, c as usize) == Some(true)
}

/// The fold of a character that folds alone, when it is not the character itself.
fn mapped_fold(c: char) -> Option<&'static str> {
    let cp = c as usize;
    let (word, bit) = (cp / 64, 1u64 << (cp % 64));
    let bits = *MAPPED.get(word)?;
    // The rank of the bit among the set ones is the entry's index in the table.
    let rank = usize::from(MAPPED_BEFORE[word]) + (bits & (bit - 1)).count_ones() as usize;
    (bits & bit != 0).then(|| FOLD_MAPPED[rank].1)
}

/// Whether folding leaves `text` as it is (a syllable of an Indic script with its vowel sign,
/// a letter with an accent NFKC cannot join): already NFKC, no Zs, nothing to case-fold.
fn folds_to_itself(text: &str) -> bool {
    text.chars()
        .all(|c| !is_space_separator(c) && bitmap::get(&FOLDS, c as usize) == Some(false))
        && is_nfkc_quick(text.chars()) == IsNormalized::Yes
}

/// Appends `casefold(NFKC(text with every Zs made U+0020))`, computed over the whole text.
fn fold_whole_into(text: &str, out: &mut String) {
    let spaced = text
        .chars()
        .map(|c| if is_space_separator(c) { ' ' } else { c });
    if is_nfkc_quick(spaced.clone()) == IsNormalized::Yes {
        // Most text is already NFKC; the quick check spares the decompose-recompose pass.
        spaced.for_each(|c| push_casefolded(c, out));
    } else {
        spaced.nfkc().for_each(|c| push_casefolded(c, out));
    }
}

/// Bit `cp` set when `cp` folds alone (the complement of `FOLD_BOUND`); text with a
/// character beyond plane 2 is folded whole.
static FOLDS_ALONE: PlaneBits = bitmap::complement(bitmap::from_ranges(FOLD_BOUND));

/// Bit `cp` set when `cp` has an entry in `FOLD_MAPPED` (none lies beyond plane 2: a test
/// holds the generator to that).
static MAPPED: PlaneBits = bitmap::from_points(FOLD_MAPPED);

/// How many `MAPPED` bits are set in the words before each word.
static MAPPED_BEFORE: [u16; PLANES_0_TO_2 / 64] = {
    let mut before = [0u16; PLANES_0_TO_2 / 64];
    let mut count = 0;
    let mut word = 0;
    while word < before.len() {
        before[word] = count;
        count += MAPPED[word].count_ones() as u16;
        word += 1;
    }
    before
};

/// Bit `cp` set when `cp` has a case folding: most characters have none, and this spares them
/// the table search.
static FOLDS: PlaneBits = bitmap::from_points(CASEFOLD);

fn push_casefolded(c: char, out: &mut String) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
        return;
    }
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
    use super::{FOLD_MAPPED, PLANES_0_TO_2, fold_whole_into, folds_alone};
    use crate::unicode::harness_allows;

    #[test]
    fn every_mapped_character_is_in_the_bitmaps() {
        assert!(
            FOLD_MAPPED
                .iter()
                .all(|&(cp, _)| (cp as usize) < PLANES_0_TO_2)
        );
        assert!(FOLD_MAPPED.windows(2).all(|pair| pair[0].0 < pair[1].0));
    }

    /// Folding by segments equals folding the whole text at once: checked on random texts
    /// drawn mostly from characters that take part in normalisation (combining marks, jamo,
    /// compatibility forms, characters with case folds) next to plain ones.
    #[test]
    fn folding_by_segments_agrees_with_folding_the_whole_text() {
        let allowed: Vec<char> = (0..0x3_0000)
            .filter_map(char::from_u32)
            .filter(|&c| harness_allows(c, false))
            .collect();
        let tricky: Vec<char> = allowed
            .iter()
            .copied()
            .filter(|&c| !folds_alone(c) || key(&c.to_string()) != c.to_string())
            .collect();
        let mut next = crate::json::mutate::xorshift(0x9E37_79B9_7F4A_7C15);
        let mut with_bound = 0;
        for _ in 0..200_000 {
            let len = 1 + next(6);
            let text: String = (0..len)
                .map(|_| match next(4) {
                    0 => allowed[next(allowed.len())],
                    1 => char::from(b'a' + next(26) as u8),
                    _ => tricky[next(tricky.len())],
                })
                .collect();
            let mut whole = String::new();
            fold_whole_into(&text, &mut whole);
            assert_eq!(key(&text), whole, "{text:?}");
            with_bound += usize::from(!text.chars().all(folds_alone));
        }
        assert!(with_bound > 30_000, "{with_bound}");
    }

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
