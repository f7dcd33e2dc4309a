//! Personal-link keys as a tab presents them in its `hello`. Input: `key` NUL `user`.
//! - A key from the input is never taken (it would be a forged signature) and never panics.
//! - A key signed for the input's user identifies that user until it expires, provided the
//!   name is one an agent may give; a changed session or a passed expiry is refused.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| askgate_fuzz::targets::personal_link_key(data));
