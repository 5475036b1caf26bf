"""RAGChecker's README Python example, verbatim but for its import lines, with the bundled
model: it runs offline and prints RAGChecker's ``RAGResults(...)`` with all 11 metrics."""

from __future__ import annotations

import json
import runpy
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, SHARED_DATA

from ragcheck_local import resources

# From RAGChecker's README ("Run the Checking Pipeline with Python"), as it stands there; only
# the two import lines differ (`from ragchecker import ...`, `from ragchecker.metrics import`).
README_EXAMPLE = '''\
from ragcheck_local import RAGResults, RAGChecker
from ragcheck_local.metrics import all_metrics


# initialize ragresults from json/dict
with open("examples/checking_inputs.json") as fp:
    rag_results = RAGResults.from_json(fp.read())

# set-up the evaluator
evaluator = RAGChecker(
    extractor_name="bedrock/meta.llama3-70b-instruct-v1:0",
    checker_name="bedrock/meta.llama3-70b-instruct-v1:0",
    batch_size_extractor=32,
    batch_size_checker=32
)

# evaluate results with selected metrics or certain groups, e.g., retriever_metrics, generator_metrics, all_metrics
evaluator.evaluate(rag_results, all_metrics)
print(rag_results)

"""Output
RAGResults(
  2 RAG results,
  Metrics:
  {
    "overall_metrics": {
      "precision": 76.4,
      "recall": 62.5,
      "f1": 68.3
    },
    "retriever_metrics": {
      "claim_recall": 61.4,
      "context_precision": 87.5
    },
    "generator_metrics": {
      "context_utilization": 87.5,
      "noise_sensitivity_in_relevant": 19.1,
      "noise_sensitivity_in_irrelevant": 0.0,
      "hallucination": 4.5,
      "self_knowledge": 27.3,
      "faithfulness": 68.2
    }
  }
)
"""
'''  # noqa: E501 (the README's own line lengths)

GROUPS = {
    "overall_metrics": ["precision", "recall", "f1"],
    "retriever_metrics": ["claim_recall", "context_precision"],
    "generator_metrics": [
        "context_utilization",
        "noise_sensitivity_in_relevant",
        "noise_sensitivity_in_irrelevant",
        "hallucination",
        "self_knowledge",
        "faithfulness",
    ],
}


def test_ragcheckers_readme_example_runs_with_only_the_imports_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # RAGChecker's own example input when the shared data is there, else ours (same format).
    source = SHARED_DATA / "ragchecker-examples" / "checking_inputs.json"
    if not source.exists():
        source = EXAMPLES / "example_input.json"
    (tmp_path / "examples").mkdir()
    shutil.copy(source, tmp_path / "examples" / "checking_inputs.json")
    script = tmp_path / "example.py"
    script.write_text(README_EXAMPLE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(resources.MODEL_ENV, raising=False)  # the bundled model
    runpy.run_path(str(script), run_name="__main__")

    printed = capsys.readouterr().out
    n = len(json.loads(source.read_text(encoding="utf-8"))["results"])
    head = f"RAGResults(\n  {n:,} RAG results,\n  Metrics:\n"
    assert printed.startswith(head) and printed.endswith("\n)\n"), printed
    metrics = json.loads(printed[len(head) : -len("\n)\n")])
    assert list(metrics)[:3] == list(GROUPS)
    for group, names in GROUPS.items():
        assert list(metrics[group]) == names
        for name in names:
            assert isinstance(metrics[group][name], float) and 0 <= metrics[group][name] <= 100
    assert list(metrics) == [*GROUPS, "extra_metrics"]  # ours, beside RAGChecker's three
