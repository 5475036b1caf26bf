"""Issue 10: every bad input exits 2 with nothing written, resume says what it did, and a new
user is never left guessing. One test per behaviour, named after it."""

from __future__ import annotations

import errno
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from cli_contract import assert_contract, example_records, run_cli, write_bytes

from ragcheck_local.pipeline import output_paths


def _evaluate(model: Path, src: Path, out: Path | str, *extra: str) -> Any:
    args = ["evaluate", "-i", str(src), "-o", str(out), "--nli-model", str(model)]
    return run_cli([*args, "--device", "cpu", "--lang", "en", "-q", *extra], src.parent)


def _input(tmp_path: Path, records: list[dict[str, Any]] | None = None, name: str = "in.json"):
    folder = tmp_path / "run"
    folder.mkdir(exist_ok=True)
    src = folder / name
    src.write_text(json.dumps({"results": records or example_records()}), encoding="utf-8")
    return src


def _refused(outcome: Any, *words: str) -> None:
    assert_contract(outcome)
    assert outcome.exit_code == 2, outcome.output[-2000:]
    for word in words:
        assert word in outcome.output, outcome.output[-2000:]


# -- exit 2, nothing written -----------------------------------------------------------------


@pytest.mark.parametrize(
    "where", ["response", "query", "chunk_text", "query_id", "extra_value", "extra_key"]
)
def test_lone_surrogate_in_any_text_exits_2_with_nothing_written(
    tmp_path: Path, tiny_bert: Path, where: str
) -> None:
    records = example_records()
    marker = "SURROGATE"
    first = records[0]
    if where == "chunk_text":
        first["retrieved_context"][0]["text"] = marker
    elif where == "extra_value":
        first["note"] = marker
    elif where == "extra_key":
        first[marker] = 1
    else:
        first[where] = marker
    src = _input(tmp_path)
    write_bytes(src, json.dumps({"results": records}).replace(marker, "\\ud800"))
    _refused(_evaluate(tiny_bert, src, src.parent / "out.json"), "lone surrogate")
    # Under --on-error skip the record is rejected and the others still run.
    skipped = _evaluate(tiny_bert, src, src.parent / "out.json", "--on-error", "skip")
    assert_contract(skipped)
    assert skipped.exit_code == 0
    out = json.loads((src.parent / "out.json").read_text(encoding="utf-8"))
    assert "lone surrogate" in out["rejected"][0]["reason"]


def test_text_over_the_one_text_limit_is_refused_up_front(tmp_path: Path, tiny_bert: Path) -> None:
    records = example_records()
    records[0]["response"] = "Word here. " * 100_000  # 1.1 M characters: spaCy's E088
    src = _input(tmp_path, records)
    outcome = _evaluate(tiny_bert, src, src.parent / "out.json", "--max-item-chars", "5000000")
    _refused(outcome, "1,100,000 characters", "1,000,000")


def test_item_over_max_item_chars_is_refused_with_the_limit_stated(
    tmp_path: Path, tiny_bert: Path
) -> None:
    records = example_records()
    records[1]["retrieved_context"][0]["text"] = "The Nile flows north.\n\n" * 9000  # 207 k
    src = _input(tmp_path, records)
    _refused(_evaluate(tiny_bert, src, src.parent / "out.json"), "200,000", "--max-item-chars")
    records[1]["retrieved_context"][0]["text"] = "The Nile flows north. " * 50
    records[1]["response"] = "x " * 600
    src = _input(tmp_path, records)
    outcome = _evaluate(tiny_bert, src, src.parent / "out.json", "--max-item-chars", "1000")
    _refused(outcome, "query_id='q2'", "the limit is 1,000")


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400"])
@pytest.mark.parametrize("place", ["extra", "chunk"])
def test_non_finite_numbers_are_refused_in_extra_fields_and_chunks(
    tmp_path: Path, tiny_bert: Path, value: str, place: str
) -> None:
    src = _input(tmp_path)
    text = src.read_text(encoding="utf-8")
    if place == "extra":
        text = text.replace('"query_id": "q1"', f'"query_id": "q1", "score": {value}', 1)
    else:
        text = text.replace('"doc_id": "nile-1"', f'"doc_id": "nile-1", "score": {value}', 1)
    src.write_text(text, encoding="utf-8")
    _refused(_evaluate(tiny_bert, src, src.parent / "out.json"), "finite number")


