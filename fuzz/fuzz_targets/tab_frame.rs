//! A tab's frame as it arrives on the socket: the fast reader must agree with serde's tagged
//! reading, and a frame read back from what it writes is the same frame.
#![no_main]

use askgate_fuzz::readings_agree;
use askgate_protocol::wire::{FromTab, read_tab_frame};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let fast = read_tab_frame(text);
    let tagged = serde_json::from_str::<FromTab>(text);
    readings_agree(&fast, &tagged);
    if let Ok(frame) = fast {
        let written = serde_json::to_string(&frame).expect("a frame encodes");
        let back = read_tab_frame(&written).expect("a written frame reads back");
        assert_eq!(back, frame, "a frame changed on its way through JSON");
        if let FromTab::Hello { tab, .. } = &frame {
            let _ = FromTab::requested_tab(tab.as_deref());
        }
    }
});
