//! Personal-link keys as a tab presents them in its `hello`. Input: `key` NUL `user`.
//! - A key from the input is never taken (it would be a forged signature) and never panics.
//! - A key signed for the input's user identifies that user until it expires, provided the
//!   name is one an agent may give; a changed session or a passed expiry is refused.
#![no_main]

use askgate::keys::ViewerKeys;
use askgate::people::personal_links::KeyRefusal;
use askgate_fuzz::halves;
use askgate_protocol::SessionId;
use askgate_protocol::people::check_user_name;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let keys = ViewerKeys::new(b"fuzzing secret".to_vec(), "http://gw");
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
});
