use serde_json::{Value, json};

use super::*;

/// Checks `value` against a schema `inspect` accepts.
fn check(schema: &Value, value: &Value, path: &str) -> Vec<FieldError> {
    checked(schema, value, path).errors
}

fn checked(schema: &Value, value: &Value, path: &str) -> Checked {
    assert_eq!(
        inspect(schema, "args_schema"),
        Ok(Support::Checked),
        "{schema}"
    );
    EditSchema::new(schema).check_counting(value, path)
}

/// The paths and codes `check` reports for `value` under `schema`.
fn problems(schema: &Value, value: &Value) -> Vec<(String, ErrorCode)> {
    check(schema, value, "args")
        .into_iter()
        .map(|e| (e.path, e.code))
        .collect()
}

fn fits(schema: &Value, value: &Value) -> bool {
    problems(schema, value).is_empty()
}

#[test]
fn types_and_integers() {
    let schema = json!({"type": "integer"});
    assert!(fits(&schema, &json!(3)));
    assert!(
        fits(&schema, &json!(3.0)),
        "1.0 is an integer, as JSON Schema says"
    );
    assert_eq!(
        problems(&schema, &json!(3.5)),
        [("args".into(), ErrorCode::WrongType)]
    );
    let either = json!({"type": ["string", "null"]});
    assert!(fits(&either, &Value::Null) && fits(&either, &json!("x")));
    let message = &check(&either, &json!(1), "args")[0].message;
    assert_eq!(message, "expected a string or null, got a number");
    assert!(fits(&json!({"type": "number"}), &json!(1)));
    assert!(!fits(&json!({"type": "boolean"}), &json!(0)));
}

#[test]
fn objects_name_each_field() {
    let schema = json!({
        "type": "object",
        "properties": {"to": {"type": "string"}, "cc": {"type": "array", "items": {"type": "string"}}},
        "required": ["to", "subject"],
        "additionalProperties": false,
    });
    assert_eq!(
        problems(
            &schema,
            &json!({"to": 1, "cc": ["a", 2], "bcc": "x", "a.b": 1})
        ),
        [
            ("args.subject".into(), ErrorCode::MissingField),
            ("args.to".into(), ErrorCode::WrongType),
            ("args.cc[1]".into(), ErrorCode::WrongType),
            ("args.bcc".into(), ErrorCode::UnknownField),
            ("args[\"a.b\"]".into(), ErrorCode::UnknownField),
        ],
        "required fields first, then each field in the order written"
    );
    let extra_typed = json!({"type": "object", "additionalProperties": {"type": "number"}});
    assert!(fits(&extra_typed, &json!({"a": 1})));
    assert_eq!(
        problems(&extra_typed, &json!({"a": "1"})),
        [("args.a".into(), ErrorCode::WrongType)]
    );
}

#[test]
fn values_lengths_and_ranges() {
    let schema = json!({"type": "object", "properties": {
        "mode": {"enum": ["fast", "safe", 1]},
        "kind": {"const": "sql"},
        "name": {"type": "string", "minLength": 2, "maxLength": 3},
        "n": {"type": "number", "minimum": 0, "maximum": 10},
    }});
    assert!(fits(
        &schema,
        &json!({"mode": 1.0, "kind": "sql", "name": "ab", "n": 10})
    ));
    assert!(
        fits(&schema, &json!({"name": "😀😀😀"})),
        "characters, not bytes"
    );
    assert_eq!(
        problems(
            &schema,
            &json!({"mode": "slow", "kind": "SQL", "name": "abcd", "n": -1})
        ),
        [
            ("args.mode".into(), ErrorCode::InvalidValue),
            ("args.kind".into(), ErrorCode::InvalidValue),
            ("args.name".into(), ErrorCode::TooLong),
            ("args.n".into(), ErrorCode::InvalidValue),
        ]
    );
    assert_eq!(
        problems(&schema, &json!({"name": ""})),
        [("args.name".into(), ErrorCode::Blank)]
    );
    let message = &check(&schema, &json!({"mode": "slow"}), "args")[0].message;
    assert_eq!(message, "must be one of \"fast\", \"safe\", 1");
}

