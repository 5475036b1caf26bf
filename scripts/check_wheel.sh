#!/usr/bin/env bash
# Packaging check (CI): build the wheel, install it (not editable) into a fresh virtual
# environment, and run the packaged example with the packaged default model and presets from a
# folder outside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
python3 -m venv "$WORK/venv"
# shellcheck disable=SC1091
. "$WORK/venv/bin/activate"
python -m pip install -q --upgrade pip >/dev/null
python -m pip install -q "torch==2.13.0"  # the CPU build; never an unpinned torch
python -m pip wheel -q --no-deps -w "$WORK/dist" "$ROOT"
python -m pip install -q "$WORK"/dist/ragcheck_local-*.whl
mkdir "$WORK/elsewhere"
cd "$WORK/elsewhere"  # nothing of the checkout is importable or findable from here
EXAMPLE="$(python -c 'from ragcheck_local.resources import example_path; print(example_path())')"
ragcheck-local evaluate --input "$EXAMPLE" --output out/example_output.json --config cpu -q
ragcheck-local report out/example_output.json --html out/report.html --md out/report.md
python - "$ROOT" <<'PY'
import json
import sys
from pathlib import Path

import ragcheck_local

root = Path(sys.argv[1]).resolve()
package = Path(ragcheck_local.__file__).resolve().parent
assert root not in package.parents, f"imported from the checkout: {package}"
manifest = json.loads(Path("out/example_output.manifest.json").read_text(encoding="utf-8"))
model = Path(manifest["model"]["resolved_path"]).resolve()
assert model == package / "_models" / "ragcheck-nli-minilm-l6", model
shipped = {p.name for p in model.iterdir()}
source = {p.name for p in (root / "models" / "ragcheck-nli-minilm-l6").iterdir() if p.is_file()}
assert source <= shipped, f"not shipped: {sorted(source - shipped)}"
out = json.loads(Path("out/example_output.json").read_text(encoding="utf-8"))
reference = json.loads((package / "examples" / "example_output.json").read_text(encoding="utf-8"))
assert out["metrics"] == reference["metrics"], (out["metrics"], reference["metrics"])
print(f"wheel check: ok ({len(out['results'])} items, model {model})")
PY
