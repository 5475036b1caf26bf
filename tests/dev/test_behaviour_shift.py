"""``dev behaviour`` (the hand-written suite) and ``dev meta-eval --choose-shift`` (choosing
the head's entailment threshold by agreement with people)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import NILE_GT
from helpers import human_row as row

from ragcheck_local.cli import main
from ragcheck_local.dev import behaviour as bh
from ragcheck_local.dev import meta_eval as me
from ragcheck_local.errors import InputError
from ragcheck_local.judge.calibration import TEXT_FEATURES, Calibration, load_calibration
from ragcheck_local.records import CONTRADICTION, ENTAILMENT, NEUTRAL

GOOD = NILE_GT
HALF = "the nile is the longest river. the dog is blue."
BAD = "the dog is blue. the cat is famous."


V2_PASSED = 30
"""What the bundled model passes (of 35); a new bundled model must not pass fewer."""


def test_suite_covers_every_behaviour_in_each_direction() -> None:
    names = [c.name for c in bh.CASES]
    assert len(names) == len(set(names))
    three_way = {c.behaviour for c in bh.CASES if c.place == "answer"}
    for behaviour in three_way:
        places = {c.place for c in bh.CASES if c.behaviour == behaviour}
        assert {"answer", "response", "chunk"} <= places, behaviour
    assert all(c.expect in c.accept for c in bh.CASES)
    assert {"repeated sentence", "long irrelevant chunk", "facts from two chunks"} <= {
        c.behaviour for c in bh.CASES
    }


class _Fixed:
    """A stand-in checker: one verdict for every pair."""

    def __init__(self, verdict: str) -> None:
        self.verdict = verdict

    def check(self, pairs):
        from types import SimpleNamespace

        return [SimpleNamespace(verdict=self.verdict, support=0.5) for _ in pairs]


def test_a_judge_that_always_entails_fails_every_not_entailed_case() -> None:
    outcomes = bh.run_cases(_Fixed(ENTAILMENT))
    s = bh.summary(outcomes)
    assert s["passed"] == sum(ENTAILMENT in c.accept for c in bh.CASES)
    assert "negation added/response" in s["failed"]
    neutral = bh.summary(bh.run_cases(_Fixed(NEUTRAL)))
    assert neutral["exact"] == sum(c.expect == NEUTRAL for c in bh.CASES)
    assert bh.summary(bh.run_cases(_Fixed(CONTRADICTION)))["by_behaviour"]["number swapped"] == {
        "passed": 3,
        "exact": 3,
        "cases": 3,
    }


def test_bundled_model_passes_at_least_its_pinned_count(tmp_path: Path) -> None:
    out = tmp_path / "behaviour.json"
    run = CliRunner().invoke(main, ["dev", "behaviour", "--device", "cpu", "--json", str(out)])
    assert run.exit_code == 0, run.output
    assert "| negation added/response |" in run.output
    result = json.loads(out.read_text())
    assert result["summary"]["cases"] == len(bh.CASES)
    assert result["summary"]["passed"] >= V2_PASSED, result["summary"]["failed"]


def _with_head(tmp_path: Path, model: Path) -> Path:
    copy = tmp_path / "model"
    shutil.copytree(model, copy)
    # Entailment scores follow the model's own log P(E); neutral a constant.
    weights = [[0.0] * len(TEXT_FEATURES) for _ in range(3)]
    weights[0][TEXT_FEATURES.index("log_p_entailment")] = 1.0
    weights[1][TEXT_FEATURES.index("log_p_neutral")] = 1.0
    weights[2][TEXT_FEATURES.index("log_p_contradiction")] = 1.0
    head = Calibration(tuple(tuple(r) for r in weights), TEXT_FEATURES, fitted_on="test")
    meta_path = copy / "ragcheck.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    meta["calibration"] = head.to_dict()
    meta_path.write_text(json.dumps(meta))
    return copy


def test_shifted_head_moves_only_the_entailment_bias() -> None:
    head = Calibration(((0.0,) * 7, (1.0,) * 7, (2.0,) * 7), TEXT_FEATURES)
    shifted = me.shifted_head(head, 0.5)
    col = TEXT_FEATURES.index("bias")
    assert shifted.weights[0][col] == 0.5 and shifted.weights[1:] == head.weights[1:]
    no_bias = Calibration(((0.0,),) * 3, ("log_p_entailment",))
    with pytest.raises(InputError, match="bias"):
        me.shifted_head(no_bias, 1.0)


def test_choose_shift_picks_the_rule_people_agree_with(tmp_path: Path, lexical_model: Path) -> None:
    model = _with_head(tmp_path, lexical_model)
    rows = [
        row(0, BAD, GOOD, 2), row(0, BAD, GOOD, 1), row(1, GOOD, BAD, -2), row(1, GOOD, BAD, -1),
        row(2, HALF, GOOD, 1), row(2, HALF, GOOD, 1), row(3, GOOD, HALF, -1), row(3, GOOD, HALF, 0),
    ]  # fmt: skip
    data = tmp_path / "human_dev.json"
    data.write_text(json.dumps(rows))
    run = CliRunner().invoke(
        main,
        ["dev", "meta-eval", str(data), "--model", str(model), "--set", "nli.device=cpu",
         "--choose-shift=-50,0", "--write-shift"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    # -50: nothing is ever entailed, the metrics are constant, no correlation: never chosen.
    assert "| -50.00 | n/a |" in run.output
    assert "| +0.00 |" in run.output and "chosen" in run.output
    head = load_calibration(model)
    assert head is not None and "entailment bias +0.00 chosen on" in head.fitted_on
    assert (model / "checksums.sha256").is_file() or any(model.glob("*.sha256"))
