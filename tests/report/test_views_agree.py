"""Every view of a run tells what the metrics counted.

The checking matrices are what every metric reads. The claim details, the claims JSONL, the
report's claim views (HTML drill-down) and ``compare`` must show, for every claim, the verdict
the matrix row gives by the one rule (:func:`ragcheck_local.records.claim_verdict`) — with the
calibrated head and its contradiction gate on or off, and with plain argmax.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES

from ragcheck_local.config import build_config
from ragcheck_local.judge.calibration import METADATA_FILE, Calibration
from ragcheck_local.pipeline import evaluate
from ragcheck_local.records import NEUTRAL, claim_verdict
from ragcheck_local.report import build_html, compare_runs, load_output
from ragcheck_local.report.data import prepare

WORDS = "the river flows north into a sea city tower was built in paris red blue not old".split()


def hashed_forward(enc: dict[str, np.ndarray]) -> np.ndarray:
    """Deterministic, varied probabilities per input row (its tokens), independent of batch."""
    out = np.zeros((enc["input_ids"].shape[0], 3), dtype=np.float64)
    for row, (ids, mask) in enumerate(zip(enc["input_ids"], enc["attention_mask"], strict=True)):
        key = ",".join(str(int(i)) for i, m in zip(ids, mask, strict=True) if m)
        digest = hashlib.sha1(key.encode()).digest()
        logits = np.array([digest[0], digest[1], digest[2]], dtype=np.float64) / 40.0
        out[row] = np.exp(logits) / np.exp(logits).sum()
    return out


@pytest.fixture
def hashed_model(monkeypatch: pytest.MonkeyPatch, tiny_bert: Path) -> Path:
    from ragcheck_local.judge.checker import NLIChecker

    original = NLIChecker._torch_forward

    def patched(self, torch):
        original(self, torch)
        return hashed_forward

    monkeypatch.setattr(NLIChecker, "_torch_forward", patched)
    return tiny_bert


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 8))) + "."


def generated_items(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    items = []
    for i in range(n):
        chunks = [
            {
                "doc_id": f"d{i}-{k}",
                "text": " ".join(_sentence(rng) for _ in range(rng.randint(0, 4))),
            }
            for k in range(rng.randint(0, 4))
        ]
        items.append(
            {
                "query_id": f"q{i}",
                "query": "what?",
                "gt_answer": " ".join(_sentence(rng) for _ in range(rng.randint(1, 3))),
                "response": " ".join(_sentence(rng) for _ in range(rng.randint(1, 4))),
                "retrieved_context": chunks,
            }
        )
    return items


def _heads() -> dict[str, Calibration | None]:
    # A head that reads the probabilities and coverage; one whose contradictions the gate may
    # move to Neutral (every cosine of the tiny embedder is above -1, below 0.99).
    plain = Calibration(
        weights=(
            (1.0, 0.0, 0.0, 2.0, 0.0, 0.0, -1.0),
            (0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0),
            (0.0, 0.0, 1.5, 0.0, 0.0, 0.0, 0.0),
        ),
        fitted_on="test",
    )
    gated = Calibration(weights=plain.weights, fitted_on="test", contradiction_min_similarity=0.99)
    return {"argmax": None, "head": plain, "head+gate": gated}


def assert_views_agree(out: Path) -> None:
    data = json.loads(out.read_text(encoding="utf-8"))
    jsonl = [json.loads(line) for line in out.with_suffix(".claims.jsonl").read_text().splitlines()]
    lines = iter(jsonl)
    raw = load_output(out)
    report = {q.query_id: q for q in prepare(raw).queries}
    assert build_html(raw)  # the drill-down renders from these same views
    checked = 0
    for result in data["results"]:
        chunks = result.get("retrieved_context") or []
        for side, matrix_key in (
            ("response", "retrieved2response"),
            ("gt_answer", "retrieved2answer"),
        ):
            details = result["claim_details"][side]
            matrix = result.get(matrix_key)
            views = getattr(
                report[result["query_id"]], f"{'response' if side == 'response' else 'gt'}_claims"
            )
            for k, detail in enumerate(details):
                line = next(lines)
                assert line["query_id"] == result["query_id"]
                assert line["verdict"] == detail["verdict"] and line["doc_id"] == detail["doc_id"]
                if matrix is None:
                    assert detail["verdict"] is None
                    continue
                row = matrix[k]
                expected = claim_verdict(row)
                where = f"{result['query_id']} {side}[{k}] row={row}"
                assert detail["verdict"] == expected, where
                assert views[k].verdict == expected, where
                if expected == NEUTRAL:
                    assert detail["doc_id"] is None, where
                else:
                    at = [c["doc_id"] for c in chunks].index(detail["doc_id"])
                    assert row[at] == expected, where
                    assert views[k].doc_id == detail["doc_id"]
                    start, end = detail["evidence_span"]
                    assert 0 <= start < end <= len(chunks[at]["text"]), where
                checked += 1
    assert next(lines, None) is None
    assert checked > 0


def _config(model: Path, embedder: Path, **overrides: object):
    settings = {"nli_model": str(model), "device": "cpu", "progress": False}
    return build_config("default", {**settings, "nli.embedding_model": str(embedder), **overrides})


def _model_with(tmp_path: Path, base: Path, head: Calibration | None) -> Path:
    model = tmp_path / "model"
    shutil.copytree(base, model)
    if head is not None:
        (model / METADATA_FILE).write_text(
            json.dumps({"languages": ["en"], "calibration": head.to_dict()}), encoding="utf-8"
        )
    return model


@pytest.mark.parametrize(
    "judge", ["argmax", "head", "head+gate", "head, calibrate off", "head+gate, prefilter"]
)
def test_every_view_agrees_with_the_matrices(
    tmp_path: Path, hashed_model: Path, tiny_embedder: Path, judge: str
) -> None:
    head = _heads()[judge.split(",")[0]]
    model = _model_with(tmp_path, hashed_model, head)
    items = generated_items(40, seed=7)
    source = tmp_path / "in.json"
    source.write_text(json.dumps({"results": items}), encoding="utf-8")
    outs = []
    for name, path in (("generated", source), ("example", EXAMPLES / "example_input.json")):
        cfg = _config(
            model,
            tiny_embedder,
            calibrate="off" not in judge,
            # Screened-out pairs are Neutral without a forward pass.
            prefilter="lexical" if "prefilter" in judge else "off",
        )
        out = tmp_path / f"{name}.json"
        evaluate(path, out, cfg)
        assert_views_agree(out)
        outs.append(out)
    data = json.loads(outs[0].read_text(encoding="utf-8"))
    verdicts = [
        claim_verdict(row) for r in data["results"] for row in r.get("retrieved2response") or []
    ]
    assert {"Entailment", "Neutral", "Contradiction"} <= set(verdicts) or "gate" in judge


def test_compare_reads_the_verdicts_the_metrics_counted(
    tmp_path: Path, hashed_model: Path, tiny_embedder: Path
) -> None:
    items = generated_items(25, seed=3)
    source = tmp_path / "in.json"
    source.write_text(json.dumps({"results": items}), encoding="utf-8")
    runs = []
    for name in ("argmax", "head+gate"):
        model = _model_with(tmp_path / name, hashed_model, _heads()[name])
        cfg = _config(model, tiny_embedder)
        out = tmp_path / f"{name}.json"
        evaluate(source, out, cfg)
        runs.append(json.loads(out.read_text(encoding="utf-8")))
    changes = compare_runs(runs[0], runs[1], n_boot=20).claim_changes
    assert changes
    rows = [
        {
            (r["query_id"], c): claim_verdict(row)
            for r in run["results"]
            for c, row in zip(r["response_claims"], r["retrieved2response"], strict=True)
        }
        for run in runs
    ]
    for change in changes:
        if change.side == "response":
            assert change.verdict_a == rows[0][(change.query_id, change.claim)]
            assert change.verdict_b == rows[1][(change.query_id, change.claim)]
