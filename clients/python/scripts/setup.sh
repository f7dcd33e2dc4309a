#!/usr/bin/env bash
# Builds .venv/client, the virtualenv clients/python/scripts/test.sh runs in (what it holds is
# listed there), and nothing when it is already built from the same requirements. Apart from
# the tests so that CI can build it while the lints compile.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/.venv/client"
requirements=("pydantic-ai-harness==0.62.0" "pydantic-ai-slim==2.62.0" "langgraph==1.2.24" "langchain==1.5.0"
              "openai-agents==0.24.0" "ag-ui-protocol==1.0.0" "mcp==2.3.0" "claude-agent-sdk==0.2.184"
              "pytest>=8,<10" "pytest-timeout>=2.3" "mypy==2.4.1")
imports='import askgate, pydantic_ai_harness.ask_user, pydantic_ai.ui.ag_ui, langgraph.graph, langchain.agents.middleware, agents, ag_ui.core, mcp.client.session, mcp_types, claude_agent_sdk, pytest, pytest_timeout, mypy'

source "$repo/scripts/find-python.sh"

# What the virtualenv was built from; a change rebuilds it. (The path of this package is in it:
# a virtualenv holds absolute paths.)
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

