#!/usr/bin/env bash
# Alternating runs of the same fan-out load against several servers, in one sitting, so their
# figures can be read side by side: round 1 runs each server once, in order, then round 2...
# A server is an askgate binary, or `node` for the Node.js baseline (bench/node-baseline).
#
#   bench/ab.sh ROUNDS BIN_A BIN_B ... -- FANOUT_FLAGS
#   bench/ab.sh 3 /tmp/askgate-before target/release/askgate node -- --store memory --duration-s 30
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
rounds=$1; shift
servers=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do servers+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
# The baseline's one dependency (ws), as bench/run.sh installs it.
if printf '%s\n' "${servers[@]}" | grep -qx node && [ ! -d bench/node-baseline/node_modules ]; then
  (cd bench/node-baseline && npm ci --no-audit --no-fund)
fi
for round in $(seq "$rounds"); do
  for server in "${servers[@]}"; do
    if [ "$server" = node ]; then spawn=(--spawn-node bench/node-baseline/server.js)
    else spawn=(--spawn "$server"); fi
    echo "=== $server, round $round"
    "$target/release/askgate-bench" fanout "${spawn[@]}" "$@" \
      | grep -E 'ask → first|ask → all|answer → agent|CPU|RSS|load average|lost' || true
  done
done
