//! What a mail about a request says: its subject, its text part and its HTML part, with the
//! links signed for the person it goes to.
//!
//! Everything in it that an agent wrote (the title, the questions, the options, a call's
//! name and arguments) is shown as text: escaped in the HTML part, each direction control
//! shown as the answer page shows it ([`crate::shown_text`]), and kept off the subject's
//! line ends. A mail client renders the HTML part without the gateway's stylesheet, so its
//! few styles are inline.

use crate::audit::questions_digest;
use crate::keys::ViewerKeys;
use crate::notify::delivery::Told;
use crate::people::action_links::{ActionLink, link_expiry, short_digest};
use crate::people::choices::{self, Offer};
use crate::shown_text::{escape, html, plain};

/// What the subject starts with, so mail from the gateway can be told and filtered.
pub const SUBJECT_PREFIX: &str = "[askgate] ";
/// Most characters of agent text in a subject (a title is at most 200 already).
pub const MAX_SUBJECT_CHARS: usize = 200;
/// Most characters of a call's arguments shown in a mail; the page shows them whole.
pub const MAX_ARGS_CHARS: usize = 2_000;

/// A mail, ready for the builder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailContent {
    /// The subject, on one line.
    pub subject: String,
    /// The `text/plain` part.
    pub text: String,
    /// The `text/html` part.
    pub html: String,
}

/// A link in the mail: what it is called, what it does, and where it goes.
struct Link {
    label: String,
    description: Option<String>,
    url: String,
}

/// The mail to `person` for a notification whose body is `body`, made at `created_ms` (every
/// try of it makes the same mail, links and all).
///
/// # Errors
/// The body is not a request notification this gateway wrote.
pub fn compose(
    keys: &ViewerKeys,
    person: &str,
    body: &str,
    created_ms: u64,
) -> Result<MailContent, String> {
    let told = Told::read(body)?;
    let asked = choices::asked(&told.questions);
    let expires_ms = link_expiry(told.deadline_ms, created_ms);
    let digest = short_digest(&questions_digest(told.dialect, &told.questions));
    let links: Vec<Link> = choices::offers(told.dialect, &told.questions)
        .into_iter()
        .map(
            |Offer {
                 choice,
                 label,
                 description,
             }| {
                let link = ActionLink {
                    session: told.session.clone(),
                    request: told.id.clone(),
                    user: person.to_owned(),
                    expires_ms,
                    choice,
                    digest: digest.clone(),
                };
                Link {
                    label,
                    description,
                    url: keys.action_url(&link),
                }
            },
        )
        .collect();
    let page = keys.personal_url(&told.session, person, expires_ms);
    let headline = told
        .title
        .clone()
        .or_else(|| asked.first().cloned())
        .unwrap_or_else(|| "A question for you".to_owned());
    let reminder = told.kind == "request.reminded";
    let subject = subject_line(&headline, reminder);
    let details = choices::call_details(told.dialect, &told.questions, MAX_ARGS_CHARS);
    let until = crate::notify::delivery::rfc3339(expires_ms);
    let parts = TextParts {
        headline: &headline,
        asked: &asked,
        details: details.as_deref(),
        links: &links,
        page: &page,
        person,
        until: &until,
        session: told.session.as_str(),
    };
    let (text, html) = (text_part(&parts), html_part(&parts));
    Ok(MailContent {
        subject,
        text,
        html,
    })
}

/// `[askgate] ` and the headline on one line: line ends and other control characters become
/// spaces (the builder encodes the header; this keeps it one line of text), direction
/// controls are named, and a long headline is cut.
fn subject_line(headline: &str, reminder: bool) -> String {
    let one_line: String = plain(headline)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut shown: String = one_line.trim().chars().take(MAX_SUBJECT_CHARS).collect();
    if one_line.trim().chars().count() > MAX_SUBJECT_CHARS {
        shown.push('…');
    }
    let reminded = if reminder { "Reminder: " } else { "" };
    format!("{SUBJECT_PREFIX}{reminded}{shown}")
}

