//! Tool-call approvals: `calls` (each with its `args` and `args_schema`) NUL the person's
//! decisions, edits included (checked against `args_schema`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| askgate_fuzz::targets::approval(data));
