#!/usr/bin/env bash
# Tests the askgate TypeScript package (clients/typescript) against the real gateway binary.
#
#   node_modules   TypeScript 5.9, ws, the Node types and the frameworks the adapters are
#                  tested with (@modelcontextprotocol/sdk, @anthropic-ai/claude-agent-sdk, ai,
#                  @openai/agents, @langchain/langgraph, langchain, @mastra/core), exactly as package-lock.json has
#                  them (npm ci: from npm's registry the first time, then from npm's cache)
#   .venv/client   the Python package's virtualenv (clients/python/scripts/setup.sh, run here
#                  when missing), for the test that asks one session from both languages
#                  (set ASKGATE_PYTHON to use another Python with askgate installed)
#   target/debug/askgate   built with `cargo build -p askgate` when missing
#                  (set ASKGATE_BIN to test another build)
#
# Builds the package (tsc, strict) and its tests, then runs them with Node's test runner. Safe
# to run again; fails, never skips, when something is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$here/../.." && pwd)"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "clients/typescript/scripts/test.sh: node and npm are needed (scripts/setup-test-env.sh installs them)" >&2
  exit 1
fi

if [ -z "${ASKGATE_PYTHON:-}" ]; then
  "$repo/clients/python/scripts/setup.sh"
fi

bin="${ASKGATE_BIN:-$repo/target/debug/askgate}"
if [ -z "${ASKGATE_BIN:-}" ] && [ ! -x "$bin" ]; then
  echo "clients/typescript: building the gateway (cargo build -p askgate)"
  (cd "$repo" && cargo build -p askgate)
fi
if [ ! -x "$bin" ]; then
  echo "clients/typescript/scripts/test.sh: no gateway binary at $bin" >&2
  exit 1
fi

cd "$here"
echo "clients/typescript: npm ci"
npm ci --no-audit --no-fund --loglevel=error
echo "clients/typescript: tsc --strict, then node --test against $bin"
# Bounded: a test that leaves a socket open would otherwise keep the run waiting.
ASKGATE_BIN="$bin" timeout 600 npm test --silent
echo "clients/typescript: npm pack holds the built package"
packed=$(npm pack --dry-run --json --silent)
for file in dist/index.js dist/index.d.ts dist/client.js dist/mcp/index.js dist/claude/index.js \
            dist/ai-sdk/index.js dist/openai-agents/index.js dist/langgraph/index.js dist/mastra/index.js \
            package.json; do
  if ! grep -q "\"path\": \"$file\"" <<<"$packed"; then
    echo "clients/typescript: npm pack leaves out $file" >&2
    exit 1
  fi
done
