#!/usr/bin/env bash
# Installs headless Chromium (Debian package `chromium`) and a font for the trace page test
# (tests/it/trace_page.rs). A no-op when `chromium` is already on PATH. Needs root or sudo for apt.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium.sh: no apt-get here; install Chromium so that \`chromium\` is on PATH" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
command -v chromium >/dev/null
