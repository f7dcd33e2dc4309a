#!/usr/bin/env bash
# Tests the askgate Python package (clients/python) against the real gateway binary.
#
#   .venv/client   CPython 3.11 + pydantic-ai-harness 0.62.0 (pydantic-ai-slim 2.62.0), langgraph,
#                  langchain, openai-agents, ag-ui-protocol, mcp, claude-agent-sdk (its bundled
#                  CLI is installed but never run: the tests use a scripted transport),
#                  google-adk, crewai (installed without its own requirements: see setup.sh),
#                  langgraph-cli[inmem] (`langgraph dev`, started by a test), pytest,
#                  pytest-timeout, mypy, and this
#                  package installed editable; built by scripts/setup.sh (which this runs
#                  first), rebuilt when its requirements or clients/python/pyproject.toml change
#   target/debug/askgate   built with `cargo build -p askgate` when missing
#                  (set ASKGATE_BIN to test another build)
#
# Safe to run again. Fails, never skips, when something is missing. Extra arguments go to pytest.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/.venv/client"
"$here/scripts/setup.sh"

bin="${ASKGATE_BIN:-$repo/target/debug/askgate}"
if [ -z "${ASKGATE_BIN:-}" ] && [ ! -x "$bin" ]; then
  echo "clients/python: building the gateway (cargo build -p askgate)"
  (cd "$repo" && cargo build -p askgate)
fi
if [ ! -x "$bin" ]; then
  echo "clients/python/scripts/test.sh: no gateway binary at $bin" >&2
  exit 1
fi

cd "$here"
echo "clients/python: mypy --strict"
"$venv/bin/python" -m mypy --strict --cache-dir /dev/null src/askgate

echo "clients/python: pytest against $bin"
ASKGATE_BIN="$bin" exec "$venv/bin/python" -m pytest "$@"
