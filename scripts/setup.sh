#!/usr/bin/env bash
# One-time set-up on a fresh machine: a virtual environment with ragcheck_local and its extras.
# Idempotent and quick when up to date: a stamp in the venv records what was installed (the
# pyproject.toml hash, the extras, the Python); a matching stamp means nothing to do.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${RAGCHECK_VENV:-.venv}"
EXTRAS="${RAGCHECK_EXTRAS:-ja,onnx,ray,dev}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
STAMP="$VENV/.ragcheck_setup_stamp"
WANT="$(cat pyproject.toml; echo "extras=$EXTRAS"; echo "root=$PWD"; "$VENV/bin/python" -V)"
WANT="$(printf '%s' "$WANT" | sha256sum | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] \
  && "$VENV/bin/python" -c "import ragcheck_local, torch" 2>/dev/null; then
  exit 0  # up to date
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip >/dev/null
if ! python -c "import torch" 2>/dev/null; then
  # A CPU build of torch is enough here; on a GPU box install the CUDA build first.
  python -m pip install -q "torch==2.13.0"
fi
python -m pip install -q -e ".[${EXTRAS}]"
echo "$WANT" > "$STAMP"
