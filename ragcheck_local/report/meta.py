"""Display metadata of the metrics (group, good direction, order), derived from
:data:`ragcheck_local.metrics.METRICS`: the metric table is defined once. Meanings and labels
per language live in :mod:`ragcheck_local.report.i18n`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..metrics import GROUPS, HIGHER, LOWER, NO_DIRECTION
from ..metrics import METRICS as _SPECS

NEUTRAL_DIRECTION = NO_DIRECTION
"""No fixed good direction (self_knowledge: whether the generator should answer from its own
knowledge depends on the application)."""

__all__ = ["GROUPS", "HIGHER", "LOWER", "METRICS", "METRIC_INFO", "NEUTRAL_DIRECTION", "info"]


@dataclass(frozen=True)
class MetricInfo:
    """How to read one metric: its group and which direction is good."""

    name: str
    group: str
    direction: str


METRICS: tuple[MetricInfo, ...] = tuple(MetricInfo(m.name, m.group, m.direction) for m in _SPECS)
"""Every metric the report knows, in display order."""

METRIC_INFO: dict[str, MetricInfo] = {m.name: m for m in METRICS}

TABLE_METRICS: tuple[str, ...] = (
    "f1",
    "precision",
    "recall",
    "claim_recall",
    "context_precision",
    "context_utilization",
    "faithfulness",
    "hallucination",
    "noise_sensitivity_in_relevant",
)
"""Per-query metrics shown as columns of the query table (the rest are in the drill-down)."""


def info(name: str, group: str = "extra") -> MetricInfo:
    """Metadata of ``name``; an unknown metric gets ``group`` and no good direction."""
    return METRIC_INFO.get(name) or MetricInfo(name, group, NEUTRAL_DIRECTION)
