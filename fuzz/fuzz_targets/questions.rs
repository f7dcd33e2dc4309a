//! The question dialects (harness, deepagents, claude): a request and an answer to it. The
//! first byte picks the dialect; the rest is `request JSON` NUL `answer JSON`.
#![no_main]

use askgate_fuzz::{dialect, exercise_dialect};
use libfuzzer_sys::fuzz_target;

const DIALECTS: [&str; 3] = ["harness", "deepagents", "claude"];

fuzz_target!(|data: &[u8]| {
    let Some((pick, rest)) = data.split_first() else {
        return;
    };
    let name = DIALECTS[usize::from(*pick) % DIALECTS.len()];
    exercise_dialect(dialect(name), rest);
});
