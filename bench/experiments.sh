#!/usr/bin/env bash
# The experiments behind the recommendations in bench/README.md: before/after on the same
# askgate binary, changing only flags (the gateway is not edited):
#   buffers    10k idle tabs with a 4, 2 and 1 KiB tungstenite read buffer (--read-buffer-bytes)
#   store      1×100 and 1000×3 fan-out, durable store vs --store memory
#   joinburst  100 tabs joining one session at once, 10 times: how many the server closes with
#              4408, with the default 64-frame tab queue and with --tab-queue 256 (presence is
#              coalesced per tab, so a burst of joins should close none)
# The raw reports go to a temporary directory (kept only with KEEP_JSON=1, its path printed);
# a line of key figures per run goes to bench/history/<commit>-experiments.txt.
#
#   bench/experiments.sh [buffers] [store] [joinburst]     # default: all
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
bench="$target/release/askgate-bench"
askgate="$target/release/askgate"
out=$(mktemp -d /tmp/askgate-experiments-XXXXXX)
[ "${KEEP_JSON:-0}" = 1 ] && echo "raw reports in $out" || trap 'rm -rf "$out"' EXIT
summary="bench/history/$(git rev-parse --short HEAD 2>/dev/null || echo unknown)-experiments.txt"
cargo build --release -p askgate -p askgate-bench
wanted=("$@")
[ ${#wanted[@]} -eq 0 ] && wanted=(buffers store joinburst)
one_by_hundred=(--sessions 1 --tabs 100 --agents 1 --rate 100 --duration-s 30)

for what in "${wanted[@]}"; do
  case "$what" in
    buffers)
      for bytes in 4096 2048 1024; do
        "$bench" idle --spawn "$askgate" --server-arg=--read-buffer-bytes=$bytes \
          --json "$out/buffers-idle-read$bytes.json"
      done
      ;;
    store)
      for store in embedded memory; do
        "$bench" fanout --spawn "$askgate" --store $store "${one_by_hundred[@]}" \
          --json "$out/store-1x100-$store.json"
        "$bench" fanout --spawn "$askgate" --store $store --duration-s 30 \
          --json "$out/store-1000x3-$store.json"
      done
      ;;
    joinburst)
      for queue in 64 256; do
        for i in $(seq 10); do
          "$bench" fanout --spawn "$askgate" --server-arg=--tab-queue=$queue \
            --sessions 1 --tabs 100 --agents 1 --rate 10 --duration-s 1 \
            --json "$out/joinburst-queue$queue-$i.json" > /dev/null
        done
        python3 - "$out" "$queue" <<'PY'
import json, sys, glob
out, queue = sys.argv[1], sys.argv[2]
kicks = [sum(json.load(open(f))["setup_kicks"].values()) for f in sorted(glob.glob(f"{out}/joinburst-queue{queue}-*.json"))]
print(f"--tab-queue {queue}: tabs closed while 100 joined at once, per run: {kicks}")
PY
      done
      ;;
    *) echo "unknown experiment $what" >&2; exit 2 ;;
  esac
done
{
  echo "# bench/experiments.sh ${wanted[*]}: one line per run (python3 bench/summarize.py)"
  python3 bench/summarize.py "$out"/*.json
} | tee -a "$summary"
