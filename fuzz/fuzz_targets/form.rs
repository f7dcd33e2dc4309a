//! MCP elicitation forms: a request (`message`, the `requestedSchema` with its formats, or a
//! URL to open) NUL the content a tab answers with.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| askgate_fuzz::targets::form(data));
