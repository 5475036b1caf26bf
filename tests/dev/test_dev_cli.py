"""``ragcheck-local dev``: the command group, every command's help, and the memory benchmark."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragcheck_local.cli import main
from ragcheck_local.dev import bench_memory

COMMANDS = (
    "make-data",
    "train",
    "calibrate",
    "eval-nli",
    "meta-eval",
    "bench",
    "bench-memory",
    "bench-judges",
    "average",
    "compare-nli",
    "compare-meta",
    "ledger",
)


def test_dev_help_lists_every_command() -> None:
    result = CliRunner().invoke(main, ["dev", "--help"])
    assert result.exit_code == 0, result.output
    for name in COMMANDS:
        assert f"  {name} " in result.output
    assert "dev" in CliRunner().invoke(main, ["--help"]).output


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help(name: str) -> None:
    result = CliRunner().invoke(main, ["dev", name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output and "--help" in result.output


def test_progress_logging_is_undone_after_a_command(tmp_path: Path) -> None:
    log = logging.getLogger("ragcheck_local.dev")
    before = (list(log.handlers), log.level, log.propagate)
    CliRunner().invoke(main, ["dev", "make-data", "--out", str(tmp_path), "--python-docs", "x"])
    assert (list(log.handlers), log.level, log.propagate) == before


def test_bench_memory_input_is_deterministic_and_the_table_reads_growth(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    bench_memory.write_input(a, 5)
    bench_memory.write_input(b, 5)
    assert a.read_bytes() == b.read_bytes()
    rows = [json.loads(line) for line in a.read_text(encoding="utf-8").splitlines()]
    assert [r["query_id"] for r in rows] == [f"q{i}" for i in range(5)]
    table = bench_memory.format_table(
        [
            {"items": 10, "pairs": 40, "seconds": 1.0, "rss_before_mb": 100.0,
             "peak_rss_mb": 200.0, "output_mb": 0.1},
            {"items": 110, "pairs": 440, "seconds": 5.0, "rss_before_mb": 100.0,
             "peak_rss_mb": 201.0, "output_mb": 1.1},
        ]
    )  # fmt: skip
    assert "peak RSS grew 1.0 MB for 100 more items: 10486 bytes per item" in table


def test_bench_memory_sizes_follow_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []

    def fake(config):
        seen.append(config.sizes)
        return []

    monkeypatch.setattr(bench_memory, "bench_memory", fake)
    for args, sizes in ((["--sizes", "5", "7", "9"], (5, 7, 9)), ([], (1000, 20000))):
        result = CliRunner().invoke(main, ["dev", "bench-memory", *args])
        assert result.exit_code == 0, result.output
        assert seen[-1] == sizes
    result = CliRunner().invoke(main, ["dev", "bench-memory", "5"])
    assert result.exit_code == 2 and "unexpected argument" in result.output


@pytest.mark.slow
def test_bench_memory_runs_one_subprocess_per_size(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    result = CliRunner().invoke(main, ["dev", "bench-memory", "--sizes", "3", "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text(encoding="utf-8"))
    assert [r["items"] for r in rows] == [3] and rows[0]["peak_rss_mb"] > 0


def test_bench_judges_runs_every_kind_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "judges.json"
    result = CliRunner().invoke(
        main,
        ["dev", "bench-judges", "--pairs", "12", "--width", "32", "--layers", "1",
         "--max-length", "192", "--device", "cpu", "--json", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text(encoding="utf-8"))
    # CPU: float32 rows only, one per kind, each through the engine's windows.
    assert [r["kind"] for r in rows] == ["nli", "classifier", "seq2seq", "t5-token", "causal-lm"]
    assert all(r["dtype"] == "float32" and r["pairs"] == 12 for r in rows)
    assert all(r["windows"] >= 12 and r["pairs_per_s"] > 0 for r in rows)
    assert "| causal-lm (bespoke-minicheck) | float32 | cpu | 12 |" in result.output
    bad = CliRunner().invoke(main, ["dev", "bench-judges", "--kinds", "oracle"])
    assert bad.exit_code == 2 and "unknown kind 'oracle'" in bad.output