/// What both parts say.
struct TextParts<'a> {
    headline: &'a str,
    asked: &'a [String],
    details: Option<&'a str>,
    links: &'a [Link],
    page: &'a str,
    person: &'a str,
    until: &'a str,
    session: &'a str,
}

fn text_part(parts: &TextParts<'_>) -> String {
    let mut out = String::new();
    out.push_str(&plain(parts.headline));
    out.push_str("\n\n");
    for question in parts.asked {
        if question != parts.headline {
            out.push_str(&plain(question));
            out.push_str("\n\n");
        }
    }
    if let Some(details) = parts.details {
        out.push_str(&plain(details));
        out.push_str("\n\n");
    }
    if !parts.links.is_empty() {
        out.push_str("Answer with one link (each opens a page that asks you to confirm):\n\n");
        for link in parts.links {
            out.push_str("  ");
            out.push_str(&plain(&link.label));
            if let Some(description) = &link.description {
                out.push_str(" (");
                out.push_str(&plain(description));
                out.push(')');
            }
            out.push_str(":\n  ");
            out.push_str(&link.url);
            out.push_str("\n\n");
        }
        out.push_str("Or answer in askgate:\n  ");
    } else {
        out.push_str("Answer in askgate:\n  ");
    }
    out.push_str(parts.page);
    out.push_str("\n\n");
    out.push_str(&footer(parts));
    out.push('\n');
    out
}

fn footer(parts: &TextParts<'_>) -> String {
    format!(
        "These links are for {} alone and answer as them; they work until {}. \
         Session {}.",
        plain(parts.person),
        parts.until,
        plain(parts.session)
    )
}

/// An inline style for a link that reads as a button, in colours that keep their contrast
/// whether the client shows the mail light or dark.
const BUTTON: &str = "display:inline-block;margin:0 0 8px;padding:10px 16px;border-radius:6px;\
    background:#1d4ed8;color:#ffffff;text-decoration:none;font-weight:600";

/// How a direction control's mark looks, as on the page: its name in a dashed box, isolated
/// from the text's direction.
const MARK_STYLE: &str = "<style>.bidi-mark{display:inline-block;unicode-bidi:isolate;\
    margin:0 0.125em;padding:0 0.3em;border:1px dashed currentColor;border-radius:0.25rem;\
    font-family:monospace;font-size:0.75em;font-weight:600;white-space:nowrap}</style>";

fn html_part(parts: &TextParts<'_>) -> String {
    let mut out = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">",
    );
    out.push_str(&format!(
        "<title>{}</title>",
        escape(&plain(parts.headline))
    ));
    out.push_str(MARK_STYLE);
    out.push_str(
        "</head>\n<body style=\"font-family:system-ui,sans-serif;line-height:1.5\">\n<main>\n",
    );
    out.push_str(&format!(
        "<h1 style=\"font-size:1.25em\"><bdi>{}</bdi></h1>\n",
        html(parts.headline)
    ));
    for question in parts.asked {
        if question != parts.headline {
            out.push_str(&format!(
                "<p style=\"white-space:pre-wrap\"><bdi>{}</bdi></p>\n",
                html(question)
            ));
        }
    }
    if let Some(details) = parts.details {
        out.push_str(&format!(
            "<pre style=\"white-space:pre-wrap;overflow-wrap:anywhere\"><bdi>{}</bdi></pre>\n",
            html(details)
        ));
    }
    if !parts.links.is_empty() {
        out.push_str(
            "<p>Answer with one link (each opens a page that asks you to confirm):</p>\n<ul>\n",
        );
        for link in parts.links {
            out.push_str(&format!(
                "<li style=\"list-style:none\"><a href=\"{}\" style=\"{BUTTON}\"><bdi>{}</bdi></a>",
                escape(&link.url),
                html(&link.label)
            ));
            if let Some(description) = &link.description {
                out.push_str(&format!(" <bdi>{}</bdi>", html(description)));
            }
            out.push_str("</li>\n");
        }
        out.push_str("</ul>\n");
        out.push_str(&format!(
            "<p>Or <a href=\"{}\">answer in askgate</a>.</p>\n",
            escape(parts.page)
        ));
    } else {
        out.push_str(&format!(
            "<p><a href=\"{}\" style=\"{BUTTON}\">Answer in askgate</a></p>\n",
            escape(parts.page)
        ));
    }
    out.push_str(&format!(
        "<p style=\"font-size:0.875em\">{}</p>\n</main>\n</body></html>\n",
        html(&footer(parts))
    ));
    out
}

