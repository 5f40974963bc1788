#!/usr/bin/env bash
# Installs the third-party MCP programs the tests talk to, into .cache/ (git-ignored):
#   .cache/npm/    the reference server @modelcontextprotocol/server-everything (stdio and HTTP)
#   .cache/venv/   the Python MCP SDK (`mcp`), a second, independent client for `switchboard mcp`
# .ci/run calls it before `cargo test`; run it once by hand before `cargo test` on a new clone.
# Idempotent: an existing install is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
EVERYTHING_VERSION=2026.8.31
PY_MCP_VERSION=1.*

mkdir -p .cache/npm
if [ ! -x .cache/npm/node_modules/.bin/mcp-server-everything ]; then
  echo "== npm: @modelcontextprotocol/server-everything@$EVERYTHING_VERSION into .cache/npm"
  npm install --silent --no-audit --no-fund --prefix .cache/npm \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >/dev/null
fi

if [ ! -x .cache/venv/bin/python ] || ! .cache/venv/bin/python -c 'import mcp' 2>/dev/null; then
  echo "== pip: mcp into .cache/venv"
  python3 -m venv .cache/venv
  .cache/venv/bin/pip install --quiet --disable-pip-version-check "mcp==$PY_MCP_VERSION"
fi
echo "== test dependencies ready in .cache/"
