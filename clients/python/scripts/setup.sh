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
              "google-adk==2.13.0" "langgraph-cli[inmem]==0.4.40"
              "pytest>=8,<10" "pytest-timeout>=2.3" "mypy==2.4.1")
# CrewAI is installed apart, without its own requirements: every crewai that has Flows'
# @human_feedback (1.8 on) requires mcp<2 and openai<3, and this virtualenv holds mcp 2 (askgate.mcp)
# and openai 3 (openai-agents 0.24), so pip cannot install it with them. Its requirements are
# listed here instead, as crewai 1.15.28 declares them, less three: mcp and openai (the versions
# above serve; a Flow imports neither), crewai-cli (its `crewai` command only), and instructor's
# upper bound (instructor<1.16 also requires openai<3; crewai imports it only for structured
# output from an Agent). 1.15.28 is the newest crewai that allows the opentelemetry google-adk
# 2.13 does (<=1.44). Its pydantic<2.13 holds the whole virtualenv at pydantic 2.12.
crewai="crewai==1.15.28"
crewai_requirements=("crewai-core==1.15.28" "aiofiles~=24.1.0" "aiosqlite~=0.21.0" "appdirs~=1.4.4"
                     "cel-python>=0.5.0,<0.6" "chromadb~=1.5.9" "click>=8.1.7,<9" "httpx~=0.28.1"
                     "instructor>=1.3.3" "json-repair~=0.60.1" "json5~=0.10.0" "jsonref~=1.1.0"
                     "lancedb>=0.29.2,<0.30.1" "oauthlib>=4.0.0,<5" "openpyxl~=3.1.5"
                     "opentelemetry-api>=1.42,<2" "opentelemetry-exporter-otlp-proto-http>=1.42,<2"
                     "opentelemetry-sdk>=1.42,<2" "pdfplumber~=0.11.4" "portalocker~=2.7.0"
                     "pydantic-settings>=2.14.2,<3" "pydantic>=2.11.9,<2.13" "pyjwt>=2.15.0,<3"
                     "python-dotenv>=1.2.2,<2" "pyyaml~=6.0" "regex~=2026.1.15" "tokenizers>=0.21,<1"
                     "tomli-w~=1.1.0" "tomli~=2.0.2")
imports='import askgate, pydantic_ai_harness.ask_user, pydantic_ai.ui.ag_ui, langgraph.graph, langchain.agents.middleware, agents, ag_ui.core, mcp.client.session, mcp_types, claude_agent_sdk, google.adk.runners, crewai.flow, langgraph_cli.cli, langgraph_api, langgraph_runtime_inmem, pytest, pytest_timeout, mypy'

source "$repo/scripts/find-python.sh"

# What the virtualenv was built from; a change rebuilds it. (The path of this package is in it:
# a virtualenv holds absolute paths.)
stamp="$( (printf '%s\n' "${requirements[@]}" "$crewai" "${crewai_requirements[@]}"; cat "$here/pyproject.toml"; echo "$here") | sha256sum | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.askgate-stamp" 2>/dev/null)" != "$stamp" ] \
   || ! "$venv/bin/python" -c "$imports" 2>/dev/null; then
  echo "clients/python: building $venv"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python=$(find_python 3.11)
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${requirements[@]}" "${crewai_requirements[@]}"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$crewai"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -e "$here"
  "$venv/bin/python" -c "$imports"
  echo "$stamp" > "$venv/.askgate-stamp"
fi

