//! An agent's frame as it arrives on the socket: read by the fast reader, which must agree
//! with serde's tagged reading; an `ask` is then checked as the hub checks it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| askgate_fuzz::targets::agent_frame(data));
