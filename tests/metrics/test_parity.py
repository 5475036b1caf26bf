"""Parity with RAGChecker: its example output file, and a numpy oracle on random matrices."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import require_shared

from ragcheck_local.formats.output import normalize_metric_groups
from ragcheck_local.metrics import (
    ALL_METRICS,
    CheckingMatrices,
    aggregate,
    item_metrics,
)
from ragcheck_local.records import VERDICTS

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
OUTPUTS = DATA / "ragchecker-examples" / "checking_outputs.json"


@pytest.fixture(scope="module")
def outputs() -> dict[str, Any]:
    return json.loads(require_shared(OUTPUTS).read_text(encoding="utf-8"))


def test_example_has_real_content(outputs: dict[str, Any]) -> None:
    assert len(outputs["results"]) == 2
    for result in outputs["results"]:
        assert set(ALL_METRICS) <= set(result["metrics"])


def test_per_item_metrics_match_ragchecker(outputs: dict[str, Any]) -> None:
    for result in outputs["results"]:
        values = item_metrics(CheckingMatrices.from_result(result), ALL_METRICS)
        assert list(values) == list(ALL_METRICS)
        for metric in ALL_METRICS:
            expected = result["metrics"][metric]
            assert values[metric] == pytest.approx(expected, abs=1e-9, rel=0), (
                result["query_id"],
                metric,
            )


def test_aggregate_matches_ragchecker_exactly(outputs: dict[str, Any]) -> None:
    per_item = [
        item_metrics(CheckingMatrices.from_result(r), ALL_METRICS) for r in outputs["results"]
    ]
    # RAGChecker's example file has the older keys (overall, ...); ours are 0.1.9's.
    expected = normalize_metric_groups(outputs["metrics"])
    assert list(expected) == ["overall_metrics", "retriever_metrics", "generator_metrics"]
    assert aggregate(per_item, ALL_METRICS) == {**expected, "extra_metrics": {}}


def test_example_extras_partition_the_response_claims(outputs: dict[str, Any]) -> None:
    for result in outputs["results"]:
        values = item_metrics(CheckingMatrices.from_result(result))
        parts = ("faithfulness", "contradiction_rate", "unsupported_rate")
        total = sum(values[m] for m in parts)  # type: ignore[misc]
        assert total == pytest.approx(1.0)


def test_from_result_does_not_mutate_the_example(outputs: dict[str, Any]) -> None:
    before = copy.deepcopy(outputs)
    for result in outputs["results"]:
        item_metrics(CheckingMatrices.from_result(result))
    assert outputs == before


# --- numpy oracle -----------------------------------------------------------------------------
# An independent restatement of RAGChecker's computation.py formulas with numpy bool arrays,
# including its guards (a failed guard gives 0.0). Our pure-Python code must agree bit for bit.


def _oracle(m: dict[str, list]) -> dict[str, float]:
    def as_bool(rows: list) -> np.ndarray:
        return np.array([[v == "Entailment" for v in row] for row in rows], dtype=bool)

    a2r = np.array([v == "Entailment" for v in m["answer2response"]], dtype=bool)
    r2a = np.array([v == "Entailment" for v in m["response2answer"]], dtype=bool)
    rows = m["retrieved2response"] + m["retrieved2answer"]
    n_chunks = len(rows[0]) if rows else 0
    ret2r = as_bool(m["retrieved2response"]).reshape(len(a2r), n_chunks)
    ret2a = as_bool(m["retrieved2answer"]).reshape(len(r2a), n_chunks)
    out: dict[str, float] = {}
    out["precision"] = float(np.mean(a2r)) if len(a2r) else 0.0
    out["recall"] = float(np.mean(r2a)) if len(r2a) else 0.0
    p, r = out["precision"], out["recall"]
    out["f1"] = 2 * p * r / (p + r) if p > 0 and r > 0 else 0.0
    if len(r2a) and n_chunks:
        recalled = ret2a.max(axis=1)
        out["claim_recall"] = float(recalled.mean())
        out["context_precision"] = float(ret2a.max(axis=0).mean())
        total = int(recalled.sum())
        out["context_utilization"] = float((recalled & r2a).sum() / total) if total else 0.0
    else:
        out["claim_recall"] = out["context_precision"] = out["context_utilization"] = 0.0
    if len(a2r) and n_chunks and len(r2a):
        relevant = ret2a.max(axis=0, keepdims=True)
        rel_faithful = (relevant & ret2r).max(axis=1)
        irr_faithful = (~relevant & ret2r).max(axis=1) & ~rel_faithful
        out["noise_sensitivity_in_relevant"] = float(np.mean(rel_faithful & ~a2r))
        out["noise_sensitivity_in_irrelevant"] = float(np.mean(irr_faithful & ~a2r))
    else:
        out["noise_sensitivity_in_relevant"] = out["noise_sensitivity_in_irrelevant"] = 0.0
    if len(a2r) and n_chunks:
        unfaithful = ~ret2r.max(axis=1)
        out["hallucination"] = float(np.mean(unfaithful & ~a2r))
        out["self_knowledge"] = float(np.mean(unfaithful & a2r))
        out["faithfulness"] = float(np.mean(ret2r.max(axis=1)))
    else:
        out["hallucination"] = out["self_knowledge"] = out["faithfulness"] = 0.0
    return out


def _random_item(rng: random.Random) -> dict[str, list]:
    n_resp, n_gt, n_chunks = rng.randint(0, 5), rng.randint(0, 5), rng.randint(0, 4)
    weights = rng.choice([(1, 1, 1), (1, 4, 1), (4, 1, 1), (1, 1, 4)])

    def verdicts(n: int) -> list[str]:
        return rng.choices(VERDICTS, weights=weights, k=n)

    return {
        "answer2response": verdicts(n_resp),
        "response2answer": verdicts(n_gt),
        "retrieved2response": [verdicts(n_chunks) for _ in range(n_resp)],
        "retrieved2answer": [verdicts(n_chunks) for _ in range(n_gt)],
    }


def test_random_items_match_numpy_oracle_bit_for_bit() -> None:
    rng = random.Random(20240817)
    per_item = []
    for _ in range(400):
        raw = _random_item(rng)
        got = item_metrics(CheckingMatrices.from_result(raw), ALL_METRICS)
        want = _oracle(raw)
        assert got == want, raw
        per_item.append(got)
    grouped = aggregate(per_item, ALL_METRICS)
    flat = {k: v for group in grouped.values() for k, v in group.items()}
    for metric in ALL_METRICS:
        mean = np.mean([item[metric] for item in per_item])
        assert flat[metric] == float(round(mean * 100, 1))
