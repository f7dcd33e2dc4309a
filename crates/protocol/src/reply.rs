//! The codes a refused call gets back, one row per kind of refusal: the `code` an `error`
//! frame carries, whether sending the same thing again can succeed, and the status the HTTP
//! API answers with. The close codes beside it ([`close`](crate::close)) are the other half:
//! what ends a socket rather than one call.
//!
//! An agent socket's `error` frames and an HTTP refusal's `{"errors":[{path, message, code}]}`
//! grew up apart, so one kind of refusal can say two things: an unknown request is `not_found`
//! on the socket, and `invalid_value` with 404 over HTTP. Each row says both
//! ([`ReplyCode::as_str`] and [`ReplyCode::http_code`]), and the HTTP-only rows (a wrong key, a
//! taken id, a bad query parameter) say `invalid_value` as every HTTP refusal of a value does:
//! there the status tells them apart, and several rows share the string.

use crate::error::ErrorCode;

/// One kind of refusal. The first eight are the codes of `error` frames (to agents, and
/// `bad_frame` and `unavailable` to tabs); the rest are refusals only HTTP answers (a socket
/// closes, or answers `rejected`, instead).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplyCode {
    /// Not JSON, or not a frame of a known type.
    BadFrame,
    /// A session id that is not a valid one (over HTTP: the one in the path).
    BadSession,
    /// A `link` with a bad `user` or `ttl_s`.
    BadLink,
    /// No such request: never asked, or acknowledged and forgotten (over HTTP: also an id in
    /// the path that could not name one).
    NotFound,
    /// An `ack` before the request has ended.
    NotResolved,
    /// A capacity limit was reached, or the store could not be read.
    Unavailable,
    /// The store could not keep a change (a withdrawal, a link's audit entry); nothing changed.
    StoreFailed,
    /// The session is outside the scope of the key presented.
    Forbidden,
    /// HTTP: no agent key, or a wrong one (a socket is closed with 4401).
    WrongKey,
    /// HTTP: a call from a web page or for another host, which may not act as an agent (a
    /// socket is closed with 4401).
    NotAnAgent,
    /// HTTP: the request id is taken by other questions (a socket's ask is `rejected` at `id`).
    IdTaken,
    /// HTTP: the body does not hold a valid request; each error has its own code (a socket's
    /// ask is `rejected`).
    Invalid,
    /// HTTP: a query parameter that cannot be read, or the identity header sent twice.
    BadRequest,
}

impl ReplyCode {
    /// Every row, in the order of the table in docs/PROTOCOL.md.
    pub const ALL: [ReplyCode; 13] = [
        ReplyCode::BadFrame,
        ReplyCode::BadSession,
        ReplyCode::BadLink,
        ReplyCode::NotFound,
        ReplyCode::NotResolved,
        ReplyCode::Unavailable,
        ReplyCode::StoreFailed,
        ReplyCode::Forbidden,
        ReplyCode::WrongKey,
        ReplyCode::NotAnAgent,
        ReplyCode::IdTaken,
        ReplyCode::Invalid,
        ReplyCode::BadRequest,
    ];

