//! The claude dialect's rules (the Claude Agent SDK's `AskUserQuestion`), each with the path
//! its error names, and the `updated_input` the host hands back.

use askgate_protocol::{Dialect, ErrorCode, Outcome, QuestionSet};
use serde_json::{Value, json};

use crate::support;

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

/// The tool's input schema as the bundled CLI (2.1.327) writes it in zod, transcribed rule
/// for rule: `questions: z.array(question).min(1).max(4)`, each question `z.object({question:
/// z.string(), header: z.string(), options: z.array(option).min(2).max(4), multiSelect:
/// z.boolean().default(false)})`, each option `{label: z.string(), description: z.string()
/// (optional in the second option schema), preview: z.string().optional()}`, refined so that
/// question texts are unique and labels unique within each question. zod's objects strip keys
/// they do not name; `optional` and `default` take an absent key, never `null`.
fn zod_accepts(questions: &Value) -> bool {
    let string = |v: Option<&Value>| v.is_some_and(Value::is_string);
    let absent_or = |v: Option<&Value>, ok: fn(&Value) -> bool| v.is_none_or(ok);
    let Some(questions) = questions.as_array() else {
        return false;
    };
    if !(1..=4).contains(&questions.len()) {
        return false;
    }
    let mut texts = Vec::new();
    for q in questions {
        let Some(q) = q.as_object() else { return false };
        if !string(q.get("question")) || !string(q.get("header")) {
            return false;
        }
        if !absent_or(q.get("multiSelect"), Value::is_boolean) {
            return false;
        }
        let Some(options) = q.get("options").and_then(Value::as_array) else {
            return false;
        };
        if !(2..=4).contains(&options.len()) {
            return false;
        }
        let mut labels = Vec::new();
        for o in options {
            let Some(o) = o.as_object() else { return false };
            if !string(o.get("label"))
                || !absent_or(o.get("description"), Value::is_string)
                || !absent_or(o.get("preview"), Value::is_string)
            {
                return false;
            }
            labels.push(o["label"].clone());
        }
        let mut unique = labels.clone();
        unique.sort_by_key(Value::to_string);
        unique.dedup();
        if unique.len() != labels.len() {
            return false;
        }
        texts.push(q["question"].clone());
    }
    let mut unique = texts.clone();
    unique.sort_by_key(Value::to_string);
    unique.dedup();
    unique.len() == texts.len()
}

mod against_the_tool_schema {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::{claude, zod_accepts};
    use askgate_protocol::QuestionSet;

    /// A value a field might hold: mostly right, sometimes of another type or absent.
    fn field(right: Value) -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            8 => Just(Some(right)),
            1 => Just(None),
            1 => prop::sample::select(vec![Value::Null, json!(1), json!(true), json!([]), json!({})]).prop_map(Some),
        ]
    }

    fn object(fields: Vec<(&'static str, Option<Value>)>) -> Value {
        Value::Object(
            fields
                .into_iter()
                .filter_map(|(k, v)| Some((k.to_owned(), v?)))
                .collect::<Map<String, Value>>(),
        )
    }

    fn option() -> impl Strategy<Value = Value> {
        (
            prop::sample::select(vec!["A", "B", "C", "D"]),
            field(json!("what it does")),
            prop_oneof![3 => Just(None), 1 => field(json!("<pre>x</pre>"))],
        )
            .prop_map(|(label, description, preview)| {
                object(vec![
                    ("label", Some(json!(label))),
                    ("description", description),
                    ("preview", preview),
                ])
            })
    }

    fn question() -> impl Strategy<Value = Value> {
        (
            prop::sample::select(vec!["Which?", "Why?", "Where?"]),
            field(json!("Pick")),
            prop_oneof![1 => Just(None), 3 => field(json!(false)), 2 => Just(Some(json!(true)))],
            proptest::collection::vec(option(), 0..=5),
            any::<bool>(),
        )
            .prop_map(|(text, header, multi, options, extra)| {
                let mut q = object(vec![
                    ("question", Some(json!(text))),
                    ("header", header),
                    ("multiSelect", multi),
                    ("options", Some(Value::Array(options))),
                ]);
                if extra {
                    q["unknown"] = json!("kept");
                }
                q
            })
    }

    proptest! {
        #![proptest_config(crate::support::proptest_config(256))]

        #[test]
        fn askgate_takes_what_the_tool_schema_takes(
            questions in proptest::collection::vec(question(), 0..=5)
        ) {
            let questions = Value::Array(questions);
            let ours = QuestionSet::validate(claude(), &questions).is_ok();
            prop_assert_eq!(ours, zod_accepts(&questions), "{}", questions);
        }
    }
}
