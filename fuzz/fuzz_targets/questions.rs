//! The question dialects (harness, deepagents, claude): a request and an answer to it. The
//! first byte picks the dialect; the rest is `request JSON` NUL `answer JSON`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| askgate_fuzz::targets::questions(data));
