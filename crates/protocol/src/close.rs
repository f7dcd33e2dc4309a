//! WebSocket close codes askgate uses, and whether a peer should reconnect after each.

/// The server is going away (shutdown or restart): reconnect.
pub const GOING_AWAY: u16 = 1001;
/// The peer broke the WebSocket protocol (a bad frame, an unmasked client frame...): fix
/// the client.
pub const PROTOCOL_ERROR: u16 = 1002;
/// A text message that is not UTF-8: fix the client.
pub const INVALID_PAYLOAD: u16 = 1007;
/// The server is at a capacity limit (sessions, tabs per session): reconnect later.
pub const TRY_AGAIN_LATER: u16 = 1013;
/// Malformed frames (not JSON, not a known type, no `hello` first): fix the client.
pub const MALFORMED: u16 = 4400;
/// A wrong viewer key or agent key: do not reconnect with the same key.
pub const BAD_KEY: u16 = 4401;
/// The session id in the URL is not a valid session id: do not reconnect.
pub const UNKNOWN_SESSION: u16 = 4404;
/// The peer did not read fast enough and its queue overflowed: reconnect (and resync).
pub const TOO_SLOW: u16 = 4408;
/// A frame larger than the limit: do not resend it.
pub const TOO_LARGE: u16 = 4413;
/// Too many frames per second: reconnect after a pause.
pub const TOO_MANY_FRAMES: u16 = 4429;

/// Whether a peer closed with `code` should reconnect.
pub fn should_reconnect(code: u16) -> bool {
    matches!(
        code,
        GOING_AWAY | TRY_AGAIN_LATER | TOO_SLOW | TOO_MANY_FRAMES | 1006 | 1011 | 1012
    )
}
