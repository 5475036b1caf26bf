"""``dev compare-nli``: paired bootstrap intervals of B minus A on the same pairs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ragcheck_local.cli import main
from ragcheck_local.dev.paired import compare, format_paired, read_predictions
from ragcheck_local.errors import InputError


def _write(path: Path, sets: dict[str, tuple[str, list[int], list[int]]]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for name, (metric, gold, pred) in sets.items():
            for i, (g, p) in enumerate(zip(gold, pred, strict=True)):
                fh.write(json.dumps({"set": name, "metric": metric, "i": i, "gold": g, "pred": p}))
                fh.write("\n")
    return path


def _sets(rng: np.random.Generator, flip: float) -> dict[str, tuple[str, list[int], list[int]]]:
    """Gold labels fixed by a seed; predictions = gold with a share ``flip`` changed."""
    gold_rng = np.random.default_rng(7)
    out = {}
    for name, metric, k, n in (
        ("SummaC a", "balanced", 2, 120),
        ("SummaC b", "balanced", 2, 120),
        ("Factcheck-GPT dev (report half)", "supported-vs-rest", 3, 200),
        ("SNLI test", "accuracy", 3, 300),
    ):
        gold = gold_rng.integers(0, k, n)
        pred = np.where(rng.random(n) < flip, (gold + 1) % k, gold)
        out[name] = (metric, gold.tolist(), pred.tolist())
    return out


def test_a_much_better_model_is_called_better_and_noise_is_not(tmp_path: Path) -> None:
    weak = read_predictions(_write(tmp_path / "a.jsonl", _sets(np.random.default_rng(1), 0.4)))
    strong = read_predictions(_write(tmp_path / "b.jsonl", _sets(np.random.default_rng(2), 0.05)))
    alike = read_predictions(_write(tmp_path / "c.jsonl", _sets(np.random.default_rng(3), 0.4)))
    rows = compare(weak, strong, n_boot=300)
    assert [r.name for r in rows] == [*weak, "SummaC mean"]
    for r in rows:
        assert r.diff is not None and r.low is not None and r.high is not None
        assert r.low <= r.diff <= r.high
        assert r.low > 0.15, r  # 60% vs 95% correct: far outside the noise
    mean = rows[-1]
    assert mean.a == pytest.approx(np.mean([rows[0].a, rows[1].a]))
    assert mean.n == 240
    same_quality = compare(weak, alike, n_boot=300)
    assert all(r.low < 0 < r.high for r in same_quality)  # two draws of one error rate
    table = format_paired(rows, "a", "b")
    assert table.count("B better") == len(rows)
    assert "A better" in format_paired(compare(strong, weak, n_boot=100), "b", "a")


def test_other_pairs_are_refused(tmp_path: Path) -> None:
    a = read_predictions(_write(tmp_path / "a.jsonl", {"S": ("accuracy", [0, 1, 2], [0, 1, 2])}))
    b = read_predictions(_write(tmp_path / "b.jsonl", {"S": ("accuracy", [0, 1, 1], [0, 1, 2])}))
    with pytest.raises(InputError, match="other pairs"):
        compare(a, b)


def test_bad_lines_name_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"set": "S", "metric": "accuracy", "gold": 1, "pred": 1}\n{"set": "S"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2"):
        read_predictions(bad)
    bad.write_text('{"set": "S", "metric": "f1", "gold": 1, "pred": 1}\n')
    with pytest.raises(InputError, match="unknown metric 'f1'"):
        read_predictions(bad)
    result = CliRunner().invoke(main, ["dev", "compare-nli", str(bad), str(bad)])
    assert result.exit_code == 2 and "unknown metric" in result.output
