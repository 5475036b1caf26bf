"""``dev ledger``: the training ledger rendered as the model card's table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragcheck_local.cli import main
from ragcheck_local.dev.ledger import LEDGER_BEGIN, LEDGER_END, ledger_rows, render_into
from ragcheck_local.errors import InputError

DEV = {
    "snli_val": {"acc": 0.8, "bal_e": 0.9, "n": 10},
    "grounding_dev": {"acc": 0.85, "bal_e": 0.9, "n": 10},
    "factcheck_traindev": {"acc": 0.7, "bal_e": 0.725, "n": 10},
    "wice_dev": {"acc": 0.7, "bal_e": 0.6, "n": 10},
}


def _segment(n: int, init: str | None, out: str | None, kept: bool, score: float) -> dict:
    return {
        "segment": n, "init_sha256": init, "out_sha256": out, "kept": kept, "seed": 20 + n,
        "lr": 2e-5, "steps_done": 500, "best_step": 400, "pairs_seen": 8000,
        "best_dev_score": score, "dev": DEV, "snli_test_acc": 0.803, "train_seconds": 900.0,
    }  # fmt: skip


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.jsonl"
    rows = [
        {**_segment(1, "c32f2193fc09656f", "aaa", True, 0.75), "init": "models/nli"},
        _segment(2, "aaa", None, False, 0.74),
        _segment(3, "aaa", "bbb", True, 0.76),
        _segment(4, "zzz", None, False, 0.70),  # did not start from the committed checkpoint
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_rows_say_where_each_segment_started(ledger: Path) -> None:
    rows = ledger_rows(ledger)
    assert len(rows) == 4
    # The first segment names what it started from: --init and the weights' hash.
    assert rows[0].startswith(
        "| 1 | `models/nli` (sha256 c32f2193fc09) | 500 (8,000), best 400 | 2e-05, 21 |"
    )
    assert "0.7500 (80.0 / 85.0 / 72.5 / 60.0) | 80.3% | 15 min | yes |" in rows[0]
    assert rows[1].startswith("| 2 | segment 1's checkpoint") and rows[1].endswith("| no |")
    assert rows[2].startswith("| 3 | segment 1's checkpoint")  # 2 was not kept
    assert "segment 3's checkpoint (**not** the committed checkpoint" in rows[3]


def test_render_rewrites_only_the_block(ledger: Path, tmp_path: Path) -> None:
    card = tmp_path / "CARD.md"
    card.write_text(f"# Card\n\nbefore\n{LEDGER_BEGIN}\n| old |\n{LEDGER_END}\nafter\n")
    render_into(card, ledger)
    text = card.read_text()
    assert "| old |" not in text
    assert text.startswith("# Card\n\nbefore\n") and text.endswith(f"{LEDGER_END}\nafter\n")
    assert text.count("| yes |") == 2
    result = CliRunner().invoke(main, ["dev", "ledger", str(ledger), "--card", str(card)])
    assert result.exit_code == 0, result.output
    assert card.read_text() == text  # rendering twice changes nothing
    card.write_text("# no markers\n")
    with pytest.raises(InputError, match="no '<!-- ledger rows"):
        render_into(card, ledger)


def test_a_round_with_its_own_dev_sets_renders_them_between_its_own_markers(
    tmp_path: Path,
) -> None:
    from ragcheck_local.dev.ledger import ledger_markers

    path = tmp_path / "ledger_round3.jsonl"
    record = _segment(1, "v2", "ccc", True, 0.8)
    record["dev"] = {
        "snli_val": {"acc": 0.81, "n": 5},
        "fever_dev": {"acc": 0.7, "bal_e": 0.9, "n": 5},
    }
    record["dev_metrics"] = {"snli_val": "acc", "fever_dev": "bal_e"}
    path.write_text(json.dumps(record) + "\n")
    [row] = ledger_rows(path)
    assert "0.8000 (81.0 / 90.0)" in row
    first, last = ledger_markers(path)
    assert "ledger_round3.jsonl" in first and first != LEDGER_BEGIN and last != LEDGER_END
    assert ledger_markers(tmp_path / "ledger.jsonl") == (LEDGER_BEGIN, LEDGER_END)
    card = tmp_path / "card.md"
    card.write_text(f"a\n{LEDGER_BEGIN}\nold\n{LEDGER_END}\n{first}\n{last}\nz\n")
    text = render_into(card, path)
    assert f"{LEDGER_BEGIN}\nold\n{LEDGER_END}" in text  # round 2's table untouched
    assert f"{first}\n{row}\n{last}" in text
