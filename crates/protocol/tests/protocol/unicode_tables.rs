//! The frozen Unicode tables against what CPython 3.11 computed (`tests/protocol/data/fold_14.tsv`,
//! written by `scripts/gen_unicode_tables.py`).

use std::collections::HashMap;

use askgate_protocol::unicode::{harness_allows, uniqueness_key};

fn python_folds() -> HashMap<char, String> {
    let text = include_str!("data/fold_14.tsv");
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let (cp, folded) = line.split_once('\t').expect("two columns");
            let cp = char::from_u32(u32::from_str_radix(cp, 16).unwrap()).unwrap();
            let folded = folded
                .split(' ')
                .map(|h| char::from_u32(u32::from_str_radix(h, 16).unwrap()).unwrap())
                .collect();
            (cp, folded)
        })
        .collect()
}

/// For every character the printable rule allows, askgate's fold (Zs → space, NFKC from a
/// newer Unicode, case folding from the frozen table) equals CPython 3.11's.
#[test]
fn fold_of_every_allowed_character_matches_python_3_11() {
    let python = python_folds();
    assert!(python.len() > 5_000, "fixture too small: {}", python.len());
    let mut mismatches = Vec::new();
    for c in (0..=0x10FFFF).filter_map(char::from_u32) {
        if !harness_allows(c, false) {
            assert!(
                !python.contains_key(&c),
                "U+{:04X} is in the fixture but rejected",
                c as u32
            );
            continue;
        }
        let expected = python.get(&c).cloned().unwrap_or_else(|| c.to_string());
        let one = c.to_string();
        let ours = uniqueness_key(&one);
        if ours != expected {
            mismatches.push(format!("U+{:04X}: {ours:?} vs {expected:?}", c as u32));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches: {:?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(20)]
    );
}
