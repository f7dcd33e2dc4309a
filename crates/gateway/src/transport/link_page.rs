//! The pages of a mail's answer link, written by the gateway itself: no script, one embedded
//! stylesheet (`link_page.css`, allowed by its hash and nothing else), and every piece of
//! agent text escaped with its direction controls shown ([`crate::shown_text`]).
//!
//! The key is in the page's URL, so no page sends a referrer to another origin (`same-origin`,
//! not `no-referrer`: under `no-referrer` a browser posts the form with `Origin: null`, which
//! the POST refuses), and none is cached or framed.

use std::sync::LazyLock;

use askgate_protocol::Outcome;
use askgate_protocol::wire::Via;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use crate::hub::{EndedAs, LinkedRequest};
use crate::notify::delivery::rfc3339;
use crate::people::choices::Choice;
use crate::shown_text::{escape, html, plain};

const STYLE: &str = include_str!("link_page.css");

/// Nothing but the embedded stylesheet, and forms posted back to this origin.
static CONTENT_SECURITY_POLICY: LazyLock<String> = LazyLock::new(|| {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(STYLE));
    format!(
        "default-src 'none'; style-src 'sha256-{hash}'; form-action 'self'; \
         frame-ancestors 'none'; base-uri 'none'"
    )
});

/// A page: its status, its `<title>` (plain text, direction controls named: a title holds no
/// markup to mark them with) and the inside of its card (HTML).
fn page(status: StatusCode, title: &str, card: &str) -> Response {
    let body = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <meta name=\"referrer\" content=\"same-origin\">\n<title>{} · askgate</title>\n\
         <style>{STYLE}</style>\n</head>\n<body>\n<header><p>askgate</p></header>\n\
         <main>\n<div class=\"card\">\n{card}</div>\n</main>\n</body>\n</html>\n",
        escape(&plain(title))
    );
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(policy) = HeaderValue::from_str(&CONTENT_SECURITY_POLICY) {
        headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    }
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The request's heading and what it asks (each question its own paragraph).
fn asked(request: &LinkedRequest) -> String {
    let headline = request
        .title
        .clone()
        .or_else(|| request.asked.first().cloned())
        .unwrap_or_else(|| "A question for you".to_owned());
    let mut out = format!("<h1><bdi>{}</bdi></h1>\n", html(&headline));
    for question in &request.asked {
        if *question != headline {
            out.push_str(&format!(
                "<p class=\"asked\"><bdi>{}</bdi></p>\n",
                html(question)
            ));
        }
    }
    out
}

/// The answer the link gives, in a box.
fn chosen(request: &LinkedRequest, lead: &str) -> String {
    let mut out = format!(
        "<p class=\"choice\">{lead} <span class=\"choice-label\"><bdi>{}</bdi></span>",
        html(&request.offer.label)
    );
    if let Some(description) = &request.offer.description {
        out.push_str(&format!(
            "<br><span class=\"choice-description\"><bdi>{}</bdi></span>",
            html(description)
        ));
    }
    out.push_str("</p>\n");
    out
}

fn title_of(request: &LinkedRequest) -> String {
    request
        .title
        .clone()
        .or_else(|| request.asked.first().cloned())
        .unwrap_or_else(|| "A question".to_owned())
}

/// The button's words.
fn button(request: &LinkedRequest) -> String {
    match request.offer.choice {
        Choice::Option(_) => format!("Answer “{}”", html(&request.offer.label)),
        Choice::Approve => "Approve".to_owned(),
        Choice::Reject => "Reject".to_owned(),
    }
}

/// An open request: what it asks, the answer the link gives, and the one button that gives
/// it. Opening the link changes nothing (mail scanners open every link); the button does.
pub(super) fn confirm(request: &LinkedRequest, user: &str, expires_ms: u64) -> Response {
    let mut card = asked(request);
    card.push_str(&chosen(request, "Your answer:"));
    card.push_str(&format!(
        "<form method=\"post\">\n<button type=\"submit\">{}</button>\n</form>\n",
        button(request)
    ));
    card.push_str(&format!(
        "<p class=\"note\">You answer as <bdi>{}</bdi>. Nothing is sent until you press the \
         button. This link works until {}.</p>\n",
        html(user),
        rfc3339(expires_ms)
    ));
    page(StatusCode::OK, &title_of(request), &card)
}

