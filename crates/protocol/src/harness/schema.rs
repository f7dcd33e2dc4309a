//! The `ask_user_question` tool definition, equal in content to what pydantic-ai sends the
//! model (pydantic-ai-harness 0.62; the descriptions are the harness's own, quoted so a
//! model sees the same tool through askgate). Limits come from [`limits`](super::limits).

use serde_json::{Value, json};

use super::limits::{
    MAX_DESCRIPTION_CHARS, MAX_HEADER_CHARS, MAX_LABEL_CHARS, MAX_OPTIONS, MAX_QUESTION_CHARS,
    MAX_QUESTIONS, MIN_OPTIONS, MIN_QUESTIONS,
};

/// The tool's name.
pub const TOOL_NAME: &str = "ask_user_question";

/// The static instruction `AskUser` adds to the system prompt.
pub const INSTRUCTIONS: &str = "When the task is ambiguous and the answer is not in the workspace, call `ask_user_question` with concrete options rather than guessing or burying the question in prose. Batch related questions into one call. If the user declines, make a reasonable choice and say which one you made.";

const TOOL_DESCRIPTION: &str = "Ask the user one or more multiple-choice questions and wait for the answers.\n\nUse it when the task is ambiguous and the answer cannot be found in the workspace.\nOffer concrete options; the answerer may also accept a custom answer. The result maps\neach question's `header` to picked labels or a one-item list containing the custom\nanswer, or explains that the user declined.";

const QUESTIONS_DESCRIPTION: &str = "One to ten questions, each with a unique `header`, two to six options,\nand `multi_select` when several answers are allowed.";

/// The tool definition: `name`, `description`, `parameters_json_schema`, `strict`, `kind`.
pub fn tool_definition() -> Value {
    json!({
        "name": TOOL_NAME,
        "description": TOOL_DESCRIPTION,
        "strict": null,
        "kind": "function",
        "parameters_json_schema": parameters_schema(),
    })
}

fn parameters_schema() -> Value {
    json!({
        "$defs": {
            "Question": {
                "additionalProperties": false,
                "description": "One multiple-choice question.",
                "properties": {
                    "header": {
                        "description": "Short label naming the question, unique within the call; the answer is keyed by it.",
                        "maxLength": MAX_HEADER_CHARS,
                        "minLength": 1,
                        "type": "string"
                    },
                    "question": {
                        "description": "The full question text.",
                        "maxLength": MAX_QUESTION_CHARS,
                        "minLength": 1,
                        "type": "string"
                    },
                    "options": {
                        "description": "The choices to offer.",
                        "items": { "$ref": "#/$defs/QuestionOption" },
                        "maxItems": MAX_OPTIONS,
                        "minItems": MIN_OPTIONS,
                        "type": "array"
                    },
                    "multi_select": {
                        "default": false,
                        "description": "Whether the user may pick more than one option.",
                        "type": "boolean"
                    }
                },
                "required": ["header", "question", "options"],
                "title": "Question",
                "type": "object"
            },
            "QuestionOption": {
                "additionalProperties": false,
                "description": "One choice the user can pick.",
                "properties": {
                    "label": {
                        "description": "Short option name, one to five words.",
                        "maxLength": MAX_LABEL_CHARS,
                        "minLength": 1,
                        "type": "string"
                    },
                    "description": {
                        "anyOf": [
                            { "maxLength": MAX_DESCRIPTION_CHARS, "type": "string" },
                            { "type": "null" }
                        ],
                        "default": null,
                        "description": "What choosing this option means."
                    }
                },
                "required": ["label"],
                "title": "QuestionOption",
                "type": "object"
            }
        },
        "additionalProperties": false,
        "properties": {
            "questions": {
                "description": QUESTIONS_DESCRIPTION,
                "items": { "$ref": "#/$defs/Question" },
                "maxItems": MAX_QUESTIONS,
                "minItems": MIN_QUESTIONS,
                "type": "array"
            }
        },
        "required": ["questions"],
        "type": "object"
    })
}
