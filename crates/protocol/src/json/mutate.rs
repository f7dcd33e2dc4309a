//! Deterministic damage to JSON text, for tests that hold two readers to the same verdicts:
//! bytes dropped, runs doubled, pieces of JSON (punctuation, escapes, numbers, keys) inserted
//! or put in a byte's place. Mutations that break UTF-8 are skipped.

/// Pieces every mutation set inserts: JSON's punctuation, escapes (a lone surrogate among
/// them), numbers serde_json refuses or reads oddly, literals and whitespace.
pub const JSON_PIECES: [&str; 15] = [
    "\"", "\\", "{", "}", "[", "]", ",", ":", " ", "\\u00e9", "\\ud800", "1e999", "-0.5", "null",
    "true",
];

/// Up to `per_text` mutations of `text`, chosen by a xorshift generator seeded with `seed`;
/// `extra_pieces` are inserted beside [`JSON_PIECES`].
pub fn mutations(text: &str, per_text: usize, seed: u64, extra_pieces: &[&str]) -> Vec<String> {
    let mut next = xorshift(seed);
    let pieces: Vec<&str> = JSON_PIECES.iter().chain(extra_pieces).copied().collect();
    let mut mutated = Vec::with_capacity(per_text);
    for _ in 0..per_text {
        let mut bytes = text.as_bytes().to_vec();
        if bytes.is_empty() {
            break;
        }
        let at = next(bytes.len());
        match next(4) {
            0 => drop(bytes.remove(at)),
            1 => {
                let end = (at + 1 + next(16)).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                bytes.splice(at..at, copy);
            }
            2 => {
                bytes.remove(at);
                bytes.splice(at..at, pieces[next(pieces.len())].bytes());
            }
            _ => drop(bytes.splice(at..at, pieces[next(pieces.len())].bytes())),
        }
        if let Ok(text) = String::from_utf8(bytes) {
            mutated.push(text);
        }
    }
    mutated
}

/// A small deterministic generator for tests: each call gives a number below its bound (0 for
/// a bound of 0), the same sequence for the same `seed`.
pub fn xorshift(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed | 1;
    move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % bound.max(1) as u64).unwrap_or(0)
    }
}