/// The answer was taken.
pub(super) fn recorded(request: &LinkedRequest, user: &str) -> Response {
    let mut card = asked(request);
    card.push_str(&format!(
        "<p class=\"status\" data-kind=\"ok\" role=\"status\">Your answer was recorded, as \
         <bdi>{}</bdi>; the agent has it.</p>\n",
        html(user)
    ));
    card.push_str(&chosen(request, "You answered:"));
    page(StatusCode::OK, &title_of(request), &card)
}

/// How an ending reads: who ended it, how they were known, and when.
fn ending_words(ended: &EndedAs) -> String {
    let who = ended
        .user
        .as_deref()
        .map(|user| format!(" by <bdi>{}</bdi>", html(user)))
        .unwrap_or_default();
    let how = match ended.via {
        Some(Via::Email) => " from a mail's link",
        Some(Via::Slack) => " in Slack",
        Some(Via::PersonalLink) => " through a personal link",
        Some(Via::Proxy) => " through the sign-in proxy",
        Some(
            Via::SessionLink | Via::Default | Via::Agent | Via::Operator | Via::Gateway | Via::Rule,
        )
        | None => "",
    };
    let at = rfc3339(ended.at_ms);
    if ended.via == Some(Via::Default) {
        return format!("Nobody answered in time: the agent's default answer was given at {at}.");
    }
    if ended.via == Some(Via::Rule) {
        return format!("Already approved at {at} by a remembered approval{who}.");
    }
    match ended.outcome {
        Outcome::Answered => format!("Already answered{who}{how}, at {at}."),
        Outcome::Declined => format!("Already declined{who}{how}, at {at}."),
        Outcome::TimedOut => format!("This request timed out at {at}: nobody answered in time."),
        Outcome::Withdrawn => match ended.via {
            Some(Via::Operator) => format!("An operator withdrew this request at {at}."),
            Some(Via::Gateway) => format!(
                "The gateway withdrew this request at {at}: its agent had been gone too long."
            ),
            _ => format!("The agent withdrew this request at {at}."),
        },
    }
}

/// The request ended before this link's answer: how, and who answered. `status` is 200 for
/// a link opened, 409 for an answer sent.
pub(super) fn ended(
    status: StatusCode,
    request: Option<&LinkedRequest>,
    ending: Option<&EndedAs>,
) -> Response {
    let mut card = request.map(asked).unwrap_or_default();
    let words = ending.map_or_else(
        || "This request has already ended.".to_owned(),
        ending_words,
    );
    card.push_str(&format!(
        "<p class=\"status\" data-kind=\"ended\" role=\"status\">{words}</p>\n\
         <p class=\"note\">Nothing was changed by this link.</p>\n"
    ));
    let title = request.map_or_else(|| "Already ended".to_owned(), title_of);
    page(status, &title, &card)
}

/// The link cannot be used: `status` (4xx or 503), a heading and why. No form.
pub(super) fn refused(status: StatusCode, heading: &str, why: &str) -> Response {
    let card = format!(
        "<h1>{}</h1>\n<p class=\"status\" data-kind=\"refused\" role=\"alert\">{}</p>\n",
        escape(heading),
        html(why)
    );
    page(status, heading, &card)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_the_embedded_style_and_nothing_else() {
        let policy = &*CONTENT_SECURITY_POLICY;
        assert!(policy.starts_with("default-src 'none'; style-src 'sha256-"));
        assert!(!policy.contains("script-src"));
        let response = refused(StatusCode::FORBIDDEN, "No", "<b>why</b>");
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            response.headers()[header::REFERRER_POLICY],
            HeaderValue::from_static("same-origin")
        );
    }

    #[test]
    fn an_ending_names_who_and_how() {
        let ending = EndedAs {
            outcome: Outcome::Answered,
            user: Some("alice@example.com".into()),
            via: Some(Via::Email),
            at_ms: 0,
        };
        assert_eq!(
            ending_words(&ending),
            "Already answered by <bdi>alice@example.com</bdi> from a mail's link, at \
             1970-01-01T00:00:00.000Z."
        );
        let timed_out = EndedAs {
            outcome: Outcome::TimedOut,
            user: None,
            via: None,
            at_ms: 0,
        };
        assert!(ending_words(&timed_out).starts_with("This request timed out"));
    }
}
