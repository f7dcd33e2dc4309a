//! The form dialect's rules (MCP elicitation), each with the path its error names: the
//! request an agent may send, and the content a tab may accept it with.

use askgate_protocol::{Dialect, ErrorCode, Outcome, QuestionSet};
use serde_json::{Value, json};

use crate::support;

use support::one;

fn form() -> Dialect {
    support::dialect("form")
}

fn request_errors(request: &Value) -> Vec<(String, ErrorCode)> {
    support::request_errors(form(), request)
}

fn with_property(property: &Value) -> Value {
    json!({"message": "m", "schema": {"type": "object", "properties": {"p": property}}})
}

#[test]
fn the_request_fields() {
    let schema = json!({"type": "object", "properties": {}});
    let cases = [
        (
            json!({"schema": schema}),
            "message",
            ErrorCode::MissingField,
        ),
        (
            json!({"message": " ", "schema": schema}),
            "message",
            ErrorCode::Blank,
        ),
        (
            json!({"message": "m".repeat(10_001), "schema": schema}),
            "message",
            ErrorCode::TooLong,
        ),
        (json!({"message": "m"}), "schema", ErrorCode::MissingField),
        (
            json!({"message": "m", "schema": schema, "mode": "popup"}),
            "mode",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"message": "m", "schema": schema, "url": "https://x.y"}),
            "url",
            ErrorCode::UnknownField,
        ),
        (
            json!({"message": "m", "schema": schema, "server": "a\u{7}"}),
            "server",
            ErrorCode::ForbiddenCharacter,
        ),
        (
            json!({"message": "m", "schema": schema, "server": "s".repeat(201)}),
            "server",
            ErrorCode::TooLong,
        ),
        (
            json!({"message": "m", "mode": "url"}),
            "url",
            ErrorCode::MissingField,
        ),
        (
            json!({"message": "m", "mode": "url", "url": "javascript:alert(1)"}),
            "url",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"message": "m", "mode": "url", "url": "https://x.y", "schema": schema}),
            "schema",
            ErrorCode::UnknownField,
        ),
    ];
    for (request, path, code) in cases {
        assert_eq!(request_errors(&request), one(path, code), "{request}");
    }
}

#[test]
fn the_schema_and_each_kind_of_field() {
    let cases = [
        (
            json!({"message": "m", "schema": []}),
            "schema",
            ErrorCode::WrongType,
        ),
        (
            json!({"message": "m", "schema": {"type": "array", "properties": {}}}),
            "schema.type",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"message": "m", "schema": {"type": "object"}}),
            "schema.properties",
            ErrorCode::MissingField,
        ),
        (
            json!({"message": "m", "schema": {"type": "object", "properties": {}, "additionalProperties": false}}),
            "schema.additionalProperties",
            ErrorCode::UnknownField,
        ),
        (
            json!({"message": "m", "schema": {"type": "object", "properties": {}, "required": ["x"]}}),
            "schema.required[0]",
            ErrorCode::InvalidValue,
        ),
        (
            with_property(&json!({"type": "object"})),
            "schema.properties.p.type",
            ErrorCode::InvalidValue,
        ),
        (
            with_property(&json!({"title": "no type"})),
            "schema.properties.p.type",
            ErrorCode::InvalidValue,
        ),
        (
            with_property(&json!({"type": "string", "pattern": "^a"})),
            "schema.properties.p.pattern",
            ErrorCode::UnknownField,
        ),
        (
            with_property(&json!({"type": "string", "format": "ipv4"})),
            "schema.properties.p.format",
            ErrorCode::InvalidValue,
        ),
        (
            with_property(&json!({"type": "string", "minLength": -1})),
            "schema.properties.p.minLength",
            ErrorCode::InvalidValue,
        ),
        (
            with_property(&json!({"type": "string", "minLength": 5, "maxLength": 2})),
            "schema.properties.p.minLength",
            ErrorCode::InvalidValue,
        ),
        (
            with_property(&json!({"type": "string", "default": 1})),
            "schema.properties.p.default",
            ErrorCode::WrongType,
        ),
        (
            with_property(&json!({"type": "integer", "minimum": "0"})),
            "schema.properties.p.minimum",
            ErrorCode::WrongType,
        ),
        (
            with_property(&json!({"type": "integer", "default": 1.5})),
            "schema.properties.p.default",
            ErrorCode::WrongType,
        ),
        (
            with_property(&json!({"type": "number", "exclusiveMinimum": 0})),
            "schema.properties.p.exclusiveMinimum",
            ErrorCode::UnknownField,
        ),
        (
            with_property(&json!({"type": "boolean", "default": "yes"})),
            "schema.properties.p.default",
            ErrorCode::WrongType,
        ),
        (
            with_property(&json!({"type": "string", "enum": []})),
            "schema.properties.p.enum",
            ErrorCode::InvalidValue,
        ),
        (
            with_property(&json!({"type": "string", "enum": ["a", 1]})),
            "schema.properties.p.enum[1]",
            ErrorCode::WrongType,
        ),
        (
            with_property(&json!({"type": "string", "enum": ["a", "a"]})),
            "schema.properties.p",
            ErrorCode::InvalidValue,
        ),
        (
            with_property(&json!({"type": "string", "enum": ["a"], "enumNames": ["A", "B"]})),
            "schema.properties.p.enumNames",
            ErrorCode::InvalidValue,
        ),
        (
            with_property(&json!({"type": "string", "enum": ["a"], "default": "b"})),
            "schema.properties.p.default",
            ErrorCode::InvalidValue,
        ),
        (
            with_property(&json!({"type": "string", "oneOf": [{"const": "a"}]})),
            "schema.properties.p.oneOf[0]",
            ErrorCode::InvalidValue,
        ),
        (
            with_property(
                &json!({"type": "string", "oneOf": [{"const": "a", "title": "A", "x": 1}]}),
            ),
            "schema.properties.p.oneOf[0].x",
            ErrorCode::UnknownField,
        ),
        (
            with_property(&json!({"type": "string", "enum": ["a"], "minLength": 1})),
            "schema.properties.p.minLength",
            ErrorCode::UnknownField,
        ),
        (
            with_property(&json!({"type": "array"})),
            "schema.properties.p.items",
            ErrorCode::MissingField,
        ),
        (
            with_property(&json!({"type": "array", "items": {"type": "integer", "enum": [1]}})),
            "schema.properties.p.items.type",
            ErrorCode::InvalidValue,
        ),
        (
            with_property(
                &json!({"type": "array", "items": {"enum": ["a"]}, "minItems": 2, "maxItems": 1}),
            ),
            "schema.properties.p.minItems",
            ErrorCode::InvalidValue,
        ),
        (
            with_property(&json!({"type": "array", "items": {"enum": ["a"]}, "uniqueItems": true})),
            "schema.properties.p.uniqueItems",
            ErrorCode::UnknownField,
        ),
        (
            with_property(&json!({"type": "array", "items": {"enum": ["a"]}, "default": ["b"]})),
            "schema.properties.p.default",
            ErrorCode::InvalidValue,
        ),
    ];
    for (request, path, code) in cases {
        assert_eq!(request_errors(&request), one(path, code), "{request}");
    }
}

