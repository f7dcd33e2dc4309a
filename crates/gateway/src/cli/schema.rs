//! `askgate schema`: the tool definition a framework sends the model.
//!
//! harness: pydantic-ai's `ToolDefinition`; deepagents: the OpenAI function tool LangChain
//! makes of `ask_user` (`{"type": "function", "function": {...}}`). A dialect that is not a
//! tool the model calls (approvals) has none, and says so.

use std::io::Write as _;

use anyhow::Context as _;
use askgate_protocol::Dialect;

pub(super) fn run(dialect: Dialect) -> anyhow::Result<()> {
    let Some(definition) = dialect.face().tool_definition() else {
        anyhow::bail!(
            "the {dialect} dialect is not a tool the model calls, so it has no tool \
             definition: it answers for other tools' calls"
        );
    };
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &definition).context("writing the schema")?;
    writeln!(out).context("writing the schema")?;
    Ok(())
}
