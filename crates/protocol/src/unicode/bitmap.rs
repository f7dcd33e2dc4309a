//! Bitmaps over planes 0–2, where nearly all text lives: one bit per code point, built at
//! compile time from the generated tables, so a character costs one load instead of a search.

/// The code points the bitmaps cover; beyond, callers search the tables.
pub(super) const PLANES_0_TO_2: usize = 0x3_0000;

/// One bit per code point of planes 0–2.
pub(super) type PlaneBits = [u64; PLANES_0_TO_2 / 64];

/// The bits of every code point in the inclusive `ranges`.
pub(super) const fn from_ranges(ranges: &[(u32, u32)]) -> PlaneBits {
    let mut bits = [0; PLANES_0_TO_2 / 64];
    let mut i = 0;
    while i < ranges.len() {
        let (lo, hi) = ranges[i];
        let mut cp = lo as usize;
        while cp <= hi as usize && cp < PLANES_0_TO_2 {
            bits[cp / 64] |= 1 << (cp % 64);
            cp += 1;
        }
        i += 1;
    }
    bits
}

/// The bits of the code points a `(code point, text)` table has entries for.
pub(super) const fn from_points(points: &[(u32, &str)]) -> PlaneBits {
    let mut bits = [0; PLANES_0_TO_2 / 64];
    let mut i = 0;
    while i < points.len() {
        let cp = points[i].0 as usize;
        if cp < PLANES_0_TO_2 {
            bits[cp / 64] |= 1 << (cp % 64);
        }
        i += 1;
    }
    bits
}

/// Whether `cp`'s bit is set; `None` beyond plane 2.
pub(super) fn get(bits: &PlaneBits, cp: usize) -> Option<bool> {
    bits.get(cp / 64).map(|word| word >> (cp % 64) & 1 == 1)
}
