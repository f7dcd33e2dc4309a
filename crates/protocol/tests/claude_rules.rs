//! The claude dialect's rules (the Claude Agent SDK's `AskUserQuestion`), each with the path
//! its error names, and the `updated_input` the host hands back.

use askgate_protocol::{Dialect, ErrorCode, Outcome, QuestionSet};
use serde_json::{Value, json};

mod support;

use support::one;

fn claude() -> Dialect {
    support::dialect("claude")
}

fn question(text: &str, multi: bool) -> Value {
    json!({"question": text, "header": "Pick", "multiSelect": multi,
           "options": [{"label": "A", "description": "first"}, {"label": "B", "description": "second", "preview": "b()"}]})
}

fn errors(questions: &Value) -> Vec<(String, ErrorCode)> {
    support::request_errors(claude(), questions)
}

fn changed(key: &str, value: Value) -> Value {
    let mut q = question("Q?", false);
    q[key] = value;
    json!([q])
}

#[test]
fn the_questions() {
    assert_eq!(
        errors(&Value::Null),
        one("questions", ErrorCode::MissingField)
    );
    assert_eq!(errors(&json!([])), one("questions", ErrorCode::TooFewItems));
    let five: Vec<Value> = (0..5).map(|i| question(&format!("Q{i}?"), false)).collect();
    assert_eq!(
        errors(&Value::Array(five)),
        one("questions", ErrorCode::TooManyItems)
    );
    let four: Vec<Value> = (0..4).map(|i| question(&format!("Q{i}?"), false)).collect();
    assert!(QuestionSet::validate(claude(), &Value::Array(four)).is_ok());
    assert_eq!(
        errors(&json!([question("Q?", false), question("Q?", true)])),
        one("questions[1].question", ErrorCode::DuplicateHeader)
    );
    let cases = [
        (
            changed("question", json!(1)),
            "questions[0].question",
            ErrorCode::WrongType,
        ),
        (
            changed("multiSelect", json!("no")),
            "questions[0].multiSelect",
            ErrorCode::WrongType,
        ),
        (
            changed("options", json!([{"label": "A", "description": "a"}])),
            "questions[0].options",
            ErrorCode::TooFewItems,
        ),
        (
            changed(
                "options",
                json!([{"label": "A", "description": ""}, {"label": "A", "description": ""}]),
            ),
            "questions[0].options[1].label",
            ErrorCode::DuplicateLabel,
        ),
        (
            changed("kind", json!("number")),
            "questions[0].kind",
            ErrorCode::InvalidValue,
        ),
        (
            changed(
                "options",
                json!([{"label": "A", "description": "a", "preview": 3}, {"label": "B", "description": "b"}]),
            ),
            "questions[0].options[0].preview",
            ErrorCode::WrongType,
        ),
    ];
    for (questions, path, code) in cases {
        assert_eq!(errors(&questions), one(path, code), "{questions}");
    }
    // What the tool's schema leaves open: a header of any length, no multiSelect (false), an
    // option without a description (its second option schema), an explicit "choice" kind.
    let mut open = question("Q?", false);
    open["header"] = json!("a header longer than twelve characters");
    open.as_object_mut().unwrap().remove("multiSelect");
    open["options"][0]
        .as_object_mut()
        .unwrap()
        .remove("description");
    open["kind"] = json!("choice");
    let set = QuestionSet::validate(claude(), &json!([open])).expect("the tool takes it");
    assert!(
        set.settle_answer(&json!({"answers": {"Q?": ["A"]}}))
            .is_err(),
        "not a multi-select"
    );
}

#[test]
fn extra_keys_pass_through() {
    let mut q = question("Q?", false);
    q["kind"] = json!("choice");
    let set = QuestionSet::validate(claude(), &json!([q])).unwrap();
    assert_eq!(set.to_json()[0]["kind"], "choice");
    let settled = set.settle_answer(&json!({"answers": {"Q?": "A"}})).unwrap();
    assert_eq!(
        settled.response["updated_input"]["questions"][0]["kind"],
        "choice"
    );
}

