"""Inputs and a CLI runner shared by test files in different folders (a test file never imports
another test file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ragcheck_local.config import build_config
from ragcheck_local.dev.bench_memory import write_input as write_bench_jsonl
from ragcheck_local.pipeline import evaluate

ROOT = Path(__file__).resolve().parents[1]

# Three small items the lexical stand-in model judges predictably (pipeline and CLI tests).
ITEMS = [
    {
        "query_id": "a",
        "query": "what is the nile?",
        "gt_answer": "the nile is the longest river. the nile flows into the sea.",
        "response": "the nile is the longest river. the nile is in paris. the nile is not blue.",
        "retrieved_context": [
            {"doc_id": "d1", "text": "the nile is the longest river. the nile is blue."},
            {"doc_id": "d2", "text": "the nile flows into the sea."},
        ],
    },
    {
        "query_id": "b",
        "query": "who is the man?",
        "gt_answer": "",
        "response": "the man is playing a guitar. the man is famous.",
        "retrieved_context": [{"doc_id": "d3", "text": "the man is playing a guitar on stage."}],
    },
    {
        "query_id": "c",
        "query": "what is the flag?",
        "gt_answer": "the flag is red and blue.",
        "response": "the flag is red and blue.",
    },
]


NILE_GT = "the nile is the longest river. the nile flows into the sea."


def human_row(iid: int, r1: str, r2: str, label: int, gt: str = NILE_GT) -> dict:
    """One annotator's judgment of two responses, one label for all three aspects (the shape of
    RAGChecker's human_labeled_data.json; meta-eval tests)."""
    return {
        "instance_id": iid,
        "query": "what about the nile?",
        "gt_answer": gt,
        "model1": {"model_name": "a", "response": r1, "critiques": "x"},
        "model2": {"model_name": "b", "response": r2, "critiques": "y"},
        "correctness_label": label,
        "completeness_label": label,
        "overall_label": label,
    }


def write_input(tmp_path: Path, items=ITEMS) -> Path:
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"results": items}), encoding="utf-8")
    return path


def evaluate_items(tmp_path: Path, model: Path, items=ITEMS, **overrides):
    """Evaluate ``items`` in-process with ``model`` on the CPU: (summary, the output JSON)."""
    cfg = build_config(
        "default", {"nli_model": str(model), "device": "cpu", "progress": False, **overrides}
    )
    out = tmp_path / "out.json"
    summary = evaluate(write_input(tmp_path, items), out, cfg)
    return summary, json.loads(out.read_text(encoding="utf-8"))


# Kill/resume and fault tests: a generated input long enough to kill a run in the middle.
BENCH_ITEMS = 400


def write_bench_input(path: Path) -> None:
    """The memory benchmark's generated JSONL (short items, one chunk each)."""
    write_bench_jsonl(path, BENCH_ITEMS)


def evaluate_process(
    src: Path, out: Path, model: Path, preset: Path, *extra: str
) -> subprocess.Popen:
    """``ragcheck-local evaluate`` in a child process (so a test can kill it)."""
    cmd = [
        sys.executable,
        "-c",
        "from ragcheck_local.cli import main; main()",
        "evaluate",
        "-i",
        str(src),
        "-o",
        str(out),
        "--nli-model",
        str(model),
        "--config",
        str(preset),
        "--quiet",
        *extra,
    ]
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def count_lines(path: Path) -> int:
    """Newlines in ``path`` (0 while it does not exist)."""
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0
