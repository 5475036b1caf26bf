"""``ragcheck_local.check``: records in memory (dicts, a DataFrame, a Dataset) in, results in
memory out, equal to the CLI's on the same rows."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import ITEMS, write_input

import ragcheck_local
from ragcheck_local import check
from ragcheck_local.cli import main
from ragcheck_local.errors import InputError

pd = pytest.importorskip("pandas")


def _cli(tmp_path: Path, model: Path, items=ITEMS) -> tuple[dict, list[dict]]:
    """The CLI's output and claims file for ``items``."""
    out = tmp_path / "cli.json"
    args = ["evaluate", "-i", str(write_input(tmp_path, items)), "-o", str(out)]
    result = CliRunner().invoke(main, [*args, "--nli-model", str(model), "--device", "cpu", "-q"])
    assert result.exit_code == 0, result.output
    lines = (tmp_path / "cli.claims.jsonl").read_text(encoding="utf-8").splitlines()
    return json.loads(out.read_text(encoding="utf-8")), [json.loads(line) for line in lines]


def _check(records, model: Path, **kwargs):
    return check(records, nli_model=str(model), device="cpu", progress=False, **kwargs)


def test_check_on_a_dataframe_equals_the_cli(tmp_path: Path, lexical_model: Path) -> None:
    output, claim_lines = _cli(tmp_path, lexical_model)
    frame = pd.DataFrame(copy.deepcopy(ITEMS))  # item c has no chunks: NaN in the frame
    assert len(frame) == 3
    results = _check(frame, lexical_model)
    assert isinstance(results, ragcheck_local.CheckResults)
    assert results.metrics == output["metrics"]
    assert results.items == [{"query_id": r["query_id"], **r["metrics"]} for r in output["results"]]
    assert results.claims == claim_lines  # claim for claim, field for field
    assert results.results == output["results"]
    assert results.rejected == [] and results.counts["items"] == 3
    # One row per claim: the item, the side, the text, the verdict, the support and the
    # deciding premise's span.
    first = results.claims[0]
    assert (first["query_id"], first["source"], first["claim"]) == (
        "a",
        "response",
        "the nile is the longest river.",
    )
    assert first["verdict"] == "Entailment" and first["doc_id"] == "d1"
    assert first["evidence_span"] is not None and "answer_support" in first
    assert not list(tmp_path.glob("*.partial.jsonl"))


def test_check_takes_a_dataset_a_list_and_a_column_map(tmp_path: Path, lexical_model: Path) -> None:
    datasets = pytest.importorskip("datasets")
    renamed = [
        {"id": r["query_id"], "question": r["query"], "answer": r["response"],
         "gt_answer": r["gt_answer"], "retrieved_context": r.get("retrieved_context")}
        for r in ITEMS
    ]  # fmt: skip
    column_map = {"id": "query_id", "question": "query", "answer": "response"}
    from_list = _check(renamed, lexical_model, column_map=column_map)
    dataset = datasets.Dataset.from_list(copy.deepcopy(renamed))
    spelled = "id=query_id,question=query,answer=response"  # as --column-map takes it
    from_dataset = _check(dataset, lexical_model, column_map=spelled)
    assert from_dataset.metrics == from_list.metrics
    assert from_dataset.claims == from_list.claims
    wrapped = _check({"results": copy.deepcopy(ITEMS)}, lexical_model)
    assert wrapped.metrics == from_list.metrics
    # The views: pandas and datasets, of the items, the claims and the results.
    assert len(from_list.to_pandas()) == 3
    assert list(from_list.to_pandas("claims")["claim"]) == [c["claim"] for c in from_list.claims]
    claims = from_list.to_dataset("claims")
    assert claims.num_rows == len(from_list.claims) and "evidence_span" in claims.column_names
    assert from_list.to_dataset().column_names[:2] == ["query_id", "precision"]
    with pytest.raises(InputError, match="what"):
        from_list.to_pandas("everything")


def test_check_uses_the_config_it_is_given(lexical_model: Path) -> None:
    only = _check(copy.deepcopy(ITEMS), lexical_model, metrics="faithfulness")
    assert only.metrics["overall_metrics"] == {}
    assert set(only.metrics["generator_metrics"]) == {"faithfulness"}
    config = ragcheck_local.build_config(
        "default", {"nli_model": str(lexical_model), "device": "cpu", "progress": False}
    )
    skip = check(copy.deepcopy(ITEMS), config=config, settings={"run.empty_policy": "skip"})
    assert skip.metrics["overall_metrics"]["recall"] is not None


def test_bad_records_are_named_and_a_path_is_refused(lexical_model: Path) -> None:
    bad = [ITEMS[0], {**ITEMS[1], "retrieved_context": {"x": 1}}]
    with pytest.raises(InputError, match=r"records\[1\].*retrieved_context"):
        _check(bad, lexical_model)
    with pytest.raises(InputError, match="a file is read by evaluate"):
        _check("results.json", lexical_model)
    skipped = _check(bad, lexical_model, on_error="skip")
    assert [r["query_id"] for r in skipped.results] == ["a"]
    assert skipped.rejected[0]["field"] == "retrieved_context"
