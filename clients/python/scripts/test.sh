#!/usr/bin/env bash
# Tests the askgate Python package (clients/python) against the real gateway binary.
#
#   .venv/client   CPython 3.11 + pydantic-ai-harness 0.62.0 (pydantic-ai-slim 2.62.0), langgraph,
#                  langchain, openai-agents, ag-ui-protocol, mcp, claude-agent-sdk (its bundled
#                  CLI is installed but never run: the tests use a scripted transport), pytest,
#                  pytest-timeout, mypy, and this
#                  package installed editable; rebuilt when this script's requirements or
#                  clients/python/pyproject.toml change
#   target/debug/askgate   built with `cargo build -p askgate` when missing
#                  (set ASKGATE_BIN to test another build)
#
# Safe to run again. Fails, never skips, when something is missing. Extra arguments go to pytest.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/.venv/client"
requirements=("pydantic-ai-harness==0.62.0" "pydantic-ai-slim==2.62.0" "langgraph==1.2.24" "langchain==1.5.0"
              "openai-agents==0.24.0" "ag-ui-protocol==1.0.0" "mcp==2.3.0" "claude-agent-sdk==0.2.184"
              "pytest>=8,<10" "pytest-timeout>=2.3" "mypy==2.4.1")
imports='import askgate, pydantic_ai_harness.ask_user, pydantic_ai.ui.ag_ui, langgraph.graph, langchain.agents.middleware, agents, ag_ui.core, mcp.client.session, mcp_types, claude_agent_sdk, pytest, pytest_timeout, mypy'

# An interpreter of version $1 that really runs (a pyenv shim may exist without the version).
find_python() {
  local version=$1 candidate
  local pyenv_root; pyenv_root=$(pyenv root 2>/dev/null || echo "${HOME}/.pyenv")
  for candidate in "$(command -v "python$version" 2>/dev/null || true)" \
                   "$pyenv_root"/versions/"$version".*/bin/"python$version" \
                   /usr/bin/"python$version" /usr/local/bin/"python$version"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c 'pass' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  echo "clients/python/scripts/test.sh: no working python$version found (install CPython $version)" >&2
  return 1
}

# What the virtualenv was built from; a change rebuilds it.
stamp="$( (printf '%s\n' "${requirements[@]}"; cat "$here/pyproject.toml"; echo "$here") | sha256sum | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.askgate-stamp" 2>/dev/null)" != "$stamp" ] \
   || ! "$venv/bin/python" -c "$imports" 2>/dev/null; then
  echo "clients/python: building $venv"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python=$(find_python 3.11)
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${requirements[@]}"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -e "$here"
  "$venv/bin/python" -c "$imports"
  echo "$stamp" > "$venv/.askgate-stamp"
fi

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
