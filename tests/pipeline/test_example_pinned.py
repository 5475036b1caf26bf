"""The bundled example's output is pinned: a refactor that changes a claim, a verdict, a deciding
chunk or a metric fails here (probabilities to 1e-4, so another CPU's last bits do not)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import EXAMPLES

from ragcheck_local.config import build_config
from ragcheck_local.pipeline import evaluate


def _close(a, b, tol: float = 1e-4) -> bool:
    """Equal, floats within ``tol`` (the same structure, the same strings and verdicts)."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= tol
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b, strict=True))
    return a == b


def test_the_bundled_example_gives_the_pinned_output(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    # The rule analyzer, as the pin was made with: an installed English parser
    # (``claim_parser: auto``) builds other claims.
    config = build_config("cpu", {"progress": False, "claim_parser": "off"})
    evaluate(EXAMPLES / "example_input.json", out, config)
    got = json.loads(out.read_text(encoding="utf-8"))
    pinned = json.loads((EXAMPLES / "example_output.json").read_text(encoding="utf-8"))
    assert got["metrics"] == pinned["metrics"]
    for ours, theirs in zip(got["results"], pinned["results"], strict=True):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            assert _close(ours[key], theirs[key]), (ours["query_id"], key)
    lines = out.with_suffix(".claims.jsonl").read_text(encoding="utf-8").splitlines()
    claims = [json.loads(line) for line in lines]
    assert [(c["query_id"], c["claim"], c["verdict"], c["doc_id"]) for c in claims] == [
        (r["query_id"], d["claim"], d["verdict"], d["doc_id"])
        for r in pinned["results"]
        for side in ("response", "gt_answer")
        for d in r["claim_details"][side]
    ]
