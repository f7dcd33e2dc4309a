use serde_json::{Value, json};

use super::*;

fn told(dialect: &str, title: Option<&str>, questions: &Value) -> Told {
    let body = json!({
        "type": "request.opened",
        "timestamp": "2026-12-06T12:00:00.000Z",
        "data": {
            "session": "s1", "id": "r1", "dialect": dialect, "title": title,
            "questions": questions, "answerers": ["alice@example.com", "group:ops"],
            "deadline_ms": 600_000, "url": "https://askgate.example/s/s1",
        },
    });
    Told::read(&body.to_string()).unwrap()
}

fn single(options: usize) -> Value {
    let options: Vec<Value> = (0..options)
        .map(|i| json!({"label": format!("L{i}"), "description": null}))
        .collect();
    json!([{"header": "Pick", "question": "Which?", "options": options, "multi_select": false}])
}

fn approval() -> Value {
    json!([{"name": "delete_file", "args": {"path": "/tmp/x"}, "description": "Deletes it",
            "decisions": ["approve", "reject"]}])
}

fn personal() -> Answering {
    Answering::Personal {
        link: "https://askgate.example/s/s1#k=abc".into(),
    }
}

/// Every button of a message, as (action_id, label).
fn buttons(message: &Value) -> Vec<(String, String)> {
    message["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["type"] == "actions")
        .flat_map(|block| block["elements"].as_array().unwrap().clone())
        .map(|b| {
            (
                b["action_id"].as_str().unwrap().to_owned(),
                b["text"]["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Every text object in `value`, wherever it is.
fn text_objects(value: &Value, out: &mut Vec<Value>) {
    match value {
        Value::Object(fields) => {
            if fields.get("type").and_then(Value::as_str) == Some("mrkdwn")
                || fields.get("type").and_then(Value::as_str) == Some("plain_text")
            {
                out.push(value.clone());
            }
            fields.values().for_each(|v| text_objects(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| text_objects(v, out)),
        _ => {}
    }
}

#[test]
fn agent_text_is_plain_text_never_markup() {
    let hostile = "<!channel> *bold* <@U123|x> <https://evil.example|click> :tada: & \u{202E}";
    let questions = json!([{"header": "H", "question": hostile, "options": [{"label": hostile}],
        "multi_select": false}]);
    let message = asking(&told("harness", Some(hostile), &questions), &personal(), 0);
    let mut texts = Vec::new();
    text_objects(&message["blocks"], &mut texts);
    assert!(!texts.is_empty());
    for text in &texts {
        assert_eq!(text["type"], "plain_text", "{text}");
        assert_eq!(text["emoji"], false, "{text}");
    }
    let fallback = message["text"].as_str().unwrap();
    assert!(
        !fallback.contains('<') && !fallback.contains('>'),
        "{fallback}"
    );
    assert!(fallback.contains("&lt;!channel&gt;"), "{fallback}");
    assert!(fallback.contains("&amp;"), "{fallback}");
    // The direction control is named, not applied.
    let header = message["blocks"][0]["text"]["text"].as_str().unwrap();
    assert!(!header.contains('\u{202E}'), "{header}");
    assert!(header.contains('['), "{header}");
}

#[test]
fn one_click_buttons_only_where_a_click_is_a_whole_answer() {
    let three = asking(&told("harness", None, &single(3)), &personal(), 0);
    let ids: Vec<String> = buttons(&three).into_iter().map(|(id, _)| id).collect();
    assert_eq!(
        ids,
        [
            "askgate_choice_o0",
            "askgate_choice_o1",
            "askgate_choice_o2",
            OPEN_ACTION
        ]
    );
    let five = asking(&told("harness", None, &single(5)), &personal(), 0);
    assert_eq!(buttons(&five).len(), 6);
    // Six options: too many to click through; the page only.
    let six = asking(&told("harness", None, &single(6)), &personal(), 0);
    assert_eq!(
        buttons(&six),
        [(OPEN_ACTION.to_owned(), "Answer in askgate".to_owned())]
    );
    let mut two_questions = single(2);
    let second = two_questions[0].clone();
    two_questions.as_array_mut().unwrap().push(second);
    let two = asking(&told("harness", None, &two_questions), &personal(), 0);
    assert_eq!(buttons(&two).len(), 1);
    let approve = asking(&told("approval", None, &approval()), &personal(), 0);
    assert_eq!(
        buttons(&approve),
        [
            ("askgate_choice_approve".to_owned(), "Approve".to_owned()),
            ("askgate_choice_reject".to_owned(), "Reject".to_owned()),
            (OPEN_ACTION.to_owned(), "Open in askgate".to_owned()),
        ]
    );
    // A channel post's page button asks for the clicker's own link instead of carrying one.
    let posted = asking(&told("approval", None, &approval()), &Answering::Channel, 0);
    assert_eq!(buttons(&posted)[2].0, LINK_ACTION);
}

#[test]
fn a_button_names_its_request_asking_and_choice() {
    let told = told("approval", None, &approval());
    let message = asking(&told, &personal(), 0);
    let approve = &message["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "actions")
        .unwrap()["elements"][0];
    let value = ButtonValue::decode(approve["value"].as_str().unwrap()).unwrap();
    assert_eq!(value, ButtonValue::of(&told, Some(Choice::Approve)));
    assert_eq!(
        (value.session.as_str(), value.request.as_str()),
        ("s1", "r1")
    );
    assert_eq!(value.choice, "approve");
    assert!(ButtonValue::decode("{not json").is_none());
}

#[test]
fn the_context_says_the_time_left_and_who_may_answer() {
    let message = asking(&told("harness", None, &single(2)), &personal(), 0);
    let context = message["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "context")
        .unwrap()["elements"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(context.contains("Answer within 10 min"), "{context}");
    assert!(
        context.contains("alice@example.com, group ops"),
        "{context}"
    );
}

#[test]
fn an_ended_message_has_no_buttons_and_says_who_decided() {
    let body = json!({
        "type": "request.resolved",
        "timestamp": "2026-12-06T12:00:00.000Z",
        "data": {
            "session": "s1", "id": "r1", "dialect": "approval", "questions": approval(),
            "answerers": null, "deadline_ms": null, "url": "u",
            "outcome": "answered", "user": "alice@example.com", "via": "slack",
            "response": {"decisions": [{"type": "approve"}]},
        },
    });
    let told = Told::read(&body.to_string()).unwrap();
    let message = ended(&told);
    assert!(buttons(&message).is_empty());
    assert_eq!(
        ending_words(&told),
        "Approved by alice@example.com in Slack"
    );
    let mut timed_out = told.clone();
    timed_out.outcome = Some("timed_out".into());
    timed_out.user = None;
    timed_out.via = None;
    assert_eq!(
        ending_words(&timed_out),
        "Timed out: nobody answered in time"
    );
    let mut defaulted = told.clone();
    defaulted.via = Some(askgate_protocol::wire::Via::Default);
    defaulted.user = None;
    assert_eq!(
        ending_words(&defaulted),
        "Nobody answered in time: the agent's default answer was given"
    );
    let mut withdrawn = timed_out.clone();
    withdrawn.outcome = Some("withdrawn".into());
    withdrawn.via = Some(askgate_protocol::wire::Via::Operator);
    assert_eq!(ending_words(&withdrawn), "Withdrawn by an operator");
    withdrawn.via = Some(askgate_protocol::wire::Via::Agent);
    assert_eq!(ending_words(&withdrawn), "Withdrawn by the agent");
}
