//! Prints random harness `validate` lines (the differential test's mix), for benchmarks:
//! `gen-harness-lines COUNT [SEED] > lines.jsonl`.

use std::io::Write;

use askgate_protocol::harness::{TopLevelExtras, validate_args};
use askgate_tests::harness_gen::HarnessGenerator;
use rand::SeedableRng;
use rand::rngs::StdRng;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().unwrap_or_else(|| "100000".into()).parse()?;
    let seed: u64 = args.next().unwrap_or_else(|| "1".into()).parse()?;
    let mut generator = HarnessGenerator::new(StdRng::seed_from_u64(seed));
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for i in 0..count {
        let line = match i % 20 {
            0..=10 => generator.request_line(),
            n => {
                let request = loop {
                    let args = generator.valid_args();
                    if validate_args(&args, TopLevelExtras::Forbid).is_ok() {
                        break args;
                    }
                };
                generator.response_line(&request, if n < 17 { "response" } else { "render" })
            }
        };
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}
