//! The WebSocket frames' JSON Schemas (`docs/ws-agent.schema.json`, `ws-tab`, `ws-inbox`),
//! held against the frames the tests exchange, so that a schema that drifts from the gateway
//! fails a test rather than misleading a tool.
//!
//! The files are read from the repository (this crate does not depend on the gateway) and
//! compiled once per test process. Each file's `$defs/client_frame` judges what a peer sends
//! and `$defs/server_frame` what the gateway sends.

use std::path::PathBuf;
use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

/// How much of a frame that is off its schema the panic shows, in characters.
const FRAME_SHOWN_CHARS: usize = 1_000;

/// How many of a frame's schema errors the panic lists.
const ERRORS_SHOWN: usize = 5;

/// A WebSocket endpoint of the gateway, each with its schema file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `GET /v1/agent`.
    Agent,
    /// `GET /v1/sessions/{session}/live`, a tab.
    Tab,
    /// `GET /v1/inbox/live`, a person's inbox.
    Inbox,
}

/// Which way a frame went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the test's peer to the gateway: judged by `$defs/client_frame`.
    Sent,
    /// From the gateway: judged by `$defs/server_frame`.
    Received,
}

impl Endpoint {
    /// The endpoint a WebSocket URL (`ws://host:port/v1/agent`...) names, by its path; `None`
    /// for any other path, whose frames are left unchecked.
    pub fn of_url(url: &str) -> Option<Endpoint> {
        let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
        let path = after_scheme.find('/').map_or("", |at| &after_scheme[at..]);
        let path = path.split(['?', '#']).next().unwrap_or_default();
        if path.ends_with("/v1/agent") {
            return Some(Endpoint::Agent);
        }
        if path.ends_with("/v1/inbox/live") {
            return Some(Endpoint::Inbox);
        }
        let (_, session) = path.rsplit_once("/v1/sessions/")?;
        let session = session.strip_suffix("/live")?;
        (!session.is_empty() && !session.contains('/')).then_some(Endpoint::Tab)
    }

    /// The schema file's name, in `docs/`.
    pub fn file(self) -> &'static str {
        match self {
            Endpoint::Agent => "ws-agent.schema.json",
            Endpoint::Tab => "ws-tab.schema.json",
            Endpoint::Inbox => "ws-inbox.schema.json",
        }
    }

    fn index(self) -> usize {
        match self {
            Endpoint::Agent => 0,
            Endpoint::Tab => 1,
            Endpoint::Inbox => 2,
        }
    }
}

/// Panics, naming the endpoint, the direction, the frame (cut to [`FRAME_SHOWN_CHARS`]) and
/// where it breaks the schema, unless `frame` fits its endpoint's schema for `direction`.
pub fn check(endpoint: Endpoint, direction: Direction, frame: &Value) {
    if let Err(problems) = judge(endpoint, direction, frame) {
        let text = frame.to_string();
        let shown: String = text.chars().take(FRAME_SHOWN_CHARS).collect();
        let cut = if shown.len() < text.len() {
            format!(
                " (first {FRAME_SHOWN_CHARS} of {} characters)",
                text.chars().count()
            )
        } else {
            String::new()
        };
        panic!(
            "a frame {} on the {endpoint:?} socket is off docs/{}:\n{}\nthe frame{cut}: {shown}",
            match direction {
                Direction::Sent => "sent",
                Direction::Received => "received",
            },
            endpoint.file(),
            problems.join("\n"),
        );
    }
}

/// Whether `frame` fits; else each problem (at most [`ERRORS_SHOWN`]) as
/// `at /errors/0/code: ... (schema: /allOf/...)`.
pub fn judge(endpoint: Endpoint, direction: Direction, frame: &Value) -> Result<(), Vec<String>> {
    let validators = &schemas()[endpoint.index()];
    let validator = match direction {
        Direction::Sent => &validators.client,
        Direction::Received => &validators.server,
    };
    if validator.is_valid(frame) {
        return Ok(());
    }
    Err(validator
        .iter_errors(frame)
        .take(ERRORS_SHOWN)
        .map(|error| {
            let at = error.instance_path().as_str();
            format!(
                "  at {}: {} (schema: {})",
                if at.is_empty() { "the frame" } else { at },
                error.masked(),
                error.evaluation_path().as_str()
            )
        })
        .collect())
}

/// One endpoint's two validators.
struct Schemas {
    client: Validator,
    server: Validator,
}

/// Every endpoint's validators, in [`Endpoint::index`]'s order, compiled at first use.
fn schemas() -> &'static [Schemas; 3] {
    static SCHEMAS: OnceLock<[Schemas; 3]> = OnceLock::new();
    SCHEMAS.get_or_init(|| [Endpoint::Agent, Endpoint::Tab, Endpoint::Inbox].map(compile))
}

