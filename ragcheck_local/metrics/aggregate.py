"""Per-item values and dataset aggregation: :func:`item_metrics`, :class:`MetricTable`,
:func:`aggregate` (RAGChecker's ``round(mean * 100, 1)``).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..errors import MetricsInputError, show_value
from ..formats.output import METRIC_GROUP_KEYS
from .matrices import CheckingMatrices
from .names import EMPTY_POLICIES
from .spec import ALL_METRICS, EXTRA_METRICS, OUTPUT_GROUPS, REQUIREMENTS, SPECS, _check_names


def _check_policy(empty_policy: str) -> None:
    if empty_policy not in EMPTY_POLICIES:
        raise MetricsInputError(
            f"unknown empty_policy {show_value(empty_policy)}; expected one of "
            f"{', '.join(EMPTY_POLICIES)}",
            field="empty_policy",
        )


def item_metrics(
    m: CheckingMatrices,
    metrics: Sequence[str] = ALL_METRICS + EXTRA_METRICS,
    *,
    empty_policy: str = "zero",
    contradiction: bool = True,
) -> dict[str, float | None]:
    """Per-item metric values in [0, 1], keyed by the requested metric names (in that order).

    ``None`` when a needed matrix is ``None`` (not computable), under ``empty_policy="skip"``
    when the metric's claim list is empty (see the module docstring for the per-metric rules),
    and, with ``contradiction=False`` (a 2-way judge), for the metrics that tell
    Contradiction from Neutral.
    """
    _check_policy(empty_policy)
    skip = empty_policy == "skip"
    values: dict[str, float | None] = {}
    for metric in _check_names(metrics):
        if not contradiction and SPECS[metric].needs_contradiction:
            values[metric] = None
        elif any(getattr(m, check) is None for check in REQUIREMENTS[metric]):
            values[metric] = None
        else:
            values[metric] = SPECS[metric].item(m, skip)
    return values


def _item_value(item: Mapping[str, float | None], metric: str, index: int) -> float | None:
    if metric not in item:
        raise MetricsInputError(f"item {index} has no value for {metric!r}", field=metric)
    value = item[metric]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise MetricsInputError(
            f"item {index} has a non-numeric value {show_value(value)} for {metric!r}", field=metric
        )
    return float(value)


class MetricTable:
    """Per-item metric values kept column-wise, 8 bytes per value (``None`` stored as NaN).

    What a long run keeps for the dataset averages instead of one dict per item (~1 KB);
    :meth:`add` validates like :func:`aggregate` and :func:`aggregate_table` gives the same
    numbers, as each column holds the same values in the same order.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self.names = tuple(dict.fromkeys(_check_names(tuple(names))))
        self._columns = {name: array("d") for name in self.names}
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def add(self, values: Mapping[str, float | None]) -> None:
        """Append one item's values (every name must be present; ``None`` = not computable)."""
        row = [_item_value(values, name, self._n) for name in self.names]
        for name, value in zip(self.names, row, strict=True):
            self._columns[name].append(math.nan if value is None else value)
        self._n += 1

    def present(self, name: str) -> np.ndarray:
        """The numeric values of ``name``, in item order (items without a value left out)."""
        column = np.frombuffer(self._columns[name], dtype=np.float64)
        return column[~np.isnan(column)]


def aggregate(
    per_item: Sequence[Mapping[str, float | None]], metrics: Sequence[str]
) -> dict[str, dict[str, float | None]]:
    """Dataset metrics: ``round(mean * 100, 1)`` over items, grouped like RAGChecker's output.

    Returns ``{"overall_metrics": {...}, "retriever_metrics": {...}, "generator_metrics":
    {...}, "extra_metrics": {...}}`` (RAGChecker 0.1.9's keys, then ours) holding only the
    requested metrics (every group key is always present). Items whose value is
    ``None`` are left out of that metric's mean (the empty policy is applied per item, by
    ``item_metrics``); a metric with no numeric item is ``None``. The mean and the rounding are
    numpy's, as in RAGChecker, so the numbers match it to the last digit.
    """
    wanted = set(_check_names(metrics))
    table = MetricTable(m for names in OUTPUT_GROUPS.values() for m in names if m in wanted)
    for item in per_item:
        table.add(item)
    return aggregate_table(table, metrics)


def aggregate_table(
    table: MetricTable, metrics: Sequence[str]
) -> dict[str, dict[str, float | None]]:
    """:func:`aggregate` over a :class:`MetricTable` (which must hold every requested metric)."""
    wanted = set(_check_names(metrics))
    missing = sorted(m for m in wanted if m not in table.names)
    if missing:
        raise MetricsInputError(f"the table has no column for {missing}", field="metrics")
    grouped: dict[str, dict[str, float | None]] = {}
    for group, names in OUTPUT_GROUPS.items():
        values: dict[str, float | None] = grouped.setdefault(METRIC_GROUP_KEYS[group], {})
        for metric in names:
            if metric not in wanted:
                continue
            present = table.present(metric)
            if not present.size:
                values[metric] = None
                continue
            # An exactly rounded sum: the mean does not depend on the items' order, so merged
            # shards aggregate to a single run's value bit for bit.
            mean = np.float64(math.fsum(present.tolist()) / present.size)
            # round() on np.float64 is numpy's rounding (x*10, rint, /10), as in RAGChecker.
            values[metric] = float(round(mean * 100, 1))
    return grouped
