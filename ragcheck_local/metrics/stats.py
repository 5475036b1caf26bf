"""Statistics shared by the report (run comparison) and the developer tools (evaluation,
training, calibration, meta-evaluation): one balanced accuracy, one correlation pair and one
bootstrap. Pure numpy.

Balanced accuracy, the one edge policy: the mean of the per-class recalls over the classes
that occur in ``gold``. A class absent from ``gold`` is left out of the mean (its recall is
undefined), and with fewer than two classes in ``gold`` the value is ``None``: the recall of a
single class is not a balanced accuracy, and an empty set has none. Never NaN (JSON has no
NaN), never a silent 0. Entailment-vs-rest (supported-vs-rest) is the same function over the
two-class split, :func:`binary_balanced_accuracy`.

Bootstrap, the one resampling rule: resample ``i`` draws ``n`` indices with replacement from
``range(n)`` with ``numpy.random.default_rng(seed).integers(0, n, n)``, resamples drawn in
order from one generator (:func:`bootstrap_indices`); intervals are the 2.5th and 97.5th
percentiles of the statistic over the resamples, undefined resamples left out
(:func:`percentile_interval`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from ..errors import MetricsInputError

_BLOCK = 2_000_000
"""Resample weights held at once, resamples × rows (bounds the memory of large runs)."""


def balanced_accuracy(gold: Sequence[object], pred: Sequence[object]) -> float | None:
    """Mean per-class recall over the classes present in ``gold``; None with fewer than two.

    >>> balanced_accuracy([1, 1, 1, 0], [1, 1, 1, 1])
    0.5
    >>> balanced_accuracy([1, 1], [1, 0]) is None
    True
    """
    gold_a, pred_a = np.asarray(gold), np.asarray(pred)
    if gold_a.shape != pred_a.shape:
        raise MetricsInputError(
            f"{len(gold_a)} gold labels but {len(pred_a)} predictions", field="pred"
        )
    classes = np.unique(gold_a)
    if len(classes) < 2:
        return None
    return float(np.mean([float((pred_a[gold_a == c] == c).mean()) for c in classes]))


def binary_balanced_accuracy(
    gold: Sequence[object], pred: Sequence[object], positive: object
) -> float | None:
    """Balanced accuracy of ``positive`` against every other label (e.g. entailment vs the
    rest); None unless ``gold`` has both sides."""
    return balanced_accuracy(np.asarray(gold) == positive, np.asarray(pred) == positive)


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.arange(1, len(x) + 1)
    for value in np.unique(x):  # ties share their average rank
        tied = x == value
        if tied.sum() > 1:
            ranks[tied] = ranks[tied].mean()
    return ranks


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation; NaN when either side is constant."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(a) != len(b):
        raise MetricsInputError(f"length mismatch: {len(a)} predictions, {len(b)} labels")
    a, b = a - a.mean(), b - b.mean()
    denom = math.sqrt(float((a * a).sum() * (b * b).sum()))
    return math.nan if denom == 0 else float((a * b).sum() / denom)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (ties get their average rank)."""
    return pearson(_ranks(np.asarray(x, dtype=np.float64)), _ranks(np.asarray(y, dtype=np.float64)))


def bootstrap_indices(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """The resamples of a bootstrap over ``n`` units: ``n_boot`` index arrays, each ``n``
    draws with replacement, in order from ``numpy.random.default_rng(seed)``."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise MetricsInputError(
            f"a bootstrap needs at least 1 resample, got {n_boot!r}", field="n_boot"
        )
    rng = np.random.default_rng(seed)
    for _ in range(n_boot):
        yield rng.integers(0, n, n)


def percentile_interval(values: Sequence[float]) -> tuple[float, float]:
    """The 95% percentile interval of bootstrap statistics (NaN resamples left out)."""
    low, high = np.nanpercentile(np.asarray(values, dtype=np.float64), [2.5, 97.5])
    return float(low), float(high)


def bootstrap_mean_intervals(
    values: np.ndarray, mask: np.ndarray, n_boot: int, seed: int
) -> list[tuple[float | None, float | None]]:
    """Paired bootstrap intervals of column means: rows are units (resampled together, one
    resample of rows for every column), ``mask`` marks the cells that count. A resample with
    no counted cell in a column is left out for that column; a column with none is
    ``(None, None)``."""
    n, k = values.shape
    sums = np.zeros((n_boot, k))
    counts = np.zeros((n_boot, k))
    draws = bootstrap_indices(n, n_boot, seed)
    per_block = max(1, _BLOCK // max(1, n))
    for start in range(0, n_boot, per_block):
        stop = min(n_boot, start + per_block)
        # How often each unit is drawn in each resample of the block.
        weights = np.stack(
            [np.bincount(next(draws), minlength=n) for _ in range(stop - start)]
        ).astype(np.float64)
        sums[start:stop] = weights @ values
        counts[start:stop] = weights @ mask
    out: list[tuple[float | None, float | None]] = []
    for j in range(k):
        ok = counts[:, j] > 0
        if not ok.any():
            out.append((None, None))
            continue
        out.append(percentile_interval(sums[ok, j] / counts[ok, j]))
    return out