def test_json_nested_10000_deep_exits_2_in_every_command(tmp_path: Path, tiny_bert: Path) -> None:
    deep = "[" * 10_000 + "]" * 10_000
    src = _input(tmp_path)
    src.write_text(
        src.read_text(encoding="utf-8").replace(
            '"query_id": "q1"', f'"query_id": "q1", "x": {deep}'
        ),
        encoding="utf-8",
    )
    _refused(_evaluate(tiny_bert, src, src.parent / "out.json"), "nested too deeply")
    jsonl = src.parent / "in.jsonl"
    jsonl.write_text(f'{{"query_id": "a", "x": {deep}}}\n', encoding="utf-8")
    _refused(_evaluate(tiny_bert, jsonl, src.parent / "out.json"), "line 1", "nested too deeply")
    bad = src.parent / "deep.json"
    bad.write_text(f'{{"results": {deep}}}', encoding="utf-8")
    folder = src.parent
    for args in (
        ["report", str(bad), "--html", str(folder / "r.html")],
        ["recompute", str(bad), "-o", str(folder / "r.json")],
        ["compare", str(bad), str(bad)],
        ["merge", str(bad), "-o", str(folder / "m.json")],
    ):
        _refused(run_cli(args, folder), "nested too deeply")


def test_json_nested_65_deep_in_an_extra_field_is_refused_with_the_limit(
    tmp_path: Path, tiny_bert: Path
) -> None:
    records = example_records()
    value: Any = 1
    for _ in range(70):
        value = [value]
    records[0]["meta"] = value
    src = _input(tmp_path, records)
    _refused(_evaluate(tiny_bert, src, src.parent / "out.json"), "deeper than 64 levels", "meta")


