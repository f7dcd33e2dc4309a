//! Properties of the deepagents dialect that hold for every input, and the tool schema.

use askgate_protocol::deepagents::{
    self, Bounds, DeepagentsQuestions, Identity, ToolMessage, multi_select, schema, validate_args,
    validate_questions,
};
use askgate_protocol::{Dialect, QuestionSet, Settlement};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Characters of every kind deepagents' rules or Python's renderings care about.
fn any_char() -> impl Strategy<Value = char> {
    prop_oneof![
        8 => proptest::char::range('a', 'z'),
        2 => prop::sample::select(vec!['é', 'ß', '中', '😀', '\u{301}', '"', '\'', '\\', ',', '[', ']']),
        2 => prop::sample::select(vec![' ', '\t', '\n', '\r', '\u{a0}', '\u{3000}', '\u{1c}', '\u{1f}', '\u{85}', '\u{2028}']),
        1 => prop::sample::select(vec!['\0', '\u{8}', '\u{c}', '\u{1b}', '\u{7f}', '\u{200b}', '\u{feff}', '\u{e000}', '\u{fffe}']),
        // Lone surrogates, as the stand-ins askgate holds them in.
        1 => prop::sample::select(vec!['\u{10f800}', '\u{10fc00}', '\u{10ffff}']),
    ]
}

fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(any_char(), 0..=max).prop_map(|chars| chars.into_iter().collect())
}

/// A question, sometimes breaking a rule.
fn question() -> impl Strategy<Value = Value> {
    let kind = prop::sample::select(vec![
        json!("text"),
        json!("multiple_choice"),
        json!("multi_select"),
        json!("TEXT"),
        json!(null),
    ]);
    let choices = prop::option::of(proptest::collection::vec(
        prop_oneof![
            6 => text(6).prop_map(|v| json!({"value": v})),
            1 => text(4).prop_map(|v| json!({"value": v, "extra": 1})),
            1 => Just(json!({"value": 5})),
            1 => Just(json!("bare")),
        ],
        0..4,
    ));
    let required = prop::sample::select(vec![
        None,
        Some(json!(true)),
        Some(json!(false)),
        Some(json!("false")),
        Some(json!(0)),
    ]);
    (text(8), kind, choices, required, any::<bool>()).prop_map(
        |(q, kind, choices, required, extra)| {
            let mut object = json!({"question": q, "type": kind});
            if let Some(choices) = choices {
                object["choices"] = Value::Array(choices);
            }
            if let Some(required) = required {
                object["required"] = required;
            }
            if extra {
                object["header"] = json!("dropped");
            }
            object
        },
    )
}

fn args() -> impl Strategy<Value = Value> {
    proptest::collection::vec(question(), 0..4)
        .prop_map(|qs| json!({"questions": qs, "extra": true}))
}

