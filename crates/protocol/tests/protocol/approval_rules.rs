//! The approval dialect's rules, each with the path its error names: the calls an agent
//! may send, and the decisions a tab may answer with.

use askgate_protocol::approval::{
    DECLINED_MESSAGE, MAX_CALLS, MAX_MESSAGE_CHARS, TIMED_OUT_MESSAGE,
};
use askgate_protocol::{Dialect, ErrorCode, Outcome, QuestionSet};
use serde_json::{Value, json};

use crate::support;

use support::{one, request_errors};

fn approval() -> Dialect {
    support::dialect("approval")
}

/// The `(path, code)` of every error in `calls`.
fn call_errors(calls: &Value) -> Vec<(String, ErrorCode)> {
    request_errors(approval(), calls)
}

fn call() -> Value {
    json!({"name": "deploy", "args": {"env": "prod"}})
}

#[test]
fn the_calls_list() {
    assert_eq!(
        call_errors(&Value::Null),
        one("calls", ErrorCode::MissingField)
    );
    assert_eq!(call_errors(&json!({})), one("calls", ErrorCode::WrongType));
    assert_eq!(
        call_errors(&json!([])),
        one("calls", ErrorCode::TooFewItems)
    );
    let many = Value::Array(vec![call(); MAX_CALLS + 1]);
    assert_eq!(call_errors(&many), one("calls", ErrorCode::TooManyItems));
    assert!(QuestionSet::validate(approval(), &Value::Array(vec![call(); MAX_CALLS])).is_ok());
    assert_eq!(
        call_errors(&json!([call(), "x"])),
        one("calls[1]", ErrorCode::WrongType)
    );
}

#[test]
fn each_field_of_a_call() {
    let cases = [
        (
            json!({"args": {}}),
            "calls[0].name",
            ErrorCode::MissingField,
        ),
        (
            json!({"name": 3, "args": {}}),
            "calls[0].name",
            ErrorCode::WrongType,
        ),
        (
            json!({"name": "  ", "args": {}}),
            "calls[0].name",
            ErrorCode::Blank,
        ),
        (
            json!({"name": "a".repeat(257), "args": {}}),
            "calls[0].name",
            ErrorCode::TooLong,
        ),
        (
            json!({"name": "a\nb", "args": {}}),
            "calls[0].name",
            ErrorCode::ForbiddenCharacter,
        ),
        (
            json!({"name": "a"}),
            "calls[0].args",
            ErrorCode::MissingField,
        ),
        (
            json!({"name": "a", "args": "{}"}),
            "calls[0].args",
            ErrorCode::WrongType,
        ),
        (
            json!({"name": "a", "args": {}, "description": 1}),
            "calls[0].description",
            ErrorCode::WrongType,
        ),
        (
            json!({"name": "a", "args": {}, "description": "d".repeat(10_001)}),
            "calls[0].description",
            ErrorCode::TooLong,
        ),
        (
            json!({"name": "a", "args": {}, "description": "a\u{7}"}),
            "calls[0].description",
            ErrorCode::ForbiddenCharacter,
        ),
        (
            json!({"name": "a", "args": {}, "decisions": "approve"}),
            "calls[0].decisions",
            ErrorCode::WrongType,
        ),
        (
            json!({"name": "a", "args": {}, "decisions": []}),
            "calls[0].decisions",
            ErrorCode::TooFewItems,
        ),
        (
            json!({"name": "a", "args": {}, "decisions": ["approve", "ok"]}),
            "calls[0].decisions[1]",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"name": "a", "args": {}, "decisions": ["edit", "edit"]}),
            "calls[0].decisions[1]",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"name": "a", "args": {}, "args_schema": []}),
            "calls[0].args_schema",
            ErrorCode::WrongType,
        ),
        (
            json!({"name": "a", "args": {}, "args_schema": {"properties": {"x": {"type": "int"}}}}),
            "calls[0].args_schema.properties.x.type",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"name": "a", "args": {}, "tool_call_id": "c1"}),
            "calls[0].tool_call_id",
            ErrorCode::UnknownField,
        ),
    ];
    for (call, path, code) in cases {
        assert_eq!(call_errors(&json!([call])), one(path, code), "{call}");
    }
    let description = "Line one\n\tindented\r\nlast";
    let set = QuestionSet::validate(
        approval(),
        &json!([{"name": "a", "args": {}, "description": description}]),
    );
    assert!(set.is_ok(), "line breaks and tabs are kept in descriptions");
}