def test_integer_over_4300_digits_exits_2(tmp_path: Path, tiny_bert: Path) -> None:
    src = _input(tmp_path)
    src.write_text(
        src.read_text(encoding="utf-8").replace(
            '"query_id": "q1"', '"query_id": "q1", "n": ' + "7" * 5000
        ),
        encoding="utf-8",
    )
    _refused(_evaluate(tiny_bert, src, src.parent / "out.json"), "4300 digits")


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("bad.csv", b'query_id,query\n1,"open\n', ("bad.csv", "ParserError")),
        ("empty.csv", b"", ("empty.csv", "EmptyDataError")),
        ("latin1.csv", b"query_id,query\n1,caf\xe9\n", ("latin1.csv", "UnicodeDecodeError")),
        ("bad.parquet", b"PAR1 not really", ("bad.parquet", "ArrowInvalid")),
        ("empty.tsv", b"query_id\tquery\n", ("empty.tsv", "no rows")),
    ],
)
def test_malformed_tables_exit_2_naming_the_file_and_row(
    tmp_path: Path, tiny_bert: Path, name: str, data: bytes, words: tuple[str, ...]
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    src = write_bytes(folder / name, data)
    _refused(_evaluate(tiny_bert, src, folder / "out.json"), *words)


def test_csv_with_wrong_columns_lists_them_and_suggests_column_map(
    tmp_path: Path, tiny_bert: Path
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    src = write_bytes(folder / "in.csv", "id,question,answer\n1,q,a\n")
    _refused(_evaluate(tiny_bert, src, folder / "o.json"), "'id', 'question'", "--column-map")


def test_empty_file_says_empty_not_malformed(tmp_path: Path, tiny_bert: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    src = write_bytes(folder / "in.json", "  \n")
    _refused(_evaluate(tiny_bert, src, folder / "o.json"), "empty")
    report = run_cli(["report", str(src), "--md", str(folder / "r.md")], folder)
    _refused(report, "empty")


def test_merge_with_a_scalar_in_results_exits_2(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    shard = folder / "s.json"
    shard.write_text('{"results": [3]}', encoding="utf-8")
    _refused(run_cli(["merge", str(shard), "-o", str(folder / "m.json")], folder), "results[0]")
    shard.write_text('{"results": [{"query_id": "a", "metrics": [1]}]}', encoding="utf-8")
    _refused(run_cli(["merge", str(shard), "-o", str(folder / "m.json")], folder), "metrics")


def test_disk_full_exits_2_naming_the_path(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ragcheck_local.formats.files as io_module

    src = _input(tmp_path)
    original = io_module.os.fsync

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(io_module.os, "fsync", full)
    outcome = _evaluate(tiny_bert, src, src.parent / "out.json")
    monkeypatch.setattr(io_module.os, "fsync", original)
    assert not outcome.traceback
    assert outcome.exit_code == 2
    assert "No space left on device" in outcome.output
    assert "out.partial.jsonl" in outcome.output  # the file it could not write is named
    assert not (src.parent / "out.json").exists()
    assert not list(src.parent.glob(".out.json.*.tmp"))
    # The checkpoint of finished blocks stays, so --resume continues once there is space.
    assert output_paths(src.parent / "out.json")["checkpoint"].exists()


@pytest.mark.parametrize(
    ("option", "words"),
    [
        (["--nli-model", "/nonexistent/model"], ("no model directory",)),
        (["--nli-model", "FILE"], ("is a file",)),
        (["--max-length", "8"], ("max_length", "16")),
        (["--max-length", "4096"], ("max_length", "limit of 128")),
        (["--lang", "zz"], ("lang", "zz")),
        (["--block-size", "0"], ("block_size",)),
    ],
)
def test_bad_model_or_option_exits_2_before_any_file_is_created(
    tmp_path: Path, tiny_bert: Path, option: list[str], words: tuple[str, ...]
) -> None:
    src = _input(tmp_path)
    option = [str(src) if o == "FILE" else o for o in option]
    outcome = _evaluate(tiny_bert, src, src.parent / "out.json", *option)
    _refused(outcome, *words)
    assert not output_paths(src.parent / "out.json")["checkpoint"].exists()


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("SRC", ("is the input file",)),
        ("", ("empty",)),
        ("newdir/", ("is a directory",)),
        ("DIR", ("is a directory",)),
        ("SRC/x.json", ("is not a directory",)),
        ("/dev/null", ("not a regular file",)),
    ],
)
def test_output_path_is_checked_before_any_work(
    tmp_path: Path, tiny_bert: Path, target: str, words: tuple[str, ...]
) -> None:
    src = _input(tmp_path)
    (src.parent / "DIR").mkdir()
    out = target.replace("SRC", str(src)).replace("DIR", str(src.parent / "DIR"))
    if target == "newdir/":
        out = str(src.parent / "newdir") + "/"
    before = src.read_bytes()
    _refused(_evaluate(tiny_bert, src, out), *words)
    assert src.read_bytes() == before
    assert Path("/dev/null").is_char_device()


def test_report_compare_recompute_merge_never_overwrite_their_input(
    tmp_path: Path, lexical_model: Path
) -> None:
    src = _input(tmp_path)
    out = src.parent / "out.json"
    assert _evaluate(lexical_model, src, out).exit_code == 0
    before = out.read_bytes()
    folder = src.parent
    for args in (
        ["report", str(out), "--html", str(out)],
        ["compare", str(out), str(out), "-o", str(out)],
        ["recompute", str(out), "-o", str(out)],
        ["merge", str(out), "-o", str(out)],
    ):
        _refused(run_cli(args, folder), "is the input file")
    assert out.read_bytes() == before


# -- silent no-ops become errors -------------------------------------------------------------


def test_every_record_rejected_under_skip_exits_2(tmp_path: Path, tiny_bert: Path) -> None:
    records = example_records()
    for r in records:
        del r["query"]
    src = _input(tmp_path, records)
    outcome = _evaluate(tiny_bert, src, src.parent / "out.json", "--on-error", "skip")
    _refused(outcome, "every record was rejected (5)", "field 'query'")


def test_recompute_of_a_file_without_checking_matrices_exits_2(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    plain = folder / "plain.json"
    plain.write_text(json.dumps({"results": example_records()}), encoding="utf-8")
    outcome = run_cli(["recompute", str(plain), "-o", str(folder / "r.json")], folder)
    _refused(outcome, "no result holds checking matrices")


def test_compare_of_runs_with_no_shared_query_exits_2(tmp_path: Path, lexical_model: Path) -> None:
    records = example_records()
    a = _input(tmp_path, records[:2], "a.json")
    b = _input(tmp_path, records[2:], "b.json")
    folder = a.parent
    assert _evaluate(lexical_model, a, folder / "ra.json").exit_code == 0
    assert _evaluate(lexical_model, b, folder / "rb.json").exit_code == 0
    outcome = run_cli(["compare", str(folder / "ra.json"), str(folder / "rb.json")], folder)
    _refused(outcome, "share no query_id")


# -- real data that used to be refused -------------------------------------------------------


def test_empty_response_is_scored_as_an_answer_without_claims(
    tmp_path: Path, lexical_model: Path
) -> None:
    records = example_records()
    records[0]["response"] = ""
    src = _input(tmp_path, records)
    outcome = _evaluate(lexical_model, src, src.parent / "out.json")
    assert_contract(outcome)
    assert outcome.exit_code == 0, outcome.output
    first = json.loads((src.parent / "out.json").read_text(encoding="utf-8"))["results"][0]
    assert first["response_claims"] == []
    assert first["gt_answer_claims"]
    # No claims: precision/faithfulness 0 under the default zero policy (RAGChecker's), and
    # every gt_answer claim is Neutral against the empty response (nothing states it).
    assert first["metrics"]["precision"] == 0
    assert first["metrics"]["faithfulness"] == 0
    assert first["metrics"]["recall"] == 0
    assert set(first["response2answer"]) == {"Neutral"}


def test_missing_gt_answer_is_fine_when_no_metric_needs_it(
    tmp_path: Path, lexical_model: Path
) -> None:
    records = example_records()
    for r in records:
        del r["gt_answer"]
    src = _input(tmp_path, records)
    ok = _evaluate(lexical_model, src, src.parent / "out.json", "--metrics", "faithfulness")
    assert_contract(ok)
    assert ok.exit_code == 0, ok.output
    _refused(_evaluate(lexical_model, src, src.parent / "o2.json"), "gt_answer", "missing")


# -- facts a run states ----------------------------------------------------------------------


def test_manifest_counts_claims_and_the_cli_tells_pairs_from_model_passes(
    tmp_path: Path, lexical_model: Path
) -> None:
    src = _input(tmp_path)
    out = src.parent / "out.json"
    outcome = _evaluate(lexical_model, src, out)
    assert outcome.exit_code == 0, outcome.output
    results = json.loads(out.read_text(encoding="utf-8"))["results"]
    manifest = json.loads(output_paths(out)["manifest"].read_text(encoding="utf-8"))
    counts = manifest["counts"]
    assert counts["response_claims"] == sum(len(r["response_claims"]) for r in results) > 0
    assert counts["gt_answer_claims"] == sum(len(r["gt_answer_claims"]) for r in results) > 0
    assert manifest["timings"]["items_per_s"] > 0
    assert manifest["timings"]["pairs_per_s"] > 0
    assert f"{counts['pairs']} claim pair(s) checked this run" in outcome.output
    assert f"{counts['nli_scored']} scored by the model" in outcome.output
    assert "items/s" in outcome.output and "pairs/s" in outcome.output


def test_checking_progress_bar_has_a_total(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragcheck_local.pipeline import _Progress

    made: list[dict[str, Any]] = []

    class FakeBar:
        def __init__(self, **kwargs: Any) -> None:
            made.append(kwargs)

        def update(self, n: int) -> None: ...

        def set_postfix_str(self, text: str, refresh: bool = True) -> None:
            made[-1]["postfix"] = text

        def close(self) -> None: ...

    monkeypatch.setattr("tqdm.tqdm", FakeBar)
    bars = _Progress(enabled=True, n_items=7)
    bars.update("claims", 2)
    bars.update("pairs", 40)
    bars.update("checked", 2)
    assert [b["total"] for b in made] == [7, 7]
    assert made[1]["desc"] == "checking" and made[1]["postfix"] == "40 pairs"


def test_skip_warns_once_per_rejected_record(
    tmp_path: Path, lexical_model: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from ragcheck_local.config import build_config
    from ragcheck_local.pipeline import evaluate

    records = example_records()
    records[1]["response"] = 5
    src = _input(tmp_path, records)
    config = build_config(
        "default",
        {"nli_model": str(lexical_model), "device": "cpu", "progress": False, "on_error": "skip"},
    )
    with caplog.at_level(logging.WARNING, logger="ragcheck_local"):
        evaluate(src, src.parent / "out.json", config)
    skipped = [r for r in caplog.records if r.getMessage().startswith("skipping")]
    assert len(skipped) == 1, [r.getMessage() for r in caplog.records]


def test_every_visible_evaluate_option_has_help_text() -> None:
    from ragcheck_local.cli import main

    command = main.commands["evaluate"]
    missing = [
        p.name
        for p in command.params
        if getattr(p, "help", "x") is None
        and not getattr(p, "hidden", False)
        and p.param_type_name == "option"
    ]
    assert missing == []


def test_report_says_every_query_is_at_the_best_value_not_no_values() -> None:
    from ragcheck_local.report import build_markdown

    results = []
    for i in range(2):
        metrics = {"f1": 1.0, "hallucination": 0.0, "claim_recall": 1.0}
        results.append({"query_id": f"q{i}", "query": "q", "metrics": metrics})
    text = build_markdown({"results": results, "metrics": {}})
    assert "Every query is at the best value" in text
    assert "No values." not in text
    none = build_markdown({"results": [{"query_id": "a", "query": "q", "metrics": {}}]})
    assert "No values." in none


# -- the model's languages -------------------------------------------------------------------


def _model_copy(src: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(src, dest)
    return dest


def test_model_languages_come_from_ragcheck_json_then_config_json(
    tmp_path: Path, tiny_bert: Path
) -> None:
    from ragcheck_local.judge.load import model_languages

    model = _model_copy(tiny_bert, tmp_path / "m")
    assert model_languages(model) is None  # nothing declared: unknown, never a warning
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    (model / "config.json").write_text(json.dumps({**config, "languages": ["en", "de"]}))
    assert model_languages(model) == ("en", "de")
    (model / "ragcheck.json").write_text(json.dumps({"languages": ["EN"]}), encoding="utf-8")
    assert model_languages(model) == ("en",)


def test_japanese_text_with_an_english_only_model_warns(
    tmp_path: Path, lexical_model: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from ragcheck_local.config import build_config
    from ragcheck_local.pipeline import evaluate

    model = _model_copy(lexical_model, tmp_path / "m")
    records = example_records()[:2]
    records[1].update(
        response="返品は20日以内に可能です。",
        gt_answer="返品は10日以内です。",
        retrieved_context=[{"doc_id": "d", "text": "返品は購入後10日以内に受け付けます。"}],
    )
    src = _input(tmp_path, records)
    base = {"device": "cpu", "progress": False}
    with caplog.at_level(logging.WARNING, logger="ragcheck_local"):
        evaluate(
            src, tmp_path / "a.json", build_config("default", {**base, "nli_model": str(model)})
        )
    assert not [r for r in caplog.records if "declares languages" in r.getMessage()]
    (model / "ragcheck.json").write_text(json.dumps({"languages": ["en"]}), encoding="utf-8")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ragcheck_local"):
        evaluate(
            src, tmp_path / "b.json", build_config("default", {**base, "nli_model": str(model)})
        )
    notes = [r.getMessage() for r in caplog.records if "declares languages" in r.getMessage()]
    assert len(notes) == 1
    assert "1 item(s) in 'ja'" in notes[0] and "query_id 'q2'" in notes[0]


def test_setup_sh_does_nothing_when_up_to_date() -> None:
    import os
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    venv = Path(sys.prefix)
    stamp = venv / ".ragcheck_setup_stamp"
    if not stamp.is_file():
        pytest.skip("this environment was not made by scripts/setup.sh")
    env = {**os.environ, "RAGCHECK_VENV": str(venv)}
    env.setdefault("RAGCHECK_EXTRAS", "ja,onnx,ray,dev")
    setup = ["bash", str(root / "scripts" / "setup.sh")]
    first = subprocess.run(setup, env=env, capture_output=True, timeout=900)
    assert first.returncode == 0, first.stderr[-2000:]  # brings it up to date if needed
    before = stamp.stat().st_mtime_ns
    started = time.monotonic()
    second = subprocess.run(setup, env=env, capture_output=True, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    assert stamp.stat().st_mtime_ns == before  # nothing was reinstalled
    assert time.monotonic() - started < 60
    assert second.stdout == b""
