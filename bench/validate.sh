#!/usr/bin/env bash
# `askgate validate` against the real pydantic-ai-harness 0.62.0 on the same 100,000 lines,
# end to end: stdin from a file, stdout to /dev/null, process start included. Prints a table
# and writes it to bench/validate-results.txt.
#
#   bench/validate.sh                 # 4 inputs, askgate 15 runs each, Python 3 runs each
#   RUNS=5 PY_RUNS=1 bench/validate.sh
#
# Inputs, built afresh in a temporary directory:
#   vectors  every harness conformance vector, repeated to 100,000 lines
#   valid    the ones whose verdict is ok, repeated likewise
#   invalid  the ones whose verdict is an error (every error listed), repeated likewise
#   mix      the differential test's generator (long, non-ASCII-heavy, edge-biased lines)
# Python runs tests/oracle/harness_oracle.py --bulk (block-buffered output) in the virtualenv
# scripts/setup-test-env.sh makes; both sides' verdicts are compared line by line first.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
lines="${LINES_PER_INPUT:-100000}"

scripts/setup-test-env.sh >/dev/null
cargo build --release -p askgate -p askgate-tests --bin askgate --bin gen-harness-lines

work=$(mktemp -d /tmp/askgate-validate-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$target/release/askgate" "$work/askgate"

python3 - "$work" "$lines" <<'PY'
import json, sys
work, count = sys.argv[1], int(sys.argv[2])
every, valid, invalid = [], [], []
for line in open("tests/data/conformance/vectors.jsonl", encoding="utf-8"):
    if not line.strip():
        continue
    vector = json.loads(line)
    if vector.get("dialect") == "harness":
        (valid if vector["expect"]["ok"] else invalid).append(line.rstrip("\n"))
        every.append(line.rstrip("\n"))
for name, pool in (("vectors", every), ("valid", valid), ("invalid", invalid)):
    with open(f"{work}/{name}.jsonl", "w", encoding="utf-8") as out:
        for i in range(count):
            out.write(pool[i % len(pool)] + "\n")
PY
"$target/release/gen-harness-lines" "$lines" > "$work/mix.jsonl"

python3 - "$work" "${RUNS:-15}" "${PY_RUNS:-3}" <<'PY' | tee bench/validate-results.txt
import json, os, platform, statistics, subprocess, sys, time
work, runs, py_runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
askgate = [f"{work}/askgate", "validate"]
python = [".venv/harness/bin/python", "tests/oracle/harness_oracle.py", "--bulk"]

def timed(command, path, times):
    walls = []
    for _ in range(times):
        with open(path, "rb") as source:
            start = time.perf_counter()
            subprocess.run(command, stdin=source, stdout=subprocess.DEVNULL, check=True)
            walls.append(time.perf_counter() - start)
    return statistics.median(walls), min(walls), max(walls)

def verdicts(command, path):
    with open(path, "rb") as source:
        out = subprocess.run(command, stdin=source, capture_output=True, check=True).stdout
    return [json.loads(line)["ok"] for line in out.splitlines()]

commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
print(f"askgate validate vs pydantic-ai-harness 0.62.0 (CPython {platform.python_version()}), "
      f"commit {commit}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
print(f"median wall time of {runs} askgate runs and {py_runs} Python runs (min-max)\n")
print(f"| lines | size | askgate | Python | ratio |")
print(f"|---|---|---|---|---|")
for name in ("vectors", "valid", "invalid", "mix"):
    path = f"{work}/{name}.jsonl"
    ours, theirs = verdicts(askgate, path), verdicts(python, path)
    if ours != theirs:
        differ = sum(a != b for a, b in zip(ours, theirs)) + abs(len(ours) - len(theirs))
        sys.exit(f"{name}: askgate and Python disagree on {differ} verdicts")
    a = timed(askgate, path, runs)
    p = timed(python, path, py_runs)
    size = os.path.getsize(path) / 1e6
    print(f"| {name} ({len(ours):,}, {sum(ours):,} ok) | {size:.0f} MB "
          f"| {a[0]*1000:.0f} ms ({a[1]*1000:.0f}-{a[2]*1000:.0f}) "
          f"| {p[0]:.2f} s ({p[1]:.2f}-{p[2]:.2f}) | {p[0] / a[0]:.1f}x |")
print(f"\nload average {os.getloadavg()[0]:.2f} at end")
PY