#[test]
fn every_bad_call_is_reported_at_once() {
    let errors = call_errors(&json!([{"name": "", "args": {}}, call(), {"name": "b", "args": 1}]));
    assert_eq!(
        errors,
        [
            ("calls[0].name".into(), ErrorCode::Blank),
            ("calls[2].args".into(), ErrorCode::WrongType)
        ]
    );
}

#[test]
fn the_normalised_call_lists_decisions_in_order_and_how_edits_are_checked() {
    let set = QuestionSet::validate(
        approval(),
        &json!([
            {"name": "a", "args": {"x": 1}, "decisions": ["respond", "approve"]},
            {"name": "b", "args": {}, "args_schema": {"type": "object", "properties": {"x": {"type": "string", "format": "uri"}}}},
            {"name": "c", "args": {}, "args_schema": {"type": "object", "allOf": [{}]}}
        ]),
    )
    .unwrap();
    let calls = set.to_json();
    assert_eq!(
        calls[0],
        json!({"name": "a", "args": {"x": 1}, "decisions": ["approve", "respond"], "edit_check": "object"})
    );
    assert_eq!(calls[1]["decisions"], json!(["approve", "reject"]));
    assert_eq!(calls[1]["edit_check"], "schema");
    assert_eq!(calls[2]["edit_check"], "object");
    assert_eq!(
        calls[2]["edit_note"],
        "args_schema uses \"allOf\" at args_schema, which askgate does not check: edits are checked as a JSON object only"
    );
    let again = QuestionSet::validate(approval(), &calls).expect("a normalised request validates");
    assert_eq!(again, set);
}

fn set() -> QuestionSet {
    QuestionSet::validate(
        approval(),
        &json!([
            {"name": "sql", "args": {"q": "DROP"}, "decisions": ["approve", "edit", "reject", "respond"],
             "args_schema": {"type": "object", "properties": {"q": {"type": "string", "maxLength": 20}},
                             "required": ["q"], "additionalProperties": false}},
            {"name": "mail", "args": {"to": "x"}}
        ]),
    )
    .unwrap()
}

fn answer_errors(response: &Value) -> Vec<(String, ErrorCode)> {
    support::answer_errors(&set(), response)
}

