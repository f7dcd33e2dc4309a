//! The ledger's unit tests: what is sent, re-sent and delivered, frame by frame.

use super::*;
use askgate_protocol::wire::AgentFrame;
use serde_json::Value;

fn key(id: &str) -> Key {
    ("s".to_owned(), id.to_owned())
}

fn outcome(id: &str) -> ToAgent {
    serde_json::from_value(json!({"type": "outcome", "session": "s", "id": id, "outcome": "answered",
        "response": {"answers": [], "cancelled": false}, "result": {}, "model_text": "{}", "by": "t", "at_ms": 1}))
    .unwrap()
}

fn accepted(id: &str) -> ToAgent {
    ToAgent::Accepted {
        session: "s".into(),
        id: id.into(),
        deadline_ms: None,
        viewer_url: "u".into(),
    }
}

fn kind(text: &str) -> String {
    let value: Value = serde_json::from_str(text).unwrap();
    value["type"].as_str().unwrap().to_owned()
}

#[test]
fn frames_are_agent_frames() {
    for text in [
        open_frame("s"),
        cancel_frame(&key("r")),
        ack_frame(&key("r")),
    ] {
        serde_json::from_str::<AgentFrame>(&text).unwrap();
    }
}

#[test]
fn an_outcome_is_delivered_once_and_always_acked() {
    let mut pending = Pending::default();
    let (reply, mut answer) = oneshot::channel();
    assert_eq!(
        pending
            .ask(key("r"), 1, "ask".into(), reply, true)
            .as_deref(),
        Some("ask")
    );
    assert_eq!(
        pending.receive(outcome("r")).map(|t| kind(&t)).as_deref(),
        Some("ack")
    );
    assert_eq!(answer.try_recv().unwrap().unwrap().id(), "r");
    assert_eq!(
        pending.receive(outcome("r")).map(|t| kind(&t)).as_deref(),
        Some("ack")
    );
    assert!(pending.is_idle());
}

/// The gateway refuses an `open` with an `error` that names no session: it answers the
/// oldest open in flight, and the others still get their `opened`.
#[test]
fn a_refused_open_fails_only_the_oldest_in_flight() {
    let mut pending = Pending::default();
    let (first, mut refused) = oneshot::channel();
    let (second, mut opened) = oneshot::channel();
    assert!(pending.open("new", first).is_some());
    assert!(pending.open("known", second).is_some());
    let error = ToAgent::Error {
        code: "unavailable".into(),
        message: "the gateway holds the most sessions allowed".into(),
        session: None,
        id: None,
    };
    assert!(pending.receive(error).is_none());
    assert!(matches!(
        refused.try_recv(),
        Ok(Err(ClientError::Gateway { code, .. })) if code == "unavailable"
    ));
    assert!(opened.try_recv().is_err(), "still waiting");
    let reply = ToAgent::Opened {
        session: "known".into(),
        viewer_url: "u".into(),
    };
    pending.receive(reply);
    assert_eq!(opened.try_recv().unwrap().unwrap().session, "known");
    assert!(pending.is_idle());
}

#[test]
fn withdrawals_are_sent_again_after_the_store_failed_on_one() {
    let mut pending = Pending::default();
    let (reply, _first) = oneshot::channel();
    pending.ask(key("r1"), 1, "ask r1".into(), reply, true);
    let (reply, _second) = oneshot::channel();
    pending.ask(key("r2"), 2, "ask r2".into(), reply, true);
    let (reply, _third) = oneshot::channel();
    pending.ask(key("r3"), 3, "ask r3".into(), reply, true);
    pending.receive(accepted("r1"));
    pending.receive(accepted("r2"));
    assert!(pending.withdraw(&key("r1"), 1).is_some());
    assert!(
        pending.withdraw(&key("r3"), 3).is_none(),
        "not accepted yet"
    );
    assert_eq!(pending.withdrawals_to_retry(), None, "nothing failed");
    let failed = ToAgent::Error {
        code: "store_failed".into(),
        message: "could not store".into(),
        session: Some("s".into()),
        id: Some("r1".into()),
    };
    assert_eq!(pending.receive(failed), None);
    // r1 only: r2 is still wanted, r3's cancel waits for its `accepted`.
    assert_eq!(
        pending.withdrawals_to_retry(),
        Some(vec![cancel_frame(&key("r1"))])
    );
    assert_eq!(pending.withdrawals_to_retry(), None, "once per failure");
}

#[test]
fn a_withdrawal_waits_for_accepted() {
    let mut pending = Pending::default();
    let (reply, _answer) = oneshot::channel();
    pending.ask(key("r"), 7, "ask".into(), reply, true);
    assert_eq!(
        pending.withdraw(&key("r"), 6),
        None,
        "another call's ticket"
    );
    assert_eq!(pending.withdraw(&key("r"), 7), None, "not accepted yet");
    assert_eq!(
        pending.receive(accepted("r")).map(|t| kind(&t)).as_deref(),
        Some("cancel")
    );
    // After a reconnect the ask goes again, and the cancel after its `accepted`.
    pending.disconnected();
    assert_eq!(pending.connected(), vec!["ask".to_owned()]);
    assert_eq!(
        pending.receive(accepted("r")).map(|t| kind(&t)).as_deref(),
        Some("cancel")
    );
    pending.receive(outcome("r"));
    assert!(pending.is_idle());
}