fn sample() -> QuestionSet {
    QuestionSet::validate(
        form(),
        &json!({"message": "Tell us", "server": "crm", "schema": {"type": "object", "properties": {
            "name": {"type": "string", "title": "Your name", "minLength": 2, "maxLength": 5},
            "email": {"type": "string", "format": "email"},
            "site": {"type": "string", "format": "uri"},
            "born": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
            "ratio": {"type": "number", "maximum": 1},
            "ok": {"type": "boolean", "default": true},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2},
            "apiKey": {"type": "string", "title": "API key"}
        }, "required": ["name", "age"]}}),
    )
    .expect("a valid form")
}

fn content_errors(content: &Value) -> Vec<(String, ErrorCode)> {
    support::answer_errors(&sample(), &json!({ "content": content }))
}

#[test]
fn tabs_receive_the_fields_in_order() {
    let view = sample().to_json();
    let names: Vec<&str> = view["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "name", "email", "site", "born", "at", "age", "ratio", "ok", "size", "tags", "apiKey"
        ]
    );
    assert_eq!(view["fields"][0]["required"], true);
    assert_eq!(view["fields"][1]["kind"], "email");
    assert_eq!(view["fields"][4]["kind"], "date-time");
    assert_eq!(view["fields"][5]["default"], 30);
    assert_eq!(
        view["fields"][8]["options"][1],
        json!({"value": "l", "label": "Large"})
    );
    assert_eq!(view["fields"][10]["sensitive"], true);
    assert_eq!(view["fields"][0]["sensitive"], false);
    assert_eq!(view["server"], "crm");
    let again = QuestionSet::validate(form(), &view).expect("the view validates again");
    assert_eq!(again, sample());
}