#[test]
fn each_rule_of_an_answer() {
    let approve = json!({"type": "approve"});
    let cases = [
        (json!([1]), "response", ErrorCode::WrongType),
        (json!({}), "response.decisions", ErrorCode::MissingField),
        (
            json!({"decisions": {}}),
            "response.decisions",
            ErrorCode::WrongType,
        ),
        (
            json!({"decisions": [approve]}),
            "response.decisions",
            ErrorCode::InvalidAnswer,
        ),
        (
            json!({"decisions": [approve, approve], "note": 1}),
            "response.note",
            ErrorCode::UnknownField,
        ),
        (
            json!({"decisions": ["approve", approve]}),
            "response.decisions[0]",
            ErrorCode::WrongType,
        ),
        (
            json!({"decisions": [{}, approve]}),
            "response.decisions[0].type",
            ErrorCode::MissingField,
        ),
        (
            json!({"decisions": [{"type": "allow"}, approve]}),
            "response.decisions[0].type",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"decisions": [approve, {"type": "edit", "args": {}}]}),
            "response.decisions[1].type",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"decisions": [approve, {"type": "respond", "message": "x"}]}),
            "response.decisions[1].type",
            ErrorCode::InvalidValue,
        ),
        (
            // An approval's `args` says which later calls a remembered approval takes
            // (`same` or `any`), never new arguments.
            json!({"decisions": [{"type": "approve", "args": {}}, approve]}),
            "response.decisions[0].args",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"decisions": [{"type": "approve", "color": 1}, approve]}),
            "response.decisions[0].color",
            ErrorCode::UnknownField,
        ),
        (
            json!({"decisions": [{"type": "edit"}, approve]}),
            "response.decisions[0].args",
            ErrorCode::MissingField,
        ),
        (
            json!({"decisions": [{"type": "edit", "args": "q=1"}, approve]}),
            "response.decisions[0].args",
            ErrorCode::WrongType,
        ),
        (
            json!({"decisions": [{"type": "edit", "args": {}}, approve]}),
            "response.decisions[0].args.q",
            ErrorCode::MissingField,
        ),
        (
            json!({"decisions": [{"type": "edit", "args": {"q": 1}}, approve]}),
            "response.decisions[0].args.q",
            ErrorCode::WrongType,
        ),
        (
            json!({"decisions": [{"type": "edit", "args": {"q": "x".repeat(21)}}, approve]}),
            "response.decisions[0].args.q",
            ErrorCode::TooLong,
        ),
        (
            json!({"decisions": [{"type": "reject", "message": 5}, approve]}),
            "response.decisions[0].message",
            ErrorCode::WrongType,
        ),
        (
            json!({"decisions": [{"type": "reject", "message": "m".repeat(MAX_MESSAGE_CHARS + 1)}, approve]}),
            "response.decisions[0].message",
            ErrorCode::TooLong,
        ),
        (
            json!({"decisions": [{"type": "respond"}, approve]}),
            "response.decisions[0].message",
            ErrorCode::Blank,
        ),
        (
            json!({"decisions": [{"type": "respond", "message": " \n"}, approve]}),
            "response.decisions[0].message",
            ErrorCode::Blank,
        ),
    ];
    for (response, path, code) in cases {
        assert_eq!(answer_errors(&response), one(path, code), "{response}");
    }
    let longest = json!({"decisions": [{"type": "reject", "message": "m".repeat(MAX_MESSAGE_CHARS)}, approve]});
    assert!(set().settle_answer(&longest).is_ok());
}

#[test]
fn what_the_agent_receives() {
    let settled = set()
        .settle_answer(&json!({"decisions": [
            {"type": "reject", "message": ""}, {"type": "approve"}]}))
        .unwrap();
    assert_eq!(settled.outcome, Outcome::Answered);
    assert_eq!(
        settled.response,
        json!({"decisions": [{"type": "reject"}, {"type": "approve"}]})
    );
    assert_eq!(
        settled.result,
        json!([{"name": "sql", "decision": "reject", "args": {"q": "DROP"}},
               {"name": "mail", "decision": "approve", "args": {"to": "x"}}])
    );
    assert_eq!(
        settled.model_text.as_deref(),
        Some("sql: rejected\nmail: approved")
    );
    for (outcome, message) in [
        (Outcome::Declined, DECLINED_MESSAGE),
        (Outcome::TimedOut, TIMED_OUT_MESSAGE),
    ] {
        let settled = set().settle_without_answer(outcome);
        assert_eq!(settled.outcome, outcome);
        let rejected = json!({"type": "reject", "message": message});
        assert_eq!(settled.response, json!({"decisions": [rejected, rejected]}));
        assert_eq!(settled.result[1]["message"], message);
    }
    let withdrawn = set().settle_without_answer(Outcome::Withdrawn);
    assert_eq!(
        (withdrawn.response, withdrawn.model_text),
        (Value::Null, None)
    );
}

#[test]
fn the_ask_frame_carries_calls_not_questions() {
    use askgate_protocol::wire::AskFrame;
    let frame: AskFrame = serde_json::from_value(json!({
        "session": "s", "dialect": "approval", "questions": [call()]}))
    .unwrap();
    let errors = frame.check(60.0).unwrap_err();
    assert_eq!(errors[0].path, "questions");
    assert_eq!(
        errors[0].message,
        "the approval dialect's request goes in `calls`, not `questions`"
    );
    let frame: AskFrame =
        serde_json::from_value(json!({"session": "s", "calls": [call()]})).unwrap();
    assert_eq!(frame.check(60.0).unwrap_err()[0].path, "calls");
    let frame: AskFrame = serde_json::from_value(json!({
        "session": "s", "dialect": "approval", "calls": [call()]}))
    .unwrap();
    assert_eq!(frame.check(60.0).unwrap().questions.dialect(), approval());
}
