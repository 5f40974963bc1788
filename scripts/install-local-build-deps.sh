#!/usr/bin/env bash
# Installs what `cargo build --features local` needs to build llama.cpp from source (the
# llama-cpp-sys-2 crate runs cmake, and bindgen needs libclang). Debian packages: cmake,
# libclang-dev, clang. Idempotent: does nothing when they are installed already. Fails loudly
# when apt fails, so a missing build tool is never a quietly skipped test.
set -euo pipefail

missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v clang >/dev/null 2>&1 || missing+=(clang)
# bindgen loads libclang.so at build time; the -dev package provides the unversioned link.
if ! ls /usr/lib/llvm-*/lib/libclang.so >/dev/null 2>&1 && ! ls /usr/lib/*/libclang.so >/dev/null 2>&1; then
  missing+=(libclang-dev)
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "== apt: ${missing[*]} (to build llama.cpp for the \`local\` feature)"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "error: need root (or sudo) to install ${missing[*]}; install them and run again" >&2
    exit 1
  fi
fi
if ! $SUDO apt-get update -qq; then
  echo "error: apt-get update failed; cannot install ${missing[*]}" >&2
  exit 1
fi
if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null; then
  echo "error: apt-get install ${missing[*]} failed; the \`local\` feature cannot be built" >&2
  exit 1
fi
