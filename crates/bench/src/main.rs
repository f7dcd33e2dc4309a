//! askgate-bench: placeholder until the load generator lands.

fn main() {}
