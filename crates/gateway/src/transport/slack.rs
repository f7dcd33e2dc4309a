//! `POST /v1/slack/interactions`: Slack's calls when someone clicks one of the app's buttons
//! or sends its reason modal.
//!
//! The body is taken only if Slack signed it ([`signature::verify`]), within five minutes of
//! this gateway's clock. A click answers as the person whose Slack id the notify file gives
//! the clicker, through the hub's first-wins ending ([`Hub::answer_by_link`]); the message
//! itself is updated by the notifier once the ending is kept, whoever ended it. A click that
//! changes nothing (an unknown clicker, one who may not answer, a request already ended, a
//! replayed click) is told why in a message only they see. Slack wants an answer within 3
//! seconds: the gateway answers by [`ANSWER_WITHIN`], and what is not done by then goes on
//! and tells the clicker when it is.
//!
//! [`Hub::answer_by_link`]: crate::hub::Hub::answer_by_link

use std::sync::Arc;
use std::time::{Duration, Instant};

use askgate_protocol::wire::Via;
use askgate_protocol::{Outcome, RequestId, SessionId};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::clock::now_ms;
use crate::hub::{EndedAs, Hub, LinkRefused, LinkState};
use crate::notify::Notifier;
use crate::notify::slack::blocks::{ButtonValue, reject_modal};
use crate::notify::slack::interactions::{self, Interaction};
use crate::notify::slack::{ephemeral, signature};
use crate::people::action_links::{ActionLink, link_expiry};
use crate::people::choices::Choice;
use crate::server::AppState;

/// How long an interaction may take before Slack is answered anyway (Slack gives 3 s).
pub(super) const ANSWER_WITHIN: Duration = Duration::from_millis(2500);
/// How long the calls an interaction makes (an ephemeral message, a modal) may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

fn plain(status: StatusCode, text: &str) -> Response {
    (status, text.to_owned()).into_response()
}

/// `POST /v1/slack/interactions`.
pub async fn slack_interactions(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(notifier) = state.hub.notifier().cloned() else {
        return plain(
            StatusCode::NOT_FOUND,
            "this gateway has no [slack] configured",
        );
    };
    let Some(api) = notifier.slack_api() else {
        return plain(
            StatusCode::NOT_FOUND,
            "this gateway has no [slack] configured",
        );
    };
    if body.len() > interactions::MAX_INTERACTION_BYTES {
        return plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the interaction is too large",
        );
    }
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Err(unsigned) = signature::verify(
        api.signing_secret(),
        header("x-slack-request-timestamp"),
        header("x-slack-signature"),
        &body,
        now_ms() / 1000,
    ) {
        let why = unsigned.reason();
        tracing::warn!(%why, "a Slack interaction was refused");
        return plain(StatusCode::UNAUTHORIZED, &why);
    }
    let interaction = match interactions::read(&body) {
        Ok(interaction) => interaction,
        Err(why) => {
            tracing::warn!(%why, "a signed Slack interaction could not be read");
            return plain(StatusCode::BAD_REQUEST, &why);
        }
    };
    let hub = Arc::clone(&state.hub);
    let handling = state
        .tracker
        .spawn(async move { handle(&hub, &notifier, interaction, Instant::now()).await });
    match tokio::time::timeout(ANSWER_WITHIN, handling).await {
        Ok(Ok(response)) => response,
        // Still going (it tells the clicker itself), or it panicked: Slack is answered.
        Ok(Err(_)) | Err(_) => StatusCode::OK.into_response(),
    }
}