fn set() -> QuestionSet {
    QuestionSet::validate(
        claude(),
        &json!([question("Which one?", false), question("Which ones?", true)]),
    )
    .unwrap()
}

fn answer_errors(response: &Value) -> Vec<(String, ErrorCode)> {
    support::answer_errors(&set(), response)
}

#[test]
fn answers_are_keyed_by_question_text() {
    let settled = set()
        .settle_answer(&json!({"answers": {"Which one?": "my own", "Which ones?": ["A", "B"]}}))
        .unwrap();
    assert_eq!(settled.outcome, Outcome::Answered);
    assert_eq!(
        settled.response,
        json!({"behavior": "allow", "updated_input": {
            "questions": [question("Which one?", false), question("Which ones?", true)],
            "answers": {"Which one?": "my own", "Which ones?": ["A", "B"]}}})
    );
    let free = set()
        .settle_answer(&json!({"response": "Neither: use the old one"}))
        .unwrap();
    assert_eq!(
        free.response["updated_input"]["response"],
        "Neither: use the old one"
    );
    assert_eq!(free.response["updated_input"]["answers"], json!({}));
    let cases = [
        (
            json!({"answers": {"Which one?": "A"}}),
            "response.answers[\"Which ones?\"]",
            ErrorCode::MissingField,
        ),
        (
            json!({"answers": {"Which one?": "A", "Which ones?": "B", "Other?": "x"}}),
            "response.answers[\"Other?\"]",
            ErrorCode::UnknownField,
        ),
        (
            json!({"answers": {"Which one?": ["A"], "Which ones?": "B"}}),
            "response.answers[\"Which one?\"]",
            ErrorCode::InvalidAnswer,
        ),
        (
            json!({"answers": {"Which one?": " ", "Which ones?": "B"}}),
            "response.answers[\"Which one?\"]",
            ErrorCode::Blank,
        ),
        (
            json!({"answers": {"Which one?": "A", "Which ones?": []}}),
            "response.answers[\"Which ones?\"]",
            ErrorCode::TooFewItems,
        ),
        (
            json!({"answers": {"Which one?": "A", "Which ones?": ["A", "A"]}}),
            "response.answers[\"Which ones?\"][1]",
            ErrorCode::InvalidAnswer,
        ),
        (
            json!({"answers": {"Which one?": 1, "Which ones?": "B"}}),
            "response.answers[\"Which one?\"]",
            ErrorCode::WrongType,
        ),
        (
            json!({"answers": []}),
            "response.answers",
            ErrorCode::WrongType,
        ),
        (json!({}), "response.answers", ErrorCode::MissingField),
        (
            json!({"answers": {"Which one?": "A", "Which ones?": ["A", "B", "mine", "more"]}}),
            "response.answers[\"Which ones?\"]",
            ErrorCode::TooManyItems,
        ),
        (
            json!({"answers": {"Which one?": "x".repeat(32_769), "Which ones?": "B"}}),
            "response.answers[\"Which one?\"]",
            ErrorCode::TooLong,
        ),
        (
            json!({"answers": {"Which one?": "x".repeat(20_000), "Which ones?": "y".repeat(20_000)}}),
            "response",
            ErrorCode::TooLong,
        ),
        (
            json!({"answers": {}, "annotations": {}}),
            "response.annotations",
            ErrorCode::UnknownField,
        ),
    ];
    for (response, path, code) in cases {
        assert_eq!(answer_errors(&response), one(path, code), "{response}");
    }
}

#[test]
fn a_decline_and_a_timeout_deny() {
    let declined = set().settle_without_answer(Outcome::Declined);
    assert_eq!(
        declined.response,
        json!({"behavior": "deny", "message": "The person declined to answer."})
    );
    let timed_out = set().settle_without_answer(Outcome::TimedOut);
    assert_eq!(
        timed_out.response,
        json!({"behavior": "deny", "message": "No answer in time."})
    );
    assert_eq!(
        set().settle_without_answer(Outcome::Withdrawn).response,
        Value::Null
    );
}