/// The schema file of `endpoint`, as JSON.
pub fn schema_of(endpoint: Endpoint) -> Value {
    let path = docs_dir().join(endpoint.file());
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading the frame schema {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the frame schema {} is not JSON: {e}", path.display()))
}

fn docs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

fn compile(endpoint: Endpoint) -> Schemas {
    let schema = schema_of(endpoint);
    let side = |definition: &str| {
        // The file's root is either side (`oneOf`); each side is its root with the `oneOf`
        // replaced by a reference to that side, so its `$defs` still resolve.
        let mut root = schema.clone();
        if let Some(root) = root.as_object_mut() {
            root.remove("oneOf");
            root.insert(
                "$ref".to_owned(),
                Value::from(format!("#/$defs/{definition}")),
            );
        }
        jsonschema::draft202012::new(&root).unwrap_or_else(|e| {
            panic!(
                "docs/{}: $defs/{definition} does not compile: {e}",
                endpoint.file()
            )
        })
    };
    Schemas {
        client: side("client_frame"),
        server: side("server_frame"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn urls_name_their_endpoint_by_path() {
        assert_eq!(
            Endpoint::of_url("ws://127.0.0.1:1/v1/agent"),
            Some(Endpoint::Agent)
        );
        assert_eq!(
            Endpoint::of_url("ws://h/v1/agent?x=1"),
            Some(Endpoint::Agent)
        );
        assert_eq!(
            Endpoint::of_url("ws://h/v1/inbox/live"),
            Some(Endpoint::Inbox)
        );
        assert_eq!(
            Endpoint::of_url("ws://h/v1/sessions/s-1/live"),
            Some(Endpoint::Tab)
        );
        assert_eq!(Endpoint::of_url("ws://h/v1/sessions//live"), None);
        assert_eq!(Endpoint::of_url("ws://h/v1/sessions/a/b/live"), None);
        assert_eq!(Endpoint::of_url("ws://h/elsewhere"), None);
    }

    /// The tab's and the inbox's files describe their shared parts (the request view, `you`,
    /// errors) alike; they are written twice so that each file stands alone.
    #[test]
    fn the_tab_and_inbox_schemas_share_their_common_definitions() {
        let tab = schema_of(Endpoint::Tab);
        let inbox = schema_of(Endpoint::Inbox);
        let mut shared = 0;
        for (name, definition) in inbox["$defs"].as_object().expect("$defs") {
            if [
                "client_frame",
                "server_frame",
                "snapshot",
                "hello",
                "answer",
                "decline",
            ]
            .contains(&name.as_str())
            {
                continue;
            }
            match tab["$defs"].get(name) {
                // A tab's frame, with `session` added for the inbox.
                Some(tab_definition)
                    if definition.get("properties").is_some_and(|p| {
                        p.get("session").is_some()
                            && tab_definition["properties"].get("session").is_none()
                    }) =>
                {
                    let mut without = definition.clone();
                    without["properties"]
                        .as_object_mut()
                        .unwrap()
                        .remove("session");
                    let required = without["required"].as_array_mut().unwrap();
                    required.retain(|field| field != "session");
                    assert_eq!(
                        without["properties"], tab_definition["properties"],
                        "{name}"
                    );
                    assert_eq!(without["required"], tab_definition["required"], "{name}");
                }
                Some(tab_definition) => assert_eq!(definition, tab_definition, "{name}"),
                None => assert_eq!(name, "inbox_view", "the inbox alone defines {name}"),
            }
            shared += 1;
        }
        assert!(shared >= 10, "only {shared} definitions compared");
    }

    #[test]
    fn a_frame_off_its_schema_is_told_at_its_path() {
        let outcome = json!({"type": "outcome", "session": "s", "id": "r", "outcome": "answered",
            "response": {}, "result": {}, "model_text": "x", "by": null, "user": null,
            "at_ms": 1});
        assert_eq!(
            judge(Endpoint::Agent, Direction::Received, &outcome),
            Ok(())
        );
        // The agent's frames are not the gateway's.
        assert!(judge(Endpoint::Agent, Direction::Sent, &outcome).is_err());
        let mut wrong = outcome.clone();
        wrong["outcome"] = json!("lost");
        let problems = judge(Endpoint::Agent, Direction::Received, &wrong).unwrap_err();
        assert!(problems[0].contains("at /outcome:"), "{problems:?}");
        let mut extra = outcome;
        extra["winner"] = json!(true);
        let problems = judge(Endpoint::Agent, Direction::Received, &extra).unwrap_err();
        assert!(problems[0].contains("winner"), "{problems:?}");
        let unknown = json!({"type": "ask_all"});
        assert!(judge(Endpoint::Agent, Direction::Sent, &unknown).is_err());
    }

    #[test]
    fn the_panic_names_the_endpoint_the_direction_and_the_frame() {
        let frame = json!({"type": "presence", "tabs": -1, "agent_online": true});
        let panic = std::panic::catch_unwind(|| check(Endpoint::Tab, Direction::Received, &frame))
            .expect_err("off its schema");
        let message = panic.downcast_ref::<String>().expect("a message");
        assert!(message.contains("received on the Tab socket"), "{message}");
        assert!(message.contains("docs/ws-tab.schema.json"), "{message}");
        assert!(message.contains("at /tabs:"), "{message}");
        assert!(message.contains(r#""tabs":-1"#), "{message}");
    }

    #[test]
    fn a_long_frame_is_cut_and_many_errors_are_cut_short() {
        let long = json!({"type": "presence", "tabs": 1, "agent_online": true,
            "padding": "x".repeat(5 * FRAME_SHOWN_CHARS)});
        let panic = std::panic::catch_unwind(|| check(Endpoint::Tab, Direction::Received, &long))
            .expect_err("off its schema");
        let message = panic.downcast_ref::<String>().expect("a message");
        assert!(
            message.contains(&format!("(first {FRAME_SHOWN_CHARS} of ")),
            "{message}"
        );
        assert!(message.len() < 2 * FRAME_SHOWN_CHARS, "{}", message.len());
        // Every member of the wrong type: more errors than are shown.
        let wrong = json!({"type": "outcome", "session": 1, "id": 2, "outcome": 3,
            "model_text": 4, "by": 5, "user": 6, "at_ms": "7", "response": null,
            "result": null});
        let problems = judge(Endpoint::Agent, Direction::Received, &wrong).unwrap_err();
        assert_eq!(problems.len(), ERRORS_SHOWN, "{problems:?}");
    }
}
