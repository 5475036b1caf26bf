"""RAGChecker's Python API (``ragcheck_local.ragchecker``): containers, repr, evaluate in
place, the save_path checkpoint, the ignored LLM arguments."""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path

import pytest
from helpers import ITEMS, evaluate_items

import ragcheck_local
from ragcheck_local.metrics import (
    ALL_METRICS,
    EXTRA_METRICS,
    all_metrics,
    generator_metrics,
    retriever_metrics,
)
from ragcheck_local.ragchecker import RAGChecker, RAGResult, RAGResults, RetrievedDoc
from ragcheck_local.records import VERDICTS

GROUPS_0_1_9 = ["overall_metrics", "retriever_metrics", "generator_metrics"]


def _ragchecker_repr(n: int, metrics: dict) -> str:
    # RAGChecker 0.1.9's RAGResults.__repr__, written out independently.
    body = "\n".join("  " + line for line in json.dumps(metrics, indent=2).split("\n"))
    return f"RAGResults(\n  {n:,} RAG results,\n  Metrics:\n{body}\n)"


def _checker(model: Path, **kwargs) -> RAGChecker:
    return RAGChecker(nli_model=str(model), device="cpu", progress=False, **kwargs)


def test_top_level_names_are_ragcheckers() -> None:
    assert ragcheck_local.RAGResults is RAGResults
    assert ragcheck_local.RAGChecker is RAGChecker
    assert ragcheck_local.RAGResult is RAGResult and ragcheck_local.RetrievedDoc is RetrievedDoc


def test_containers_read_write_and_print_as_ragcheckers() -> None:
    text = json.dumps({"results": ITEMS[:2]})
    results = RAGResults.from_json(text)
    assert [r.query_id for r in results.results] == ["a", "b"]
    chunk = RetrievedDoc("d2", "the nile flows into the sea.")
    assert results.results[0].retrieved_context[1] == chunk
    assert results.metrics == {g: {} for g in GROUPS_0_1_9}
    assert repr(results) == _ragchecker_repr(2, results.metrics)
    # RAGChecker's fields in to_dict, ours only where set; the dataclass repr is RAGChecker's.
    record = results.results[0].to_dict()
    assert list(record) == [
        "query_id", "query", "gt_answer", "response", "retrieved_context", "response_claims",
        "gt_answer_claims", "answer2response", "response2answer", "retrieved2response",
        "retrieved2answer", "metrics",
    ]  # fmt: skip
    assert repr(results.results[1]).startswith("RAGResult(query_id='b', query='who is the man?'")
    assert "claim_details" not in repr(results.results[1])
    again = RAGResults.from_json(results.to_json(indent=2))
    assert again.to_dict() == results.to_dict()
    assert RetrievedDoc.from_json('{"text": "x"}') == RetrievedDoc(None, "x")
    assert RAGResult.from_json(results.results[0].to_json()).to_dict() == record
    results.update(RAGResult("z", "q?", "g.", "r."))
    assert len(results.results) == 3 and results.metrics == {g: {} for g in GROUPS_0_1_9}


def test_older_spelling_reads_as_0_1_9_and_bad_records_name_the_field() -> None:
    old = {"results": [ITEMS[0]], "metrics": {"overall": {"f1": 50.0}, "generator": {}}}
    results = RAGResults.from_dict(old)
    assert results.metrics == {"overall_metrics": {"f1": 50.0}, "generator_metrics": {}}
    with pytest.raises(ragcheck_local.errors.InputError, match="response"):
        RAGResults.from_dict({"results": [{"query_id": "x", "query": "q"}]})
    with pytest.raises(ragcheck_local.errors.InputError, match="metrics"):
        RAGResults.from_dict({"results": [], "metrics": {"overall": {}, "overall_metrics": {}}})


def test_our_output_reads_back_through_from_json(tmp_path: Path, lexical_model: Path) -> None:
    _, out = evaluate_items(tmp_path, lexical_model)
    text = (tmp_path / "out.json").read_text(encoding="utf-8")
    results = RAGResults.from_json(text)
    assert list(results.metrics) == [*GROUPS_0_1_9, "extra_metrics"]
    assert results.metrics == out["metrics"]
    assert results.results[0].claim_details == out["results"][0]["claim_details"]
    # Everything comes back: every result field (ours too) and the file's other keys, to the
    # byte in the file's own JSON style.
    assert json.loads(results.to_json()) == out
    assert results.to_json(indent=2, ensure_ascii=False) + "\n" == text