    /// The code as a reply carries it: an `error` frame's `code` for the first eight, the
    /// HTTP error's `code` for the rest.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplyCode::BadFrame => "bad_frame",
            ReplyCode::BadSession => "bad_session",
            ReplyCode::BadLink => "bad_link",
            ReplyCode::NotFound => "not_found",
            ReplyCode::NotResolved => "not_resolved",
            ReplyCode::Unavailable => "unavailable",
            ReplyCode::StoreFailed => "store_failed",
            ReplyCode::Forbidden => "forbidden",
            ReplyCode::WrongKey
            | ReplyCode::NotAnAgent
            | ReplyCode::IdTaken
            | ReplyCode::Invalid
            | ReplyCode::BadRequest => ErrorCode::InvalidValue.as_str(),
        }
    }

    /// The kind of refusal an `error` frame's `code` names; `None` for a code this build does
    /// not know (a newer gateway's), or one only HTTP bodies carry.
    pub fn parse(code: &str) -> Option<ReplyCode> {
        ReplyCode::ALL[..8]
            .iter()
            .copied()
            .find(|row| row.as_str() == code)
    }

    /// Whether the same call, sent again unchanged, can succeed: after a pause (a limit, the
    /// store), or once the request has ended (`not_resolved`). The others need a change first.
    pub fn retry(self) -> bool {
        matches!(
            self,
            ReplyCode::NotResolved | ReplyCode::Unavailable | ReplyCode::StoreFailed
        )
    }

    /// The status the HTTP API answers this refusal with.
    pub fn http_status(self) -> u16 {
        match self {
            ReplyCode::BadFrame | ReplyCode::BadRequest => 400,
            ReplyCode::WrongKey => 401,
            ReplyCode::Forbidden | ReplyCode::NotAnAgent => 403,
            ReplyCode::BadSession | ReplyCode::NotFound => 404,
            ReplyCode::NotResolved | ReplyCode::IdTaken => 409,
            ReplyCode::BadLink | ReplyCode::Invalid => 422,
            ReplyCode::Unavailable | ReplyCode::StoreFailed => 503,
        }
    }

    /// The `code` of the one error an HTTP refusal of this kind carries; `None` where the
    /// errors are a check's own, each with its code (`too_long`, `missing_field`...).
    pub fn http_code(self) -> Option<ErrorCode> {
        match self {
            ReplyCode::BadFrame => Some(ErrorCode::InvalidJson),
            ReplyCode::Unavailable | ReplyCode::StoreFailed => Some(ErrorCode::Unavailable),
            ReplyCode::Forbidden => Some(ErrorCode::Forbidden),
            ReplyCode::BadSession
            | ReplyCode::NotFound
            | ReplyCode::NotResolved
            | ReplyCode::WrongKey
            | ReplyCode::NotAnAgent
            | ReplyCode::IdTaken => Some(ErrorCode::InvalidValue),
            ReplyCode::BadLink | ReplyCode::Invalid | ReplyCode::BadRequest => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frame codes clients match on: each reads back as its own row, and no two share one.
    #[test]
    fn frame_codes_round_trip() {
        let frame_rows = &ReplyCode::ALL[..8];
        for &row in frame_rows {
            assert_eq!(ReplyCode::parse(row.as_str()), Some(row), "{row:?}");
        }
        let mut codes: Vec<_> = frame_rows.iter().map(|row| row.as_str()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), frame_rows.len(), "{codes:?}");
        assert_eq!(ReplyCode::parse("brand_new"), None);
        // Only HTTP bodies say it; on a socket it would be a validation error's code.
        assert_eq!(ReplyCode::parse("invalid_value"), None);
    }

    /// The HTTP-only rows say what their one error's code says.
    #[test]
    fn http_only_rows_say_their_body_code() {
        for row in &ReplyCode::ALL[8..] {
            assert_eq!(row.as_str(), "invalid_value", "{row:?}");
            if let Some(code) = row.http_code() {
                assert_eq!(code.as_str(), row.as_str(), "{row:?}");
            }
        }
    }

    /// The statuses docs/PROTOCOL.md gives each refusal.
    #[test]
    fn statuses_are_the_documented_ones() {
        let statuses: Vec<_> = ReplyCode::ALL
            .iter()
            .map(|row| (row.as_str(), row.http_status()))
            .collect();
        assert_eq!(
            statuses,
            [
                ("bad_frame", 400),
                ("bad_session", 404),
                ("bad_link", 422),
                ("not_found", 404),
                ("not_resolved", 409),
                ("unavailable", 503),
                ("store_failed", 503),
                ("forbidden", 403),
                ("invalid_value", 401),
                ("invalid_value", 403),
                ("invalid_value", 409),
                ("invalid_value", 422),
                ("invalid_value", 400),
            ]
        );
    }

    /// Only waiting helps a limit, a store or an ack too early; everything else needs a change.
    #[test]
    fn retry_hints() {
        let retried: Vec<_> = ReplyCode::ALL
            .into_iter()
            .filter(|row| row.retry())
            .collect();
        assert_eq!(
            retried,
            [
                ReplyCode::NotResolved,
                ReplyCode::Unavailable,
                ReplyCode::StoreFailed
            ]
        );
        // The HTTP statuses agree: a 409 and the 503s, none of the 4xx that need a change.
        assert!(
            retried
                .iter()
                .all(|row| matches!(row.http_status(), 409 | 503))
        );
    }

    /// A refusal that is `unavailable` on the socket is `unavailable` in an HTTP body too.
    #[test]
    fn http_codes() {
        assert_eq!(
            ReplyCode::NotFound.http_code(),
            Some(ErrorCode::InvalidValue)
        );
        assert_eq!(
            ReplyCode::StoreFailed.http_code(),
            Some(ErrorCode::Unavailable)
        );
        assert_eq!(ReplyCode::Forbidden.http_code(), Some(ErrorCode::Forbidden));
        assert_eq!(
            ReplyCode::BadFrame.http_code(),
            Some(ErrorCode::InvalidJson)
        );
        assert_eq!(ReplyCode::Invalid.http_code(), None);
    }
}
