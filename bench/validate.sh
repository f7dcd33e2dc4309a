#!/usr/bin/env bash
# `askgate validate` against the real pydantic-ai-harness 0.62.0 on the same 100,000 lines,
# end to end: stdin from a file or through a pipe, stdout to /dev/null, process start included.
# Prints a table and writes it to bench/validate-results.txt.
#
#   bench/validate.sh                 # 4 inputs, askgate 15 runs each, Python 3 runs each
#   RUNS=5 PY_RUNS=1 REFERENCE_RUNS=0 bench/validate.sh
#
# Inputs, built afresh in a temporary directory:
#   vectors  every harness conformance vector, repeated to 100,000 lines
#   valid    the ones whose verdict is ok, repeated likewise
#   invalid  the ones whose verdict is an error (every error listed), repeated likewise
#   mix      the differential test's generator (long, non-ASCII-heavy, edge-biased lines)
# Python runs tests/oracle/harness_oracle.py --bulk (block-buffered output) in the virtualenv
# scripts/setup-test-env.sh makes: the lean loop, the strict comparison. When the shared
# conformance oracle (../shared/conformance/oracle.py) is beside the repository, the same lines
# are also timed through it, REFERENCE_RUNS times (default 1). Verdicts are compared line by
# line first.
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

python3 - "$work" "${RUNS:-15}" "${PY_RUNS:-3}" "${REFERENCE_RUNS:-1}" <<'PY' | tee bench/validate-results.txt
import json, os, platform, statistics, subprocess, sys, time
work, runs, py_runs, reference_runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
askgate = [f"{work}/askgate", "validate"]
python = [".venv/harness/bin/python", "tests/oracle/harness_oracle.py", "--bulk"]
# The shared conformance oracle, when it is beside the repository: the real package driven the
# way the conformance vectors were made (each request also judged through `from_tool_call`).
reference = ["python3", "../shared/conformance/oracle.py"]
reference_env = dict(os.environ, ORACLE_HARNESS_PYTHON=".venv/harness/bin/python")
if not os.path.exists(reference[1]):
    reference_runs = 0

def timed(command, path, times, piped=False, env=None):
    """Median, min and max wall time; stdin is the file itself, or its bytes written into a
    pipe as `subprocess.run(input=...)` writes them."""
    walls = []
    data = open(path, "rb").read() if piped else None
    for _ in range(times):
        with open(path, "rb") as source:
            stdin = {"input": data} if piped else {"stdin": source}
            start = time.perf_counter()
            subprocess.run(command, **stdin, stdout=subprocess.DEVNULL, check=True, env=env)
            walls.append(time.perf_counter() - start)
    return statistics.median(walls), min(walls), max(walls)

def verdicts(command, path, env=None):
    with open(path, "rb") as source:
        out = subprocess.run(command, stdin=source, capture_output=True, check=True, env=env).stdout
    return [json.loads(line)["ok"] for line in out.splitlines()]

def same_verdicts(name, ours, theirs, who):
    if ours != theirs:
        differ = sum(a != b for a, b in zip(ours, theirs)) + abs(len(ours) - len(theirs))
        sys.exit(f"{name}: askgate and {who} disagree on {differ} verdicts")

def ms(t):
    return f"{t[0]*1000:.0f} ms ({t[1]*1000:.0f}-{t[2]*1000:.0f})"

def secs(t):
    return f"{t[0]:.2f} s ({t[1]:.2f}-{t[2]:.2f})"

commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
print(f"askgate validate vs pydantic-ai-harness 0.62.0 (CPython {platform.python_version()}), "
      f"commit {commit}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
print(f"median wall time of {runs} askgate runs and {py_runs} Python runs (min-max); stdin is")
print("the file itself, or a pipe the timing process writes the file's bytes into\n")
print("| lines | size | stdin | askgate | Python | ratio |")
print("|---|---|---|---|---|---|")
reference_rows = []
for name in ("vectors", "valid", "invalid", "mix"):
    path = f"{work}/{name}.jsonl"
    ours = verdicts(askgate, path)
    same_verdicts(name, ours, verdicts(python, path), "Python")
    size = os.path.getsize(path) / 1e6
    label = f"{name} ({len(ours):,}, {sum(ours):,} ok)"
    for piped in (False, True):
        a = timed(askgate, path, runs, piped)
        p = timed(python, path, py_runs, piped)
        print(f"| {label} | {size:.0f} MB | {'pipe' if piped else 'file'} | {ms(a)} | {secs(p)} "
              f"| {p[0] / a[0]:.1f}x |", flush=True)
        if not piped:
            from_file = a
    if reference_runs:
        same_verdicts(name, ours, verdicts(reference, path, reference_env), "the shared oracle")
        r = timed(reference, path, reference_runs, env=reference_env)
        reference_rows.append(f"| {name} | {ms(from_file)} | {r[0]:.2f} s | {r[0] / from_file[0]:.0f}x |")
if reference_rows:
    print(f"\nThe same lines through ../shared/conformance/oracle.py, median of {reference_runs}, "
          "stdin from the file:\n")
    print("| lines | askgate | shared oracle | ratio |")
    print("|---|---|---|---|")
    print("\n".join(reference_rows))
print(f"\nload average {os.getloadavg()[0]:.2f} at end")
PY
