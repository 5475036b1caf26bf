"""Both spellings of the metric groups (RAGChecker 0.1.9's overall_metrics, ..., and the older
overall, ...) go through every reader: report, compare, recompute, merge, RAGResults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SHARED_DATA
from helpers import evaluate_items

from ragcheck_local.cli import main
from ragcheck_local.errors import InputError
from ragcheck_local.formats.output import (
    METRIC_GROUP_KEYS,
    metric_group,
    normalize_metric_groups,
    read_output,
)
from ragcheck_local.ragchecker import RAGResults

NEW = list(METRIC_GROUP_KEYS.values())
OLD = list(METRIC_GROUP_KEYS)


def _invoke(*args: str):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_the_one_normalisation() -> None:
    assert NEW == ["overall_metrics", "retriever_metrics", "generator_metrics", "extra_metrics"]
    old = {"overall": {"f1": 1.0}, "retriever": {}, "generator": {}, "extra": {}, "mine": {}}
    assert list(normalize_metric_groups(old)) == [*NEW, "mine"]
    assert normalize_metric_groups(normalize_metric_groups(old)) == normalize_metric_groups(old)
    assert [metric_group(k) for k in NEW] == OLD == [metric_group(k) for k in OLD]
    with pytest.raises(InputError, match="'overall' and 'overall_metrics'"):
        normalize_metric_groups({"overall": {}, "overall_metrics": {}}, "f.json")
    assert normalize_metric_groups(None) is None


def test_a_file_in_either_spelling_goes_through_every_command(
    tmp_path: Path, lexical_model: Path
) -> None:
    _, data = evaluate_items(tmp_path, lexical_model)
    assert list(data["metrics"]) == NEW  # what we write: 0.1.9's keys, ours beside them
    files = {}
    for name, keys in (("new", NEW), ("old", OLD)):
        spelled = {**data, "metrics": dict(zip(keys, data["metrics"].values(), strict=True))}
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(spelled, indent=2), encoding="utf-8")
    reports = {}
    for name, path in files.items():
        assert read_output(path)["metrics"] == data["metrics"]
        assert RAGResults.from_json(path.read_text(encoding="utf-8")).metrics == data["metrics"]
        md = tmp_path / f"{name}.md"
        _invoke("report", str(path), "--md", str(md), "--html", str(tmp_path / f"{name}.html"))
        reports[name] = md.read_text(encoding="utf-8")
        out = tmp_path / f"{name}_re.json"
        _invoke("recompute", str(path), "-o", str(out))
        assert json.loads(out.read_text(encoding="utf-8"))["metrics"] == data["metrics"]
        out = tmp_path / f"{name}_merged.json"
        _invoke("merge", str(path), "-o", str(out))
        assert json.loads(out.read_text(encoding="utf-8"))["metrics"] == data["metrics"]
    assert reports["new"] == reports["old"]
    diff = tmp_path / "c.md"
    compared = _invoke("compare", str(files["old"]), str(files["new"]), "-o", str(diff))
    assert "precision" in compared.output


def test_ragcheckers_own_example_output_reads_in_the_older_spelling(tmp_path: Path) -> None:
    source = SHARED_DATA / "ragchecker-examples" / "checking_outputs.json"
    if not source.exists():
        pytest.skip(f"shared data not found at {source}")
    theirs = json.loads(source.read_text(encoding="utf-8"))["metrics"]
    assert list(theirs) == ["overall", "retriever", "generator"]
    out = tmp_path / "re.json"
    _invoke("recompute", str(source), "-o", str(out))
    ours = json.loads(out.read_text(encoding="utf-8"))["metrics"]
    assert ours == {**normalize_metric_groups(theirs), "extra_metrics": ours["extra_metrics"]}
    results = RAGResults.from_json(source.read_text(encoding="utf-8"))
    assert results.metrics == normalize_metric_groups(theirs)
    _invoke("report", str(source), "--md", str(tmp_path / "r.md"))