#[cfg(test)]
mod tests {
    use askgate_protocol::{Dialect, SessionId};
    use serde_json::{Value, json};

    use super::*;
    use crate::people::action_links::LinkRefusal;
    use crate::people::choices::Choice;

    fn keys() -> ViewerKeys {
        ViewerKeys::new(b"secret", "https://askgate.example")
    }

    fn body(title: Option<&str>, questions: &Value, deadline_ms: Option<u64>) -> String {
        let mut data = json!({"session": "s1", "id": "r1", "dialect": "harness",
            "questions": questions, "answerers": ["alice@example.com"],
            "deadline_ms": deadline_ms, "url": "https://askgate.example/s/s1#k=x"});
        if let Some(title) = title {
            data["title"] = json!(title);
        }
        json!({"type": "request.opened", "timestamp": "2026-12-06T12:00:00.000Z", "data": data})
            .to_string()
    }

    fn colours() -> Value {
        json!([{"header": "Colour", "question": "Which <colour>?", "multi_select": false,
                "options": [{"label": "Red", "description": "warm"},
                            {"label": "Blue\u{202E}", "description": null}]}])
    }

    /// Every `href` of the HTML part.
    fn hrefs(html: &str) -> Vec<String> {
        html.split("href=\"")
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap().replace("&amp;", "&"))
            .collect()
    }

    #[test]
    fn the_subject_is_the_title_or_the_first_question_on_one_line() {
        let mail = compose(
            &keys(),
            "alice@example.com",
            &body(Some("Ship\r\nBcc: x@evil\u{202E}?"), &colours(), None),
            0,
        )
        .unwrap();
        assert_eq!(mail.subject, "[askgate] Ship  Bcc: x@evil[RLO]?");
        let untitled = compose(
            &keys(),
            "alice@example.com",
            &body(None, &colours(), None),
            0,
        )
        .unwrap();
        assert_eq!(untitled.subject, "[askgate] Which <colour>?");
        let long = "x".repeat(300);
        let cut = subject_line(&long, false);
        assert_eq!(
            cut.chars().count(),
            SUBJECT_PREFIX.len() + MAX_SUBJECT_CHARS + 1
        );
        assert!(subject_line("Q", true).starts_with("[askgate] Reminder: Q"));
    }

    #[test]
    fn agent_text_is_inert_and_its_direction_controls_are_shown() {
        let hostile = "<img src=x onerror=alert(1)>\u{202E}gnp.exe";
        let mail = compose(
            &keys(),
            "alice@example.com",
            &body(Some(hostile), &colours(), None),
            0,
        )
        .unwrap();
        assert!(!mail.html.contains("<img"), "{}", mail.html);
        assert!(mail.html.contains("&lt;img src=x onerror=alert(1)&gt;"));
        assert!(!mail.html.contains('\u{202E}') && !mail.text.contains('\u{202E}'));
        assert!(mail.html.contains(">RLO</span>gnp.exe"), "{}", mail.html);
        assert!(
            mail.text
                .starts_with("<img src=x onerror=alert(1)>[RLO]gnp.exe\n")
        );
        assert!(mail.html.contains("Which &lt;colour&gt;?"));
        assert!(mail.text.contains("Which <colour>?"));
        assert!(mail.html.contains("<bdi>Blue<span class=\"bidi-mark\""));
    }

    #[test]
    fn each_option_is_a_link_signed_for_the_person_and_the_deadline() {
        let keys = keys();
        let mail = compose(
            &keys,
            "alice@example.com",
            &body(None, &colours(), Some(90_000)),
            1_000,
        )
        .unwrap();
        let links = hrefs(&mail.html);
        assert_eq!(links.len(), 3, "{links:?}");
        let digest = short_digest(&questions_digest(Dialect::HARNESS, &colours()));
        for (index, url) in links[..2].iter().enumerate() {
            assert!(mail.text.contains(url.as_str()), "{url} in the text part");
            let key = url
                .strip_prefix("https://askgate.example/a/")
                .expect("an answer link");
            let link = keys.read_action(key, 89_999).unwrap();
            assert_eq!(link.user, "alice@example.com");
            assert_eq!(link.session.as_str(), "s1");
            assert_eq!(link.request.as_str(), "r1");
            assert_eq!(link.expires_ms, 90_000, "the request's deadline");
            assert_eq!(link.choice, Choice::Option(index as u8));
            assert_eq!(link.digest, digest);
            assert_eq!(
                keys.read_action(key, 90_000),
                Err(LinkRefusal::Expired(90_000))
            );
        }
        // The page, as alice, until the same moment.
        let page = keys.personal_url(
            &SessionId::parse("s1").unwrap(),
            "alice@example.com",
            90_000,
        );
        assert_eq!(links[2], page);
        assert!(mail.text.contains("Red (warm):\n"));
    }

    #[test]
    fn a_request_links_cannot_answer_gets_one_link_to_the_page() {
        let keys = keys();
        let two = json!([
            {"header": "A", "question": "First?", "multi_select": false,
             "options": [{"label": "Yes", "description": null}]},
            {"header": "B", "question": "Second?", "multi_select": true,
             "options": [{"label": "No", "description": null}]}]);
        let mail = compose(&keys, "bob@example.com", &body(None, &two, None), 1_000).unwrap();
        let links = hrefs(&mail.html);
        let page = keys.personal_url(
            &SessionId::parse("s1").unwrap(),
            "bob@example.com",
            1_000 + crate::people::action_links::UNDATED_LINK_TTL_MS,
        );
        assert_eq!(links, std::slice::from_ref(&page));
        assert!(mail.html.contains(">Answer in askgate</a>"));
        assert!(
            mail.text
                .contains(&format!("Answer in askgate:\n  {page}\n"))
        );
        assert!(mail.text.contains("First?") && mail.text.contains("Second?"));
    }

    #[test]
    fn an_approval_shows_its_call_and_links_its_decisions() {
        let calls = json!([{"name": "deploy<prod>", "args": {"force": true},
            "description": "Ships it", "decisions": ["approve", "reject"], "edit_check": "object"}]);
        let mut told: Value = serde_json::from_str(&body(None, &calls, None)).unwrap();
        told["data"]["dialect"] = json!("approval");
        let mail = compose(&keys(), "alice@example.com", &told.to_string(), 0).unwrap();
        assert_eq!(mail.subject, "[askgate] Run deploy<prod>?");
        assert!(mail.html.contains("Run deploy&lt;prod&gt;?"));
        assert!(mail.text.contains("\"force\": true"));
        let links = hrefs(&mail.html);
        assert_eq!(links.len(), 3, "approve, reject, the page");
        let key = links[1].rsplit('/').next().unwrap();
        assert_eq!(keys().read_action(key, 0).unwrap().choice, Choice::Reject);
    }

    #[test]
    fn a_body_that_is_not_a_request_notification_is_refused() {
        for bad in ["", "{}", r#"{"data": {"session": "s1"}}"#] {
            assert!(compose(&keys(), "a@b", bad, 0).is_err(), "{bad}");
        }
    }
}