proptest! {
    #![proptest_config(crate::support::proptest_config(2000))]

    /// A validated set re-validates unchanged from its normalised form, from its interrupt
    /// payload's questions (what the TUI re-validates), and through serde.
    #[test]
    fn normalised_requests_validate_unchanged(args in args()) {
        if let Ok(questions) = validate_args(&args, Bounds::Framework) {
            let again = validate_args(&questions.to_args(), Bounds::Framework).expect("revalidates");
            prop_assert_eq!(&again, &questions);
            let payload = questions.interrupt_payload("call_1");
            prop_assert_eq!(validate_questions(&payload["questions"], Bounds::Framework).unwrap(), questions.clone());
            let text = serde_json::to_string(&questions).unwrap();
            let back: DeepagentsQuestions = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(back, questions);
        }
    }

    /// Every rejection names at least one error deepagents itself reports, and the ToolNode
    /// message quotes each of them.
    #[test]
    fn rejections_are_the_frameworks(args in args()) {
        if let Err(errors) = validate_args(&args, Bounds::Framework) {
            prop_assert!(errors.framework_refuses());
            let message = errors.tool_message(&args);
            prop_assert!(message.starts_with("Error invoking tool 'ask_user' with kwargs {"), "{}", message);
            for error in errors.errors() {
                let line = format!("{}: {}", error.dotted_loc(), error.framework_message().unwrap());
                prop_assert!(message.contains(&line), "{} not in {}", line, message);
            }
        }
    }

    /// Gateway bounds only ever add errors to deepagents' verdict.
    #[test]
    fn gateway_bounds_only_narrow(args in args()) {
        let framework = validate_args(&args, Bounds::Framework);
        let gateway = validate_args(&args, Bounds::Gateway);
        if framework.is_err() {
            prop_assert!(gateway.is_err());
        }
        if let Ok(gateway) = gateway {
            prop_assert_eq!(framework.unwrap(), gateway);
        }
    }

    /// `decode(encode(values)) == values`, for any strings.
    #[test]
    fn multi_select_round_trips(values in proptest::collection::vec(text(10), 0..5)) {
        let encoded = multi_select::encode(&values);
        prop_assert!(!encoded.contains('\n') && !encoded.contains('\r'));
        prop_assert_eq!(multi_select::decode(&encoded), Some(values.clone()));
        // Python's json.loads also takes surrounding JSON whitespace.
        prop_assert_eq!(multi_select::decode(&format!(" \t{encoded}\r\n")), Some(values.clone()));
        prop_assert_eq!(multi_select::answer_is_empty(&encoded, Some("multi_select")), values.is_empty());
    }

    /// A resume is always read into one answer per question, and the transcript has one
    /// block per question.
    #[test]
    fn any_resume_gives_one_block_per_question(
        answers in proptest::collection::vec(prop_oneof![text(6).prop_map(Value::from), Just(json!(1.5)), Just(json!(null))], 0..4),
        status in prop::sample::select(vec![None, Some(json!("answered")), Some(json!("cancelled")), Some(json!("error")), Some(json!("x")), Some(json!(3))]),
    ) {
        let questions = validate_args(&json!({"questions": [
            {"question": "A?", "type": "text"}, {"question": "B?", "type": "text"}
        ]}), Bounds::Framework).unwrap();
        let mut resume = json!({"answers": answers});
        if let Some(status) = status {
            resume["status"] = status;
        }
        let message = deepagents::parse_resume(&resume, &questions, Identity { tool_call_id: "c", thread_id: Some("t"), turn_id: Some("u") });
        prop_assert!(message.content.starts_with("Q: A?\nA: "));
        prop_assert!(message.content.contains("\n\nQ: B?\nA: "));
        let text = serde_json::to_string(&message).unwrap();
        prop_assert_eq!(serde_json::from_str::<ToolMessage>(&text).unwrap(), message);
    }
}

/// A settlement survives serde (the store keeps it as JSON).
#[test]
fn settlements_round_trip_through_serde() {
    let set = QuestionSet::validate(
        Dialect::parse("deepagents").unwrap(),
        &json!([{"question": "Why?", "type": "text"}]),
    )
    .unwrap();
    let settlement = set.settle_answer(&json!({"answers": ["because"]})).unwrap();
    let text = serde_json::to_string(&settlement).unwrap();
    assert_eq!(
        serde_json::from_str::<Settlement>(&text).unwrap(),
        settlement
    );
    assert_eq!(
        QuestionSet::validate(Dialect::parse("deepagents").unwrap(), &set.to_json()).unwrap(),
        set
    );
}

fn reference() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/deepagents_tool_schema.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("schema readable")).unwrap()
}

/// The tool, argument and interrupt schemas and the prompt are deepagents' own.
#[test]
fn schemas_equal_what_deepagents_sends() {
    let reference = reference();
    assert_eq!(schema::tool_definition(), reference["openai_function_tool"]);
    assert_eq!(
        schema::tool_call_schema(),
        reference["tool_call_schema_json_schema"]
    );
    assert_eq!(
        schema::interrupt_payload_schema(),
        reference["interrupt_payload_json_schema"]
    );
    assert_eq!(schema::SYSTEM_PROMPT, reference["system_prompt"]);
    assert_eq!(deepagents::TOOL_NAME, reference["name"]);
}
