#!/usr/bin/env bash
# Set up (if needed) and run the default test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. "${RAGCHECK_VENV:-.venv}/bin/activate"
ruff check ragcheck_local tests scripts
lint-imports  # no import circles, no upward imports (pyproject.toml [tool.importlinter])
python -m pytest -q "$@"
