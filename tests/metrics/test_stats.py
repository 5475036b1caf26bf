"""The shared statistics: one balanced accuracy (one edge policy), correlations, one bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragcheck_local.errors import MetricsInputError
from ragcheck_local.metrics.stats import (
    balanced_accuracy,
    binary_balanced_accuracy,
    bootstrap_indices,
    bootstrap_mean_intervals,
    pearson,
    percentile_interval,
)


def test_balanced_accuracy_is_the_mean_recall_of_the_classes_in_gold() -> None:
    assert balanced_accuracy([1, 1, 1, 0], [1, 1, 1, 1]) == 0.5
    assert balanced_accuracy([1, 0, 0, 0], [1, 0, 0, 1]) == (1 + 2 / 3) / 2
    # A class only predicted (2) is absent from gold: left out of the mean.
    assert balanced_accuracy([0, 0, 1, 1], [0, 2, 1, 1]) == pytest.approx((0.5 + 1.0) / 2)
    assert balanced_accuracy(["E", "N", "C"], ["E", "N", "N"]) == pytest.approx(2 / 3)


def test_balanced_accuracy_edge_policy_is_none_never_zero_or_nan() -> None:
    assert balanced_accuracy([], []) is None
    assert balanced_accuracy([1, 1], [0, 0]) is None  # one class: a recall, not a balance
    assert binary_balanced_accuracy([1, 2, 2], [1, 1, 2], positive=0) is None
    with pytest.raises(MetricsInputError, match="3 gold labels but 2 predictions"):
        balanced_accuracy([0, 1, 1], [0, 1])


def test_entailment_vs_rest_from_a_confusion_matrix() -> None:
    # Rows gold, columns predicted (0 = entailment): TPR 8/10; TNR: gold N/C predicted N or C
    # = 18 of 20.
    confusion = np.array([[8, 2, 0], [1, 5, 4], [1, 0, 9]])
    gold = [g for g in range(3) for p in range(3) for _ in range(confusion[g, p])]
    pred = [p for g in range(3) for p in range(3) for _ in range(confusion[g, p])]
    assert binary_balanced_accuracy(gold, pred, 0) == pytest.approx((0.8 + 0.9) / 2)
    assert binary_balanced_accuracy([0, 1, 1], [0, 0, 1], 0) == 0.75


def test_bootstrap_resamples_are_seeded_and_drawn_with_replacement() -> None:
    a = list(bootstrap_indices(7, 20, seed=3))
    assert len(a) == 20 and all(len(d) == 7 and d.min() >= 0 and d.max() < 7 for d in a)
    assert all(np.array_equal(x, y) for x, y in zip(a, bootstrap_indices(7, 20, 3), strict=True))
    assert not all(
        np.array_equal(x, y) for x, y in zip(a, bootstrap_indices(7, 20, 4), strict=True)
    )
    with pytest.raises(MetricsInputError, match="at least 1 resample"):
        list(bootstrap_indices(7, 0, 3))


def test_mean_intervals_use_the_same_resamples_for_every_column() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(size=(50, 2))
    values[:, 1] = values[:, 0]  # identical columns: identical intervals (one resample of rows)
    mask = np.ones_like(values)
    (lo0, hi0), (lo1, hi1) = bootstrap_mean_intervals(values, mask, 300, seed=1)
    assert (lo0, hi0) == (lo1, hi1) and lo0 < values[:, 0].mean() < hi0
    # The intervals are the percentiles of the resampled means, resample by resample.
    means = [values[d, 0].mean() for d in bootstrap_indices(50, 300, 1)]
    assert (lo0, hi0) == pytest.approx(percentile_interval(means))
    none = bootstrap_mean_intervals(values, np.zeros_like(values), 10, seed=1)
    assert none == [(None, None), (None, None)]


def test_pearson_is_nan_for_a_constant_side() -> None:
    assert pearson([1, 2, 3], [2, 4, 7]) == pytest.approx(np.corrcoef([1, 2, 3], [2, 4, 7])[0, 1])
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))
