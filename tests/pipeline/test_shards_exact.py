"""Shards merge to exactly one run, and every metric is computed from what the output stores.

Uses the bundled model: its probabilities move in the 7th decimal with batch composition, which
a lexical stand-in model would never show.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from ragcheck_local.config import build_config
from ragcheck_local.pipeline import evaluate, merge, recompute

FACTS = [
    "The Nile flows north into the Mediterranean Sea.",
    "The Eiffel Tower was completed in 1889.",
    "Mars has two small moons.",
    "Python was created by Guido van Rossum.",
    "The Amazon is the largest rainforest.",
    "Mount Fuji is the highest mountain in Japan.",
    "Water boils at 100 degrees Celsius at sea level.",
    "Tokyo is the capital of Japan.",
    "Jupiter is the largest planet.",
]


def workload(n: int) -> list[dict]:
    rng = random.Random(1)
    return [
        {
            "query_id": f"w{i}",
            "query": "q?",
            "gt_answer": " ".join(rng.sample(FACTS, 3)),
            "response": " ".join(rng.sample(FACTS, 5)),
            "retrieved_context": [
                {"doc_id": f"d{i}{k}", "text": " ".join(rng.sample(FACTS, 3))} for k in range(3)
            ],
        }
        for i in range(n)
    ]


def _run(source: Path, out: Path, **overrides) -> dict:
    cfg = build_config("cpu", {"progress": False, "block_size": 3, **overrides})
    evaluate(source, out, cfg)
    return json.loads(out.read_text(encoding="utf-8"))


def test_shards_merge_to_the_single_run_in_every_field(tmp_path: Path) -> None:
    source = tmp_path / "in.json"
    source.write_text(json.dumps({"results": workload(14)}), encoding="utf-8")
    single = _run(source, tmp_path / "single.json")
    by_id = {r["query_id"]: r for r in single["results"]}
    for n in (2, 3):
        outs = [tmp_path / f"s{i}of{n}.json" for i in range(n)]
        for i, out in enumerate(outs):
            _run(source, out, shard=(i, n))
        merged = merge(outs, tmp_path / f"merged{n}.json")
        assert merged["metrics"] == single["metrics"]
        assert len(merged["results"]) == 14
        for result in merged["results"]:
            assert result == by_id[result["query_id"]], result["query_id"]


def test_recompute_reproduces_every_stored_metric(tmp_path: Path) -> None:
    source = tmp_path / "in.json"
    source.write_text(json.dumps({"results": workload(6)}), encoding="utf-8")
    single = _run(source, tmp_path / "single.json")
    again = recompute(tmp_path / "single.json", tmp_path / "re.json")
    assert again["metrics"] == single["metrics"]
    for ours, stored in zip(again["results"], single["results"], strict=True):
        assert ours["metrics"] == stored["metrics"]  # soft metrics too: exactly, not approx
