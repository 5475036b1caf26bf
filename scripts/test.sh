#!/usr/bin/env bash
# Set up (if needed) and run the default test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. "${RAGCHECK_VENV:-.venv}/bin/activate"
ruff check ragcheck_local tests scripts
python -m pytest -q "$@"
