#!/usr/bin/env bash
# Set up (if needed) and run the main job: evaluate the bundled example with the bundled model,
# then write the HTML report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. "${RAGCHECK_VENV:-.venv}/bin/activate"
mkdir -p runs
ragcheck-local evaluate --input ragcheck_local/examples/example_input.json \
  --output runs/example_output.json "$@"
ragcheck-local report runs/example_output.json --html runs/example_report.html \
  --md runs/example_report.md
