//! Lines of the dialects that have no framework oracle of their own (approvals), judged
//! through the dialects' common face with the gateway's own rules:
//! - `request` `{"<field>": ...}` (the dialect's fields: `calls` for approvals; `message`,
//!   `schema`... for forms): the normalised request, as tabs receive it;
//! - `response` `{"request": {"<field>": ...}, "response": {...}}`: what the agent receives
//!   for that answer, `{"response", "result", "model_text"}`.

use askgate_protocol::{Dialect, FieldError, QuestionSet};
use serde_json::{Value, json};

use super::{Summary, invalid_request, line_error, refusal};

/// The answer to a line of `dialect`.
pub(super) fn judge(dialect: Dialect, kind: &str, input: &str) -> String {
    let input: Value = match serde_json::from_str(input) {
        Ok(input) => input,
        Err(e) => return line_error("input", &format!("not a {kind} input: {e}")),
    };
    let request_of = |value: &Value| dialect.gather(|name| value.get(name));
    match kind {
        "request" => match QuestionSet::validate(dialect, &request_of(&input)) {
            Ok(set) => json!({"ok": true, "normalized": set.to_json()}).to_string(),
            Err(errors) => refused(errors.errors()),
        },
        "response" => {
            let request = input.get("request").map(request_of).unwrap_or(Value::Null);
            let set = match QuestionSet::validate(dialect, &request) {
                Ok(set) => set,
                Err(errors) => return refused(&invalid_request(errors)),
            };
            let response = input.get("response").cloned().unwrap_or(Value::Null);
            match set.settle_answer(&response) {
                Ok(settled) => json!({"ok": true, "normalized": {
                    "response": settled.response,
                    "result": settled.result,
                    "model_text": settled.model_text,
                }})
                .to_string(),
                Err(errors) => refused(errors.errors()),
            }
        }
        other => line_error(
            "kind",
            &format!(
                "unknown kind {}; expected request or response",
                json!(other)
            ),
        ),
    }
}

fn refused(errors: &[FieldError]) -> String {
    refusal(&Summary::EachError, errors)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::answer_line;

    fn answer(line: &Value) -> Value {
        serde_json::from_str(&answer_line(&line.to_string())).expect("an answer line is JSON")
    }

    #[test]
    fn approval_lines_are_judged_through_the_face() {
        let calls = json!([{"name": "rm", "args": {"path": "/"}, "decisions": ["reject", "edit"],
                            "args_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]);
        let request =
            answer(&json!({"dialect": "approval", "kind": "request", "input": {"calls": calls}}));
        assert_eq!(request["ok"], true, "{request}");
        assert_eq!(
            request["normalized"][0]["decisions"],
            json!(["edit", "reject"])
        );

        let response = answer(
            &json!({"dialect": "approval", "kind": "response", "input": {
            "request": {"calls": calls},
            "response": {"decisions": [{"type": "edit", "args": {"path": "/tmp/x"}}]}}}),
        );
        assert_eq!(
            response["normalized"]["model_text"], "rm: edited",
            "{response}"
        );
        assert_eq!(
            response["normalized"]["result"][0]["args"],
            json!({"path": "/tmp/x"})
        );

        let refused = answer(
            &json!({"dialect": "approval", "kind": "response", "input": {
            "request": {"calls": calls},
            "response": {"decisions": [{"type": "edit", "args": {"path": 1}}]}}}),
        );
        assert_eq!(
            refused["errors"][0]["path"], "response.decisions[0].args.path",
            "{refused}"
        );

        let bad_request = answer(
            &json!({"dialect": "approval", "kind": "response", "input": {
            "request": {"calls": []}, "response": {}}}),
        );
        assert_eq!(
            bad_request["errors"][0]["path"], "request.calls",
            "{bad_request}"
        );

        let unknown = answer(&json!({"dialect": "approval", "kind": "render", "input": {}}));
        assert_eq!(unknown["errors"][0]["path"], "kind");
        let dialect = answer(&json!({"dialect": "nope", "kind": "request", "input": {}}));
        assert!(
            dialect["error"].as_str().unwrap().contains("\"approval\""),
            "{dialect}"
        );
    }
}
