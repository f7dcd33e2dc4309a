//! The frames: round trips, and each check of an ask.

use serde_json::{Value, json};

use super::ask::MAX_TIMEOUT_MS;
use super::*;

fn ask(value: Value) -> AskFrame {
    match serde_json::from_value(value).unwrap() {
        AgentFrame::Ask(frame) => *frame,
        other => panic!("not an ask: {other:?}"),
    }
}

fn questions() -> Value {
    json!([{"header": "Color", "question": "Which?", "options": [{"label": "Red"}, {"label": "Blue"}]}])
}

#[test]
fn a_good_ask_checks() {
    let frame = ask(
        json!({"type": "ask", "session": "s1", "id": "r1", "questions": questions(), "timeout_s": 1.5, "title": " Deploy "}),
    );
    let checked = frame.check(86_400.0).unwrap();
    assert_eq!(checked.session.as_str(), "s1");
    assert_eq!(checked.timeout_ms, Some(1500));
    assert_eq!(checked.title.as_deref(), Some("Deploy"));
}

#[test]
fn any_positive_timeout_is_taken_when_no_limit_is_set() {
    let timeout = |seconds: Value| {
        let frame = ask(
            json!({"type": "ask", "session": "s", "questions": questions(), "timeout_s": seconds}),
        );
        frame.check(f64::INFINITY).map(|checked| checked.timeout_ms)
    };
    assert_eq!(timeout(json!(30 * 24 * 3600)), Ok(Some(2_592_000_000)));
    assert_eq!(timeout(json!(1e-9)), Ok(Some(1)));
    assert_eq!(timeout(json!(1e300)), Ok(Some(MAX_TIMEOUT_MS)));
    assert_eq!(timeout(json!(u64::MAX)), Ok(Some(MAX_TIMEOUT_MS)));
    let frame =
        ask(json!({"type": "ask", "session": "s", "questions": questions(), "timeout_s": 61}));
    let errors = frame.check(60.0).unwrap_err();
    assert_eq!(errors[0].message, "at most 60 seconds, got 61");
}

#[test]
fn a_title_may_hold_any_text_up_to_200_characters() {
    let title = "👩\u{200d}💻 Review\nsecond line \u{1FAE8}\u{ad}";
    let frame =
        ask(json!({"type": "ask", "session": "s", "questions": questions(), "title": title}));
    assert_eq!(frame.check(60.0).unwrap().title.as_deref(), Some(title));
    let longest = "é".repeat(200);
    let frame =
        ask(json!({"type": "ask", "session": "s", "questions": questions(), "title": longest}));
    assert!(frame.check(60.0).is_ok());
    let frame = ask(
        json!({"type": "ask", "session": "s", "questions": questions(), "title": longest + "x"}),
    );
    let errors = frame.check(60.0).unwrap_err();
    assert_eq!(errors[0].path, "title");
    assert_eq!(errors[0].message, "at most 200 characters, got 201");
}

#[test]
fn every_bad_field_is_named() {
    let frame = ask(
        json!({"type": "ask", "session": "a b", "id": "", "dialect": "x", "questions": [], "timeout_s": -1, "title": 5}),
    );
    let errors = frame.check(86_400.0).unwrap_err();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["session", "id", "dialect", "timeout_s", "title"]);
    let frame = ask(json!({"type": "ask", "session": "s", "questions": [], "timeout_s": "10"}));
    let errors = frame.check(86_400.0).unwrap_err();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["timeout_s", "questions"]);
}

