"""Items in a language the judge does not declare: recorded in the item, the manifest and every
report, or skipped, or refused (``--on-language-mismatch warn|skip|error``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragcheck_local.config import build_config
from ragcheck_local.errors import InputError
from ragcheck_local.pipeline import evaluate
from ragcheck_local.report import build_compare_html, build_html, build_markdown, compare_runs
from ragcheck_local.report.compare import build_compare_markdown, format_compare_text

pytest.importorskip("sudachipy")

ITEMS = [
    {
        "query_id": "ja-1",
        "query": "富士山は?",
        "gt_answer": "富士山は日本で最も高い山です。",
        "response": "富士山は日本で二番目に高い山です。",
        "retrieved_context": [{"doc_id": "d", "text": "富士山は日本で最も高い山です。"}],
    },
    {
        "query_id": "en-1",
        "query": "Where does the Nile flow?",
        "gt_answer": "the nile flows north.",
        "response": "the nile flows north.",
        "retrieved_context": [{"doc_id": "d", "text": "the nile flows north into the sea."}],
    },
]


@pytest.fixture
def english_model(tmp_path: Path, lexical_model: Path) -> Path:
    model = tmp_path / "english"
    shutil.copytree(lexical_model, model)
    (model / "ragcheck.json").write_text(json.dumps({"languages": ["en"]}), encoding="utf-8")
    return model


def _run(tmp_path: Path, model: Path, policy: str, name: str = "out") -> Path:
    source = tmp_path / "in.json"
    source.write_text(json.dumps({"results": ITEMS}, ensure_ascii=False), encoding="utf-8")
    cfg = build_config(
        "default",
        {
            "nli_model": str(model),
            "device": "cpu",
            "progress": False,
            "lang": "auto",
            "on_language_mismatch": policy,
        },
    )
    out = tmp_path / f"{name}.json"
    evaluate(source, out, cfg)
    return out


def test_warn_records_the_mismatch_in_the_item_manifest_and_reports(
    tmp_path: Path, english_model: Path
) -> None:
    out = _run(tmp_path, english_model, "warn")
    data = json.loads(out.read_text(encoding="utf-8"))
    warnings = {r["query_id"]: r.get("warnings") for r in data["results"]}
    assert warnings == {
        "ja-1": [{"code": "language_mismatch", "languages": ["ja"], "judge_languages": ["en"]}],
        "en-1": None,
    }
    manifest = json.loads(out.with_suffix(".manifest.json").read_text(encoding="utf-8"))
    assert manifest["counts"]["language_mismatch"] == 1
    assert manifest["language_mismatch"] == {
        "judge_languages": ["en"],
        "policy": "warn",
        "items": 1,
        "items_by_language": {"ja": 1},
        "first_query_id": "ja-1",
    }
    md = build_markdown(data)
    assert "Warning: 1 of 2 queries contain text in ja" in md
    assert "警告: 質問 2 件中 1 件" in build_markdown(data, lang="ja")
    assert 'class="banner"' in build_html(data) and "declares en" in build_html(data)
    # A run without such items shows no banner.
    clean = {**data, "results": [r for r in data["results"] if r["query_id"] == "en-1"]}
    assert "Warning" not in build_markdown(clean) and 'class="banner"' not in build_html(clean)
    result = compare_runs(data, clean, n_boot=10)
    text = format_compare_text(result, label_a="old.json", label_b="new.json")
    assert "run old.json has 1 queries with text in ja" in text
    assert "new.json has" not in text
    assert 'class="banner"' in build_compare_html(result)
    assert "> **Warning: run A" in build_compare_markdown(result)


def test_skip_leaves_the_items_out_as_rejected(tmp_path: Path, english_model: Path) -> None:
    out = _run(tmp_path, english_model, "skip")
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [r["query_id"] for r in data["results"]] == ["en-1"]
    [row] = data["rejected"]
    assert row["record"] == "ja-1" and row["field"] == "language" and "ja" in row["reason"]


def test_error_stops_before_any_file_naming_the_record(tmp_path: Path, english_model: Path):
    with pytest.raises(InputError) as info:
        _run(tmp_path, english_model, "error")
    assert info.value.record == "ja-1" and info.value.field == "language"
    assert "'ja'" in str(info.value) and "['en']" in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["english", "in.json"]
