//! Each target's body: what one input is read as and held to. The libFuzzer binaries in
//! `fuzz_targets/` call these, and so does the ordinary test suite, which replays every seed
//! through them (`tests/tests/integration/fuzz_seeds.rs`).

use std::path::Path;

use askgate::keys::ViewerKeys;
use askgate::people::personal_links::KeyRefusal;
use askgate::store::StoredRequest;
use askgate::store::durable_decoders::{decode_record, read_log_file};
use askgate_protocol::SessionId;
use askgate_protocol::people::check_user_name;
use askgate_protocol::wire::{AgentFrame, FromTab, read_agent_frame, read_tab_frame};

use crate::{dialect, exercise_dialect, halves, readings_agree};

/// Every target by name, as `cargo fuzz list` names them, except `durable_log`, which also
/// takes a scratch file (see [`durable_log`]).
pub const PURE: [(&str, fn(&[u8])); 6] = [
    ("agent_frame", agent_frame),
    ("tab_frame", tab_frame),
    ("questions", questions),
    ("approval", approval),
    ("form", form),
    ("personal_link_key", personal_link_key),
];

/// An agent's frame as it arrives on the socket: read by the fast reader, which must agree
/// with serde's tagged reading; an `ask` is then checked as the hub checks it.
pub fn agent_frame(data: &[u8]) {
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
}

/// A tab's frame as it arrives on the socket: the fast reader must agree with serde's tagged
/// reading, and a frame read back from what it writes is the same frame.
pub fn tab_frame(data: &[u8]) {
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
}

/// The question dialects (harness, deepagents, claude): the first byte picks the dialect; the
/// rest is `request JSON` NUL `answer JSON`.
pub fn questions(data: &[u8]) {
    const DIALECTS: [&str; 3] = ["harness", "deepagents", "claude"];
    let Some((pick, rest)) = data.split_first() else {
        return;
    };
    let name = DIALECTS[usize::from(*pick) % DIALECTS.len()];
    exercise_dialect(dialect(name), rest);
}

/// Tool-call approvals: `calls` (each with its `args` and `args_schema`) NUL the person's
/// decisions, edits included (checked against `args_schema`).
pub fn approval(data: &[u8]) {
    exercise_dialect(dialect("approval"), data);
}

/// MCP elicitation forms: a request (`message`, the `requestedSchema` with its formats, or a
/// URL to open) NUL the content a tab answers with.
pub fn form(data: &[u8]) {
    exercise_dialect(dialect("form"), data);
}

/// Personal-link keys as a tab presents them in its `hello`. Input: `key` NUL `user`.
/// - A key from the input is never taken (it would be a forged signature) and never panics.
/// - A key signed for the input's user identifies that user until it expires, provided the
///   name is one an agent may give; a changed session or a passed expiry is refused.
pub fn personal_link_key(data: &[u8]) {
    let keys = ViewerKeys::new(b"fuzzing secret", "http://gw");
    let session = SessionId::parse("s").expect("a session id");
    let (key, user) = halves(data);
    if let Ok(key) = std::str::from_utf8(key) {
        let _ = keys.verify(&session, key);
        assert!(
            keys.identify(&session, key, 0).is_err(),
            "an unsigned key was taken: {key:?}"
        );
    }
    let Some(Ok(user)) = user.map(std::str::from_utf8) else {
        return;
    };
    let expires_ms = 1_000 + u64::try_from(user.len()).unwrap_or(0);
    let signed = keys.personal_key(&session, user, expires_ms);
    let identified = keys.identify(&session, &signed, expires_ms - 1);
    if check_user_name(user).is_ok() {
        let person = identified.unwrap_or_else(|refusal| {
            panic!(
                "a signed key for {user:?} was refused: {}",
                refusal.reason()
            )
        });
        assert_eq!(person.user.as_deref(), Some(user));
        assert_eq!(
            keys.identify(&session, &signed, expires_ms).err(),
            Some(KeyRefusal::Expired)
        );
        let other = SessionId::parse("t").expect("a session id");
        assert_eq!(
            keys.identify(&other, &signed, 0).err(),
            Some(KeyRefusal::OtherSession)
        );
    } else {
        assert!(identified.is_err(), "a key naming {user:?} was taken");
    }
}

/// The embedded store's decoders: a log file as recovery reads it after a crash (written to
/// `scratch`, a file the caller keeps for it), a record's changes, and a stored request's JSON
/// as it is read back from redb. The input is taken as each in turn.
pub fn durable_log(scratch: &Path, data: &[u8]) {
    if std::fs::write(scratch, data).is_err() {
        // Its directory was cleared under it (by a finished run's clean-up).
        std::fs::create_dir_all(scratch.parent().expect("a directory"))
            .expect("a scratch directory");
        std::fs::write(scratch, data).expect("the scratch file is written");
    }
    let (records, stopped) = read_log_file(scratch).expect("the scratch file reads");
    let mut read_bytes = 0;
    for (_, payload) in &records {
        read_bytes += 16 + payload.len();
        let _ = decode_record(payload);
    }
    assert!(
        read_bytes <= data.len(),
        "more was read than the file holds"
    );
    if stopped.is_none() {
        assert!(
            data[read_bytes..].iter().take(16).all(|byte| *byte == 0),
            "reading stopped short of the end without saying why"
        );
    }
    let _ = decode_record(data);
    if let Ok(request) = serde_json::from_slice::<StoredRequest>(data) {
        let encoded = serde_json::to_vec(&request).expect("a request encodes");
        let back: StoredRequest = serde_json::from_slice(&encoded).expect("it decodes again");
        assert_eq!(
            back, request,
            "a stored request changed on its way through JSON"
        );
    }
}