#[test]
fn frames_round_trip() {
    let frame = ToTab::Presence {
        tabs: 2,
        agent_online: true,
    };
    let text = serde_json::to_string(&frame).unwrap();
    assert_eq!(text, r#"{"type":"presence","tabs":2,"agent_online":true}"#);
    assert_eq!(serde_json::from_str::<ToTab>(&text).unwrap(), frame);
    let hello: FromTab = serde_json::from_str(r#"{"type":"hello","key":"k"}"#).unwrap();
    assert_eq!(
        hello,
        FromTab::Hello {
            key: "k".into(),
            tab: None
        }
    );
}

#[test]
fn a_decline_dismisses_only_when_it_says_so() {
    let plain: FromTab = serde_json::from_str(r#"{"type":"decline","id":"r1"}"#).unwrap();
    let dismissed: FromTab =
        serde_json::from_str(r#"{"type":"decline","id":"r1","dismiss":true}"#).unwrap();
    let decline = |dismiss| FromTab::Decline {
        id: "r1".into(),
        dismiss,
    };
    assert_eq!((plain, dismissed), (decline(false), decline(true)));
    assert_eq!(
        serde_json::to_string(&decline(false)).unwrap(),
        r#"{"type":"decline","id":"r1"}"#
    );
    let wrong = serde_json::from_str::<FromTab>(r#"{"type":"decline","id":"r1","dismiss":1}"#);
    assert!(wrong.is_err());
}

#[test]
fn reminders_and_escalation_are_checked_at_their_paths() {
    let check = |extra: Value| {
        let mut frame = json!({"type": "ask", "session": "s", "questions": questions()});
        for (key, value) in extra.as_object().unwrap() {
            frame[key] = value.clone();
        }
        ask(frame).check(f64::INFINITY)
    };
    let checked = check(
        json!({"remind_after_s": 900, "escalate": {"after_s": 1.5, "to": ["group:leads", "carol@example.com"]}}),
    )
    .unwrap();
    assert_eq!(
        checked.follow_ups,
        AskedFollowUps {
            remind_after_ms: Some(900_000),
            escalate: Some((
                1_500,
                vec!["group:leads".into(), "carol@example.com".into()]
            )),
        }
    );
    assert_eq!(
        check(json!({})).unwrap().follow_ups,
        AskedFollowUps::default()
    );
    let refused = |extra: Value| {
        check(extra)
            .unwrap_err()
            .into_iter()
            .map(|e| format!("{}: {}", e.path, e.message))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        refused(json!({"remind_after_s": 0})),
        ["remind_after_s: must be positive, got 0"]
    );
    assert_eq!(
        refused(json!({"remind_after_s": "soon"})),
        ["remind_after_s: must be a number of seconds, got a string"]
    );
    assert_eq!(
        refused(json!({"escalate": {"after_s": 5, "to": [], "tp": 1}})),
        [
            "escalate.tp: `escalate` takes `after_s` and `to` only",
            "escalate.to: must name at least one person or `group:NAME`"
        ]
    );
    assert_eq!(
        refused(json!({"escalate": {"to": ["a", 3]}})),
        [
            "escalate.after_s: required: seconds after the ask to escalate",
            "escalate.to[1]: must be a string, got a number"
        ]
    );
    assert_eq!(
        refused(json!({"escalate": [1]})),
        ["escalate: must be an object {\"after_s\": N, \"to\": [...]}, got a list"]
    );
}

/// An ask's `default` is checked as a tab's answer would be, in every dialect, at its path
/// under `default`; one without a deadline is refused.
#[test]
fn a_default_is_checked_as_an_answer_and_needs_a_deadline() {
    let check = |request: Value, default: Value| {
        let mut frame = json!({"type": "ask", "session": "s", "timeout_s": 60, "default": default});
        for (key, value) in request.as_object().unwrap() {
            frame[key] = value.clone();
        }
        ask(frame).check(f64::INFINITY)
    };
    let refused = |request: Value, default: Value| {
        check(request, default)
            .unwrap_err()
            .into_iter()
            .map(|e| format!("{}: {}", e.path, e.message))
            .collect::<Vec<_>>()
    };
    let harness = json!({"questions": questions()});
    let answer = json!({"answers": [{"header": "Color", "selected": ["Blue"]}]});
    let checked = check(harness.clone(), answer.clone()).unwrap();
    assert_eq!(checked.default, Some(answer.clone()));
    assert_eq!(check(harness.clone(), Value::Null).unwrap().default, None);
    let wrong = refused(
        harness.clone(),
        json!({"answers": [{"header": "Color", "selected": ["Green"]}]}),
    );
    assert_eq!(wrong.len(), 1);
    assert!(wrong[0].starts_with("default"), "{wrong:?}");
    let mut no_deadline =
        json!({"type": "ask", "session": "s", "questions": questions(), "default": answer});
    assert_eq!(
        ask(no_deadline.clone())
            .check(f64::INFINITY)
            .unwrap_err()
            .iter()
            .map(|e| e.path.as_str())
            .collect::<Vec<_>>(),
        ["default"]
    );
    no_deadline["timeout_s"] = Value::Null;
    assert!(ask(no_deadline).check(f64::INFINITY).is_err());

    let deepagents =
        json!({"dialect": "deepagents", "questions": [{"question": "Why?", "type": "text"}]});
    assert!(check(deepagents.clone(), json!({"answers": ["because"]})).is_ok());
    assert_eq!(
        refused(deepagents, json!({"answerz": []})),
        [
            "default.answerz: a deepagents answer has only `answers`; to decline, send a `decline` frame"
        ]
    );

    let calls =
        json!({"dialect": "approval", "calls": [{"name": "rm", "args": {"path": "/tmp/x"}}]});
    assert!(check(calls.clone(), json!({"decisions": [{"type": "approve"}]})).is_ok());
    assert_eq!(
        refused(calls, json!({"decisions": "yes"}))[0]
            .split(':')
            .next(),
        Some("default.decisions")
    );

    let form = json!({"dialect": "form", "message": "Your name?", "schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}});
    let accepted = check(
        form.clone(),
        json!({"action": "accept", "content": {"name": "Ann"}}),
    )
    .unwrap();
    assert_eq!(
        accepted
            .questions
            .settle_default(accepted.default.as_ref().unwrap())
            .unwrap()
            .response,
        json!({"action": "accept", "content": {"name": "Ann"}})
    );
    let declined = check(form.clone(), json!({"action": "decline"})).unwrap();
    let settled = declined
        .questions
        .settle_default(declined.default.as_ref().unwrap())
        .unwrap();
    assert_eq!(settled.outcome, crate::Outcome::Declined);
    assert_eq!(settled.response, json!({"action": "decline"}));
    assert_eq!(
        refused(form.clone(), json!({"action": "cancel"})),
        ["default.action: must be \"accept\" or \"decline\", got \"cancel\""]
    );
    assert_eq!(
        refused(form.clone(), json!({"content": {"name": "Ann"}})),
        [
            "default.action: required: the default is {\"action\": \"accept\", \"content\": {...}} or {\"action\": \"decline\"}"
        ]
    );
    assert_eq!(
        refused(form.clone(), json!({"action": "accept", "content": {}}))[0]
            .split(':')
            .next(),
        Some("default.content.name")
    );
    assert_eq!(
        refused(
            form,
            json!({"action": "decline", "content": {"name": "Ann"}})
        ),
        ["default.content: a decline has no content"]
    );

    let claude = json!({"dialect": "claude", "questions": [{"question": "Q?", "header": "Q", "options": [{"label": "A", "description": "a"}, {"label": "B", "description": "b"}], "multiSelect": false}]});
    assert!(check(claude.clone(), json!({"answers": {"Q?": "A"}})).is_ok());
    assert_eq!(
        refused(claude, json!(["A"]))[0].split(':').next(),
        Some("default")
    );
}

/// `quorum` (2 to 10) is for approvals whose calls allow approve and reject only; `veto` only
/// with it; each refused at its path.
#[test]
fn a_quorum_is_checked_at_its_path() {
    let check = |extra: Value, decisions: Value| {
        let mut frame = json!({"type": "ask", "session": "s", "dialect": "approval",
            "calls": [{"name": "deploy", "args": {}, "decisions": decisions}]});
        for (key, value) in extra.as_object().unwrap() {
            frame[key] = value.clone();
        }
        ask(frame).check(f64::INFINITY)
    };
    let refused = |extra: Value, decisions: Value| {
        check(extra, decisions)
            .unwrap_err()
            .into_iter()
            .map(|e| format!("{}: {}", e.path, e.message))
            .collect::<Vec<_>>()
    };
    let taken = check(
        json!({"quorum": 3, "veto": false}),
        json!(["approve", "reject"]),
    )
    .unwrap();
    assert_eq!(
        taken.quorum,
        Some(crate::approval::Quorum {
            needed: 3,
            veto: false
        })
    );
    assert_eq!(
        refused(json!({"quorum": 2}), json!(["approve", "edit", "reject"])),
        [
            "quorum: a quorum takes approve and reject only, and calls[0].decisions allows edit: one person cannot edit what others approved"
        ]
    );
    assert_eq!(
        refused(json!({"quorum": 11}), json!(["approve", "reject"])),
        ["quorum: must be a whole number of people from 2 to 10, got 11"]
    );
    assert_eq!(
        refused(
            json!({"quorum": 3, "answerers": ["alice", "bob"]}),
            json!(["approve", "reject"])
        ),
        ["quorum: needs 3 people, and `answerers` names 2: it could never be reached"]
    );
    assert!(
        check(
            json!({"quorum": 3, "answerers": ["group:leads"]}),
            json!(["approve", "reject"])
        )
        .is_ok()
    );
    let harness =
        ask(json!({"type": "ask", "session": "s", "questions": questions(), "quorum": 2}))
            .check(f64::INFINITY)
            .unwrap_err();
    assert_eq!(harness[0].path, "quorum");
    assert!(
        harness[0]
            .message
            .starts_with("only approval requests take a quorum")
    );
}
