//! A tab's frame as it arrives on the socket: the fast reader must agree with serde's tagged
//! reading, and a frame read back from what it writes is the same frame.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| askgate_fuzz::targets::tab_frame(data));
