//! The `ask_user` tool as deepagents-code 0.2.2 presents it to the model: the function tool
//! definition, the same arguments as a JSON schema with `$defs`, the interrupt payload's
//! schema, and the system-prompt section. The descriptions are deepagents' own, quoted, so a
//! model sees the same tool through askgate.
//!
//! The schema says less than the validator checks: `minLength: 1` on `question` but nothing
//! about blank text, no `minItems`, no `additionalProperties: false`, no defaults.

use serde_json::{Value, json};

use super::types::TOOL_NAME;

/// The tool description the model reads (`ASK_USER_TOOL_DESCRIPTION`).
pub const TOOL_DESCRIPTION: &str = "Ask the user one or more questions when you need clarification or input before proceeding.\n\nEach question can be one of:\n- \"text\": Free-form text response from the user\n- \"multiple_choice\": User selects exactly one of the predefined options (an \"Other\" option is always available)\n- \"multi_select\": User selects one or more of the predefined options (an \"Other\" free-form option is always available; filling one reveals an \"Add another\" slot for more custom values)\n\nFor \"multiple_choice\" and \"multi_select\" questions, provide a list of choices, each with a non-empty \"value\". For \"multiple_choice\" the user picks one option or types a custom answer via the \"Other\" option; for \"multi_select\" the user toggles one or more of the provided options and may also add one or more custom free-form Other values among the selected values.\n\nA \"multi_select\" answer is returned as a JSON array of the selected values, e.g. [\"a\", \"b\"] (an optional question the user leaves untouched returns []). \"multi_select\" choice values and custom Other text may themselves contain commas, quotes, and newlines. A \"multiple_choice\" value is returned on its own with no escaping, so keep that one to a single line.\n\nBy default all questions are required. Set \"required\" to false for optional questions that the user can skip. Do not include \"(required)\", \"(optional)\", \"- optional\", or similar annotations in the question text — the UI renders that separately based on the \"required\" field.\n\nUse this tool when:\n- You need clarification on ambiguous requirements\n- You want the user to choose between multiple valid approaches\n- You need specific information only the user can provide\n- You want to confirm a plan before executing it\n\nDo NOT use this tool for:\n- Simple yes/no confirmations (just proceed with your best judgment)\n- Questions you can answer yourself from context\n- Trivial decisions that don't meaningfully affect the outcome";

/// The section `AskUserMiddleware` appends to the system prompt (`ASK_USER_SYSTEM_PROMPT`).
pub const SYSTEM_PROMPT: &str = "## `ask_user`\n\nYou have access to the `ask_user` tool to ask the user questions when you need clarification or input.\nUse this tool sparingly - only when you genuinely need information from the user that you cannot determine from context.\n\nWhen using `ask_user`:\n- Be concise and specific with your questions\n- Use multiple choice when there are clear options and exactly one applies\n- Use multi-select when the user may legitimately pick several of the options\n- Use text input when you need free-form responses\n- Group related questions into a single ask_user call rather than making multiple calls\n- Never ask questions you can answer yourself from the available context";

const QUESTIONS_DESCRIPTION: &str = "Questions to present to the user.";

const QUESTION_DESCRIPTION: &str = "A question to ask the user.";

const QUESTION_TEXT_DESCRIPTION: &str = "The question text to display.";

const TYPE_DESCRIPTION: &str = "Question type. 'text' for free-form input, 'multiple_choice' for picking exactly one predefined option, 'multi_select' for picking one or more predefined options. Both choice types always append an 'Other' free-form option automatically; multi-select can accept multiple custom Other values (filling one reveals another). A 'multi_select' answer comes back as a JSON array of the selected values (including any custom Other text), e.g. [\"a\", \"b\"]; if nothing is selected on an optional question the answer is [].";

const CHOICES_DESCRIPTION: &str = "Options for 'multiple_choice' and 'multi_select' questions. Every choice needs a non-empty 'value'. An 'Other' free-form option is always appended automatically for both types; multi-select may collect multiple custom Other values. A 'multi_select' answer is a JSON array of the selected values, so values (including custom Other text) may contain commas, quotes, and newlines.";

const REQUIRED_DESCRIPTION: &str = "Whether the user must answer. Defaults to true if omitted.";