#[test]
fn any_of_and_one_of() {
    let any = json!({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]});
    assert!(fits(&any, &json!("x")) && fits(&any, &json!(2)));
    assert_eq!(
        problems(&any, &json!(-1)),
        [("args".into(), ErrorCode::InvalidValue)]
    );
    let one = json!({"oneOf": [{"type": "number"}, {"type": "integer"}]});
    assert!(fits(&one, &json!(1.5)));
    let both = check(&one, &json!(2), "args");
    assert_eq!(both.len(), 1);
    assert!(
        both[0].message.contains("exactly one"),
        "{}",
        both[0].message
    );
    assert!(fits(&json!(true), &json!({"anything": 1})));
    assert_eq!(
        problems(&json!(false), &json!(1)),
        [("args".into(), ErrorCode::InvalidValue)]
    );
}

#[test]
fn annotations_constrain_nothing() {
    let schema = json!({"title": "Args", "description": "d", "$schema": "x", "format": "email",
                        "default": 1, "examples": [], "$defs": {"A": {"pattern": "x"}},
                        "type": "string"});
    assert_eq!(inspect(&schema, "s"), Ok(Support::Checked));
    assert!(fits(&schema, &json!("not an email")));
}

#[test]
fn an_unchecked_keyword_is_named_with_where_it_is() {
    let schema = json!({"type": "object", "properties": {
        "q": {"type": "string"}, "id": {"type": "string", "pattern": "^[a-z]+$"}}});
    assert_eq!(
        inspect(&schema, "calls[0].args_schema"),
        Ok(Support::Unchecked {
            keyword: "pattern".into(),
            at: "calls[0].args_schema.properties.id".into()
        })
    );
    for keyword in [
        "$ref",
        "allOf",
        "not",
        "exclusiveMinimum",
        "minItems",
        "patternProperties",
    ] {
        let schema = json!({"type": "object", keyword: 1});
        assert!(
            matches!(inspect(&schema, "s"), Ok(Support::Unchecked { keyword: k, .. }) if k == keyword),
            "{keyword}"
        );
    }
}

#[test]
fn a_malformed_checked_keyword_refuses_the_schema() {
    for (schema, path) in [
        (json!("object"), "s"),
        (json!({"type": "objekt"}), "s.type"),
        (json!({"type": []}), "s.type"),
        (json!({"properties": []}), "s.properties"),
        (json!({"properties": {"a": 5}}), "s.properties.a"),
        (json!({"required": ["a", 1]}), "s.required"),
        (json!({"enum": []}), "s.enum"),
        (json!({"minimum": "1"}), "s.minimum"),
        (json!({"maxLength": -1}), "s.maxLength"),
        (json!({"items": [{}]}), "s.items"),
        (json!({"anyOf": []}), "s.anyOf"),
        (json!({"oneOf": [{}, {"type": 3}]}), "s.oneOf[1].type"),
        (
            json!({"additionalProperties": "no"}),
            "s.additionalProperties",
        ),
    ] {
        let error = inspect(&schema, "s").expect_err(&schema.to_string());
        assert_eq!(error.path, path, "{schema}: {}", error.message);
    }
}

#[test]
fn the_work_of_one_check_is_bounded() {
    let wide: Vec<Value> = (0..2_000).map(|i| json!({"const": i})).collect();
    let schema = json!({"type": "array", "items": {"anyOf": wide}});
    let items: Vec<Value> = (0..1_000).map(|_| json!(-1)).collect();
    let errors = check(&schema, &Value::Array(items), "args");
    assert_eq!(errors.len(), 1, "{:?}", errors.first());
    assert!(
        errors[0].message.starts_with("too much to check"),
        "{}",
        errors[0].message
    );
    // Past the bound nothing passes: a oneOf whose branches ran out is not "exactly one".
    let deep = json!({"type": "array", "items": {"oneOf": [{"anyOf": wide_of(3_000)}, {"type": "string"}]}});
    let errors = check(&deep, &Value::Array(vec![json!("x"); 100]), "args");
    assert_eq!(errors.len(), 1);
    assert!(errors[0].message.starts_with("too much to check"));
}

fn wide_of(n: i64) -> Vec<Value> {
    (0..n).map(|i| json!({"const": i})).collect()
}

fn numbers(n: usize) -> Vec<Value> {
    (0..n).map(|i| json!(i)).collect()
}