/// Handles `interaction`, which came at `came`.
async fn handle(
    hub: &Arc<Hub>,
    notifier: &Notifier,
    interaction: Interaction,
    came: Instant,
) -> Response {
    match interaction {
        Interaction::Ignored => StatusCode::OK.into_response(),
        Interaction::Link {
            user,
            channel,
            value,
        } => {
            match own_link(hub, notifier, &user, &value).await {
                Ok(link) => {
                    let text = "Your own link to this request:";
                    tell(notifier, &channel, &user, text, Some(&link)).await;
                }
                Err(why) => tell(notifier, &channel, &user, &why, None).await,
            }
            StatusCode::OK.into_response()
        }
        Interaction::Choose {
            user,
            channel,
            value,
            choice,
            trigger_id,
        } => {
            let link = match click_link(notifier, &user, &value, choice) {
                Ok(link) => link,
                Err(why) => {
                    tell(notifier, &channel, &user, &why, None).await;
                    return StatusCode::OK.into_response();
                }
            };
            if let (Choice::Reject, Some(trigger_id)) = (choice, trigger_id) {
                return open_reject_modal(
                    hub,
                    notifier,
                    &link,
                    &value,
                    &trigger_id,
                    &channel,
                    &user,
                )
                .await;
            }
            if let Err(why) = answer(hub, &link, None).await {
                tell(notifier, &channel, &user, &why, None).await;
            }
            StatusCode::OK.into_response()
        }
        Interaction::Reject {
            user,
            value,
            reason,
        } => {
            let outcome = match click_link(notifier, &user, &value, Choice::Reject) {
                Ok(link) => answer(hub, &link, reason.as_deref()).await,
                Err(why) => Err(why),
            };
            match outcome {
                // An empty answer closes the modal.
                Ok(()) => StatusCode::OK.into_response(),
                // Slack has stopped waiting and closed the modal: told in the channel instead.
                Err(why) if came.elapsed() >= ANSWER_WITHIN => {
                    if let Some(channel) = &value.channel {
                        tell(notifier, channel, &user, &why, None).await;
                    }
                    StatusCode::OK.into_response()
                }
                Err(why) => axum::Json(json!({
                    "response_action": "errors",
                    "errors": {crate::notify::slack::blocks::REASON_INPUT: why},
                }))
                .into_response(),
            }
        }
    }
}

/// A personal link for the clicker of a channel post's page button, if they may answer its
/// request: good until the request's deadline (as a mail's), its issue in the audit trail.
async fn own_link(
    hub: &Arc<Hub>,
    notifier: &Notifier,
    user: &str,
    value: &ButtonValue,
) -> Result<String, String> {
    let person = person(notifier, user)?;
    let (Ok(session), Ok(request)) = (
        SessionId::parse(&value.session),
        RequestId::parse(&value.request),
    ) else {
        return Err("This button names no request askgate knows.".to_owned());
    };
    let deadline_ms = hub
        .may_answer_as(&session, &request, person)
        .await
        .map_err(|refused| refusal_words(refused, "Nothing was sent"))?;
    let now = now_ms();
    let ttl_s = (link_expiry(deadline_ms, now).saturating_sub(now) / 1000).max(1);
    let issued = hub
        .issue_link(&session, person, Some(&json!(ttl_s)))
        .await
        .map_err(|errors| {
            let why: Vec<String> = errors.iter().map(|e| e.message.clone()).collect();
            format!("askgate could not make your link ({}).", why.join("; "))
        })?;
    Ok(issued.url)
}

/// The person the notify file gives Slack user `user`, or why none.
fn person<'n>(notifier: &'n Notifier, user: &str) -> Result<&'n str, String> {
    notifier.person_of_slack(user).ok_or_else(|| {
        format!(
            "askgate does not know your Slack account ({user}) as a person, so nothing was \
             changed. Ask its operator to add `slack = \"{user}\"` to your entry in the notify \
             file."
        )
    })
}

/// The link a click makes: the clicker's person answering the button's request with its
/// choice. A click has no expiry of its own: Slack signed it just now.
fn click_link(
    notifier: &Notifier,
    user: &str,
    value: &ButtonValue,
    choice: Choice,
) -> Result<ActionLink, String> {
    let person = person(notifier, user)?;
    let (Ok(session), Ok(request)) = (
        SessionId::parse(&value.session),
        RequestId::parse(&value.request),
    ) else {
        return Err("This button names no request askgate knows; nothing was changed.".to_owned());
    };
    Ok(ActionLink {
        session,
        request,
        user: person.to_owned(),
        expires_ms: u64::MAX,
        choice,
        digest: value.digest.clone(),
    })
}

/// Answers `link`'s request; why not, in words for the clicker.
async fn answer(hub: &Arc<Hub>, link: &ActionLink, reason: Option<&str>) -> Result<(), String> {
    hub.answer_by_link(link, Via::Slack, reason)
        .await
        .map(drop)
        .map_err(|refused| refusal_words(refused, "Your click changed nothing"))
}

