//! Prints random harness `validate` lines (the differential test's mix), for benchmarks:
//! `gen-harness-lines COUNT [SEED] > lines.jsonl`.

use std::io::Write;

use askgate_tests::harness_gen::mixed_lines;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().unwrap_or_else(|| "100000".into()).parse()?;
    let seed: u64 = args.next().unwrap_or_else(|| "1".into()).parse()?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in mixed_lines(seed, count) {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}
