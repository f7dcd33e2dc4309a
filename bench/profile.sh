#!/usr/bin/env bash
# CPU profile of askgate under a fan-out load: starts `askgate serve`, drives it with
# `askgate-bench fanout` (extra flags are passed on), records `perf record -g` on the server
# for 20 s of the measured phase, and prints the hottest functions.
#
#   bench/profile.sh                                  # 1,000 × 3 at 2,000 asks/s
#   bench/profile.sh --store memory                   # without the durable store
#   bench/profile.sh -- --sessions 1 --tabs 100 --rate 100
#   TABS_PER_SESSION=10000 bench/profile.sh -- --sessions 1 --tabs 10000 --rate 10
#
# Flags before `--` go to `askgate serve`, after it to `askgate-bench fanout`.
#
# The server profiled is the release-debug build (the release profile with line tables: the
# release binary keeps none, and without them perf cannot unwind the stacks it samples):
#   cargo build --profile release-debug -p askgate && cargo build --release -p askgate-bench
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
serve_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do serve_args+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift

dir=$(mktemp -d /tmp/askgate-profile-XXXXXX)
server="$target/release-debug/askgate"
[ -x "$server" ] || { echo "no $server: cargo build --profile release-debug -p askgate"; exit 1; }
"$server" serve --listen 127.0.0.1:0 --data-dir "$dir/data" \
  --tabs-per-session "${TABS_PER_SESSION:-128}" --max-connections-per-address 0 --joins-per-session-per-second 1000000 \
  "${serve_args[@]}" 2> "$dir/server.log" &
pid=$!
bench=""
trap 'kill -TERM $pid ${bench} 2>/dev/null || true' EXIT
addr=""
for _ in $(seq 100); do
  addr=$(grep -o 'listening on http://[0-9.:]*' "$dir/server.log" | sed 's|.*http://||' || true)
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "askgate did not start"; cat "$dir/server.log"; exit 1; }

"$target/release/askgate-bench" fanout --addr "$addr" --pid "$pid" --duration-s 35 "$@" \
  --json "$dir/fanout.json" > "$dir/fanout.txt" &
bench=$!
sleep 10
perf record -F 999 -g --call-graph "dwarf,${STACK_BYTES:-16384}" -p "$pid" -o "$dir/perf.data" -- sleep 20
wait $bench
cat "$dir/fanout.txt"
perf report -i "$dir/perf.data" --no-children --percent-limit 1 --stdio --sort symbol -g none 2> /dev/null \
  | grep -v '^#' | grep -v '^$' | head -60
echo "perf data: $dir/perf.data (perf report -i $dir/perf.data)"
