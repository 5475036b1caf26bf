"""ragchecker-cli's command lines on `ragcheck-local evaluate`: every 0.1.9 flag accepted, the
LLM ones named in one note; `--format ragas` reads RAGAS files of either column scheme."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from helpers import ITEMS, write_input

from ragcheck_local.cli import main
from ragcheck_local.metrics import ALL_METRICS
from ragcheck_local.ragchecker import LLM_ARGUMENTS

# ragchecker-cli 0.1.9's flags for its LLM extractor and checker, with values of their types.
LLM_FLAGS = [
    "--extractor_name=bedrock/meta.llama3-70b-instruct-v1:0",
    "--extractor_api_base=http://localhost:8000/v1",
    "--extractor_max_new_tokens=1000",
    "--checker_name=openai/gpt-4o",
    "--checker_api_base=http://localhost:8001/v1",
    "--batch_size_extractor=64",
    "--openai_api_key=sk-SECRET",
    "--disable_joint_check",
    "--joint_check_num=5",
]


def test_every_ragchecker_cli_flag_is_accepted(tmp_path: Path, lexical_model: Path) -> None:
    src = write_input(tmp_path)
    out = tmp_path / "checking_outputs.json"
    # The README's command line of ragchecker-cli, with every other 0.1.9 flag added.
    args = [
        "evaluate",
        f"--input_path={src}",
        f"--output_path={out}",
        *LLM_FLAGS,
        "--batch_size_checker=64",
        "--metrics",
        "all_metrics",
        "--nli-model",
        str(lexical_model),
        "--device",
        "cpu",
        "--quiet",
    ]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    notes = [line for line in result.output.splitlines() if line.startswith("note:")]
    assert len(notes) == 1, result.output
    for flag in LLM_FLAGS:
        assert flag[2:].split("=")[0] in notes[0]
    assert "sk-SECRET" not in result.output and "gpt-4o" not in result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    groups = ["overall_metrics", "retriever_metrics", "generator_metrics", "extra_metrics"]
    assert list(data["metrics"]) == groups
    assert {m for g in groups[:3] for m in data["metrics"][g]} == set(ALL_METRICS)
    # The older ragchecker-cli's --joint_check too; no LLM flag, no note.
    again = CliRunner().invoke(main, [*args[:3], "--joint_check", *args[-5:]])
    assert again.exit_code == 0 and "joint_check" in again.output
    plain = CliRunner().invoke(main, [*args[:3], *args[-5:]])
    assert plain.exit_code == 0 and "note:" not in plain.output


def test_the_cli_flags_are_ragcheckers_llm_arguments() -> None:
    from ragcheck_local.cli import _LLM_FLAGS

    assert set(_LLM_FLAGS) == {a for a in LLM_ARGUMENTS if not a.startswith("sagemaker_")}
    assert {f[2:].split("=")[0] for f in LLM_FLAGS} | {"joint_check"} == set(_LLM_FLAGS)


def test_format_ragas_reads_both_column_schemes(tmp_path: Path, lexical_model: Path) -> None:
    v02 = [
        {"user_input": i["query"], "response": i["response"], "reference": i["gt_answer"],
         "retrieved_contexts": [c["text"] for c in i.get("retrieved_context") or []]}
        for i in ITEMS[:2]
    ]  # fmt: skip
    jsonl = tmp_path / "ragas.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in v02), encoding="utf-8")
    # v0.1 columns in a CSV, the contexts list as JSON text.
    csv = tmp_path / "ragas.csv"
    import csv as csv_module

    with open(csv, "w", newline="", encoding="utf-8") as fh:
        writer = csv_module.writer(fh)
        writer.writerow(["question", "answer", "contexts", "ground_truth"])
        for row in v02:
            contexts = json.dumps(row["retrieved_contexts"])
            writer.writerow([row["user_input"], row["response"], contexts, row["reference"]])
    outputs = []
    for path in (jsonl, csv):
        out = tmp_path / f"{path.stem}_{path.suffix[1:]}.json"
        args = ["evaluate", "-i", str(path), "-o", str(out), "--format", "ragas"]
        args += ["--nli-model", str(lexical_model), "--device", "cpu", "-q"]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        outputs.append(json.loads(out.read_text(encoding="utf-8")))
    assert outputs[0]["metrics"] == outputs[1]["metrics"]
    assert [r["query_id"] for r in outputs[0]["results"]] == ["0", "1"]
    assert outputs[0]["results"][0]["query"] == ITEMS[0]["query"]
    # A RAGChecker file read as RAGAS rows: exit 2, naming the record and what it lacks.
    bad = CliRunner().invoke(
        main, ["evaluate", "-i", str(write_input(tmp_path)), "-o", str(tmp_path / "x.json"),
               "--format", "ragas", "-q"],
    )  # fmt: skip
    assert bad.exit_code == 2 and "no RAGAS column" in bad.output and "results[0]" in bad.output
