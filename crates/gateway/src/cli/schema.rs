//! `askgate schema`: the tool definition a framework sends the model.
//!
//! harness: pydantic-ai's `ToolDefinition`; deepagents: the OpenAI function tool LangChain
//! makes of `ask_user` (`{"type": "function", "function": {...}}`).

use std::io::Write as _;

use anyhow::Context as _;
use askgate_protocol::{deepagents, harness};

use super::Dialect;

pub(super) fn run(dialect: Dialect) -> anyhow::Result<()> {
    let definition = match dialect {
        Dialect::Harness => harness::tool_definition(),
        Dialect::Deepagents => deepagents::tool_definition(),
    };
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &definition).context("writing the schema")?;
    writeln!(out).context("writing the schema")?;
    Ok(())
}
