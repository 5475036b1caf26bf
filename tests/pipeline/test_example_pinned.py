"""The shipped example output equals a fresh run of the bundled model (to the rounding the output
keeps: :func:`ragcheck_local.dev.examples.differences`): a change that moves a claim, a verdict,
a deciding chunk or a metric, a retrained bundled model or a new output format fails here until
``scripts/regen_examples.sh`` has regenerated the example (and its screenshot)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import EXAMPLES

from ragcheck_local.dev.examples import differences, fresh_outputs

HINT = "the shipped example is stale: run scripts/regen_examples.sh"


def test_the_shipped_example_output_equals_a_fresh_run(tmp_path: Path) -> None:
    # One run per example with the settings the examples are made with (the CPU preset, the
    # rule-based claims: an installed English parser would build other claims).
    for name, out in fresh_outputs(EXAMPLES, tmp_path).items():
        got = json.loads(out.read_text(encoding="utf-8"))
        shipped = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
        found = differences(got, shipped)
        assert not found, f"{name}: {HINT}\n" + "\n".join(found[:30])
        # The claims file says what the output's claim details say, claim for claim.
        lines = out.with_suffix(".claims.jsonl").read_text(encoding="utf-8").splitlines()
        claims = [json.loads(line) for line in lines]
        assert [(c["query_id"], c["claim"], c["verdict"], c["doc_id"]) for c in claims] == [
            (r["query_id"], d["claim"], d["verdict"], d["doc_id"])
            for r in shipped["results"]
            for side in ("response", "gt_answer")
            for d in r["claim_details"][side]
        ]