#[test]
fn reconnect_resends_acks_opens_and_asks_in_order() {
    let mut pending = Pending::default();
    let (a, _a) = oneshot::channel();
    let (b, _b) = oneshot::channel();
    let (c, _c) = oneshot::channel();
    let (o, _o) = oneshot::channel();
    pending.ask(key("done"), 1, "ask done".into(), a, true);
    pending.ask(key("1"), 2, "ask 1".into(), b, true);
    pending.ask(key("2"), 3, "ask 2".into(), c, true);
    pending.open("s", o);
    pending.receive(outcome("done"));
    let frames = pending.connected();
    assert_eq!(frames.len(), 4);
    assert_eq!(kind(&frames[0]), "ack");
    assert_eq!(kind(&frames[1]), "open");
    assert_eq!(frames[2..], ["ask 1".to_owned(), "ask 2".to_owned()]);
}

#[test]
fn an_ask_withdrawn_before_it_was_sent_is_dropped_not_asked() {
    let mut pending = Pending::default();
    let (reply, _answer) = oneshot::channel();
    pending.ask(key("r"), 1, "ask r".into(), reply, false);
    assert_eq!(pending.withdraw(&key("r"), 1), None);
    assert!(pending.is_idle());
    assert!(pending.connected().is_empty(), "nothing to show people");
}

#[test]
fn a_re_ask_after_an_ack_sends_the_ack_first_until_accepted() {
    let mut pending = Pending::default();
    let (reply, _first) = oneshot::channel();
    pending.ask(key("r"), 1, "ask r".into(), reply, true);
    assert_eq!(pending.receive(outcome("r")), Some(ack_frame(&key("r"))));
    // The ack may be lost with its socket: the re-ask goes after it on the next one,
    // else the gateway would answer it with the outcome the ack was for.
    let (reply, _second) = oneshot::channel();
    pending.ask(key("r"), 2, "ask r again".into(), reply, false);
    pending.disconnected();
    assert_eq!(
        pending.connected(),
        [ack_frame(&key("r")), "ask r again".to_owned()]
    );
    assert_eq!(pending.receive(accepted("r")), None);
    // Accepted after the ack on that socket: the gateway took both; an ack now would
    // forget the new request's outcome.
    pending.disconnected();
    assert_eq!(pending.connected(), ["ask r again".to_owned()]);
}

fn not_found(id: &str) -> ToAgent {
    ToAgent::Error {
        code: "not_found".into(),
        message: "no such request".into(),
        session: Some("s".into()),
        id: Some(id.into()),
    }
}

#[test]
fn a_cancel_the_gateway_cannot_place_ends_its_withdrawal() {
    let mut pending = Pending::default();
    // By id: the caller hears why.
    let (reply, mut answer) = oneshot::channel();
    let sent = pending.withdraw_request(key("r"), 1, reply, true);
    assert_eq!(sent, Some(cancel_frame(&key("r"))));
    assert_eq!(pending.receive(not_found("r")), None);
    assert!(matches!(
        answer.try_recv(),
        Ok(Err(ClientError::Gateway { code, .. })) if code == "not_found"
    ));
    // A dropped ask the gateway never held: nothing left to withdraw or re-send.
    let (reply, _dropped) = oneshot::channel();
    pending.ask(key("q"), 2, "ask q".into(), reply, true);
    pending.receive(accepted("q"));
    assert_eq!(
        pending.withdraw(&key("q"), 2),
        Some(cancel_frame(&key("q")))
    );
    assert_eq!(pending.receive(not_found("q")), None);
    assert!(pending.is_idle());
}

/// The gateway's refusal of a frame about request `id` of session `s` to a key bound to
/// other sessions.
fn forbidden(id: &str) -> ToAgent {
    ToAgent::Error {
        code: "forbidden".into(),
        message: "this agent key may act only on sessions whose id starts with \"team-a-\"".into(),
        session: Some("s".into()),
        id: Some(id.into()),
    }
}

/// An ack the key may not send is not sent again after a reconnect: it would be refused
/// every time. Other acks still are.
#[test]
fn a_forbidden_ack_is_not_sent_again() {
    let mut pending = Pending::default();
    assert_eq!(pending.acknowledge(key("r")), ack_frame(&key("r")));
    pending.acknowledge(key("other"));
    assert_eq!(pending.receive(forbidden("r")), None);
    pending.disconnected();
    assert_eq!(pending.connected(), [ack_frame(&key("other"))]);
}

/// A dropped ask's withdrawal the key may not send is given up rather than re-sent with
/// every reconnect; so is nothing else.
#[test]
fn a_forbidden_withdrawal_of_a_dropped_ask_is_given_up() {
    let mut pending = Pending::default();
    let (reply, _dropped) = oneshot::channel();
    pending.ask(key("q"), 1, "ask q".into(), reply, true);
    pending.receive(accepted("q"));
    assert_eq!(
        pending.withdraw(&key("q"), 1),
        Some(cancel_frame(&key("q")))
    );
    assert_eq!(pending.receive(forbidden("q")), None);
    assert!(pending.is_idle());
    pending.disconnected();
    assert!(pending.connected().is_empty());
}

/// A refused `open` (no session named) fails the oldest open in flight with `Forbidden`,
/// naming its session.
#[test]
fn a_forbidden_open_fails_the_oldest_in_flight() {
    let mut pending = Pending::default();
    let (first, mut refused) = oneshot::channel();
    let (second, mut waiting) = oneshot::channel();
    pending.open("team-b-1", first);
    pending.open("team-a-1", second);
    let error = ToAgent::Error {
        code: "forbidden".into(),
        message: "outside the key's scope".into(),
        session: None,
        id: None,
    };
    assert_eq!(pending.receive(error), None);
    assert!(matches!(
        refused.try_recv(),
        Ok(Err(ClientError::Forbidden { session, .. })) if session == "team-b-1"
    ));
    assert!(waiting.try_recv().is_err(), "still waiting");
}
