from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import ITEMS, write_input

from ragcheck_local.cli import main


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_evaluate_end_to_end(tmp_path: Path, lexical_model: Path) -> None:
    src = write_input(tmp_path)
    out = tmp_path / "out.json"
    result = invoke(
        "evaluate",
        "--input",
        str(src),
        "--output",
        str(out),
        "--nli-model",
        str(lexical_model),
        "--device",
        "cpu",
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    assert "faithfulness" in result.output and "precision" in result.output
    data = json.loads(out.read_text())
    assert len(data["results"]) == 3
    assert data["metrics"]["generator_metrics"]["faithfulness"] is not None


def test_ragchecker_flag_names_keep_working(tmp_path: Path, lexical_model: Path) -> None:
    src = write_input(tmp_path)
    out = tmp_path / "out.json"
    result = invoke(
        "evaluate",
        f"--input_path={src}",
        f"--output_path={out}",
        "--nli-model",
        str(lexical_model),
        "--device",
        "cpu",
        "--quiet",
        "--extractor_name=bedrock/meta.llama3-70b-instruct-v1:0",
        "--checker_name=bedrock/meta.llama3-70b-instruct-v1:0",
        "--batch_size_extractor=64",
        "--batch_size_checker=64",
        "--metrics",
        "overall_metrics",
        "retriever_metrics",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert set(data["metrics"]["overall_metrics"]) == {"precision", "recall", "f1"}
    assert set(data["metrics"]["retriever_metrics"]) == {"claim_recall", "context_precision"}
    assert data["metrics"]["generator_metrics"] == {}


def test_bad_input_exits_2_and_names_the_record(tmp_path: Path) -> None:
    src = write_input(tmp_path, [ITEMS[0], {**ITEMS[1], "retrieved_context": {"x": 1}}])
    result = CliRunner().invoke(
        main, ["evaluate", "-i", str(src), "-o", str(tmp_path / "o.json"), "--quiet"]
    )
    assert result.exit_code == 2
    assert "query_id='b'" in result.output and "retrieved_context" in result.output
    assert not (tmp_path / "o.json").exists()


def test_unknown_metric_and_bad_usage_exit_2(tmp_path: Path) -> None:
    src = write_input(tmp_path)
    result = CliRunner().invoke(
        main, ["evaluate", "-i", str(src), "-o", str(tmp_path / "o"), "--metrics", "accuracy"]
    )
    assert result.exit_code == 2 and "accuracy" in result.output
    assert CliRunner().invoke(main, ["evaluate", "-i", str(src)]).exit_code == 2


def test_missing_model_is_a_clear_error(tmp_path: Path) -> None:
    src = write_input(tmp_path)
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            "-i",
            str(src),
            "-o",
            str(tmp_path / "o"),
            "--nli-model",
            str(tmp_path / "absent"),
            "--quiet",
        ],
    )
    assert result.exit_code == 2
    assert "absent" in result.output


def test_recompute_and_merge_commands(tmp_path: Path, lexical_model: Path) -> None:
    src = write_input(tmp_path)
    out = tmp_path / "out.json"
    invoke(
        "evaluate",
        "-i",
        str(src),
        "-o",
        str(out),
        "--nli-model",
        str(lexical_model),
        "--device",
        "cpu",
        "--quiet",
    )
    result = invoke("recompute", str(out), "--output", str(tmp_path / "re.json"))
    assert result.exit_code == 0
    assert (
        json.loads((tmp_path / "re.json").read_text())["metrics"]
        == json.loads(out.read_text())["metrics"]
    )
    result = invoke("merge", str(out), "--output", str(tmp_path / "m.json"))
    assert result.exit_code == 0 and "3 item(s)" in result.output


def test_whole_evaluation_runs_with_the_network_blocked(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args, **kwargs):
        raise OSError("network access attempted during an offline run")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    src = write_input(tmp_path)
    out = tmp_path / "out.json"
    result = invoke(
        "evaluate",
        "-i",
        str(src),
        "-o",
        str(out),
        "--nli-model",
        str(tiny_bert),
        "--device",
        "cpu",
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    assert len(json.loads(out.read_text())["results"]) == 3


def test_calibration_flag_picks_a_head_and_a_missing_one_exits_2_before_any_file(
    tmp_path: Path, lexical_model: Path
) -> None:
    import shutil

    model = tmp_path / "model"
    shutil.copytree(lexical_model, model)
    # A head beside the model that calls everything Neutral.
    head = {"kind": "logistic", "features": ["bias"], "labels": ["Entailment", "Neutral",
            "Contradiction"], "weights": [[0.0], [1.0], [0.0]], "fitted_on": "test"}  # fmt: skip
    (model / "all-neutral.json").write_text(json.dumps({"calibration": head}))
    src = write_input(tmp_path)
    common = ["evaluate", "--input", str(src), "--nli-model", str(model), "--device", "cpu", "-q"]
    out = tmp_path / "out.json"
    result = invoke(*common, "--output", str(out), "--calibration", "all-neutral")
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert all(v == "Neutral" for r in data["results"] for v in r["answer2response"] or [])
    manifest = json.loads((tmp_path / "out.manifest.json").read_text())
    assert "all-neutral" in json.dumps(manifest)
    missing = tmp_path / "missing.json"
    result = CliRunner().invoke(main, [*common, "--output", str(missing), "--calibration", "nope"])
    assert result.exit_code == 2 and "nope" in result.output and "all-neutral" in result.output
    assert not missing.exists()


def test_evaluate_help_says_where_the_packaged_examples_are() -> None:
    from ragcheck_local.resources import example_path

    text = invoke("evaluate", "--help").output
    assert str(example_path()) in text and example_path().is_file()
    assert str(example_path("example_input_ja.json")) in text
    assert "evaluate --help" in invoke("--help").output