#[test]
fn an_enum_of_the_largest_size_costs_each_value_its_own_size() {
    let schema = json!({"type": "object", "properties": {
        "ids": {"type": "array", "items": {"enum": numbers(MAX_ENUM_ENTRIES)}},
        "pair": {"enum": [{"a": 1, "b": [true]}, "x"]},
    }});
    let items = 5_000;
    let mut ids = numbers(items);
    ids[7] = json!(-1);
    ids[8] = json!(3.0);
    let value = json!({"ids": ids, "pair": {"b": [true], "a": 1.0}});
    let result = checked(&schema, &value, "args");
    assert_eq!(
        result
            .errors
            .iter()
            .map(|e| (e.path.as_str(), e.code))
            .collect::<Vec<_>>(),
        [("args.ids[7]", ErrorCode::InvalidValue)],
        "3.0 is 3, and an object's key order does not matter"
    );
    // Per item: one schema node, one value read; then the object, the list and the pair.
    assert!(
        result.steps <= 2 * items as u32 + 10,
        "{} steps for {items} items against {MAX_ENUM_ENTRIES} entries",
        result.steps
    );
}

#[test]
fn a_schema_past_its_limits_is_refused_at_its_path() {
    let long = json!({"type": "object", "properties": {
        "x": {"enum": numbers(MAX_ENUM_ENTRIES + 1)}}});
    let error = inspect(&long, "calls[0].args_schema").expect_err("too long an enum");
    assert_eq!(
        (error.path.as_str(), error.code, error.message.as_str()),
        (
            "calls[0].args_schema.properties.x.enum",
            ErrorCode::TooManyItems,
            format!(
                "at most {MAX_ENUM_ENTRIES} entries, got {}",
                MAX_ENUM_ENTRIES + 1
            )
            .as_str()
        )
    );
    let far_too_long = json!({"properties": {"x": {"enum": numbers(10 * MAX_ENUM_ENTRIES)}}});
    let error = inspect(&far_too_long, "s").expect_err("too long an enum");
    assert_eq!(error.path, "s.properties.x.enum", "{}", error.message);
    let at_most = json!({"enum": numbers(MAX_ENUM_ENTRIES)});
    assert_eq!(inspect(&at_most, "s"), Ok(Support::Checked));

    // Values anywhere count, annotations included.
    let wide = json!({"type": "object", "examples": numbers(MAX_SCHEMA_VALUES)});
    let error = inspect(&wide, "calls[2].args_schema").expect_err("too many values");
    assert_eq!(
        (error.path.as_str(), error.code, error.message.as_str()),
        (
            "calls[2].args_schema",
            ErrorCode::TooManyItems,
            format!(
                "at most {MAX_SCHEMA_VALUES} values in all, got {}",
                MAX_SCHEMA_VALUES + 3
            )
            .as_str()
        )
    );
    let at_most = json!({"examples": numbers(MAX_SCHEMA_VALUES - 2)});
    assert_eq!(inspect(&at_most, "s"), Ok(Support::Checked));
}

#[test]
fn a_value_compared_with_many_enums_is_read_once() {
    // 50 branches, each an enum, tried on every item of eleven values.
    let branches: Vec<Value> = (0..50).map(|i| json!({"enum": [i]})).collect();
    let schema = json!({"type": "array", "items": {"anyOf": branches}});
    let item =
        json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9, "j": 10});
    let items = 1_000;
    let result = checked(&schema, &Value::Array(vec![item; items]), "args");
    assert_eq!(result.errors.len(), items, "{:?}", result.errors.first());
    // Per item: its schema node, 50 branches, and its eleven values read once.
    assert_eq!(result.steps, 1 + items as u32 * (1 + 50 + 11));
}

#[test]
fn values_read_for_enums_count_against_the_budget() {
    // An enum at each of three levels reads every number three times: once in the whole
    // list, once in its row, once alone; the schema nodes visited alone stay far under.
    let level = |inner: Option<Value>| {
        let mut schema = json!({"type": "array", "enum": [[0]]});
        if let Some(inner) = inner {
            schema["items"] = inner;
        }
        schema
    };
    let schema = level(Some(level(Some(json!({"enum": [0]})))));
    let rows = vec![Value::Array(numbers(200)); 300];
    let result = checked(&schema, &Value::Array(rows), "args");
    assert_eq!(result.errors.len(), 1, "{:?}", result.errors.first());
    assert!(
        result.errors[0].message.starts_with("too much to check"),
        "{}",
        result.errors[0].message
    );
    assert_eq!(result.steps, MAX_CHECK_STEPS);
}
