#!/usr/bin/env bash
# Installs the third-party programs the tests talk to. It is the first half of README's test
# command (`bash scripts/fetch-test-deps.sh && cargo test`), which .ci/run runs as it is:
#   Chromium        Debian's package, for the trace page test (scripts/install-chromium.sh)
#   .cache/npm/     the reference MCP server @modelcontextprotocol/server-everything (stdio, HTTP)
#                   and restate-server (@restatedev/restate-server), for `--features restate`
#   .cache/venv/    the Python MCP SDK (`mcp`), a second, independent client for `switchboard mcp`
#   cmake, libclang Debian's packages, to build llama.cpp for `--features local`
#   .cache/models/  the GGUF test model of the `local` provider (scripts/fetch-test-model.sh)
# .cache/ is git-ignored. Idempotent: what is installed already is kept. Fails loudly when an
# install fails, so a missing dependency is never a quietly skipped test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-chromium.sh

EVERYTHING_VERSION=2026.8.31
RESTATE_VERSION=1.7.12
PY_MCP_VERSION=1.*

mkdir -p .cache/npm
if [ ! -x .cache/npm/node_modules/.bin/mcp-server-everything ]; then
  echo "== npm: @modelcontextprotocol/server-everything@$EVERYTHING_VERSION into .cache/npm"
  npm install --silent --no-audit --no-fund --prefix .cache/npm \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >/dev/null
fi

RESTATE_BIN=.cache/npm/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server
if [ ! -x "$RESTATE_BIN" ] || ! "$RESTATE_BIN" --version | grep -q "$RESTATE_VERSION"; then
  echo "== npm: @restatedev/restate-server@$RESTATE_VERSION into .cache/npm"
  npm install --silent --no-audit --no-fund --prefix .cache/npm \
    "@restatedev/restate-server@$RESTATE_VERSION" >/dev/null
  # The binary ships in a platform package; without it the restate tests cannot run.
  "$RESTATE_BIN" --version >/dev/null
fi

if [ ! -x .cache/venv/bin/python ] || ! .cache/venv/bin/python -c 'import mcp' 2>/dev/null; then
  echo "== pip: mcp into .cache/venv"
  python3 -m venv .cache/venv
  .cache/venv/bin/pip install --quiet --disable-pip-version-check "mcp==$PY_MCP_VERSION"
fi
bash scripts/install-local-build-deps.sh
bash scripts/fetch-test-model.sh
echo "== test dependencies ready in .cache/"
