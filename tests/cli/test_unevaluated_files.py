"""report, compare and recompute refuse a file that holds no evaluation (issue 28, case 3): the
input file itself exits 2 with a hint to run ``evaluate`` first, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_contract import EXAMPLE, assert_contract, run_cli


def _evaluated(path: Path) -> Path:
    """A minimal evaluated output (a per-item metric, an aggregated one): no model needed."""
    record = {**json.loads(EXAMPLE.read_text(encoding="utf-8"))["results"][0]}
    record["metrics"] = {"precision": 0.5}
    data = {"results": [record], "metrics": {"overall": {"precision": 50.0}}}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["report", "{src}", "--md", "{out}/r.md"],
        ["report", "{src}", "--html", "{out}/r.html"],
        ["compare", "{src}", "{src}"],
        ["compare", "{good}", "{src}", "-o", "{out}/c.md"],
        ["recompute", "{src}", "-o", "{out}/re.json"],
    ],
)
@pytest.mark.parametrize("kind", ["input file", "empty results"])
def test_a_file_without_metrics_or_matrices_is_refused_with_a_hint(
    tmp_path: Path, command: list[str], kind: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    src = tmp_path / "never_evaluated.json"
    if kind == "input file":
        src.write_bytes(EXAMPLE.read_bytes())
    else:
        src.write_text('{"results": []}', encoding="utf-8")
    good = _evaluated(tmp_path / "good.json")
    args = [a.format(src=src, out=out, good=good) for a in command]
    outcome = run_cli(args, out)
    assert_contract(outcome, " ".join(command))
    assert outcome.exit_code == 2, outcome.output
    assert "never_evaluated.json" in outcome.output
    assert "run `ragcheck-local evaluate" in outcome.output
    assert not outcome.created


def test_an_evaluated_file_is_still_read(tmp_path: Path) -> None:
    good = _evaluated(tmp_path / "good.json")
    outcome = run_cli(["report", str(good), "--md", str(tmp_path / "r.md")], tmp_path)
    assert outcome.exit_code == 0, outcome.output
