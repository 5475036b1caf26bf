"""Issue 28, case 5 (run side): chunks without doc_id are named and noted in the output,
``run.progress=False`` silences every bar (the model libraries' too, without leaking the
setting), and the manifest's ``metrics_computed`` lists exactly the metrics written."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from helpers import ITEMS, evaluate_items

from ragcheck_local.records import UNNAMED_CHUNKS


def _unnamed_items() -> list[dict]:
    items = copy.deepcopy(ITEMS)
    items[0]["retrieved_context"] = [
        "the nile is the longest river. the nile is blue.",  # a bare string: no doc_id
        {"text": "the nile flows into the sea."},
    ]
    return items


def test_unnamed_chunks_are_named_by_position_and_noted_in_the_output(
    tmp_path: Path, lexical_model: Path
) -> None:
    _, out = evaluate_items(tmp_path, lexical_model, items=_unnamed_items())
    first = out["results"][0]
    assert [c["doc_id"] for c in first["retrieved_context"]] == ["chunk-1", "chunk-2"]
    (warning,) = first["warnings"]
    assert warning["code"] == UNNAMED_CHUNKS and warning["doc_ids"] == ["chunk-1", "chunk-2"]
    assert all("warnings" not in r for r in out["results"][1:])  # named chunks: no note
    details = first["claim_details"]["response"]
    assert details[0]["verdict"] == "Entailment" and details[0]["doc_id"] == "chunk-1"
    lines = (tmp_path / "out.claims.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["doc_id"] == "chunk-1"
    from ragcheck_local.report import load_output

    assert load_output(tmp_path / "out.json")["results"][0]["warnings"] == [warning]


def test_manifest_lists_exactly_the_metrics_written(tmp_path: Path, lexical_model: Path) -> None:
    _, out = evaluate_items(tmp_path, lexical_model)
    manifest = json.loads((tmp_path / "out.manifest.json").read_text(encoding="utf-8"))
    listed = manifest["metrics_computed"]
    written = [name for group in out["metrics"].values() for name in group]
    assert len(listed) == len(set(listed))
    assert sorted(listed) == sorted(written)
    for result in out["results"]:
        assert sorted(result["metrics"]) == sorted(written)


def test_progress_false_silences_every_bar_and_restores_the_libraries_setting(
    tmp_path: Path, tiny_bert: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from transformers.utils import logging as hf_logging

    before = hf_logging.is_progress_bar_enabled()
    hf_logging.enable_progress_bar()  # as a caller who never turned them off has them
    try:
        capfd.readouterr()
        evaluate_items(tmp_path, tiny_bert, progress=False)
        err = capfd.readouterr().err
        assert "Loading weights" not in err
        assert "it/s" not in err and "%|" not in err, err[-2000:]
        assert hf_logging.is_progress_bar_enabled()  # scoped to the run: not left off
    finally:
        if not before:
            hf_logging.disable_progress_bar()
