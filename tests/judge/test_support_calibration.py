"""The support map: an isotonic map from the head's P(Entailment) to the share of such claims
that are entailed on dev data, read by the soft metrics and never by the verdicts."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from ragcheck_local.config import NLIConfig
from ragcheck_local.errors import ModelError
from ragcheck_local.judge.calibration import (
    Calibration,
    expected_calibration_error,
    fit_isotonic,
    load_calibration,
    reliability_table,
)
from ragcheck_local.resources import default_model_path

FEATS = ("log_p_entailment", "log_p_neutral", "log_p_contradiction")
HEAD = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


def test_isotonic_pools_adjacent_violators() -> None:
    x = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    y = np.array([0.0, 1.0, 0.0, 0.0, 1.0, 1.0])
    xs, ys = fit_isotonic(x, y)
    # 0.2..0.4 pool to 1/3; the rest keep their values; equal neighbours merge.
    assert xs == (0.1, 0.2, 0.4, 0.5, 0.6)
    assert ys == (0.0, 0.3333, 0.3333, 1.0, 1.0)
    assert all(b >= a for a, b in itertools.pairwise(ys))


def test_isotonic_weights_and_a_single_block() -> None:
    xs, ys = fit_isotonic(np.array([0.2, 0.8]), np.array([1.0, 0.0]), np.array([3.0, 1.0]))
    assert ys == (0.75, 0.75) and xs == (0.2, 0.8)
    flat = fit_isotonic(np.array([0.5, 0.5]), np.array([1.0, 1.0]))
    assert flat == ((0.0, 1.0), (1.0, 1.0))
    with pytest.raises(ValueError, match="2 or more"):
        fit_isotonic(np.array([0.5]), np.array([1.0]))


def test_a_perfectly_calibrated_predictor_has_no_calibration_error() -> None:
    p = np.array([0.25] * 4 + [0.75] * 4)
    hit = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    assert expected_calibration_error(p, hit) == pytest.approx(0.0)
    assert expected_calibration_error(np.ones(4), np.zeros(4)) == pytest.approx(1.0)
    rows = reliability_table(p, hit)
    assert [r["pairs"] for r in rows] == [4, 4] and rows[1]["observed"] == 0.75


def test_support_map_applies_to_support_only_and_round_trips() -> None:
    head = Calibration(
        weights=HEAD, features=FEATS,
        support_map=((0.0, 0.5, 1.0), (0.0, 0.2, 0.9)), support_fitted_on="test",
    )  # fmt: skip
    assert head.support(np.array([0.25, 0.5, 1.0])).tolist() == pytest.approx([0.1, 0.2, 0.9])
    again = Calibration.from_dict(json.loads(json.dumps(head.to_dict())))
    assert again == head
    plain = Calibration(weights=HEAD, features=head.features)
    assert plain.support(np.array([0.3])).tolist() == [0.3]
    assert "support_map" not in plain.to_dict()


@pytest.mark.parametrize(
    "knots",
    [
        ((0.0,), (0.0,)),
        ((0.0, 1.0), (0.5, 0.2)),
        ((0.6, 0.4), (0.1, 0.2)),
        ((0.0, 1.0), (0.0, 1.5)),
    ],
)
def test_a_broken_support_map_is_refused(knots: tuple) -> None:
    with pytest.raises(ModelError, match="support_map"):
        Calibration(weights=HEAD, features=FEATS, support_map=knots)


def test_the_shipped_head_maps_support_and_the_checker_reports_it() -> None:
    model = Path(default_model_path())
    if not (model / "model.safetensors").is_file():
        pytest.skip("the bundled model's weights are not here")
    head = load_calibration(model)
    assert head is not None and head.support_map is not None
    x, y = head.support_map
    assert y[0] <= 0.05 and y[-1] >= 0.8  # spans low to high support
    from ragcheck_local.judge.checker import NLIChecker

    checker = NLIChecker(NLIConfig(device="cpu"))
    premise = "The Nile is the longest river in Africa. It flows north into the Mediterranean Sea."
    pairs = [(premise, "The Nile flows north."), (premise, "The Nile is in South America.")]
    results = checker.check(pairs)
    probs = checker._score(pairs, None, None)
    calibrated = head.probabilities(probs, [c for _, c in pairs], [p for p, _ in pairs])
    for result, p_e in zip(results, calibrated[:, 0], strict=True):
        assert result.support == pytest.approx(float(np.interp(p_e, x, y)))
