//! `askgate schema`: the tool definition a framework sends the model.
//!
//! harness: pydantic-ai's `ToolDefinition`; deepagents: the OpenAI function tool LangChain
//! makes of `ask_user` (`{"type": "function", "function": {...}}`). form: not a tool the
//! model calls but an MCP server's elicitation, so the JSON Schema of its request (`message`,
//! and `schema` or, in URL mode, `url`). A dialect that is neither (approvals) has none, and
//! says so.

use std::io::Write as _;

use anyhow::Context as _;
use askgate_protocol::Dialect;

pub(super) fn run(dialect: Dialect) -> anyhow::Result<()> {
    let face = dialect.face();
    let Some(definition) = face.tool_definition().or_else(|| face.request_schema()) else {
        anyhow::bail!(
            "the {dialect} dialect is not a tool the model calls, so it has no tool \
             definition: it answers for other tools' calls"
        );
    };
    // Encoded before writing, so a failed write is a plain `io::Error` the caller can tell
    // apart (a reader that stopped reading is not a failure); serde_json's writer hides it.
    let mut text = serde_json::to_string_pretty(&definition).context("encoding the schema")?;
    text.push('\n');
    super::Stdout::new()
        .write_all(text.as_bytes())
        .context("writing the schema")?;
    Ok(())
}
