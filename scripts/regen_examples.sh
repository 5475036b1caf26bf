#!/usr/bin/env bash
# Regenerate what ships in ragcheck_local/examples from the bundled model, in one go:
#   1. the example outputs: a fresh run (`ragcheck-local dev examples`), written where it differs
#      from the shipped file beyond the output's rounding (--force: written anyway);
#   2. the report screenshot (report.png, the README's), re-rendered by render_report.sh when it
#      no longer shows the shipped output (its PNG records the output's sha256).
#
#   scripts/regen_examples.sh [--force]
#
# Run it last, after anything that changes the output (a new bundled model, new metric keys,
# a claim rule): tests/pipeline/test_example_pinned.py fails until it has run. The screenshot
# needs the `chromium` binary (Debian: apt-get update && apt-get install -y chromium).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cli="$(command -v ragcheck-local || true)"
if [[ -x "$here/.venv/bin/ragcheck-local" ]]; then
    cli="$here/.venv/bin/ragcheck-local"
fi
if [[ -z "$cli" ]]; then
    echo "regen_examples.sh: ragcheck-local not found (bash scripts/setup.sh)" >&2
    exit 2
fi

cd "$here"
"$cli" dev examples "$@"
if ! "$cli" dev examples --screenshot-only >/dev/null; then
    bash "$here/scripts/render_report.sh"
fi
"$cli" dev examples --screenshot-only  # exits 1 if the screenshot is still stale
