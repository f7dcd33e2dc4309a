//! `askgate schema`: the tool definition a framework sends the model.

use std::io::Write as _;

use anyhow::{Context as _, bail};
use askgate_protocol::harness;

use super::Dialect;

pub(super) fn run(dialect: Dialect) -> anyhow::Result<()> {
    let definition = match dialect {
        Dialect::Harness => harness::tool_definition(),
        Dialect::Deepagents => bail!("dialect deepagents is not supported yet"),
    };
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &definition).context("writing the schema")?;
    writeln!(out).context("writing the schema")?;
    Ok(())
}
