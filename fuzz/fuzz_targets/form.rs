//! MCP elicitation forms: a request (`message`, the `requestedSchema` with its formats, or a
//! URL to open) NUL the content a tab answers with.
#![no_main]

use askgate_fuzz::{dialect, exercise_dialect};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| exercise_dialect(dialect("form"), data));
