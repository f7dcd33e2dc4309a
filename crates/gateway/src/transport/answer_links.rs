//! `GET /a/{key}` and `POST /a/{key}`: a mail's answer link.
//!
//! GET never acts: mail scanners and link previews fetch every link in a mail, so opening one
//! only shows the question, the answer the link gives, and a button. The button POSTs back to
//! the same address, and that answers, as the person the key names, through the hub's
//! first-wins ending ([`Hub::answer_by_link`](crate::hub::Hub::answer_by_link)).
//!
//! The key is the capability: a page elsewhere cannot post to a key it was never mailed. A
//! POST whose `Origin` is present and not the public URL's is refused all the same, so that a
//! key leaked into another site's page cannot be used from it without a click here.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;

use askgate_protocol::wire::Via;

use super::link_page;
use crate::clock::now_ms;
use crate::hub::{LinkRefused, LinkState};
use crate::people::action_links::{ActionLink, LinkRefusal};
use crate::server::AppState;

/// The page of a key that cannot be used.
fn refused_key(refusal: LinkRefusal) -> Response {
    match refusal {
        LinkRefusal::Forged => link_page::refused(
            StatusCode::FORBIDDEN,
            "This link does not work",
            &refusal.reason(),
        ),
        LinkRefusal::Expired(_) => {
            link_page::refused(StatusCode::GONE, "This link has expired", &refusal.reason())
        }
    }
}

/// The link's key, checked at this moment.
fn read_key(state: &AppState, key: &str) -> Result<ActionLink, LinkRefusal> {
    state.hub.keys().read_action(key, now_ms())
}

/// The page of a request the hub no longer holds as the mail's.
fn gone() -> Response {
    link_page::refused(
        StatusCode::GONE,
        "This request has ended",
        "The request this mail asked has ended and is no longer kept by the gateway, or it \
         was asked again with other questions. Nothing was changed by this link.",
    )
}

/// `GET /a/{key}`: the question and the button; nothing is answered.
pub async fn open_link(State(state): State<AppState>, Path(key): Path<String>) -> Response {
    let link = match read_key(&state, &key) {
        Ok(link) => link,
        Err(refusal) => return refused_key(refusal),
    };
    match state.hub.link_state(&link).await {
        LinkState::Open(request) => link_page::confirm(&request, &link.user, link.expires_ms),
        LinkState::Ended(request, ending) => {
            link_page::ended(StatusCode::OK, Some(&request), Some(&ending))
        }
        LinkState::Gone | LinkState::Replaced => gone(),
    }
}

/// Whether a POST carrying `headers` may come from a page other than the public URL's.
fn cross_site(state: &AppState, headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return false;
    };
    let ours = state.hub.keys().public_origin();
    ours.is_none_or(|ours| origin.as_bytes() != ours.as_bytes())
}

/// `POST /a/{key}`: answers as the person the key names.
pub async fn answer_link(
    State(state): State<AppState>,
    Path(key): Path<String>,
    headers: HeaderMap,
) -> Response {
    if cross_site(&state, &headers) {
        return link_page::refused(
            StatusCode::FORBIDDEN,
            "Not sent from this gateway's page",
            "This answer came from a page on another site, so it was not taken. Open the \
             link from your mail and press its button there.",
        );
    }
    let link = match read_key(&state, &key) {
        Ok(link) => link,
        Err(refusal) => return refused_key(refusal),
    };
    match state.hub.answer_by_link(&link, Via::Email, None).await {
        Ok(request) => link_page::recorded(&request, &link.user),
        Err(LinkRefused::Ended(ending)) => {
            let request = match state.hub.link_state(&link).await {
                LinkState::Open(request) | LinkState::Ended(request, _) => Some(request),
                LinkState::Gone | LinkState::Replaced => None,
            };
            link_page::ended(StatusCode::CONFLICT, request.as_ref(), ending.as_ref())
        }
        Err(LinkRefused::Gone) => gone(),
        Err(LinkRefused::Forbidden(why)) => link_page::refused(
            StatusCode::FORBIDDEN,
            "You may not answer this request",
            &why.message(),
        ),
        Err(LinkRefused::Expired) => refused_key(LinkRefusal::Expired(link.expires_ms)),
        Err(LinkRefused::Unavailable(error)) => link_page::refused(
            StatusCode::SERVICE_UNAVAILABLE,
            "Your answer could not be saved",
            &format!("The gateway could not save your answer ({error}). Try again shortly."),
        ),
    }
}
