#!/usr/bin/env bash
# Prepares what askgate's tests need on a fresh machine, and nothing when it is already there:
#   .venv/harness  CPython 3.11 + pydantic-ai-harness 0.62.0 (the real package the
#                  differential test compares askgate with; 3.11 = Unicode 14.0, the reference)
#   .venv/deepagents  CPython 3.13 + langchain 1.5.2, langchain-core 1.8.3, langgraph 1.2.24,
#                  pydantic 2.14.4, and the deepagents-code 0.2.2 wheel unpacked in
#                  .venv/deepagents/src (the wheel declares Python >= 3.14, which is not
#                  installable here; tests/oracle/deepagents_oracle.py loads only its ask_user
#                  modules, see there)
#   .venv/mcp      CPython 3.11 + mcp 2.3.0 (with mcp-types 2.3.0), pydantic 2.14.4 and
#                  email-validator 2.4.0 (for EmailStr): the MCP server side that
#                  tests/oracle/mcp_oracle.py runs for the form dialect's differential test
#   .venv/notify   CPython 3.11 + standardwebhooks 1.3.0 (the independent signature check
#                  tests/oracle/webhook_receiver.py makes of every webhook), aiosmtpd 1.4.6
#                  (the SMTP server the mail tests start), and http-ece 1.2.1 and py-vapid 1.9.6
#                  (with which tests/oracle/web_push_decrypt.py decrypts Web Push messages and
#                  checks their VAPID signatures)
#   .venv/openapi  CPython 3.11 + schemathesis 4.32.5 and pytest 9.2.0: tests/openapi/ runs Schemathesis
#                  over docs/openapi.json against a live gateway
#   chromium, chromedriver  Debian's packages, for the browser tests
#   redis-server, redis-cli  Debian's package, for the multi-node tests (each test starts its
#                  own server on a free port; the packaged service is never used)
#   .venv/axe      axe-core 4.14.1 from npm (node and npm from Debian when missing), which the
#                  browser tests run on the answer page's every state
# Safe to run again; a half-built virtualenv is rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/find-python.sh

# make_venv DIR PYTHON_VERSION MARKER_MODULE PACKAGES...
# Reused only when it was built for exactly these pins (a stamp records them), so changing a
# pin here rebuilds it rather than testing against the old version.
make_venv() {
  local dir=$1 version=$2 marker=$3; shift 3
  local stamp="$dir/.askgate-pins" pins="python$version $*"
  if [ -x "$dir/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$pins" ] &&
     "$dir/bin/python" -c "import $marker" 2>/dev/null; then
    return 0
  fi
  echo "setup-test-env: building $dir (Python $version: $*)"
  rm -rf "$dir"
  local python; python=$(find_python "$version")
  "$python" -m venv "$dir"
  "$dir/bin/pip" install --quiet --disable-pip-version-check "$@"
  "$dir/bin/python" -c "import $marker"
  echo "$pins" > "$stamp"
}

# Needs root: run as root, or with sudo (which may ask for a password once).
install_debian_packages() {
  local run=()
  if [ "$(id -u)" -ne 0 ]; then run=(sudo); fi
  echo "setup-test-env: installing Debian packages: $*"
  "${run[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${run[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  install_debian_packages chromium chromium-driver
fi
chromium --version >/dev/null 2>&1
chromedriver --version >/dev/null
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  install_debian_packages redis-server
fi
redis-server --version >/dev/null
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  install_debian_packages nodejs npm
fi
axe_version=4.14.1
if [ "$(node -p "require('./.venv/axe/node_modules/axe-core/package.json').version" 2>/dev/null)" != "$axe_version" ]; then
  echo "setup-test-env: installing axe-core $axe_version into .venv/axe"
  mkdir -p .venv/axe
  npm install --silent --no-audit --no-fund --prefix .venv/axe "axe-core@$axe_version"
fi
test -f .venv/axe/node_modules/axe-core/axe.min.js

# The deepagents-code 0.2.2 wheel, unpacked into $1/src (not installed: it requires 3.14).
unpack_deepagents_wheel() {
  local venv=$1 tmp
  if [ -f "$venv/src/deepagents_code/_ask_user_types.py" ] && [ -f "$venv/src/deepagents_code/ask_user.py" ]; then
    return 0
  fi
  echo "setup-test-env: downloading the deepagents-code 0.2.2 wheel into $venv/src"
  tmp=$(mktemp -d)
  "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.14 "deepagents-code==0.2.2" -d "$tmp"
  rm -rf "$venv/src"
  mkdir -p "$venv/src"
  "$venv/bin/python" -m zipfile -e "$tmp"/deepagents_code-0.2.2-py3-none-any.whl "$venv/src"
  rm -rf "$tmp"
  test -f "$venv/src/deepagents_code/_ask_user_types.py"
}

mkdir -p .venv
make_venv .venv/harness 3.11 pydantic_ai_harness.ask_user "pydantic-ai-harness==0.62.0"
make_venv .venv/deepagents 3.13 langchain.agents.middleware \
  "langchain==1.5.2" "langchain-core==1.8.3" "langgraph==1.2.24" "pydantic==2.14.4"
unpack_deepagents_wheel .venv/deepagents
make_venv .venv/mcp 3.11 "mcp.server.elicitation, email_validator" \
  "mcp==2.3.0" "mcp-types==2.3.0" "pydantic==2.14.4" "email-validator==2.4.0"
make_venv .venv/notify 3.11 "standardwebhooks, aiosmtpd, http_ece, py_vapid" \
  "standardwebhooks==1.3.0" "aiosmtpd==1.4.6" "http-ece==1.2.1" "py-vapid==1.9.6"
make_venv .venv/openapi 3.11 "schemathesis, pytest" "schemathesis==4.32.5" "pytest==9.2.0"
echo "setup-test-env: ready"