#[test]
fn accepted_content() {
    let settled = sample()
        .settle_answer(
            &json!({"content": {"name": "Ann", "age": 41, "tags": ["a"], "ok": false,
                                            "at": "2026-12-02T10:30", "ratio": 0.5}}),
        )
        .unwrap();
    assert_eq!(settled.outcome, Outcome::Answered);
    assert_eq!(
        settled.response,
        json!({"action": "accept", "content": {"name": "Ann", "age": 41, "tags": ["a"], "ok": false,
                                               "at": "2026-12-02T10:30", "ratio": 0.5}})
    );
    assert_eq!(settled.model_text, None);
    let cases = [
        (
            json!({"age": 1}),
            "response.content.name",
            ErrorCode::MissingField,
        ),
        (
            json!({"name": "Ann", "age": 1, "nick": "x"}),
            "response.content.nick",
            ErrorCode::UnknownField,
        ),
        (
            json!({"name": "A", "age": 1}),
            "response.content.name",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"name": "Annabel", "age": 1}),
            "response.content.name",
            ErrorCode::TooLong,
        ),
        (
            json!({"name": 5, "age": 1}),
            "response.content.name",
            ErrorCode::WrongType,
        ),
        (
            json!({"name": "Ann", "age": "41"}),
            "response.content.age",
            ErrorCode::WrongType,
        ),
        (
            json!({"name": "Ann", "age": 4.5}),
            "response.content.age",
            ErrorCode::WrongType,
        ),
        (
            json!({"name": "Ann", "age": 151}),
            "response.content.age",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"name": "Ann", "age": 1, "ratio": 2}),
            "response.content.ratio",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"name": "Ann", "age": 1, "ok": "true"}),
            "response.content.ok",
            ErrorCode::WrongType,
        ),
        (
            json!({"name": "Ann", "age": 1, "email": "ann"}),
            "response.content.email",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"name": "Ann", "age": 1, "site": "example.com"}),
            "response.content.site",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"name": "Ann", "age": 1, "born": "2023-02-29"}),
            "response.content.born",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"name": "Ann", "age": 1, "at": "noon"}),
            "response.content.at",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"name": "Ann", "age": 1, "size": "m"}),
            "response.content.size",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"name": "Ann", "age": 1, "tags": []}),
            "response.content.tags",
            ErrorCode::TooFewItems,
        ),
        (
            json!({"name": "Ann", "age": 1, "tags": ["a", "b", "c"]}),
            "response.content.tags",
            ErrorCode::TooManyItems,
        ),
        (
            json!({"name": "Ann", "age": 1, "tags": ["z"]}),
            "response.content.tags",
            ErrorCode::InvalidValue,
        ),
        (
            json!({"name": "Ann", "age": 1, "tags": "a"}),
            "response.content.tags",
            ErrorCode::WrongType,
        ),
        (
            json!({"name": "Ann", "age": null}),
            "response.content.age",
            ErrorCode::WrongType,
        ),
    ];
    for (content, path, code) in cases {
        assert_eq!(content_errors(&content), one(path, code), "{content}");
    }
    let bad_shape =
        sample().settle_answer(&json!({"content": {"name": "Ann", "age": 1}, "action": "accept"}));
    assert_eq!(bad_shape.unwrap_err().errors()[0].path, "response.action");
}

#[test]
fn what_the_server_receives_otherwise() {
    for (outcome, action) in [
        (Outcome::Declined, "decline"),
        (Outcome::TimedOut, "cancel"),
        (Outcome::Withdrawn, "cancel"),
    ] {
        let settled = sample().settle_without_answer(outcome);
        assert_eq!(settled.response, json!({ "action": action }), "{outcome:?}");
    }
}

#[test]
fn url_mode_is_consent_to_open() {
    let set = QuestionSet::validate(
        form(),
        &json!({"message": "Sign in to continue", "mode": "url", "elicitation_id": "e-1",
                "url": "https://accounts.example:8443/login?next=/"}),
    )
    .unwrap();
    let view = set.to_json();
    assert_eq!(view["host"], "accounts.example");
    assert_eq!(view["elicitation_id"], "e-1");
    assert!(
        view.get("fields").is_none() && view.get("schema").is_none(),
        "{view}"
    );
    // User info that reads like a site is refused at ask time, with what the browser opens.
    let refused = QuestionSet::validate(
        form(),
        &json!({"message": "Sign in", "mode": "url",
                "url": "https://accounts.example@evil.example:8443/login"}),
    )
    .unwrap_err();
    let error = &refused.errors()[0];
    assert_eq!(
        (error.path.as_str(), error.code),
        ("url", ErrorCode::InvalidValue)
    );
    assert!(
        error.message.contains("would open `evil.example`"),
        "{}",
        error.message
    );
    // A right-to-left override makes the rest of the address display backwards, as another.
    let refused = QuestionSet::validate(
        form(),
        &json!({"message": "Sign in", "mode": "url",
                "url": "https://evil.example/?\u{202E}moc.elgoog.stnuocca//:sptth"}),
    )
    .unwrap_err();
    let error = &refused.errors()[0];
    assert_eq!(
        (error.path.as_str(), error.code),
        ("url", ErrorCode::InvalidValue)
    );
    assert!(error.message.contains("U+202E"), "{}", error.message);
    for consent in [json!({}), json!({"content": {}})] {
        assert_eq!(
            set.settle_answer(&consent).unwrap().response,
            json!({"action": "accept"})
        );
    }
    let errors = set
        .settle_answer(&json!({"content": {"x": 1}}))
        .unwrap_err();
    assert_eq!(errors.errors()[0].path, "response.content.x");
}
