//! `GET /v1/audit?session=S&since=SEQ` (agent key): a session's audit trail as JSON lines,
//! the entries after `since` (default 0: all), oldest first, streamed a page at a time so a
//! long trail is never held whole.

use askgate_protocol::{ErrorCode, ReplyCode, SessionId};
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::http_checks::{ApiError, authorize_caller};
use crate::server::AppState;

/// Entries read from the store at a time.
const PAGE: usize = 1000;

/// `?session=S&since=SEQ`, read as text so a bad one is refused in JSON like every error.
#[derive(Deserialize)]
pub struct AuditQuery {
    session: Option<String>,
    since: Option<String>,
}

/// Where the stream is.
enum Page {
    /// Entries read, and the seq they follow.
    Read(Vec<String>, u64),
    /// Read the entries after this seq next.
    After(u64),
    /// Nothing more.
    Done,
}

/// `GET /v1/audit`.
pub async fn get_audit(
    State(state): State<AppState>,
    Query(query): Query<AuditQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let caller = authorize_caller(&state, &headers)?;
    let Some(session) = query.session.as_deref() else {
        return Err(ApiError::one(
            ReplyCode::BadRequest,
            "session",
            ErrorCode::MissingField,
            "required: the session whose trail to read (?session=S)",
        ));
    };
    caller.within(session)?;
    let session = SessionId::parse(session)
        .map_err(|m| ApiError::one(ReplyCode::BadRequest, "session", ErrorCode::InvalidValue, m))?;
    let since = match query.since.as_deref().map(str::trim) {
        None | Some("") => 0,
        Some(text) => text.parse::<u64>().map_err(|_| {
            ApiError::one(
                ReplyCode::BadRequest,
                "since",
                ErrorCode::InvalidValue,
                format!("must be an entry's seq (a whole number, 0 or more), got {text:?}"),
            )
        })?,
    };
    // The first page before the answer starts, so that a store that cannot be read is a 503
    // rather than a cut-off stream.
    let store = state.hub.store_handle();
    let first = store
        .trails()
        .audit(&session, since, PAGE)
        .await
        .map_err(|error| {
            ApiError::refuse(
                ReplyCode::Unavailable,
                "",
                format!("the audit trail could not be read ({error}); try again"),
            )
        })?;
    let pages = futures_util::stream::unfold(
        (Page::Read(first, since), store, session),
        |(page, store, session)| async move {
            let (lines, after) = match page {
                Page::Done => return None,
                Page::Read(lines, after) => (lines, after),
                Page::After(after) => match store.trails().audit(&session, after, PAGE).await {
                    Ok(lines) => (lines, after),
                    Err(error) => {
                        tracing::warn!(%session, %error, "an audit trail stopped being readable mid-stream");
                        let failed = Err(std::io::Error::other(error.to_string()));
                        return Some((failed, (Page::Done, store, session)));
                    }
                },
            };
            if lines.is_empty() {
                return None;
            }
            let next = if lines.len() == PAGE {
                Page::After(after + lines.len() as u64)
            } else {
                Page::Done
            };
            let mut body = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
            for line in &lines {
                body.push_str(line);
                body.push('\n');
            }
            Some((Ok::<_, std::io::Error>(body), (next, store, session)))
        },
    );
    let mut response = Body::from_stream(pages).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    Ok(response)
}