/// Why a click was refused, in words for the clicker; `outcome` says what became of it.
fn refusal_words(refused: LinkRefused, outcome: &str) -> String {
    match refused {
        LinkRefused::Ended(Some(ended)) => format!(
            "This request has already ended: {}. {outcome}.",
            ended_words(&ended)
        ),
        LinkRefused::Ended(None) => format!("This request has already ended. {outcome}."),
        LinkRefused::Gone => format!(
            "This request has ended and is no longer kept by askgate (or was asked again with \
             other questions). {outcome}."
        ),
        LinkRefused::Forbidden(why) => format!(
            "You may not answer this request: {}. {outcome}.",
            why.message()
        ),
        LinkRefused::Expired => format!("Your click came too late. {outcome}."),
        LinkRefused::Unavailable(error) => {
            format!("askgate could not save your answer ({error}). {outcome}; try again shortly.")
        }
    }
}

/// Opens the modal asking why, unless the clicker may not answer or the request has already
/// ended (then they are told why).
async fn open_reject_modal(
    hub: &Arc<Hub>,
    notifier: &Notifier,
    link: &ActionLink,
    value: &ButtonValue,
    trigger_id: &str,
    channel: &str,
    user: &str,
) -> Response {
    // One who may not answer is told so now, not after typing a reason.
    if let Err(refused) = hub
        .may_answer_as(&link.session, &link.request, &link.user)
        .await
    {
        let text = refusal_words(refused, "Your click changed nothing");
        tell(notifier, channel, user, &text, None).await;
        return StatusCode::OK.into_response();
    }
    let headline = match hub.link_state(link).await {
        LinkState::Open(request) => request
            .title
            .clone()
            .or_else(|| request.asked.first().cloned())
            .unwrap_or_default(),
        LinkState::Ended(_, ended) => {
            let text = format!(
                "This request has already ended: {}. Your click changed nothing.",
                ended_words(&ended)
            );
            tell(notifier, channel, user, &text, None).await;
            return StatusCode::OK.into_response();
        }
        LinkState::Gone | LinkState::Replaced => {
            let text = "This request is no longer kept by askgate; your click changed nothing.";
            tell(notifier, channel, user, text, None).await;
            return StatusCode::OK.into_response();
        }
    };
    let mut value = value.clone();
    value.channel = Some(channel.to_owned());
    let args = json!({"trigger_id": trigger_id, "view": reject_modal(&value.encode(), &headline)});
    if let Some(api) = notifier.slack_api()
        && let Err(error) = api.call("views.open", &args, CALL_TIMEOUT).await
    {
        // Slack may have opened it all the same (an answer that came too late): a reject
        // made here could not be taken back with its Cancel. The clicker tries again.
        tracing::warn!(%error, "the reason modal could not be opened");
        let text = "The reason dialog could not be opened, so nothing was changed. Click \
                    Reject again, or answer on the page.";
        tell(notifier, channel, user, text, None).await;
    }
    StatusCode::OK.into_response()
}

/// How a request ended, in words: "answered by alice in Slack".
fn ended_words(ended: &EndedAs) -> String {
    if ended.via == Some(Via::Default) {
        return "nobody answered in time, and the agent's default answer was given".to_owned();
    }
    let verb = match ended.outcome {
        Outcome::Answered => "answered",
        Outcome::Declined => "declined",
        Outcome::TimedOut => "nobody answered in time",
        Outcome::Withdrawn => match ended.via {
            Some(Via::Operator) => "withdrawn by an operator",
            Some(Via::Gateway) => "withdrawn by the gateway (its agent was gone too long)",
            _ => "withdrawn by the agent",
        },
    };
    let mut words = verb.to_owned();
    if let Some(user) = &ended.user {
        words.push_str(" by ");
        words.push_str(user);
    }
    if let (Some(via), Outcome::Answered | Outcome::Declined) = (ended.via, ended.outcome) {
        words.push_str(match via {
            Via::Slack => " in Slack",
            Via::Email => " from a mail",
            _ => " in askgate",
        });
    }
    words
}

/// Tells `user` privately in `channel`; a failure is logged (the click's own result stands).
async fn tell(notifier: &Notifier, channel: &str, user: &str, text: &str, link: Option<&str>) {
    let Some(api) = notifier.slack_api() else {
        return;
    };
    let args: Value = ephemeral(channel, user, text, link);
    if let Err(error) = api.call("chat.postEphemeral", &args, CALL_TIMEOUT).await {
        tracing::warn!(%error, %user, "a Slack user could not be told why their click changed nothing");
    }
}
