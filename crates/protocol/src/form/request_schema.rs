//! The form dialect's request as a JSON Schema (draft 2020-12): what `askgate schema
//! --dialect form` prints. A form is not a tool the model calls: it is an MCP elicitation
//! (`elicitation/create`'s `message` and `requestedSchema`, or URL mode's `url`) carried in
//! an ask's fields, so this describes those fields, as [`super::request::validate_form`]
//! reads them. What a schema cannot say is in the descriptions: the
//! `requestedSchema`'s own rules (MCP's primitive kinds, checked property by property) and
//! the URL's (the host a browser opens must be the host a person reads).

use serde_json::{Value, json};

use super::{MAX_MESSAGE_CHARS, MAX_SERVER_CHARS, MAX_URL_BYTES};

/// Not blank: a character other than white space.
const NOT_BLANK: &str = "\\S";
/// No control character (Unicode's Cc: U+0000-001F, U+007F-009F).
const NO_CONTROLS: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$";

/// The JSON Schema of a form request: the ask's `message`, `mode`, `server`, and `schema`
/// (form mode) or `url` and `elicitation_id` (URL mode).
pub fn request_schema() -> Value {
    let text = |max: usize, description: &str| {
        json!({
            "type": "string",
            "minLength": 1,
            "maxLength": max,
            "pattern": NOT_BLANK,
            "description": description,
        })
    };
    let absent = json!({"type": "null"});
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "askgate form request (MCP elicitation)",
        "description": "The fields an ask with \"dialect\": \"form\" carries beside its \
            session, id, title...: an MCP elicitation. In form mode (the default) a person \
            fills in `schema`, MCP's `requestedSchema` (askgate names the field `schema`); in \
            URL mode they are asked to open `url`. The agent gets MCP's ElicitResult: \
            {\"action\": \"accept\", \"content\": {...}}, {\"action\": \"decline\"} or \
            {\"action\": \"cancel\"}. This is not a tool the model calls: an MCP server asks \
            it (elicitation/create).",
        "type": "object",
        "properties": {
            "message": text(MAX_MESSAGE_CHARS, "What the server says to the person: \
                elicitation/create's `message`."),
            "mode": {
                "enum": ["form", "url", null],
                "description": "\"form\" (the default) or \"url\".",
            },
            "server": {
                "allOf": [
                    text(MAX_SERVER_CHARS, "Which MCP server asks, shown on the card."),
                    {"pattern": NO_CONTROLS},
                ],
            },
            "schema": {
                "type": ["object", "null"],
                "description": "Form mode, required: MCP's `requestedSchema`, {\"type\": \
                    \"object\", \"properties\": {...}, \"required\"?: [...]} (and `$schema`, \
                    `title`, `description`), at most 100 properties, each one of MCP's \
                    primitive kinds: a string (minLength, maxLength, format email | uri | \
                    date | date-time, default), a number or integer (minimum, maximum, \
                    default), a boolean (default), a single choice (enum, legacy enumNames, \
                    oneOf [{const, title}], or const alone) or a multiple choice (type array, \
                    items {type string, enum} or {anyOf [{const, title}]}, minItems, maxItems, \
                    default); each may have title and description. Any keyword MCP does not \
                    define is refused at its path.",
            },
            "url": {
                "type": ["string", "null"],
                "description": format!("URL mode, required: the http or https URL to open \
                    (a sign-in, a payment), at most {MAX_URL_BYTES} bytes, no spaces, control \
                    or invisible characters; refused when the host a browser opens is not \
                    the host a person reads in it (a backslash, user info before @, a \
                    percent-escape in the host, a host a browser rewrites)."),
            },
            "elicitation_id": {
                "anyOf": [text(256, "URL mode: the server's id for the elicitation, handed \
                    back untouched."), absent],
            },
        },
        "required": ["message"],
        "if": {
            "properties": {"mode": {"const": "url"}},
            "required": ["mode"],
        },
        "then": {
            "properties": {
                "url": {"type": "string"},
                "schema": absent,
            },
            "required": ["url"],
        },
        "else": {
            "properties": {
                "schema": {"type": "object"},
                "url": absent,
                "elicitation_id": absent,
            },
            "required": ["schema"],
        },
    })
}
