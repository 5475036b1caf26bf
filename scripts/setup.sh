#!/usr/bin/env bash
# One-time set-up on a fresh machine: a virtual environment with ragcheck_local and its extras.
# Idempotent: re-running it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${RAGCHECK_VENV:-.venv}"
EXTRAS="${RAGCHECK_EXTRAS:-ja,onnx,ray,dev}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip >/dev/null
if ! python -c "import torch" 2>/dev/null; then
  # A CPU build of torch is enough here; on a GPU box install the CUDA build first.
  python -m pip install -q "torch==2.13.0"
fi
python -m pip install -q -e ".[${EXTRAS}]"
