//! Properties of the harness dialect that hold for every input.

use askgate_protocol::harness::{
    AskUserAnswer, AskUserResponse, HarnessQuestions, TopLevelExtras, ask_user_result,
    check_response, validate_args, validate_args_json,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Characters of every kind the rules care about, weighted toward printable text.
fn any_char() -> impl Strategy<Value = char> {
    prop_oneof![
        8 => proptest::char::range('a', 'z'),
        2 => proptest::char::range('A', 'Z'),
        2 => prop::sample::select(vec!['é', 'ß', 'Σ', 'ς', '中', '😀', 'ǅ', 'K', 'ı', 'İ', '\u{301}', '①']),
        1 => prop::sample::select(vec![' ', '\u{a0}', '\u{1680}', '\u{2003}', '\u{3000}', '\u{202f}']),
        1 => prop::sample::select(vec!['\n', '\t', '\r', '\u{1c}', '\u{200b}', '\u{2028}', '\u{e000}', '\u{378}', '\u{1fae8}']),
    ]
}

fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(any_char(), 0..=max).prop_map(|chars| chars.into_iter().collect())
}

/// Characters the printable rule accepts in every field, spaces of every kind included.
fn clean_char() -> impl Strategy<Value = char> {
    prop_oneof![
        8 => proptest::char::range('a', 'z'),
        2 => proptest::char::range('A', 'Z'),
        2 => prop::sample::select(vec!['é', 'ß', 'Σ', 'ς', '中', '😀', 'ǅ', 'K', 'ı', 'İ', '\u{301}', '①']),
        1 => prop::sample::select(vec![' ', '\u{a0}', '\u{1680}', '\u{2003}', '\u{3000}', '\u{202f}']),
    ]
}

/// Text that fits a field of `max` characters once stripped, with whitespace around it.
fn clean_text(max: usize) -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(clean_char(), 1..=max),
        prop::sample::select(vec!["", " ", "\t", "\u{3000}", "\n "]),
    )
        .prop_map(|(chars, pad)| format!("{pad}{}{pad}", chars.into_iter().collect::<String>()))
}

/// Tool arguments that are valid most of the time (folded duplicates aside).
fn clean_args() -> impl Strategy<Value = Value> {
    let option = (clean_text(50), prop::option::of(clean_text(200)))
        .prop_map(|(label, description)| json!({"label": label, "description": description}));
    let question = (clean_text(25), clean_text(500), proptest::collection::vec(option, 2..=6), any::<bool>())
        .prop_map(|(header, question, options, multi)| {
            json!({"header": header, "question": question, "options": options, "multi_select": multi})
        });
    proptest::collection::vec(question, 1..=10).prop_map(|qs| json!({ "questions": qs }))
}

fn option() -> impl Strategy<Value = Value> {
    (text(52), prop::option::of(text(30))).prop_map(|(label, description)| match description {
        Some(d) => json!({"label": label, "description": d}),
        None => json!({"label": label}),
    })
}

fn question() -> impl Strategy<Value = Value> {
    (
        text(27),
        text(60),
        proptest::collection::vec(option(), 1..=7),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(header, question, options, multi)| {
            let mut q = json!({"header": header, "question": question, "options": options});
            if let Some(multi) = multi {
                q["multi_select"] = Value::Bool(multi);
            }
            q
        })
}

fn args() -> impl Strategy<Value = Value> {
    proptest::collection::vec(question(), 0..=11).prop_map(|qs| json!({ "questions": qs }))
}

/// Any JSON value at all, nested a few levels.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        text(8).prop_map(Value::String),
        prop::sample::select(vec![
            "questions",
            "header",
            "question",
            "options",
            "label",
            "description",
            "multi_select"
        ])
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::vec(
                (
                    prop::sample::select(vec![
                        "questions",
                        "header",
                        "question",
                        "options",
                        "label",
                        "description",
                        "multi_select",
                        "x"
                    ]),
                    inner
                ),
                0..6
            )
            .prop_map(|entries| Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect()
            )),
        ]
    })
}

proptest! {
    #![proptest_config(crate::support::proptest_config(400))]

    /// Validation is idempotent: the normalised arguments validate to themselves.
    #[test]
    fn normalised_requests_validate_unchanged(args in clean_args()) {
        let questions = validate_args(&args, TopLevelExtras::Forbid);
        prop_assume!(questions.is_ok(), "folded duplicate");
        let questions = questions.unwrap();
        let again = validate_args(&questions.to_args(), TopLevelExtras::Forbid);
        prop_assert_eq!(again.as_ref(), Ok(&questions));
    }

    /// Arbitrary arguments that happen to validate normalise to a fixed point as well.
    #[test]
    fn any_accepted_request_is_a_fixed_point(args in args()) {
        if let Ok(questions) = validate_args(&args, TopLevelExtras::Forbid) {
            let again = validate_args(&questions.to_args(), TopLevelExtras::Forbid);
            prop_assert_eq!(again.as_ref(), Ok(&questions));
        }
    }

    /// A validated question set survives serde: out to JSON and back in (which validates).
    #[test]
    fn questions_round_trip_through_serde(args in clean_args()) {
        let questions = validate_args(&args, TopLevelExtras::Forbid);
        prop_assume!(questions.is_ok(), "folded duplicate");
        let questions = questions.unwrap();
        let text = serde_json::to_string(&questions).unwrap();
        let back: HarnessQuestions = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(back, questions);
    }

    /// Responses survive serde, and a response picking the first label of every question
    /// (the custom text for the odd one) is accepted and rendered in answer order.
    #[test]
    fn responses_round_trip_and_render(args in clean_args(), custom in text(20)) {
        let questions = validate_args(&args, TopLevelExtras::Forbid);
        prop_assume!(questions.is_ok(), "folded duplicate");
        let questions = questions.unwrap();
        let answers: Vec<AskUserAnswer> = questions.questions().iter().enumerate().map(|(i, q)| {
            if i % 2 == 1 && !custom.is_empty() && custom.chars().all(|c| c.is_alphanumeric() || c == ' ') && custom.chars().any(char::is_alphanumeric) {
                AskUserAnswer::custom(q.header.clone(), custom.clone())
            } else {
                AskUserAnswer::picked(q.header.clone(), [q.options[0].label.clone()])
            }
        }).rev().collect();
        let response = AskUserResponse::answered(answers);
        let text = serde_json::to_string(&response).unwrap();
        let back: AskUserResponse = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(&back, &response);
        prop_assert!(check_response(&questions, &response).is_ok());
        let rendered = ask_user_result(&questions, &response).unwrap().to_json();
        let keys: Vec<&String> = rendered.as_object().unwrap().keys().collect();
        let expected: Vec<&String> = response.answers.iter().map(|a| &a.header).collect();
        prop_assert_eq!(keys, expected);
    }

    /// Arguments given as JSON text are judged as the value they hold, for either treatment
    /// of top-level extras.
    #[test]
    fn json_text_is_judged_as_its_value(args in prop_oneof![clean_args(), args()]) {
        let text = args.to_string();
        for extras in [TopLevelExtras::Forbid, TopLevelExtras::Ignore] {
            prop_assert_eq!(validate_args_json(&text, extras), validate_args(&args, extras));
        }
    }

    /// No input makes validation panic.
    #[test]
    fn any_json_is_judged_without_panicking(value in any_json()) {
        let _ = validate_args(&value, TopLevelExtras::Forbid);
        let _ = validate_args(&json!({"questions": value}), TopLevelExtras::Ignore);
    }
}