const CHOICE_DESCRIPTION: &str =
    "A single choice option for a multiple choice or multi-select question.";

const VALUE_DESCRIPTION: &str = "The display label for this choice. Also the text returned as the answer when this choice is selected. A 'multi_select' answer is a JSON array, so a value may contain commas, quotes, and newlines; JSON escaping keeps it exact. A 'multiple_choice' value is returned on its own with no escaping, so keep that one to a single line.";

const REQUEST_DESCRIPTION: &str =
    "Request payload sent via interrupt when asking the user questions.";

/// The tool definition sent to the model, in the OpenAI function-tool form LangChain
/// produces (`convert_to_openai_tool`): `{"type": "function", "function": {...}}`.
pub fn tool_definition() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": TOOL_DESCRIPTION,
            "parameters": {
                "properties": {
                    "questions": {
                        "description": QUESTIONS_DESCRIPTION,
                        "items": question_schema(false, &choice_schema(false)),
                        "type": "array"
                    }
                },
                "required": ["questions"],
                "type": "object"
            }
        }
    })
}

/// The tool's argument schema as pydantic writes it (`tool_call_schema.model_json_schema()`),
/// with titles and `$defs`.
pub fn tool_call_schema() -> Value {
    json!({
        "$defs": defs(),
        "description": TOOL_DESCRIPTION,
        "properties": {
            "questions": {
                "description": QUESTIONS_DESCRIPTION,
                "items": { "$ref": "#/$defs/Question" },
                "title": "Questions",
                "type": "array"
            }
        },
        "required": ["questions"],
        "title": TOOL_NAME,
        "type": "object"
    })
}

/// The schema of the interrupt payload a client receives (`AskUserRequest`).
pub fn interrupt_payload_schema() -> Value {
    json!({
        "$defs": defs(),
        "description": REQUEST_DESCRIPTION,
        "properties": {
            "type": { "const": TOOL_NAME, "title": "Type", "type": "string" },
            "questions": {
                "items": { "$ref": "#/$defs/Question" },
                "title": "Questions",
                "type": "array"
            },
            "tool_call_id": { "title": "Tool Call Id", "type": "string" }
        },
        "required": ["type", "questions", "tool_call_id"],
        "title": "AskUserRequest",
        "type": "object"
    })
}

fn defs() -> Value {
    json!({
        "Choice": choice_schema(true),
        "Question": question_schema(true, &json!({ "$ref": "#/$defs/Choice" })),
    })
}

/// Adds `"title": title` to every object in `schema` when `titled`, as pydantic does in a
/// model schema (LangChain's function-tool form drops them).
fn titled(mut schema: Value, title: &str, titled: bool) -> Value {
    if titled && let Value::Object(map) = &mut schema {
        let type_at = map.keys().position(|k| k == "type").unwrap_or(map.len());
        map.shift_insert(type_at, "title".to_owned(), json!(title));
    }
    schema
}

fn choice_schema(with_titles: bool) -> Value {
    titled(
        json!({
            "description": CHOICE_DESCRIPTION,
            "properties": {
                "value": titled(
                    json!({ "description": VALUE_DESCRIPTION, "type": "string" }),
                    "Value",
                    with_titles,
                )
            },
            "required": ["value"],
            "type": "object"
        }),
        "Choice",
        with_titles,
    )
}

fn question_schema(with_titles: bool, choice_items: &Value) -> Value {
    let field = |schema: Value, title: &str| titled(schema, title, with_titles);
    titled(
        json!({
            "description": QUESTION_DESCRIPTION,
            "properties": {
                "question": field(
                    json!({ "description": QUESTION_TEXT_DESCRIPTION, "minLength": 1, "type": "string" }),
                    "Question",
                ),
                "type": field(
                    json!({
                        "description": TYPE_DESCRIPTION,
                        "enum": ["text", "multiple_choice", "multi_select"],
                        "type": "string"
                    }),
                    "Type",
                ),
                "choices": field(
                    json!({ "description": CHOICES_DESCRIPTION, "items": choice_items, "type": "array" }),
                    "Choices",
                ),
                "required": field(
                    json!({ "description": REQUIRED_DESCRIPTION, "type": "boolean" }),
                    "Required",
                )
            },
            "required": ["question", "type"],
            "type": "object"
        }),
        "Question",
        with_titles,
    )
}
