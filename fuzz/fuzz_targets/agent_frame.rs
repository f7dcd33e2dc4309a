//! An agent's frame as it arrives on the socket: read by the fast reader, which must agree
//! with serde's tagged reading; an `ask` is then checked as the hub checks it.
#![no_main]

use askgate_fuzz::readings_agree;
use askgate_protocol::wire::{AgentFrame, read_agent_frame};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let fast = read_agent_frame(text);
    let tagged = serde_json::from_str::<AgentFrame>(text);
    readings_agree(&fast, &tagged);
    if let Ok(AgentFrame::Ask(mut ask)) = fast {
        let checked = ask.check(f64::INFINITY);
        let taken = ask.check_taking(f64::INFINITY);
        match (&checked, &taken) {
            (Ok(one), Ok(other)) => assert_eq!(one, other, "check and check_taking differ"),
            (Err(one), Err(other)) => assert_eq!(one, other, "check and check_taking differ"),
            _ => panic!("check and check_taking disagree: {checked:?} / {taken:?}"),
        }
    }
});
