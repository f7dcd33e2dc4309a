#!/usr/bin/env bash
# Builds the release binaries, installs the Node.js baseline's dependencies if they are
# missing, runs every target scenario against askgate (durable store) and the baseline, and
# writes the printed tables to bench/results.txt and a line of key figures per run to
# bench/history/<commit>-suite.txt. The raw JSON report is kept only with KEEP_JSON=1 (in a
# temporary directory, its path printed).
#
#   bench/run.sh                      # the full suite, about 12 minutes
#   bench/run.sh --time-scale 0.1     # a quick check
#   bench/run.sh --only fanout1000    # one scenario (idle, fanout100, fanout1000, churn)
#
# Other work on the machine skews every figure: each report records the load average at its
# start and end, and the generator's own CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"

cargo build --release -p askgate -p askgate-bench
if [ ! -d bench/node-baseline/node_modules ]; then
  (cd bench/node-baseline && npm ci --no-audit --no-fund)
fi

# Copies, so a concurrent build cannot swap the binaries halfway through the suite.
work=$(mktemp -d /tmp/askgate-bench-run-XXXXXX)
[ "${KEEP_JSON:-0}" = 1 ] && echo "raw report in $work/results.json" || trap 'rm -rf "$work"' EXIT
cp "$target/release/askgate" "$target/release/askgate-bench" "$work/"
version="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
git diff --quiet HEAD -- crates/gateway crates/protocol 2>/dev/null || version="$version+uncommitted"

"$work/askgate-bench" suite \
  --askgate "$work/askgate" \
  --askgate-version "$version" \
  --node-server bench/node-baseline/server.js \
  --memory-store-too \
  --json "$work/results.json" \
  "$@" | tee bench/results.txt
python3 bench/summarize.py "$work/results.json" | tee "bench/history/${version}-suite.txt"