def test_evaluate_fills_every_result_in_place_like_the_cli(
    tmp_path: Path, lexical_model: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, cli = evaluate_items(tmp_path, lexical_model)
    results = RAGResults.from_dict({"results": copy.deepcopy(ITEMS)})
    with caplog.at_level(logging.WARNING, logger="ragcheck_local"):
        evaluator = _checker(
            lexical_model,
            extractor_name="bedrock/meta.llama3-70b-instruct-v1:0",
            checker_name="openai/gpt-4o",
            batch_size_extractor=64,
            openai_api_key="sk-SECRET",
            joint_check=False,
        )
    notes = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert len(notes) == 1, notes
    for name in ("extractor_name", "checker_name", "batch_size_extractor", "openai_api_key",
                 "joint_check"):  # fmt: skip
        assert name in notes[0]
    assert "sk-SECRET" not in caplog.text and "gpt-4o" not in caplog.text
    save = tmp_path / "checkpoint.json"
    returned = evaluator.evaluate(results, all_metrics, save_path=save)
    assert returned is results.metrics
    assert results.metrics == cli["metrics"]
    assert list(results.metrics) == [*GROUPS_0_1_9, "extra_metrics"]
    assert {m for g in GROUPS_0_1_9 for m in results.metrics[g]} == set(ALL_METRICS)
    for result, theirs in zip(results.results, cli["results"], strict=True):
        for name in ("response_claims", "gt_answer_claims", "answer2response",
                     "response2answer", "retrieved2response", "retrieved2answer", "metrics",
                     "claim_details"):  # fmt: skip
            assert getattr(result, name) == theirs[name], (result.query_id, name)
        for row in (result.answer2response or []) + [v for r in result.retrieved2response or []
                                                     for v in r]:  # fmt: skip
            assert row in VERDICTS
    assert results.results[2].retrieved2response is None  # no retrieved_context: not computable
    # save_path holds the results as RAGChecker writes them (to_json), metrics included.
    saved = RAGResults.from_json(save.read_text(encoding="utf-8"))
    assert saved.to_dict() == results.to_dict()


def test_results_read_back_from_save_path_are_not_checked_again(
    tmp_path: Path, lexical_model: Path
) -> None:
    results = RAGResults.from_dict({"results": copy.deepcopy(ITEMS)})
    _checker(lexical_model).evaluate(results, save_path=tmp_path / "save.json")
    saved = RAGResults.from_json((tmp_path / "save.json").read_text(encoding="utf-8"))
    for result in saved.results:
        result.metrics = {}
    saved.metrics = {}
    # No model would load (the path does not exist): every check is already there.
    metrics = _checker(tmp_path / "no-such-model").evaluate(saved)
    assert metrics == results.metrics
    assert [r.metrics for r in saved.results] == [r.metrics for r in results.results]


def test_metric_groups_accumulate_and_a_bad_name_is_a_value_error(lexical_model: Path) -> None:
    results = RAGResults.from_dict({"results": copy.deepcopy(ITEMS[:2])})
    evaluator = _checker(lexical_model)
    evaluator.evaluate(results, retriever_metrics)
    assert set(results.metrics["retriever_metrics"]) == {"claim_recall", "context_precision"}
    assert results.metrics["overall_metrics"] == {} == results.metrics["generator_metrics"]
    evaluator.evaluate(results, [generator_metrics])
    # As with RAGChecker, a later evaluate adds its groups to what is there.
    assert set(results.metrics["retriever_metrics"]) == {"claim_recall", "context_precision"}
    assert len(results.metrics["generator_metrics"]) == 6
    assert set(results.metrics["extra_metrics"]) == set(EXTRA_METRICS)
    with pytest.raises(ValueError, match="accuracy"):
        evaluator.evaluate(results, "accuracy")


def test_results_without_a_query_id_or_with_repeated_ones_are_evaluated(
    lexical_model: Path,
) -> None:
    records = [
        {**ITEMS[0], "query_id": None},
        {**ITEMS[1], "query_id": None},
        {**ITEMS[0], "query_id": "same"},
        {**ITEMS[1], "query_id": "same"},
    ]
    results = RAGResults.from_dict({"results": records})
    _checker(lexical_model).evaluate(results, "faithfulness")
    assert [r.query_id for r in results.results] == [None, None, "same", "same"]
    values = [r.metrics["faithfulness"] for r in results.results]
    assert values[0] == values[2] and values[1] == values[3]
    # Checked now: a second evaluate loads no model (there is none at that path).
    again = RAGChecker(nli_model=str(lexical_model.parent / "absent"), progress=False)
    assert again.evaluate(results, "faithfulness") == results.metrics


def test_our_settings_go_to_the_config_and_llm_keywords_are_ignored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="ragcheck_local"):
        evaluator = RAGChecker(
            batch_size_checker=8,
            max_length=128,
            settings={"run.empty_policy": "skip"},
            temperature=0.0,
        )
    config = evaluator.config
    assert (config.nli.batch_size, config.nli.max_length) == (8, 128)
    assert config.run.empty_policy == "skip"
    assert "temperature" in caplog.text
    assert RAGChecker().config.nli.batch_size == ragcheck_local.build_config().nli.batch_size
